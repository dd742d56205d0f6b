//! The checks Inmanta's plugin loader makes of a Python plugin against the model: its name is not
//! also a type of its namespace, and the model types its annotations name exist.

use std::collections::HashSet;

use super::{PySignature, python_file_error};
use crate::diagnostics::Diagnostic;
use crate::model::Types;

/// The first plugin named like a type or implementation the model declares (`declared`: full
/// names), as Inmanta's loader refuses it: before any of the model's types is resolved, so
/// this error comes before those the model's build found.
pub(crate) fn check_plugin_names(declared: &HashSet<String>, plugins: &[PySignature]) -> Result<(), Box<Diagnostic>> {
    match plugins.iter().find(|p| declared.contains(&p.name)) {
        Some(p) => Err(Box::new(python_file_error(
            "DuplicateException",
            &format!("Type {} is already defined", p.name),
            &p.file,
            p.line,
        ))),
        None => Ok(()),
    }
}

/// The first plugin that Inmanta's loader refuses, as the error it raises at the plugin's `def`.
pub(crate) fn check_signatures(types: &Types<'_>, plugins: &[PySignature]) -> Result<(), Box<Diagnostic>> {
    for p in plugins {
        let at = |kind: &str, message: String| Box::new(python_file_error(kind, &message, &p.file, p.line));
        // plugins, entities, typedefs and implementations share one name space per module
        if types.entity_by_name.contains_key(&p.name)
            || types.typedef_by_name.contains_key(&p.name)
            || types.impl_by_name.contains_key(&p.name)
        {
            return Err(at("DuplicateException", format!("Type {} is already defined", p.name)));
        }
        for t in &p.model_types {
            let Some((ns, _)) = t.rsplit_once("::") else { continue };
            // a namespace the model does not load is not judged here
            if types.ns_by_name.contains_key(ns)
                && !types.entity_by_name.contains_key(t)
                && !types.typedef_by_name.contains_key(t)
            {
                return Err(at("TypeNotFoundException", format!("could not find type {t} in namespace {ns}")));
            }
        }
    }
    Ok(())
}
