//! Builds the semantic model ([`Types`]) from the syntax of every loaded namespace.

use crate::diagnostics::ErrorKind;
use std::collections::HashMap;

use crate::diagnostics::Diagnostic;
use crate::model::*;
use crate::syntax::ast::{self, ExprKind, Top};
use crate::syntax::{SourceMap, Span};

use super::value::Value;

mod load_check;

pub(crate) struct Builder<'s, 'a> {
    pub types: Types<'a>,
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    sources: &'s SourceMap,
}

/// Evaluates a literal default value.
pub(crate) fn const_eval(e: &ast::Expr) -> Option<Value> {
    Some(match &e.kind {
        ExprKind::Null => Value::Null,
        ExprKind::Bool(b) => Value::Bool(*b),
        ExprKind::Int(i) => Value::Int(*i),
        ExprKind::BigInt(i) => Value::BigInt(i.clone()),
        ExprKind::Float(f) => Value::Float(*f),
        ExprKind::Str(s) => Value::str(s),
        ExprKind::List(items) => Value::list(items.iter().map(const_eval).collect::<Option<Vec<_>>>()?),
        ExprKind::Dict(pairs) => Value::Dict(std::rc::Rc::new(
            pairs
                .iter()
                .map(|(k, v)| Some((std::rc::Rc::from(k.as_str()), const_eval(v)?)))
                .collect::<Option<Vec<_>>>()?,
        )),
        _ => return None,
    })
}

impl<'s, 'a> Builder<'s, 'a> {
    pub(crate) fn new(sources: &'s SourceMap) -> Self {
        Builder { types: Types::default(), errors: Vec::new(), warnings: Vec::new(), sources }
    }

    fn err(&mut self, kind: ErrorKind, msg: impl Into<String>, span: Span) {
        self.errors.push(Diagnostic::error(kind, msg, Some(span), self.sources));
    }

    pub(crate) fn add_namespace(&mut self, name: &str, file: &'a ast::File) {
        let id = self.types.namespaces.len();
        let mut imports = FastMap::default();
        imports.insert("std".to_string(), "std".to_string());
        let mut seen_alias: HashMap<String, Span> = HashMap::new();
        for item in &file.items {
            if let Top::Import { path, alias, span } = item {
                let key = alias.as_ref().map(|a| a.name.clone()).unwrap_or_else(|| path.name.clone());
                if seen_alias.contains_key(&key) && alias.is_none() {
                    self.err(ErrorKind::DuplicateException, "Two import statements have the same name", *span);
                }
                if let Some(prev) = seen_alias.get(&key)
                    && alias.is_some()
                {
                    let prev_loc =
                        self.sources.location(*prev).map(|l| format!("{}:{}", l.file, l.line)).unwrap_or_default();
                    self.err(
                        ErrorKind::DuplicateException,
                        format!("Import alias '{key}' is already used (at {prev_loc})"),
                        *span,
                    );
                }
                seen_alias.insert(key.clone(), *span);
                imports.insert(key, path.name.clone());
            }
        }
        self.types.namespaces.push(Namespace { name: name.to_string(), imports, file: Some(file) });
        self.types.ns_by_name.insert(name.to_string(), id);
    }

    fn resolve_entity(&mut self, ns: NsId, r: &ast::Ident) -> Option<EntId> {
        match self.lookup_entity(ns, &r.name) {
            Ok(e) => Some(e),
            Err((kind, msg)) => {
                self.err(kind, msg, r.span);
                None
            }
        }
    }

    pub(crate) fn lookup_entity(&self, ns: NsId, name: &str) -> Result<EntId, (ErrorKind, String)> {
        lookup_entity(&self.types, ns, name)
    }

