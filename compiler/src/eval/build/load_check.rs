//! The entity types of constructors and index lookups, and the namespaces of plugin calls,
//! resolved when the model is loaded, as Inmanta's normalisation does before anything runs: a
//! body that names an entity no loaded module defines, or a plugin of a module its file does not
//! import, fails the compile even when no instance ever runs it (a module broken by a newer std,
//! whose implementations for another platform construct `std::Package`).
//!
//! The order is Inmanta's, so that the first error is the one it reports: every implementation
//! body first, then the top-level statements of each file in order. Its parser builds a nested
//! block's statement list back to front (`stmt_list : statement stmt_list` appends), so within a
//! body (and an `if` branch, a `for` body) the last statement is looked at first; the top level of a
//! file is in source order. Only qualified names (`ns::Type`) are resolved here: a short name may
//! still be inferred from the relation it is assigned to when it runs.

use super::{Builder, lookup_entity};
use crate::diagnostics::ErrorKind;
use crate::model::{NsId, Types};
use crate::syntax::Span;
use crate::syntax::ast::{Block, Expr, ExprKind, Stmt, Top};

/// The first failure: (exception kind, message, where).
type Failure = (ErrorKind, String, Span);

impl Builder<'_, '_> {
    /// Resolves the type of every qualified constructor and index lookup of the model.
    pub(super) fn check_constructor_types(&mut self) {
        if !self.errors.is_empty() {
            return;
        }
        let types = &self.types;
        let in_bodies = types.implementations.iter().find_map(|imp| block(types, imp.ns, imp.body, true));
        let found = in_bodies.or_else(|| {
            types.namespaces.iter().enumerate().find_map(|(ns, n)| {
                n.file?.items.iter().find_map(|item| match item {
                    Top::Stmt(s) => stmt(types, ns, s),
                    _ => None,
                })
            })
        });
        if let Some((kind, message, span)) = found {
            self.err(kind, message, span);
        }
    }
}

fn block(types: &Types<'_>, ns: NsId, b: &Block, back_to_front: bool) -> Option<Failure> {
    if back_to_front {
        b.iter().rev().find_map(|s| stmt(types, ns, s))
    } else {
        b.iter().find_map(|s| stmt(types, ns, s))
    }
}

fn stmt(types: &Types<'_>, ns: NsId, s: &Stmt) -> Option<Failure> {
    match s {
        Stmt::Assign { value, .. } => expr(types, ns, value),
        Stmt::For { iter, body, .. } => expr(types, ns, iter).or_else(|| block(types, ns, body, true)),
        Stmt::If { branches, otherwise, .. } => branches
            .iter()
            .find_map(|(condition, body)| expr(types, ns, condition).or_else(|| block(types, ns, body, true)))
            .or_else(|| block(types, ns, otherwise, true)),
        Stmt::Expr(e) => expr(types, ns, e),
    }
}

fn resolve(types: &Types<'_>, ns: NsId, name: &str, span: Span) -> Option<Failure> {
    if !name.contains("::") {
        return None;
    }
    lookup_entity(types, ns, name).err().map(|(kind, message)| (kind, message, span))
}

/// A qualified plugin name whose namespace the file does not import.
fn plugin_namespace(types: &Types<'_>, ns: NsId, name: &str, span: Span) -> Option<Failure> {
    let (prefix, _) = name.rsplit_once("::")?;
    if types.visible_namespace(ns, prefix).is_some() {
        return None;
    }
    let message = format!("Plugin {name} is used but module {prefix} is not imported (import {prefix})");
    Some((ErrorKind::MissingImportException, message, span))
}

fn exprs<'e>(types: &Types<'_>, ns: NsId, mut items: impl Iterator<Item = &'e Expr>) -> Option<Failure> {
    items.find_map(|e| expr(types, ns, e))
}

fn expr(types: &Types<'_>, ns: NsId, e: &Expr) -> Option<Failure> {
    match &e.kind {
        ExprKind::Constructor { class, args } => resolve(types, ns, &class.name, class.span).or_else(|| {
            exprs(
                types,
                ns,
                args.positional.iter().chain(args.keyword.iter().map(|k| &k.value)).chain(args.spread.iter()),
            )
        }),
        // the arguments first: Inmanta normalises a reference's children before its type
        ExprKind::IndexLookup { class, args } => {
            exprs(types, ns, args.iter().map(|k| &k.value)).or_else(|| resolve(types, ns, &class.name, class.span))
        }
        // the arguments first, then the plugin's namespace, which must be imported
        ExprKind::Call { name, args } => exprs(
            types,
            ns,
            args.positional.iter().chain(args.keyword.iter().map(|k| &k.value)).chain(args.spread.iter()),
        )
        .or_else(|| plugin_namespace(types, ns, &name.name, name.span)),
        ExprKind::Attr(base, _) | ExprKind::Not(base) | ExprKind::IsDefined(base) => expr(types, ns, base),
        ExprKind::List(items) => exprs(types, ns, items.iter()),
        ExprKind::Dict(pairs) => exprs(types, ns, pairs.iter().map(|(_, v)| v)),
        ExprKind::SelectorLookup { base, args, .. } => {
            expr(types, ns, base).or_else(|| exprs(types, ns, args.iter().map(|k| &k.value)))
        }
        ExprKind::MapLookup(a, b) | ExprKind::Binary(_, a, b) => expr(types, ns, a).or_else(|| expr(types, ns, b)),
        ExprKind::Cond(c, a, b) => exprs(types, ns, [c, a, b].into_iter().map(|x| &**x)),
        ExprKind::Comprehension { value, fors, guards } => expr(types, ns, value)
            .or_else(|| exprs(types, ns, fors.iter().map(|(_, iter)| iter)))
            .or_else(|| exprs(types, ns, guards.iter())),
        _ => None,
    }
}
