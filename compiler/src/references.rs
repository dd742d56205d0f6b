//! References: values the agent resolves when it deploys (`std::create_environment_reference`,
//! `create_int_reference`, `create_fact_reference`), never the compiler. A reference can be held
//! by a variable or an attribute of a matching type; an index, a string format or a plugin that
//! does not accept references refuses it. A resource attribute that holds one is exported as
//! Inmanta does: the attribute is `null`, the reference (and the references it takes as
//! arguments) is listed in the resource's `references`, and a `core::Replace` mutator says where
//! its value goes.

use crate::diagnostics::ErrorKind;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::rc::Rc;

use serde_json::{Value as Json, json};

use crate::builtins::{PErr, Plugin, PluginCall, Plugins};
use crate::eval::value::Value;
use crate::eval::{EResult, Evaluator, error};
use crate::model::Type;
use crate::syntax::Span;

/// The plugins that take references as arguments (Inmanta: `| Reference[...]` annotations).
const TAKE_REFERENCES: &[&str] = &["std::create_environment_reference", "std::create_int_reference"];

/// Registers std's `create_*_reference` plugins.
pub(crate) fn register(p: &mut Plugins) {
    p.add("std::create_environment_reference", &[("name", None)], |_, c| {
        let name = match &c.args[0] {
            Value::Str(s) => RefArg::Literal(json!(s.as_ref())),
            Value::Reference(r) if r.resolves == Resolves::Str => RefArg::Reference(r.clone()),
            other => {
                return Err(bad_argument("std::create_environment_reference", "name", "str | Reference[str]", other));
            }
        };
        Ok(Value::Reference(Rc::new(Reference::new(
            "std::Environment",
            "EnvironmentReference",
            Resolves::Str,
            vec![("name", name)],
        ))))
    });
    p.add("std::create_int_reference", &[("value", None)], |_, c| {
        let value = match &c.args[0] {
            Value::Reference(r) => RefArg::Reference(r.clone()),
            Value::Instance(_) => {
                return Err(PErr::Kind(
                    ErrorKind::PluginTypeException,
                    "std::create_int_reference: an entity can not be the argument of a reference".into(),
                ));
            }
            Value::List(_) | Value::Dict(_) => RefArg::Json(c.args[0].to_json()),
            other => RefArg::Literal(other.to_json()),
        };
        Ok(Value::Reference(Rc::new(Reference::new(
            "std::IntReference",
            "IntReference",
            Resolves::Int,
            vec![("value", value)],
        ))))
    });
    p.add("std::create_fact_reference", &[("resource", None), ("fact_name", None)], |ev, c| {
        let Value::Instance(i) = &c.args[0] else {
            return Err(bad_argument("std::create_fact_reference", "resource", "std::Resource", &c.args[0]));
        };
        let rid = match crate::export::python_mapping_of(&crate::export::View::of(ev), *i) {
            // a Python @resource class maps its id with its own get_<attribute> mappers
            Some(entity) => ev.python_resource_id(*i, &entity, c.span)?,
            None => crate::export::resource_id_of(&crate::export::View::of(ev), *i).map(|id| id.to_string()),
        };
        let Some(rid) = rid else {
            return Err(PErr::Kind(ErrorKind::ExternalException, "Facts can only be retreived from resources.".into()));
        };
        let fact = match &c.args[1] {
            Value::Str(s) => s.to_string(),
            other => return Err(bad_argument("std::create_fact_reference", "fact_name", "str", other)),
        };
        Ok(Value::Reference(Rc::new(Reference::new(
            "std::FactReference",
            "FactReference",
            Resolves::Str,
            vec![
                // inmanta-core's Context.get_environment_id() is str() of the configured id:
                // "None" for a compile without an environment
                (
                    "environment",
                    RefArg::Literal(json!(match ev.project.plugin_inputs.environment.as_str() {
                        "" => "None",
                        id => id,
                    })),
                ),
                ("resource_id", RefArg::Literal(json!(rid))),
                ("fact_name", RefArg::Literal(json!(fact))),
                ("mocked_facts", RefArg::Literal(Json::Null)),
            ],
        ))))
    });
}

