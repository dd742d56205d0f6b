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
//!
//! A constructor that does not give every attribute of its entity's indexes fails here too, as
//! Inmanta's does at normalisation, unless one is missing and the constructor is assigned to a
//! relation (a constructor argument that is no index attribute, `x.r = ...`), whose other end
//! may give it when it runs.

use super::{Builder, lookup_entity};
use crate::diagnostics::ErrorKind;
use crate::model::{AttrKind, NsId, Types};
use crate::syntax::Span;
use crate::syntax::ast::{Args, Block, Expr, ExprKind, Ident, Stmt, Top};

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
        // an attribute assigned a constructor is the left-hand side that may give its inverse
        Stmt::Assign { target, value, .. } => expr(types, ns, value, matches!(target.kind, ExprKind::Attr(..))),
        Stmt::For { iter, body, .. } => expr(types, ns, iter, false).or_else(|| block(types, ns, body, true)),
        Stmt::If { branches, otherwise, .. } => branches
            .iter()
            .find_map(|(condition, body)| expr(types, ns, condition, false).or_else(|| block(types, ns, body, true)))
            .or_else(|| block(types, ns, otherwise, true)),
        Stmt::Expr(e) => expr(types, ns, e, false),
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

/// Index attributes a constructor neither gives nor has a default for, as Inmanta's
/// `IndexAttributeMissingInConstructorException`; `lhs`: the constructor is assigned to a relation.
fn missing_index(types: &Types<'_>, ns: NsId, class: &Ident, args: &Args, lhs: bool, span: Span) -> Option<Failure> {
    if !args.spread.is_empty() {
        return None;
    }
    let ent = lookup_entity(types, ns, &class.name).ok()?;
    let entity = &types.entities[ent];
    let mut missing = Vec::new();
    for &idx in &entity.indexes {
        for f in &types.indexes[idx].fields {
            let given = args.keyword.iter().any(|k| &k.name.name == f);
            let attr = entity.attr(f).map(|(_, a)| &a.kind);
            if !given && !matches!(attr, Some(AttrKind::Prim { default: Some(_), .. })) {
                missing.push((f, matches!(attr, Some(AttrKind::Rel { .. }))));
            }
        }
    }
    if missing.is_empty() || (lhs && missing.len() == 1) {
        return None;
    }
    let mut message = "Invalid Constructor call:".to_string();
    for (f, relation) in missing {
        let kind = if relation { "relation" } else { "attribute" };
        message.push_str(&format!("\n\t* Missing {kind} '{f}'. The {kind} {}.{f} is part of an index.", entity.name));
    }
    Some((ErrorKind::IndexAttributeMissingInConstructorException, message, span))
}

fn exprs<'e>(types: &Types<'_>, ns: NsId, mut items: impl Iterator<Item = &'e Expr>, lhs: bool) -> Option<Failure> {
    items.find_map(|e| expr(types, ns, e, lhs))
}

fn expr(types: &Types<'_>, ns: NsId, e: &Expr, lhs: bool) -> Option<Failure> {
    match &e.kind {
        ExprKind::Constructor { class, args } => resolve(types, ns, &class.name, class.span)
            .or_else(|| missing_index(types, ns, class, args, lhs, e.span))
            .or_else(|| {
                // an argument that is no index attribute of a known entity is assigned to its
                // relation: the left-hand side of a constructor given there
                let outer = lookup_entity(types, ns, &class.name).ok();
                let in_index = |name: &str| {
                    outer.is_none_or(|o| {
                        types.entities[o].indexes.iter().any(|&i| types.indexes[i].fields.iter().any(|f| f == name))
                    })
                };
                args.keyword
                    .iter()
                    .find_map(|k| expr(types, ns, &k.value, !in_index(&k.name.name) || outer.is_none()))
                    .or_else(|| exprs(types, ns, args.positional.iter().chain(args.spread.iter()), false))
            }),
        // the arguments first: Inmanta normalises a reference's children before its type
        ExprKind::IndexLookup { class, args } => exprs(types, ns, args.iter().map(|k| &k.value), false)
            .or_else(|| resolve(types, ns, &class.name, class.span)),
        // the arguments first, then the plugin's namespace, which must be imported
        ExprKind::Call { name, args } => exprs(
            types,
            ns,
            args.positional.iter().chain(args.keyword.iter().map(|k| &k.value)).chain(args.spread.iter()),
            false,
        )
        .or_else(|| plugin_namespace(types, ns, &name.name, name.span)),
        ExprKind::Attr(base, _) | ExprKind::Not(base) | ExprKind::IsDefined(base) => expr(types, ns, base, false),
        ExprKind::List(items) => exprs(types, ns, items.iter(), lhs),
        ExprKind::Dict(pairs) => exprs(types, ns, pairs.iter().map(|(_, v)| v), false),
        ExprKind::SelectorLookup { base, args, .. } => {
            expr(types, ns, base, false).or_else(|| exprs(types, ns, args.iter().map(|k| &k.value), false))
        }
        ExprKind::MapLookup(a, b) | ExprKind::Binary(_, a, b) => {
            expr(types, ns, a, false).or_else(|| expr(types, ns, b, false))
        }
        ExprKind::Cond(c, a, b) => {
            expr(types, ns, c, false).or_else(|| exprs(types, ns, [a, b].into_iter().map(|x| &**x), lhs))
        }
        ExprKind::Comprehension { value, fors, guards } => expr(types, ns, value, lhs)
            .or_else(|| exprs(types, ns, fors.iter().map(|(_, iter)| iter), false))
            .or_else(|| exprs(types, ns, guards.iter(), false)),
        _ => None,
    }
}