    pub(crate) fn resolve_type(&mut self, ns: NsId, r: &ast::TypeRef) -> Option<Type> {
        let base = match r.name.name.as_str() {
            "string" => Type::String,
            "int" => Type::Int,
            "float" => Type::Float,
            "bool" => Type::Bool,
            "dict" => Type::Dict,
            "list" => Type::List,
            "number" => {
                self.warnings.push(Diagnostic::warning(
                    ErrorKind::TypeDeprecationWarning,
                    "Type 'number' is deprecated, use float or int instead",
                    Some(r.name.span),
                    self.sources,
                ));
                Type::Number
            }
            other => match lookup_typedef(&self.types, ns, other) {
                Ok(t) => Type::Typedef(t),
                Err((kind, msg)) => {
                    if lookup_entity(&self.types, ns, other).is_ok() {
                        self.err(
                            ErrorKind::TypingException,
                            format!("Entity type {other} can not be used as an attribute type; use a relation"),
                            r.name.span,
                        );
                    } else {
                        self.err(kind, msg, r.name.span);
                    }
                    return None;
                }
            },
        };
        let t = if r.list { Type::TypedList(Box::new(base)) } else { base };
        Some(if r.nullable { Type::Nullable(Box::new(t)) } else { t })
    }

    pub(crate) fn build(&mut self) {
        let nss: Vec<(NsId, &'a ast::File)> =
            self.types.namespaces.iter().enumerate().filter_map(|(i, n)| n.file.map(|f| (i, f))).collect();
        // 1. entity and typedef names
        for &(ns, file) in &nss {
            let nsname = self.types.namespaces[ns].name.clone();
            for item in &file.items {
                match item {
                    Top::Entity(def) => {
                        let full = format!("{nsname}::{}", def.name.name);
                        if let Some(&prev) = self.types.entity_by_name.get(&full) {
                            let pl = self.loc(self.types.entities[prev].span);
                            self.err(
                                ErrorKind::DuplicateException,
                                format!("Entity {full} is already defined at {pl}"),
                                def.name.span,
                            );
                            continue;
                        }
                        let id = self.types.entities.len();
                        self.types.entities.push(Entity {
                            name: full.clone(),
                            ns,
                            parents: vec![],
                            ancestors: vec![],
                            descendants: vec![],
                            own: vec![],
                            attrs: std::rc::Rc::from([]),
                            attr_index: FastMap::default(),
                            implements: vec![],
                            indexes: vec![],
                            span: def.name.span,
                            def: Some(def),
                        });
                        self.types.entity_by_name.insert(full, id);
                    }
                    Top::Typedef { name, base, constraint, .. } => {
                        let full = format!("{nsname}::{}", name.name);
                        if self.types.typedef_by_name.contains_key(&full)
                            || self.types.entity_by_name.contains_key(&full)
                        {
                            self.err(
                                ErrorKind::DuplicateException,
                                format!("Type {full} is already defined"),
                                name.span,
                            );
                            continue;
                        }
                        let _ = base;
                        let regex = match &constraint.kind {
                            ExprKind::Regex(r) => fancy_regex::Regex::new(&format!("^(?:{r})")).ok(),
                            _ => None,
                        };
                        if !matches!(constraint.kind, ExprKind::Regex(_))
                            && !reads_var(constraint, "self")
                            && !reads_var(constraint, &name.name)
                        {
                            self.err(
                                ErrorKind::TypingException,
                                "typedef expressions should reference the self variable".to_string(),
                                name.span,
                            );
                        }
                        let id = self.types.typedefs.len();
                        self.types.typedefs.push(Typedef { name: full.clone(), base: Type::Any, ns, regex });
                        self.types.typedef_constraints.push(match &constraint.kind {
                            ExprKind::Regex(_) => None,
                            _ => Some(constraint),
                        });
                        self.types.typedef_by_name.insert(full, id);
                    }
                    _ => {}
                }
            }
        }
        // typedef base types
        for &(ns, file) in &nss {
            let nsname = self.types.namespaces[ns].name.clone();
            for item in &file.items {
                if let Top::Typedef { name, base, .. } = item {
                    let full = format!("{nsname}::{}", name.name);
                    let Some(&id) = self.types.typedef_by_name.get(&full) else { continue };
                    if self.types.typedefs[id].ns != ns {
                        continue;
                    }
                    let tr = ast::TypeRef { name: base.clone(), list: false, nullable: false };
                    if let Some(t) = self.resolve_type(ns, &tr) {
                        self.types.typedefs[id].base = t;
                    }
                }
            }
        }
        // 2. parents
        let std_entity = self.types.entity_by_name.get("std::Entity").copied();
        for id in 0..self.types.entities.len() {
            let ns = self.types.entities[id].ns;
            let def = self.types.entities[id].def.expect("entity def");
            let mut parents = Vec::new();
            if def.parents.iter().enumerate().any(|(i, p)| def.parents[..i].iter().any(|q| q.name == p.name)) {
                self.err(ErrorKind::TypingException, "same parent defined twice".to_string(), def.name.span);
            }
            for p in &def.parents {
                if let Some(pid) = self.resolve_entity(ns, p) {
                    if parents.contains(&pid) {
                        continue;
                    }
                    parents.push(pid);
                }
            }
            if parents.is_empty()
                && let Some(se) = std_entity
                && se != id
            {
                parents.push(se);
            }
            self.types.entities[id].parents = parents;
        }
        // ancestors with cycle detection
        let n = self.types.entities.len();
        let mut order = Vec::new();
        let mut state = vec![0u8; n];
        let mut cyclic = vec![false; n];
        for id in 0..n {
            self.visit(id, &mut state, &mut order, &mut cyclic, 0);
        }
        for &id in &order {
            let mut anc = Vec::new();
            for &p in &self.types.entities[id].parents.clone() {
                if cyclic[p] {
                    continue;
                }
                if !anc.contains(&p) {
                    anc.push(p);
                }
                for &a in &self.types.entities[p].ancestors {
                    if !anc.contains(&a) {
                        anc.push(a);
                    }
                }
            }
            self.types.entities[id].ancestors = anc;
        }
        for id in 0..n {
            for a in self.types.entities[id].ancestors.clone() {
                self.types.entities[a].descendants.push(id);
            }
        }
        // 3. own attributes
        for id in 0..n {
            let ns = self.types.entities[id].ns;
            let def = self.types.entities[id].def.expect("entity def");
            let mut own: Vec<Attribute> = Vec::new();
            for a in &def.attrs {
                if let Some(first) = own.iter().find(|o| o.name == a.name.name) {
                    // Inmanta places it at the first definition
                    self.err(
                        ErrorKind::DuplicateException,
                        format!(
                            "Attribute {} is defined twice in entity {}",
                            a.name.name, self.types.entities[id].name
                        ),
                        first.span,
                    );
                    continue;
                }
                let Some(ty) = self.resolve_type(ns, &a.ty) else { continue };
                let (default, undef) = match &a.default {
                    ast::Default::None => (None, false),
                    ast::Default::Undef => (None, true),
                    ast::Default::Value(e) => match const_eval(e) {
                        Some(v) => (Some(v), false),
                        None => {
                            self.err(
                                ErrorKind::RuntimeException,
                                format!("The default value of attribute {} must be a constant", a.name.name),
                                a.name.span,
                            );
                            (None, false)
                        }
                    },
                };
                own.push(Attribute {
                    name: a.name.name.clone(),
                    kind: AttrKind::Prim { ty, default, undef },
                    owner: id,
                    span: a.name.span,
                });
            }
            self.types.entities[id].own = own;
        }
        // 4. relations
        for &(ns, file) in &nss {
            for item in &file.items {
                let Top::Relation { left, right, annotations, span } = item else { continue };
                for a in annotations {
                    // an annotation is a value of the namespace: a plain name must be assigned there
                    if let ExprKind::Var(name) = &a.kind
                        && !name.contains("::")
                        && !file.items.iter().any(|t| {
                            matches!(t, Top::Stmt(ast::Stmt::Assign { target, add: false, .. })
                                if matches!(&target.kind, ExprKind::Var(n) if n == name))
                        })
                    {
                        self.err(ErrorKind::NotFoundException, super::var_not_found(name), a.span);
                    }
                    if let ExprKind::Var(name) = &a.kind
                        && name.contains("::")
                        && let Err(Some(full)) = self.types.qualify(ns, name)
                    {
                        self.err(
                            ErrorKind::MissingImportException,
                            format!("Annotation {full} is used without importing its module"),
                            a.span,
                        );
                    }
                }
                let (Some(l), Some(r)) = (self.resolve_entity(ns, &left.class), self.resolve_entity(ns, &right.class))
                else {
                    continue;
                };
                let lattr = left.attr.as_ref().expect("left side of a relation has a name");
                let rname = right.attr.as_ref().map(|a| a.name.clone());
                // Inmanta accepts `[3:1]` (no instance can then be complete) but not `[0]`
                for (m, ms) in [(left.multi, left.multi_span), (right.multi, right.multi_span)] {
                    if let (lo, Some(0)) = m {
                        self.err(ErrorKind::ParserException, format!("Invalid multiplicity [{lo}:0]"), ms);
                    }
                }
                // attribute on the left entity, pointing at the right
                self.add_rel(l, lattr, r, left.multi, rname.clone(), *span);
                if let Some(ra) = &right.attr
                    // a self relation with one name on both ends (`Node.peer -- Node.peer`) is one attribute
                    && !(l == r && ra.name == lattr.name)
                {
                    self.add_rel(r, ra, l, right.multi, Some(lattr.name.clone()), *span);
                }
            }
        }
        // 5. flatten attributes in topological order
        for &id in &order {
            let mut attrs: Vec<Attribute> = Vec::new();
            let mut index: FastMap<String, usize> = FastMap::default();
            for &p in &self.types.entities[id].parents {
                if cyclic[p] {
                    continue;
                }
                for a in self.types.entities[p].attrs.iter() {
                    if let Some(&i) = index.get(&a.name) {
                        if attrs[i].owner != a.owner && !a.is_relation() {
                            // diamond or override between parents: later parent only fills missing defaults
                            continue;
                        }
                        continue;
                    }
                    index.insert(a.name.clone(), attrs.len());
                    attrs.push(a.clone());
                }
            }
            for a in self.types.entities[id].own.clone() {
                match index.get(&a.name) {
                    Some(&i) => {
                        // Inmanta refuses a relation that redefines a parent's attribute, but lets a
                        // plain attribute shadow a parent's relation (files::systemd_unit::Unit's
                        // `string[] requires` over std::Entity.requires)
                        if a.is_relation() {
                            let en = self.types.entities[id].name.clone();
                            self.err(
                                ErrorKind::DuplicateException,
                                format!("Attribute {} of {en} is already defined in a parent entity", a.name),
                                a.span,
                            );
                            continue;
                        }
                        // a plain attribute may restate a parent's one (e.g. a new default) but not
                        // change its type or nullability
                        if let (AttrKind::Prim { ty: new, .. }, AttrKind::Prim { ty: old, .. }) =
                            (&a.kind, &attrs[i].kind)
                            && new != old
                        {
                            let en = self.types.entities[id].name.clone();
                            self.err(
                                ErrorKind::DuplicateException,
                                format!(
                                    "Incompatible attributes: {en}.{} redefines the attribute of a parent entity with another type",
                                    a.name
                                ),
                                a.span,
                            );
                            continue;
                        }
                        attrs[i] = a;
                    }
                    None => {
                        index.insert(a.name.clone(), attrs.len());
                        attrs.push(a);
                    }
                }
            }
            self.types.entities[id].attrs = attrs.into();
            self.types.entities[id].attr_index = index;
        }
        // 6. indexes
        for &(ns, file) in &nss {
            for item in &file.items {
                let Top::Index { class, fields, .. } = item else { continue };
                let Some(e) = self.resolve_entity(ns, class) else { continue };
                let mut ok = true;
                for f in fields {
                    match self.types.entities[e].attr(&f.name) {
                        None => {
                            let en = self.types.entities[e].name.clone();
                            self.err(
                                ErrorKind::NotFoundException,
                                format!("Attribute {} in index of {en} does not exist", f.name),
                                f.span,
                            );
                            ok = false;
                        }
                        Some((_, a)) => {
                            let bad = match &a.kind {
                                // Inmanta refuses only the `[]` lists (a plain `list` attribute is one value)
                                AttrKind::Prim { ty, .. } => {
                                    matches!(ty, Type::TypedList(_))
                                        || matches!(ty, Type::Nullable(t) if matches!(**t, Type::TypedList(_)))
                                }
                                AttrKind::Rel { lo, hi, .. } => *hi != Some(1) || *lo == 0,
                            };
                            if bad {
                                let en = self.types.entities[e].name.clone();
                                self.err(
                                    ErrorKind::IndexException,
                                    format!("Index on {en} can not contain {}: index attributes must be single valued and not optional (`[]` list attributes and [0:1] relations are not allowed)", f.name),
                                    f.span,
                                );
                                ok = false;
                            }
                        }
                    }
                }
                if !ok {
                    continue;
                }
                let idx = self.types.indexes.len();
                self.types.indexes.push(Index { entity: e, fields: fields.iter().map(|f| f.name.clone()).collect() });
                self.types.entities[e].indexes.push(idx);
                for d in self.types.entities[e].descendants.clone() {
                    self.types.entities[d].indexes.push(idx);
                }
            }
        }
        // 7. implementations
        for &(ns, file) in &nss {
            let nsname = self.types.namespaces[ns].name.clone();
            for item in &file.items {
                let Top::Implementation { name, entity, body, span } = item else { continue };
                let Some(e) = self.resolve_entity(ns, entity) else { continue };
                let full = format!("{nsname}::{}", name.name);
                if self.types.impl_by_name.contains_key(&full) {
                    self.err(
                        ErrorKind::DuplicateException,
                        format!("Implementation {full} is already defined"),
                        name.span,
                    );
                    continue;
                }
                self.types.impl_by_name.insert(full, self.types.implementations.len());
                self.types.implementations.push(Implementation { entity: e, body, ns, span: *span });
            }
        }
        // 8. implement statements (own), then `parents` expansion in topological order
        let mut raw: Vec<Vec<(ImplementStmt<'a>, bool)>> = vec![Vec::new(); n];
        for &(ns, file) in &nss {
            for item in &file.items {
                let Top::Implement { entity, impls, when, .. } = item else { continue };
                let Some(e) = self.resolve_entity(ns, entity) else { continue };
                let mut ids = Vec::new();
                let mut parents = false;
                for i in impls {
                    if i.name == "parents" {
                        parents = true;
                        continue;
                    }
                    match lookup_impl(&self.types, ns, &i.name) {
                        Ok(id) => {
                            let ie = self.types.implementations[id].entity;
                            if !self.types.is_subtype(e, ie) {
                                let (a, b) =
                                    (self.types.entities[e].name.clone(), self.types.entities[ie].name.clone());
                                self.err(
                                    ErrorKind::TypingException,
                                    format!("Implementation {} is for {b}, not for {a}", i.name),
                                    i.span,
                                );
                                continue;
                            }
                            // an implementation listed twice runs once
                            if !ids.contains(&id) {
                                ids.push(id);
                            }
                        }
                        Err((kind, msg)) => self.err(kind, msg, i.span),
                    }
                }
                raw[e].push((ImplementStmt { impls: ids, when: when.as_ref(), ns }, parents));
            }
        }
        for &id in &order {
            let mut list = Vec::new();
            for (stmt, parents) in std::mem::take(&mut raw[id]) {
                if parents {
                    for &p in &self.types.entities[id].parents {
                        list.extend(self.types.entities[p].implements.iter().cloned());
                    }
                }
                if !stmt.impls.is_empty() {
                    list.push(stmt);
                }
            }
            self.types.entities[id].implements = list;
        }
        self.check_dataclasses();
        self.check_constructor_types();
    }

    /// A dataclass of the main file has no Python module to pair with (the rules of the others
    /// are checked when they are paired with their Python class: `python::pair_dataclasses`).
    fn check_dataclasses(&mut self) {
        let Some(&dc) = self.types.entity_by_name.get("std::Dataclass") else { return };
        for id in self.types.entities[dc].descendants.clone() {
            let e = &self.types.entities[id];
            if self.types.namespaces[e.ns].name == "__config__" {
                // Inmanta looks for the Python class of a dataclass in the module's plugins; the
                // main file has none
                self.errors.push(Diagnostic::plain(
                    ErrorKind::ModuleNotFoundError,
                    format!(
                        "No module named 'inmanta_plugins.__config__' (the dataclass {} needs a Python class)",
                        e.name
                    ),
                ));
            }
        }
    }

    fn loc(&self, span: Span) -> String {
        self.sources.location(span).map(|l| format!("{}:{}", l.file, l.line)).unwrap_or_default()
    }

    fn add_rel(
        &mut self,
        on: EntId,
        attr: &ast::Ident,
        target: EntId,
        multi: (u32, Option<u32>),
        reverse: Option<String>,
        span: Span,
    ) {
        if let Some(first) = self.types.entities[on].own.iter().find(|a| a.name == attr.name) {
            let en = self.types.entities[on].name.clone();
            // Inmanta places it at the attribute that was there first
            let at = first.span;
            self.err(ErrorKind::DuplicateException, format!("Attribute {} of {en} is already defined", attr.name), at);
            return;
        }
        let _ = span;
        self.types.entities[on].own.push(Attribute {
            name: attr.name.clone(),
            kind: AttrKind::Rel { target, lo: multi.0, hi: multi.1, reverse },
            owner: on,
            span: attr.span,
        });
    }

    fn visit(&mut self, id: EntId, state: &mut Vec<u8>, order: &mut Vec<EntId>, cyclic: &mut Vec<bool>, depth: usize) {
        if state[id] == 2 {
            return;
        }
        if state[id] == 1 || depth > 200 {
            if !cyclic[id] {
                cyclic[id] = true;
                let (name, span) = (self.types.entities[id].name.clone(), self.types.entities[id].span);
                self.err(
                    ErrorKind::CycleException,
                    format!("Entity {name} is its own ancestor (inheritance cycle)"),
                    span,
                );
            }
            return;
        }
        state[id] = 1;
        for p in self.types.entities[id].parents.clone() {
            if state[p] == 1 && !cyclic[p] {
                // Inmanta places the cycle at the entity whose parent closes it
                cyclic[p] = true;
                let (name, span) = (self.types.entities[p].name.clone(), self.types.entities[id].span);
                self.err(
                    ErrorKind::CycleException,
                    format!("Entity {name} is its own ancestor (inheritance cycle)"),
                    span,
                );
                continue;
            }
            self.visit(p, state, order, cyclic, depth + 1);
        }
        state[id] = 2;
        order.push(id);
    }
}

/// What makes a dataclass invalid in the model alone: a relation (`with_relations`: when no
/// Python class was compared with it), an index, an implementation other than `std::none`.
pub(crate) fn dataclass_problems(types: &Types<'_>, id: EntId, with_relations: bool) -> Vec<String> {
    let e = &types.entities[id];
    let none = types.impl_by_name.get("std::none").copied();
    let mut problems = Vec::new();
    if with_relations {
        for a in e.attrs.iter() {
            if a.is_relation() && a.name != "requires" && a.name != "provides" {
                problems.push(format!("it has a relation {}", a.name));
            }
        }
    }
    // Inmanta checks the implementations before the indexes
    if e.implements.iter().any(|i| i.when.is_some() || i.impls.iter().any(|x| Some(*x) != none)) {
        problems.push("it has an implementation other than std::none".to_string());
    }
    if !e.indexes.is_empty() {
        problems.push("it has an index".to_string());
    }
    problems
}

fn lookup_named(
    types: &Types<'_>,
    map: &FastMap<String, usize>,
    ns: NsId,
    name: &str,
    what: &str,
) -> Result<usize, (ErrorKind, String)> {
    match types.qualify(ns, name) {
        Ok(cands) => {
            for c in &cands {
                if let Some(&id) = map.get(c) {
                    return Ok(id);
                }
            }
            let nsname = &types.namespaces[ns].name;
            if !name.contains("::") && map.contains_key(&format!("std::{name}")) {
                return Err((
                    ErrorKind::TypeNotFoundException,
                    format!("could not find type {name} in namespace {nsname} (did you mean std::{name}?)"),
                ));
            }
            Err((ErrorKind::TypeNotFoundException, format!("could not find {what} {name} in namespace {nsname}")))
        }
        Err(Some(full)) => {
            // Inmanta: a name whose namespace is not imported is a missing import, whether or not
            // that namespace defines it
            let module = full.rsplit_once("::").map(|x| x.0).unwrap_or("");
            Err((
                ErrorKind::MissingImportException,
                format!(
                    "could not find {what} {name} in namespace {}: module {module} is not imported (import {module})",
                    types.namespaces[ns].name
                ),
            ))
        }
        Err(None) => Err((ErrorKind::TypeNotFoundException, format!("could not find {what} {name}"))),
    }
}

pub(crate) fn lookup_entity(types: &Types<'_>, ns: NsId, name: &str) -> Result<EntId, (ErrorKind, String)> {
    lookup_named(types, &types.entity_by_name, ns, name, "type")
}

pub(crate) fn lookup_typedef(types: &Types<'_>, ns: NsId, name: &str) -> Result<usize, (ErrorKind, String)> {
    lookup_named(types, &types.typedef_by_name, ns, name, "type")
}

pub(crate) fn lookup_impl(types: &Types<'_>, ns: NsId, name: &str) -> Result<usize, (ErrorKind, String)> {
    lookup_named(types, &types.impl_by_name, ns, name, "implementation")
}

/// Whether an expression reads variable `name` (directly, through an attribute or in a string).
fn reads_var(e: &ast::Expr, name: &str) -> bool {
    use ast::{FPart, StrPart};
    let args = |a: &ast::Args| {
        a.positional.iter().chain(a.keyword.iter().map(|k| &k.value)).chain(&a.spread).any(|x| reads_var(x, name))
    };
    fn in_fparts(parts: &[FPart], name: &str) -> bool {
        parts.iter().any(|p| match p {
            FPart::Lit(_) => false,
            FPart::Field { path, spec, .. } => path.first().is_some_and(|f| f == name) || in_fparts(spec, name),
        })
    }
    match &e.kind {
        ExprKind::Var(v) => v == name,
        ExprKind::Interp(parts) => {
            parts.iter().any(|p| matches!(p, StrPart::Var(path, _) if path.first().is_some_and(|f| f == name)))
        }
        ExprKind::FStr(parts) => in_fparts(parts, name),
        ExprKind::Attr(b, _) | ExprKind::Not(b) | ExprKind::IsDefined(b) => reads_var(b, name),
        ExprKind::List(items) => items.iter().any(|x| reads_var(x, name)),
        ExprKind::Dict(items) => items.iter().any(|(_, x)| reads_var(x, name)),
        ExprKind::Constructor { args: a, .. } | ExprKind::Call { args: a, .. } => args(a),
        ExprKind::IndexLookup { args: a, .. } => a.iter().any(|k| reads_var(&k.value, name)),
        ExprKind::SelectorLookup { base, args: a, .. } => {
            reads_var(base, name) || a.iter().any(|k| reads_var(&k.value, name))
        }
        ExprKind::MapLookup(a, b) | ExprKind::Binary(_, a, b) => reads_var(a, name) || reads_var(b, name),
        ExprKind::Cond(a, b, c) => reads_var(a, name) || reads_var(b, name) || reads_var(c, name),
        ExprKind::Comprehension { value, fors, guards } => {
            reads_var(value, name)
                || fors.iter().any(|(_, x)| reads_var(x, name))
                || guards.iter().any(|x| reads_var(x, name))
        }
        ExprKind::Null
        | ExprKind::Bool(_)
        | ExprKind::Int(_)
        | ExprKind::BigInt(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Regex(_) => false,
    }
}