fn bad_argument(plugin: &str, arg: &str, expected: &str, v: &Value) -> PErr {
    PErr::Kind(
        ErrorKind::PluginTypeException,
        format!(
            "Value {} for argument {arg} of plugin {plugin} has incompatible type. Expected type: {expected}",
            crate::eval::format::short_repr(v)
        ),
    )
}

/// The text that stands for the `n`th reference met in a resource's JSON (see
/// `export::Found`), until [`export_resource`] takes its place.
pub(crate) fn token(n: usize) -> String {
    format!("{TOKEN}{n}")
}

const TOKEN: &str = "\u{0}inmanta-rs reference ";

/// Fills `references` and `mutators` of an exported resource, as inmanta-core's
/// `ReferenceCollector` does: wherever an attribute holds a reference (the attribute itself, an
/// element of a list, a value of a dict, at any depth), the place is `null` and a `core::Replace`
/// mutator names its path (`values[0].'value'.'token'`); every reference, and those it takes, is
/// listed once. Both lists are sorted by id, as Inmanta sorts them (the attribute hash depends on it).
pub(crate) fn export_resource(found: &[Rc<Reference>], rid: &str, obj: &mut serde_json::Map<String, Json>) {
    let mut references = Vec::new();
    let mut mutators = Vec::new();
    let mut seen = HashSet::new();
    if !found.is_empty() {
        for (field, value) in obj.iter_mut() {
            replace_tokens(value, field.clone(), found, &mut |r, path| {
                r.collect(&mut references, &mut seen);
                mutators.push(r.replace_mutator(rid, &path));
            });
        }
    }
    references.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    let mut mutators: Vec<(String, Json)> = mutators
        .into_iter()
        .map(|m| (reference_id("core::Replace", m["args"].as_array().map_or(&[], Vec::as_slice)), m))
        .collect();
    mutators.sort_by(|a, b| a.0.cmp(&b.0));
    obj.insert("references".into(), Json::Array(references));
    obj.insert("mutators".into(), Json::Array(mutators.into_iter().map(|(_, m)| m).collect()));
}

/// Puts `null` where a token stands in `value` (at `path`) and hands its reference and path on.
fn replace_tokens(value: &mut Json, path: String, found: &[Rc<Reference>], on: &mut dyn FnMut(&Reference, String)) {
    match value {
        Json::String(s) => {
            if let Some(r) = s.strip_prefix(TOKEN).and_then(|n| n.parse::<usize>().ok()).and_then(|n| found.get(n)) {
                on(r, path);
                *value = Json::Null;
            }
        }
        Json::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                replace_tokens(item, format!("{path}[{i}]"), found, on);
            }
        }
        Json::Object(entries) => {
            for (key, item) in entries.iter_mut() {
                replace_tokens(item, format!("{path}.'{}'", key.replace('\'', "\\'")), found, on);
            }
        }
        _ => {}
    }
}

/// A mapper that converts an attribute with `int()` (fs' `permissions`, from `mode`) fails on a
/// reference at export, as Inmanta's does.
pub(crate) fn refused_by_int(entity: &str, field: &str, r: &Reference) -> crate::Diagnostic {
    crate::Diagnostic::plain(
        ErrorKind::ExternalException,
        format!("Failed to get attribute '{field}' for export on '{entity}'"),
    )
    .with_note(format!(
        "caused by: TypeError: int() argument must be a string, a bytes-like object or a real number, not '{}'",
        r.class
    ))
}

/// Whether a reference can be the value of an attribute of type `ty`.
pub(crate) fn fits(ev: &Evaluator<'_>, r: &Reference, ty: &Type) -> bool {
    match ty {
        Type::Any => true,
        Type::Nullable(inner) => fits(ev, r, inner),
        Type::String => r.resolves == Resolves::Str,
        Type::Int => r.resolves == Resolves::Int,
        Type::Number => matches!(r.resolves, Resolves::Int | Resolves::Float),
        Type::Bool => r.resolves == Resolves::Bool,
        Type::Typedef(t) => fits(ev, r, &ev.types.typedefs[*t].base),
        _ => false,
    }
}

/// Inmanta refuses references in the attributes of an index (an index compares values the
/// compiler does not know).
pub(crate) fn check_not_indexed(
    ev: &Evaluator<'_>,
    entity: usize,
    attribute: &str,
    r: &Reference,
    span: Span,
) -> EResult<()> {
    let indexed =
        ev.types.entities[entity].indexes.iter().any(|i| ev.types.indexes[*i].fields.iter().any(|f| f == attribute));
    if !indexed {
        return Ok(());
    }
    Err(error(
        ErrorKind::TypingException,
        format!(
            "Invalid value `<{}.{} object>` in index for attribute {attribute}: references can not be used in indexes.",
            r.module, r.class
        ),
        span,
        ev.sources,
    ))
}

/// `{{x}}` where x holds a reference: its value is not known until the agent resolves it.
pub(crate) fn refuse_in_format(ev: &Evaluator<'_>, v: &Value, path: &[String], span: Span) -> EResult<()> {
    if !matches!(v, Value::Reference(_)) {
        return Ok(());
    }
    Err(error(
        ErrorKind::UnexpectedReference,
        format!(
            "Encountered reference in string format for variable `{{{{{}}}}}`. This is not supported.",
            path.join(".")
        ),
        span,
        ev.sources,
    ))
}

/// A plugin that does not take references refuses them, naming the argument (Inmanta's check).
pub(crate) fn check_plugin_args(
    ev: &Evaluator<'_>,
    name: &str,
    plugin: &Plugin,
    call: &PluginCall,
    span: Span,
) -> EResult<()> {
    if TAKE_REFERENCES.contains(&name) {
        return Ok(());
    }
    let named = call
        .args
        .iter()
        .enumerate()
        .map(|(i, v)| (plugin.params.get(i).map_or("*args", |p| p.0).to_string(), v))
        .chain(call.varargs.iter().map(|v| ("*args".to_string(), v)))
        .chain(call.kwargs.iter().map(|(k, v)| (k.clone(), v)));
    for (arg, v) in named {
        if let Value::Reference(r) = v {
            return Err(refused(ev, name, &arg, r, span));
        }
    }
    Ok(())
}

fn refused(ev: &Evaluator<'_>, plugin: &str, arg: &str, r: &Reference, span: Span) -> crate::eval::Flow {
    error(
        ErrorKind::PluginTypeException,
        format!(
            "Value <{}.{} object> for argument {arg} of plugin {plugin} is a reference. \
             To allow references, use `| Reference[...]` in your type annotation.",
            r.module, r.class
        ),
        span,
        ev.sources,
    )
}

/// What a reference resolves to, for the type checks of attributes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Resolves {
    Str,
    Int,
    Float,
    Bool,
    /// A type the checks do not know (a dataclass, a dict): only `any` takes it.
    Other,
}

impl Resolves {
    /// From the name of the Python type a `Reference[T]` class resolves to.
    fn of_python(name: Option<&str>) -> Resolves {
        match name {
            Some("str") => Resolves::Str,
            Some("int") => Resolves::Int,
            Some("float") => Resolves::Float,
            Some("bool") => Resolves::Bool,
            _ => Resolves::Other,
        }
    }
}

/// One argument of a reference's constructor.
#[derive(Debug, Clone)]
pub(crate) enum RefArg {
    Literal(Json),
    /// A list or a dict (without references in it).
    Json(Json),
    Reference(Rc<Reference>),
    /// An argument as a module's Python class serialized it (any of inmanta-core's argument
    /// kinds), with the references it names.
    Serialized {
        arg: Json,
        references: Vec<Rc<Reference>>,
    },
}

#[derive(Debug)]
pub(crate) struct Reference {
    /// The registered type (`std::Environment`).
    pub kind: String,
    /// The Python class (`EnvironmentReference`), as the reference's variables print.
    pub class: String,
    /// The Python module of the class (`inmanta_plugins.std`).
    pub module: String,
    pub resolves: Resolves,
    pub args: Vec<(String, RefArg)>,
    /// Inmanta's id: a uuid3 over the type and the arguments (`compute_reference_or_mutator_id`).
    pub id: String,
}

impl Reference {
    pub(crate) fn new(
        kind: &'static str,
        class: &'static str,
        resolves: Resolves,
        args: Vec<(&'static str, RefArg)>,
    ) -> Reference {
        let args: Vec<(String, RefArg)> = args.into_iter().map(|(n, a)| (n.to_string(), a)).collect();
        let serialized = serialize_args(&args);
        let id = reference_id(kind, &serialized);
        Reference {
            kind: kind.to_string(),
            class: class.to_string(),
            module: "inmanta_plugins.std".into(),
            resolves,
            args,
            id,
        }
    }

    /// A reference a Python plugin returned, from the serialized models the bridge sends: `id`
    /// and every reference it takes, each as `{"model", "module", "class", "resolves"}` by id.
    /// The ids are inmanta-core's own (the module's class serialized itself).
    pub(crate) fn from_python(id: &str, entries: &serde_json::Map<String, Json>) -> Result<Rc<Reference>, String> {
        Self::from_python_in(id, entries, &mut Vec::new())
    }

    fn from_python_in(
        id: &str,
        entries: &serde_json::Map<String, Json>,
        building: &mut Vec<String>,
    ) -> Result<Rc<Reference>, String> {
        if building.iter().any(|b| b == id) {
            return Err(format!("reference {id} takes itself as an argument"));
        }
        let entry = entries.get(id).ok_or_else(|| format!("the plugin returned no model of reference {id}"))?;
        let model = &entry["model"];
        let text = |v: &Json| v.as_str().unwrap_or_default().to_string();
        building.push(id.to_string());
        let mut args = Vec::new();
        for arg in model["args"].as_array().into_iter().flatten() {
            let name = text(&arg["name"]);
            let parsed = if arg["type"] == "reference" {
                RefArg::Reference(Self::from_python_in(&text(&arg["id"]), entries, building)?)
            } else {
                let mut references = Vec::new();
                for nested in arg.get("references").and_then(Json::as_object).into_iter().flatten().map(|(_, r)| r) {
                    references.push(Self::from_python_in(&text(&nested["id"]), entries, building)?);
                }
                RefArg::Serialized { arg: arg.clone(), references }
            };
            args.push((name, parsed));
        }
        building.pop();
        Ok(Rc::new(Reference {
            kind: text(&model["type"]),
            class: text(&entry["class"]),
            module: text(&entry["module"]),
            resolves: Resolves::of_python(entry["resolves"].as_str()),
            args,
            id: id.to_string(),
        }))
    }

    /// The reference as a resource lists it.
    pub(crate) fn model(&self) -> Json {
        json!({"args": serialize_args(&self.args), "id": self.id, "type": self.kind})
    }

    /// The reference as it crosses to the modules' Python code (compiler/src/python/inmanta_rs_bridge/
    /// builds its class's object from it): its id and the model of it and of every reference it
    /// takes, with the Python module and class that print in Inmanta's messages.
    pub(crate) fn to_python(&self) -> Json {
        let mut entries = serde_json::Map::new();
        self.python_entries(&mut entries);
        json!({"$r": self.id, "references": entries})
    }

    fn python_entries(&self, out: &mut serde_json::Map<String, Json>) {
        if out.contains_key(&self.id) {
            return;
        }
        out.insert(self.id.clone(), json!({"model": self.model(), "module": self.module, "class": self.class}));
        for (_, arg) in &self.args {
            match arg {
                RefArg::Reference(r) => r.python_entries(out),
                RefArg::Serialized { references, .. } => references.iter().for_each(|r| r.python_entries(out)),
                RefArg::Literal(_) | RefArg::Json(_) => {}
            }
        }
    }

    /// This reference and every reference it takes, each once.
    pub(crate) fn collect(&self, out: &mut Vec<Json>, seen: &mut HashSet<String>) {
        if !seen.insert(self.id.clone()) {
            return;
        }
        out.push(self.model());
        for (_, arg) in &self.args {
            match arg {
                RefArg::Reference(r) => r.collect(out, seen),
                RefArg::Serialized { references, .. } => references.iter().for_each(|r| r.collect(out, seen)),
                RefArg::Literal(_) | RefArg::Json(_) => {}
            }
        }
    }

    /// The `core::Replace` mutator that puts this reference's value into `attribute` of `resource`.
    pub(crate) fn replace_mutator(&self, resource: &str, attribute: &str) -> Json {
        json!({
            "args": [
                {"id": resource, "name": "resource", "type": "resource"},
                {"id": self.id, "name": "value", "type": "reference"},
                {"name": "destination", "type": "literal", "value": attribute},
            ],
            "type": "core::Replace",
        })
    }
}

fn serialize_args(args: &[(String, RefArg)]) -> Vec<Json> {
    args.iter()
        .map(|(name, arg)| match arg {
            RefArg::Literal(v) => json!({"name": name, "type": "literal", "value": v}),
            RefArg::Json(v) => json!({"name": name, "type": "json", "value": v}),
            RefArg::Reference(r) => json!({"id": r.id, "name": name, "type": "reference"}),
            RefArg::Serialized { arg, .. } => arg.clone(),
        })
        .collect()
}

/// uuid3(NAMESPACE_OID, md5(json.dumps({"type", "args"}, sort_keys=True))), as inmanta-core's
/// `compute_reference_or_mutator_id`: the same reference gets the same id everywhere.
fn reference_id(kind: &str, args: &[Json]) -> String {
    let mut text = String::new();
    python_json(&json!({"args": args, "type": kind}), &mut text);
    use md5::Digest as _;
    let digest = md5::Md5::digest(text.as_bytes());
    uuid::Uuid::new_v3(&uuid::Uuid::NAMESPACE_OID, digest.as_slice()).to_string()
}

/// Python's `json.dumps(value, sort_keys=True)`: `", "` and `": "` separators, non-ASCII escaped.
fn python_json(v: &Json, out: &mut String) {
    match v {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => write!(out, "{i}").unwrap_or(()),
            (_, Some(u), _) => write!(out, "{u}").unwrap_or(()),
            // an int past 64 bits: its exact digits, as Python writes it
            _ if !n.is_f64() => out.push_str(&n.to_string()),
            (_, _, Some(f)) => out.push_str(&crate::eval::value::py_float(f)),
            _ => out.push_str("null"),
        },
        Json::String(s) => {
            out.push('"');
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    '\u{8}' => out.push_str("\\b"),
                    '\u{c}' => out.push_str("\\f"),
                    c if (c as u32) < 0x20 || (c as u32) > 0x7f => {
                        let mut units = [0u16; 2];
                        for u in c.encode_utf16(&mut units) {
                            write!(out, "\\u{u:04x}").unwrap_or(());
                        }
                    }
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        Json::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_json(x, out);
            }
            out.push(']');
        }
        Json::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_json(&Json::String(k.clone()), out);
                out.push_str(": ");
                python_json(&o[k], out);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Reference {
        Reference::new(
            "std::Environment",
            "EnvironmentReference",
            Resolves::Str,
            vec![("name", RefArg::Literal(json!(name)))],
        )
    }

    #[test]
    fn ids_are_inmantas() {
        // ids from the reference install (compiler/tests/python/references/main.inmanta.json)
        assert_eq!(env("HOME").id, "1db97cff-304a-3f5c-990a-f38282edb126");
        let int = Reference::new(
            "std::IntReference",
            "IntReference",
            Resolves::Int,
            vec![("value", RefArg::Reference(Rc::new(env("NUM"))))],
        );
        assert_eq!(int.id, "83e6fdd6-a273-35bd-bdef-1f457ee4b0d0");
    }

    #[test]
    fn python_json_escapes_as_python() {
        let mut out = String::new();
        python_json(&json!({"z": "\u{e9}\"", "a": [1.5, null, true]}), &mut out);
        assert_eq!(out, r#"{"a": [1.5, null, true], "z": "\u00e9\""}"#);
    }
}
