//! Expression evaluation.

use std::collections::HashMap;
use std::rc::Rc;

use super::budget::Built;
use super::format::{apply_spec, interp_into, short_repr};
use num_bigint::BigInt;

use super::format::Bounded;
use super::value::{InstId, Value, big_cmp_float, big_to_f64, dict_get, int_cmp_float};
use super::{EResult, Evaluator, Flow, ScopeId, Slot, Wait, error};
use crate::builtins::{PErr, PluginCall};
use crate::model::{AttrKind, EntId, NsId};
use crate::syntax::Span;
use crate::syntax::ast::{Args, BinOp, Expr, ExprKind, FPart, Ident, KwArg, StrPart};

/// Evaluation context of one statement run.
pub(crate) struct Cx<'c> {
    pub scope: ScopeId,
    pub ns: NsId,
    pub cache: &'c mut Vec<Value>,
    pub seq: usize,
    pub locals: Vec<(Rc<str>, Value)>,
    /// Target entity of the relation being assigned (for inferred short class names).
    pub infer: Option<EntId>,
    pub depth: usize,
    /// Evaluating a typedef's constraint: only `self` (and the expression's own loop names)
    /// can be read, as Inmanta runs it with `self` as its only variable.
    pub constraint: bool,
}

impl<'c> Cx<'c> {
    pub(crate) fn new(scope: ScopeId, ns: NsId, cache: &'c mut Vec<Value>) -> Self {
        Cx { scope, ns, cache, seq: 0, locals: Vec::new(), infer: None, depth: 0, constraint: false }
    }
}

pub(crate) fn describe_expr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Var(n) => n.clone(),
        ExprKind::Attr(b, a) => format!("{}.{}", describe_expr(b), a.name),
        _ => "expression".into(),
    }
}

fn typing(msg: String, span: Span, ev: &Evaluator<'_>) -> Flow {
    error("TypingException", msg, span, ev.sources)
}

impl<'a> Evaluator<'a> {
    pub(crate) fn eval(&mut self, e: &'a Expr, cx: &mut Cx) -> EResult<Value> {
        cx.depth += 1;
        if cx.depth > 1500 {
            cx.depth -= 1;
            return Err(error("RuntimeException", "Expression nested too deeply", e.span, self.m.sources));
        }
        let r = self.eval_inner(e, cx);
        cx.depth -= 1;
        r
    }

    fn eval_inner(&mut self, e: &'a Expr, cx: &mut Cx) -> EResult<Value> {
        match &e.kind {
            ExprKind::Null => Ok(Value::Null),
            ExprKind::Bool(b) => Ok(Value::Bool(*b)),
            ExprKind::Int(i) => Ok(Value::Int(*i)),
            ExprKind::BigInt(i) => Ok(Value::BigInt(i.clone())),
            ExprKind::Float(f) => Ok(Value::Float(*f)),
            ExprKind::Str(s) => Ok(Value::str(s)),
            ExprKind::Regex(_) => {
                Err(error("TypingException", "A regex can only be used in a typedef", e.span, self.m.sources))
            }
            ExprKind::Interp(_) if cx.constraint => Err(error(
                "DirectExecuteException",
                "A string interpolation can not be executed in a type constraint".to_string(),
                e.span,
                self.sources,
            )),
            ExprKind::Interp(parts) => {
                let mut out = self.string_buffer();
                for p in parts {
                    match p {
                        StrPart::Lit(s) => _ = out.push(s),
                        StrPart::Var(path, span) => {
                            let v = self.read_path(path, *span, cx)?;
                            if v.is_unknown() {
                                return Ok(v);
                            }
                            crate::references::refuse_in_format(self, &v, path, *span)?;
                            interp_into(&v, &|i| self.inst_name(i), &mut out);
                        }
                    }
                }
                self.built_string(out, e.span)
            }
            ExprKind::FStr(parts) => {
                let mut out = self.string_buffer();
                if let Some(u) = self.fstring(parts, e.span, cx, &mut out)? {
                    return Ok(u);
                }
                self.built_string(out, e.span)
            }
            ExprKind::Var(name) => self.eval_var(name, e.span, cx),
            ExprKind::Attr(obj, attr) => {
                let o = self.eval(obj, cx)?;
                if o.is_unknown() {
                    // Inmanta refuses an attribute reference on an unknown (only `is defined`
                    // and plugins that accept unknowns see through them)
                    return Err(error(
                        "RuntimeException",
                        format!(
                            "can not get attribute {}, {} is not an entity but an unknown value",
                            attr.name,
                            describe_expr(obj)
                        ),
                        attr.span,
                        self.m.sources,
                    ));
                }
                self.read_attr(&o, &attr.name, attr.span, obj)
            }
            ExprKind::List(items) => {
                let mut out = Vec::with_capacity(items.len());
                for i in items {
                    match self.eval(i, cx)? {
                        // a list in a list literal is spliced: charged, and made room for exactly
                        Value::List(l) => {
                            self.charge(Built::List(l.len()), e.span)?;
                            out.reserve_exact(l.len());
                            out.extend(l.iter().cloned());
                        }
                        v => out.push(v),
                    }
                }
                Ok(Value::list(out))
            }
            ExprKind::Dict(pairs) => {
                let mut out: Vec<(Rc<str>, Value)> = Vec::with_capacity(pairs.len());
                for (k, v) in pairs {
                    let v = self.eval(v, cx)?;
                    if let Some(slot) = out.iter_mut().find(|(ek, _)| &**ek == k.as_str()) {
                        slot.1 = v;
                    } else {
                        out.push((Rc::from(k.as_str()), v));
                    }
                }
                Ok(Value::Dict(Rc::new(out)))
            }
            ExprKind::Constructor { class, args } => self.construct(class, args, e.span, cx),
            ExprKind::Call { name, args } => self.call(name, args, e.span, cx),
            ExprKind::IndexLookup { class, args } => {
                let ent = self.resolve_class(cx.ns, class, cx.infer)?;
                let owned = match self.lookup_args(args, cx)? {
                    Ok(owned) => owned,
                    Err(unknown) => return Ok(unknown),
                };
                let vals = owned.iter().map(|(k, v, s)| (&**k, v.clone(), *s)).collect();
                self.index_lookup(ent, vals, e.span)
            }
            ExprKind::SelectorLookup { base, attr, args } => {
                let b = self.eval(base, cx)?;
                let inst = match b {
                    Value::Instance(i) => i,
                    Value::Unknown(_) => return Ok(b),
                    other => {
                        return Err(typing(
                            format!("Can not look up {} on {}", attr.name, self.repr(&other)),
                            base.span,
                            self,
                        ));
                    }
                };
                let ent = self.entity_of(inst);
                let Some((_, a)) = ent.attr(&attr.name) else {
                    return Err(error(
                        "NotFoundException",
                        format!("Entity {} has no attribute {}", ent.name, attr.name),
                        attr.span,
                        self.m.sources,
                    ));
                };
                let AttrKind::Rel { target, reverse: Some(rev), .. } = &a.kind else {
                    return Err(typing(
                        format!(
                            "{}.{} is not a bidirectional relation, a selector lookup is not possible",
                            ent.name, attr.name
                        ),
                        attr.span,
                        self,
                    ));
                };
                let (target, rev) = (*target, rev.clone());
                let owned = match self.lookup_args(args, cx)? {
                    Ok(owned) => owned,
                    Err(unknown) => return Ok(unknown),
                };
                let mut vals: Vec<(&str, Value, Span)> = vec![(rev.as_str(), Value::Instance(inst), attr.span)];
                vals.extend(owned.iter().map(|(k, v, s)| (&**k, v.clone(), *s)));
                let vals: Vec<(&str, Value, Span)> = vals.into_iter().collect();
                // rev borrows a local; copy into owned names
                let owned: Vec<(String, Value, Span)> =
                    vals.into_iter().map(|(n, v, s)| (n.to_string(), v, s)).collect();
                let refs: Vec<(&str, Value, Span)> =
                    owned.iter().map(|(n, v, s)| (n.as_str(), v.clone(), *s)).collect();
                self.index_lookup(target, refs, e.span)
            }
            ExprKind::MapLookup(d, k) => {
                let dv = self.eval(d, cx)?;
                let kv = self.eval(k, cx)?;
                match (&dv, &kv) {
                    (Value::Unknown(_), _) | (_, Value::Unknown(_)) => Ok(Value::Unknown(unknown_of(&dv, &kv))),
                    (Value::Dict(m), Value::Str(s)) => match dict_get(m, s) {
                        Some(v) => Ok(v.clone()),
                        None => Err(error(
                            "KeyException",
                            format!(
                                "key {} not found in dict, available keys are {}",
                                super::format::py_repr_str(s),
                                super::format::shown_keys(m)
                            ),
                            k.span,
                            self.m.sources,
                        )),
                    },
                    (Value::Dict(_), other) => {
                        Err(typing(format!("dict keys are strings, got {}", self.repr(other)), k.span, self))
                    }
                    (other, _) => Err(typing(
                        format!(
                            "[] lookup is only possible on a dict, not on {} {}",
                            other.type_name(),
                            self.repr(other)
                        ),
                        d.span,
                        self,
                    )),
                }
            }
            ExprKind::Binary(op, l, r) => self.binary(*op, l, r, e.span, cx),
            ExprKind::Not(inner) => {
                let v = self.eval(inner, cx)?;
                match v {
                    Value::Unknown(_) => Ok(v),
                    Value::Bool(b) => Ok(Value::Bool(!b)),
                    other => Err(error(
                        "RuntimeException",
                        format!("Invalid value {}: `not` expects a bool", self.repr(&other)),
                        e.span,
                        self.m.sources,
                    )),
                }
            }
            ExprKind::IsDefined(inner) => self.is_defined(inner, cx),
            ExprKind::Cond(c, a, b) => {
                let cv = self.eval(c, cx)?;
                match cv {
                    Value::Unknown(_) => Ok(cv),
                    Value::Bool(true) => self.eval(a, cx),
                    Value::Bool(false) => self.eval(b, cx),
                    other => Err(error(
                        "RuntimeException",
                        format!("The condition of a conditional expression must be a bool, got {}", self.repr(&other)),
                        c.span,
                        self.m.sources,
                    )),
                }
            }
            ExprKind::Comprehension { value, fors, guards } => {
                let mut out = Vec::new();
                self.comprehension(value, fors, guards, 0, cx, &mut out)?;
                Ok(Value::list(out))
            }
        }
    }

    /// The keyword arguments of an index or selector lookup, `**dict` spread; `Err` holds an
    /// unknown spread dict (the lookup is then unknown).
    #[allow(clippy::type_complexity)]
    fn lookup_args(&mut self, args: &'a [KwArg], cx: &mut Cx) -> EResult<Result<Vec<(Rc<str>, Value, Span)>, Value>> {
        let mut out = Vec::new();
        for KwArg { name, value } in args {
            let v = self.eval(value, cx)?;
            if name.name != "**" {
                out.push((Rc::from(name.name.as_str()), v, name.span));
                continue;
            }
            match v {
                Value::Dict(d) => out.extend(d.iter().map(|(k, x)| (k.clone(), x.clone(), value.span))),
                Value::Unknown(_) => return Ok(Err(v)),
                other => {
                    return Err(typing(format!("Can not spread {} in a lookup", self.repr(&other)), value.span, self));
                }
            }
        }
        Ok(Ok(out))
    }

    fn comprehension(
        &mut self,
        value: &'a Expr,
        fors: &'a [(Ident, Expr)],
        guards: &'a [Expr],
        level: usize,
        cx: &mut Cx,
        out: &mut Vec<Value>,
    ) -> EResult<()> {
        if level == fors.len() {
            for g in guards {
                let gv = self.eval(g, cx)?;
                match gv {
                    Value::Unknown(_) => {
                        out.push(gv);
                        return Ok(());
                    }
                    Value::Bool(true) => {}
                    Value::Bool(false) => return Ok(()),
                    other => {
                        return Err(error(
                            "RuntimeException",
                            format!("The condition of a list comprehension must be a bool, got {}", self.repr(&other)),
                            g.span,
                            self.m.sources,
                        ));
                    }
                }
            }
            // as Inmanta: a list result is spliced into the outer list
            let v = self.eval(value, cx)?;
            self.charge(Built::List(if let Value::List(l) = &v { l.len() } else { 1 }), value.span)?;
            match v {
                Value::List(l) => out.extend(l.iter().cloned()),
                v => out.push(v),
            }
            return Ok(());
        }
        let (var, iter) = &fors[level];
        let it = self.eval(iter, cx)?;
        let items: Vec<Value> = match it {
            Value::List(l) => l.iter().cloned().collect(),
            Value::Instance(_) => vec![it],
            Value::Null => vec![],
            Value::Unknown(_) => {
                out.push(it);
                return Ok(());
            }
            other => {
                return Err(typing(
                    format!("Can not iterate over {} {}", other.type_name(), self.repr(&other)),
                    iter.span,
                    self,
                ));
            }
        };
        for item in items {
            if item.is_unknown() {
                out.push(item);
                continue;
            }
            cx.locals.push((Rc::from(var.name.as_str()), item));
            let r = self.comprehension(value, fors, guards, level + 1, cx, out);
            cx.locals.pop();
            r?;
        }
        Ok(())
    }

    fn fstring(&mut self, parts: &'a [FPart], span: Span, cx: &mut Cx, out: &mut Bounded) -> EResult<Option<Value>> {
        for p in parts {
            match p {
                FPart::Lit(s) => _ = out.push(s),
                FPart::Field { path, conversion, spec, span: fspan } => {
                    if path.is_empty() {
                        let msg = "f-strings do not support positional substitutions via '{}', use variable or attribute keys instead";
                        return Err(error("RuntimeException", msg, span, self.m.sources));
                    }
                    let v = match self.read_path(path, *fspan, cx)? {
                        Value::Unknown(u) => return Ok(Some(Value::Unknown(u))),
                        // Inmanta hands an integral float to the formatter as an int
                        Value::Float(f) if f.fract() == 0.0 => super::value::int_of_integral_float(f),
                        v => v,
                    };
                    let mut spec_s = self.string_buffer();
                    if let Some(u) = self.fstring(spec, span, cx, &mut spec_s)? {
                        return Ok(Some(u));
                    }
                    self.refuse_cut(&spec_s, span)?;
                    self.check_rendering(&v, span)?;
                    let v = match conversion {
                        Some('r') => Value::str(&super::format::py_repr(&v, &|i| self.inst_name(i))),
                        Some('s') => Value::str(&super::format::py_str(&v, &|i| self.inst_name(i))),
                        _ => v,
                    };
                    match apply_spec(&v, &spec_s.text, &|i| self.inst_name(i)) {
                        Ok(s) => _ = out.push(&s),
                        Err(m) if m == super::format::INT_TOO_LARGE => {
                            return Err(error("OverflowError", m, span, self.m.sources));
                        }
                        Err(m) => {
                            return Err(error(
                                "RuntimeException",
                                format!("Invalid f-string format: {m}"),
                                span,
                                self.m.sources,
                            ));
                        }
                    }
                }
            }
        }
        Ok(None)
    }

    /// Reads `a.b.c` for interpolation.
    fn read_path(&mut self, path: &[String], span: Span, cx: &mut Cx) -> EResult<Value> {
        let mut v = self.lookup_short(&path[0], span, cx)?;
        for seg in &path[1..] {
            v = self.read_attr_span(&v, seg, span)?;
        }
        Ok(v)
    }

    fn lookup_short(&mut self, name: &str, span: Span, cx: &mut Cx) -> EResult<Value> {
        if let Some((_, v)) = cx.locals.iter().rev().find(|(n, _)| &**n == name) {
            return Ok(v.clone());
        }
        if let Some(inst) = self.self_attr_in_scope(cx.scope, name) {
            return self.read_attr_span(&Value::Instance(inst), name, span);
        }
        if !self.is_var_declared(cx.scope, name)
            && let Some((_, Value::Instance(inst))) = cx.locals.iter().find(|(n, _)| &**n == "self")
            && self.entity_of(*inst).attr(name).is_some()
        {
            // a `when` condition: the instance's attributes are visible by name
            let inst = *inst;
            return self.read_attr_span(&Value::Instance(inst), name, span);
        }
        self.read_var(cx.scope, name, span)
    }

    fn eval_var(&mut self, name: &str, span: Span, cx: &mut Cx) -> EResult<Value> {
        if cx.constraint && !cx.locals.iter().any(|(n, _)| &**n == name) {
            return Err(error(
                "NotFoundException",
                format!("Unable to resolve `{name}`: a type constraint can not reference variables."),
                span,
                self.m.sources,
            ));
        }
        if let Some(p) = name.rfind("::") {
            let (prefix, short) = (&name[..p], &name[p + 2..]);
            let target = match self.m.types.visible_namespace(cx.ns, prefix) {
                Some(t) => t,
                None => {
                    if self.m.types.ns_by_name.contains_key(prefix) {
                        return Err(error(
                            "MissingImportException",
                            format!("Variable {name} is used but namespace {prefix} is not imported"),
                            span,
                            self.m.sources,
                        ));
                    }
                    return Err(error(
                        "NotFoundException",
                        format!("variable {name} not found: namespace {prefix} is not imported"),
                        span,
                        self.m.sources,
                    ));
                }
            };
            let Some(&ns) = self.m.types.ns_by_name.get(&target) else {
                return Err(error(
                    "NotFoundException",
                    format!("variable {name} not found: namespace {target} is not loaded"),
                    span,
                    self.m.sources,
                ));
            };
            let sc = self.ns_scope(ns);
            if !self.m.scopes[sc as usize].vars.contains_key(short) {
                return Err(error(
                    "NotFoundException",
                    format!("variable {short} not found in namespace {target}"),
                    span,
                    self.m.sources,
                ));
            }
            return self.read_var(sc, short, span);
        }
        self.lookup_short(name, span, cx)
    }

    fn read_attr(&mut self, o: &Value, name: &str, span: Span, obj: &Expr) -> EResult<Value> {
        match o {
            Value::Instance(_) | Value::Unknown(_) => self.read_attr_span(o, name, span),
            Value::Null => Err(error(
                "RuntimeException",
                format!("Can not get attribute {name} of null ({} is not set)", describe_expr(obj)),
                span,
                self.m.sources,
            )),
            Value::List(_) => Err(error(
                "RuntimeException",
                format!(
                    "Can not get attribute {name} of a list ({} holds several values); use a for loop or a list comprehension",
                    describe_expr(obj)
                ),
                span,
                self.m.sources,
            )),
            other => Err(error(
                "RuntimeException",
                format!("Can not get attribute {name} of {} {}", other.type_name(), short_repr(other)),
                span,
                self.m.sources,
            )),
        }
    }

    /// Reads an attribute of an instance, waiting when it is not available yet.
    pub(crate) fn read_attr_span(&mut self, o: &Value, name: &str, span: Span) -> EResult<Value> {
        let inst = match o {
            Value::Instance(i) => *i,
            Value::Unknown(_) => return Ok(o.clone()),
            Value::Null => {
                return Err(error(
                    "OptionalValueException",
                    format!("Can not get attribute {name} of null"),
                    span,
                    self.m.sources,
                ));
            }
            other => {
                return Err(typing(
                    format!("Can not get attribute {name} of {} {}", other.type_name(), short_repr(other)),
                    span,
                    self,
                ));
            }
        };
        let ent = self.entity_of(inst);
        let Some((ai, a)) = ent.attr(name) else {
            return Err(error(
                "NotFoundException",
                format!("Entity {} has no attribute {name} (instance {})", ent.name, self.inst_name(inst)),
                span,
                self.m.sources,
            ));
        };
        let hi = match &a.kind {
            AttrKind::Rel { hi, lo, .. } => Some((*hi, *lo)),
            _ => None,
        };
        match (&self.m.instances[inst as usize].slots[ai], hi) {
            (Slot::Prim { value: Some((v, _)), .. }, _) => Ok(v.clone()),
            (Slot::Prim { .. }, _) => Err(Flow::Wait(Wait::Prim(inst, ai as u32))),
            (Slot::Rel(r), Some((Some(1), lo))) => {
                if let Some(&x) = r.items.first() {
                    Ok(Value::Instance(x))
                } else if let Some(u) = &r.unknown {
                    Ok(Value::Unknown(u.clone()))
                } else if r.frozen {
                    if lo == 0 {
                        Err(error(
                            "OptionalValueException",
                            format!(
                                "Optional variable accessed that has no value: attribute {name} of {}",
                                self.inst_name(inst)
                            ),
                            span,
                            self.m.sources,
                        ))
                    } else {
                        Err(error(
                            "UnsetException",
                            format!("attribute {name} of {} is not set", self.inst_name(inst)),
                            span,
                            self.m.sources,
                        ))
                    }
                } else {
                    Err(Flow::Wait(Wait::Rel(inst, ai as u32)))
                }
            }
            (Slot::Rel(r), _) => {
                if r.frozen {
                    let mut items: Vec<Value> = r.items.iter().map(|i| Value::Instance(*i)).collect();
                    if let Some(u) = &r.unknown {
                        items.push(Value::Unknown(u.clone()));
                    }
                    Ok(Value::list(items))
                } else {
                    Err(Flow::Wait(Wait::Rel(inst, ai as u32)))
                }
            }
        }
    }

    fn is_defined(&mut self, inner: &'a Expr, cx: &mut Cx) -> EResult<Value> {
        let (obj, name, span) = match &inner.kind {
            ExprKind::Var(n) if !n.contains("::") => {
                if cx.locals.iter().any(|(x, _)| &**x == n.as_str()) || self.is_var_declared(cx.scope, n) {
                    let v = self.eval(inner, cx)?;
                    return Ok(defined(&v));
                }
                let s = self.lookup_short("self", inner.span, cx)?;
                (s, n.as_str(), inner.span)
            }
            ExprKind::Attr(o, a) => (self.eval(o, cx)?, a.name.as_str(), a.span),
            ExprKind::MapLookup(d, k) => {
                let dv = self.eval(d, cx)?;
                let kv = self.eval(k, cx)?;
                return Ok(match (&dv, &kv) {
                    (Value::Unknown(_), _) | (_, Value::Unknown(_)) => Value::Unknown(unknown_of(&dv, &kv)),
                    (Value::Dict(m), Value::Str(s)) => {
                        Value::Bool(dict_get(m, s).is_some_and(|v| !matches!(v, Value::Null)))
                    }
                    _ => Value::Bool(false),
                });
            }
            _ => {
                let v = self.eval(inner, cx)?;
                return Ok(defined(&v));
            }
        };
        let inst = match obj {
            Value::Instance(i) => i,
            Value::Unknown(_) => return Ok(obj),
            Value::Null => return Ok(Value::Bool(false)),
            other => return Err(typing(format!("Can not test attribute {name} of {}", self.repr(&other)), span, self)),
        };
        let ent = self.entity_of(inst);
        let Some((ai, _)) = ent.attr(name) else {
            return Err(error(
                "NotFoundException",
                format!("Entity {} has no attribute {name}", ent.name),
                span,
                self.m.sources,
            ));
        };
        match &self.m.instances[inst as usize].slots[ai] {
            Slot::Rel(r) => {
                if !r.items.is_empty() {
                    Ok(Value::Bool(true))
                } else if let Some(u) = &r.unknown {
                    Ok(Value::Unknown(u.clone()))
                } else if r.frozen {
                    Ok(Value::Bool(false))
                } else {
                    Err(Flow::Wait(Wait::Rel(inst, ai as u32)))
                }
            }
            Slot::Prim { value: Some((v, _)), .. } => Ok(defined(v)),
            Slot::Prim { .. } => Err(Flow::Wait(Wait::Prim(inst, ai as u32))),
        }
    }

    pub(crate) fn resolve_class(&mut self, ns: NsId, class: &Ident, infer: Option<EntId>) -> EResult<EntId> {
        let scoped = super::build::lookup_entity(&self.m.types, ns, &class.name);
        if let Some(t) = infer
            && !class.name.contains("::")
        {
            // inside a constructor argument that assigns a relation: resolve against its target type
            let mut cands: Vec<EntId> = std::iter::once(t)
                .chain(self.m.types.entities[t].descendants.iter().copied())
                .filter(|e| self.m.types.entities[*e].name.rsplit("::").next() == Some(class.name.as_str()))
                .collect();
            cands.sort_unstable();
            cands.dedup();
            match (cands.len(), &scoped) {
                // a name the namespace knows is that entity, as in Inmanta (a wrong one is then a
                // type error of the relation)
                (_, Ok(e)) => return Ok(*e),
                (1, _) => return Ok(cands[0]),
                (0, _) => {}
                _ => {
                    let names: Vec<String> = cands.iter().map(|c| self.m.types.entities[*c].name.clone()).collect();
                    return Err(error(
                        "AmbiguousTypeException",
                        format!(
                            "Could not determine namespace for type {}: candidates are {}",
                            class.name,
                            names.join(", ")
                        ),
                        class.span,
                        self.m.sources,
                    ));
                }
            }
        }
        scoped.map_err(|(kind, msg)| error(kind, msg, class.span, self.m.sources))
    }

    fn index_lookup(&mut self, ent: EntId, vals: Vec<(&str, Value, Span)>, span: Span) -> EResult<Value> {
        if let Some((n, _, _)) =
            vals.iter().enumerate().find_map(|(i, v)| vals[..i].iter().any(|w| w.0 == v.0).then_some(v))
        {
            return Err(error(
                "RuntimeException",
                format!("Attribute {n} provided twice in index lookup"),
                span,
                self.m.sources,
            ));
        }
        for (n, v, s) in &vals {
            if self.m.types.entities[ent].attr(n).is_none() {
                return Err(error(
                    "NotFoundException",
                    format!("Entity {} has no attribute {n}", self.m.types.entities[ent].name),
                    *s,
                    self.m.sources,
                ));
            }
            if v.is_unknown() {
                return Ok(v.clone());
            }
        }
        let names: Vec<&str> = vals.iter().map(|(n, _, _)| *n).collect();
        let idx = self.m.types.entities[ent].indexes.iter().copied().find(|i| {
            let f = &self.m.types.indexes[*i].fields;
            f.len() == names.len() && f.iter().all(|x| names.contains(&x.as_str()))
        });
        let Some(idx) = idx else {
            return Err(error(
                "NotFoundException",
                format!(
                    "No index defined on {} for this lookup: ({})",
                    self.m.types.entities[ent].name,
                    names.join(", ")
                ),
                span,
                self.m.sources,
            ));
        };
        let map: HashMap<&str, Value> = vals.iter().map(|(n, v, _)| (*n, v.clone())).collect();
        let key = self.key_from(idx, &map).expect("all fields present");
        match self.index_get(idx, &key) {
            Some(i) if self.m.types.is_subtype(self.m.instances[i as usize].entity, ent) => Ok(Value::Instance(i)),
            Some(_) => Err(Flow::Wait(Wait::Index(idx, key, span))),
            None => Err(Flow::Wait(Wait::Index(idx, key, span))),
        }
    }

    fn construct(&mut self, class: &'a Ident, args: &'a Args, span: Span, cx: &mut Cx) -> EResult<Value> {
        let ent = self.resolve_class(cx.ns, class, cx.infer)?;
        let mut kw: Vec<(Rc<str>, Value, Span)> = Vec::with_capacity(args.keyword.len());
        // multi-valued relations given a relation that is not frozen yet (`provides=self.provides`):
        // as in Inmanta, the instance is made without waiting and they are filled as elements arrive
        let mut gradual: Vec<(u32, (InstId, u32), Span)> = Vec::new();
        // arguments that wait for a value: set once the instance exists (see LateArg)
        let mut late: Vec<super::LateArg<'a>> = Vec::new();
        for KwArg { name, value } in &args.keyword {
            let (target, multi) = match self.m.types.entities[ent].attr(&name.name) {
                Some((ai, a)) => match &a.kind {
                    AttrKind::Rel { target, hi, .. } => (Some(*target), (*hi != Some(1)).then_some(ai as u32)),
                    _ => (None, None),
                },
                None => {
                    return Err(error(
                        "TypingException",
                        format!(
                            "Entity {} has no attribute {} (in constructor)",
                            self.m.types.entities[ent].name, name.name
                        ),
                        name.span,
                        self.m.sources,
                    ));
                }
            };
            if kw.iter().any(|(n, _, _)| &**n == name.name.as_str())
                || gradual.iter().any(|(ai, _, _)| self.m.types.entities[ent].attrs[*ai as usize].name == name.name)
                || late.iter().any(|l| self.m.types.entities[ent].attrs[l.attr as usize].name == name.name)
            {
                return Err(error(
                    "RuntimeException",
                    format!("The attribute {} is set twice in the constructor", name.name),
                    name.span,
                    self.m.sources,
                ));
            }
            self.check_constructor_hint(cx.ns, ent, &name.name, value)?;
            // Inmanta needs only the index attributes to make the instance; the others may wait,
            // unless waiting would repeat side effects (constructors) evaluated before the wait
            let ai = self.m.types.entities[ent].attr(&name.name).map_or(0, |(ai, _)| ai as u32);
            let may_wait = !self.in_index(ent, &name.name) && cx.locals.is_empty();
            let (seq, made) = (cx.seq, cx.cache.len());
            let arg = super::LateArg { attr: ai, value, constructor: span };
            if let Some(ai) = multi {
                match self.gradual_source(value, cx) {
                    Ok(Some(src)) => {
                        gradual.push((ai, src, value.span));
                        continue;
                    }
                    Ok(None) => {}
                    Err(Flow::Wait(_)) if may_wait && cx.seq == seq && cx.cache.len() == made => {
                        late.push(arg);
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            let prev = std::mem::replace(&mut cx.infer, target);
            let v = self.eval(value, cx);
            cx.infer = prev;
            match v {
                Ok(v) => kw.push((Rc::from(name.name.as_str()), v, value.span)),
                Err(Flow::Wait(_)) if may_wait && cx.seq == seq && cx.cache.len() == made => late.push(arg),
                Err(e) => return Err(e),
            }
        }
        for sp in &args.spread {
            match self.eval(sp, cx)? {
                Value::Dict(d) => {
                    for (k, v) in d.iter() {
                        if self.m.types.entities[ent].attr(k).is_none() {
                            return Err(error(
                                "NotFoundException",
                                format!("Entity {} has no attribute {k} (in **dict)", self.m.types.entities[ent].name),
                                sp.span,
                                self.m.sources,
                            ));
                        }
                        if kw.iter().any(|(n, _, _)| n == k) {
                            return Err(error(
                                "RuntimeException",
                                format!("The attribute {k} is set twice in the constructor"),
                                sp.span,
                                self.m.sources,
                            ));
                        }
                        kw.push((k.clone(), v.clone(), sp.span));
                    }
                }
                Value::Unknown(_) => {}
                other => {
                    return Err(typing(
                        format!("** in a constructor needs a dict, got {}", self.repr(&other)),
                        sp.span,
                        self,
                    ));
                }
            }
        }
        let seq = cx.seq;
        cx.seq += 1;
        if let Some(v) = cx.cache.get(seq) {
            return Ok(v.clone());
        }
        // existing instance through an index?
        let mut vals: HashMap<&str, Value> = kw.iter().map(|(n, v, _)| (&**n, v.clone())).collect();
        for a in &self.m.types.entities[ent].attrs {
            if let AttrKind::Prim { default: Some(d), .. } = &a.kind
                && !vals.contains_key(a.name.as_str())
            {
                vals.insert(a.name.as_str(), d.clone());
            }
        }
        // an index attribute must be given (or defaulted) in the constructor itself
        for &idx in &self.m.types.entities[ent].indexes {
            for f in &self.m.types.indexes[idx].fields {
                if !vals.contains_key(f.as_str())
                    && let Some((_, a)) = self.m.types.entities[ent].attr(f)
                    && matches!(a.kind, AttrKind::Prim { .. })
                {
                    let owner = &self.m.types.entities[self.m.types.indexes[idx].entity].name;
                    return Err(error(
                        "IndexAttributeMissingInConstructorException",
                        format!(
                            "Invalid Constructor call: missing attribute '{f}'. The attribute {owner}.{f} is part of an index."
                        ),
                        span,
                        self.m.sources,
                    ));
                }
            }
        }
        let mut found: Option<(InstId, usize)> = None;
        for &idx in &self.m.types.entities[ent].indexes {
            if let Some(key) = self.key_from(idx, &vals)
                && let Some(other) = self.index_get(idx, &key)
            {
                if let Some((f, fidx)) = found
                    && f != other
                {
                    return Err(error(
                        "IndexCollisionException",
                        format!(
                            "Inconsistent indexes detected: the constructor matches {} through index {} and {} through index {}",
                            self.inst_name(f),
                            self.index_desc(fidx),
                            self.inst_name(other),
                            self.index_desc(idx)
                        ),
                        span,
                        self.m.sources,
                    ));
                }
                found = Some((other, idx));
            }
        }
        drop(vals);
        let inst = if let Some((other, idx)) = found {
            let oe = self.m.instances[other as usize].entity;
            if oe != ent {
                return Err(error(
                    "DuplicateException",
                    format!(
                        "Type {} and {} share the key of index {}: {} already exists",
                        self.m.types.entities[ent].name,
                        self.m.types.entities[oe].name,
                        self.index_desc(idx),
                        self.inst_name(other)
                    ),
                    span,
                    self.m.sources,
                ));
            }
            for (n, v, s) in kw {
                let (ai, _) = self.m.types.entities[ent].attr(&n).expect("checked");
                self.assign_attr(other, ai as u32, v, false, s)?;
            }
            for (ai, src, s) in gradual {
                self.add_gradually(src, other, ai, s);
            }
            for arg in late {
                self.spawn_late_arg(other, arg, cx.scope, cx.ns);
            }
            other
        } else {
            // the memory bound of a model that recurses without end: instances made by
            // implementations of instances made by implementations of ... (each level is small,
            // the chain is what grows)
            let depth = self.depth_in(cx.scope);
            if depth as u64 > self.max_depth {
                return Err(error(
                    "RuntimeException",
                    format!(
                        "{} is made {depth} implementations deep (each level made by an implementation of the one \
                         before): the model recurses without end, e.g. an implementation that constructs its own \
                         entity. A model this deep can raise the limit of {} with `[compiler] max-depth` or \
                         INMANTA_COMPILER_MAX_DEPTH",
                        self.m.types.entities[ent].name, self.max_depth
                    ),
                    span,
                    self.m.sources,
                ));
            }
            let inst = self.new_instance(ent, span);
            self.m.instances[inst as usize].depth = depth;
            for (n, v, s) in kw.iter() {
                let (ai, _) = self.m.types.entities[ent].attr(n).expect("checked");
                self.assign_attr(inst, ai as u32, v.clone(), false, *s)?;
            }
            let defaults: Vec<(usize, Value, Span)> = self.m.types.entities[ent]
                .attrs
                .iter()
                .enumerate()
                .filter_map(|(i, a)| match &a.kind {
                    AttrKind::Prim { default: Some(d), undef: false, .. }
                        if !kw.iter().any(|(n, _, _)| **n == *a.name) && !late.iter().any(|l| l.attr as usize == i) =>
                    {
                        Some((i, d.clone(), a.span))
                    }
                    _ => None,
                })
                .collect();
            for (ai, v, s) in defaults {
                self.assign_attr(inst, ai as u32, v, false, s)?;
            }
            for (ai, src, s) in gradual {
                self.add_gradually(src, inst, ai, s);
            }
            for arg in late {
                self.spawn_late_arg(inst, arg, cx.scope, cx.ns);
            }
            self.select_implementations(inst);
            inst
        };
        let v = Value::Instance(inst);
        cx.cache.push(v.clone());
        Ok(v)
    }

    /// Whether `attr` is part of an index of entity `ent`.
    fn in_index(&self, ent: EntId, attr: &str) -> bool {
        self.m.types.entities[ent].indexes.iter().any(|&i| self.m.types.indexes[i].fields.iter().any(|f| f == attr))
    }

    /// Inmanta's type hint for a constructor given directly as a constructor argument (`A(b=B())`,
    /// not for an index attribute): the attribute's type must be an entity that the inner
    /// constructor's entity, as its namespace names it, extends; otherwise a TypingException.
    fn check_constructor_hint(&self, ns: NsId, ent: EntId, attr: &str, value: &Expr) -> EResult<()> {
        let ExprKind::Constructor { class: inner, .. } = &value.kind else { return Ok(()) };
        if self.in_index(ent, attr) {
            return Ok(());
        }
        let hint = match self.m.types.entities[ent].attr(attr).map(|(_, a)| &a.kind) {
            Some(AttrKind::Prim { ty, .. }) => self.m.types.type_name(ty),
            Some(AttrKind::Rel { target, .. }) => match super::build::lookup_entity(&self.m.types, ns, &inner.name) {
                Ok(e) if !self.m.types.is_subtype(e, *target) => self.m.types.entities[*target].name.clone(),
                _ => return Ok(()),
            },
            None => return Ok(()),
        };
        Err(error(
            "TypingException",
            format!("Can not assign a value of type {} to a variable of type {hint}", inner.name),
            value.span,
            self.m.sources,
        ))
    }

    fn call(&mut self, name: &'a Ident, args: &'a Args, span: Span, cx: &mut Cx) -> EResult<Value> {
        // the primitive types: a cast for some, callable by no other
        match name.name.as_str() {
            "bool" | "int" | "float" | "string" | "number" if !args.keyword.is_empty() || !args.spread.is_empty() => {
                return Err(error(
                    "RuntimeException",
                    "Only positional arguments allowed in type cast".to_string(),
                    span,
                    self.m.sources,
                ));
            }
            "list" | "dict" => {
                return Err(error(
                    "RuntimeException",
                    format!("Can not call '{}', can only call plugin or primitive type cast", name.name),
                    span,
                    self.m.sources,
                ));
            }
            _ => {}
        }
        let full = self.resolve_plugin(cx.ns, name)?;
        let plugin = self.plugins.get(&full).expect("resolved").clone();
        if let Some(instead) = crate::builtins::deprecated_plugin(&full) {
            self.warn("CompilerDeprecationWarning", format!("Plugin {full} is deprecated: {instead}"), name.span);
        }
        let mut pos = Vec::with_capacity(args.positional.len());
        for a in &args.positional {
            pos.push(self.eval(a, cx)?);
        }
        let mut kw: Vec<(String, Value)> = Vec::new();
        for KwArg { name, value } in &args.keyword {
            kw.push((name.name.clone(), self.eval(value, cx)?));
        }
        for sp in &args.spread {
            match self.eval(sp, cx)? {
                Value::Dict(d) => kw.extend(d.iter().map(|(k, v)| (k.to_string(), v.clone()))),
                Value::Unknown(u) => return Ok(Value::Unknown(u)),
                other => return Err(typing(format!("** needs a dict, got {}", self.repr(&other)), sp.span, self)),
            }
        }
        self.call_plugin(&full, &plugin, pos, kw, span, cx.scope, Some((&mut cx.seq, &mut *cx.cache)))
    }

    /// Calls plugin `full` with evaluated arguments. `replay` is the statement's cache of values
    /// with a side effect (a statement that runs again gets the same answer); a call made from
    /// Python (a Jinja filter, `Compiler.get_plugins()`) has none.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn call_plugin(
        &mut self,
        full: &str,
        plugin: &crate::builtins::Plugin,
        pos: Vec<Value>,
        kw: Vec<(String, Value)>,
        span: Span,
        scope: ScopeId,
        replay: Option<(&mut usize, &mut Vec<Value>)>,
    ) -> EResult<Value> {
        if plugin.python {
            if !plugin.accepts_unknown
                && let Some(u) = pos.iter().chain(kw.iter().map(|(_, v)| v)).find(|v| v.contains_unknown())
            {
                return Ok(Value::Unknown(unknown_of(u, u)));
            }
            // a Python plugin may print or make instances (a dataclass it returns): as in Inmanta,
            // a statement that runs again after a wait gets the answer of the call it made
            let mut replay = replay;
            if let Some((seq, cache)) = replay.as_mut() {
                let at = **seq;
                **seq += 1;
                if let Some(v) = cache.get(at) {
                    return Ok(v.clone());
                }
            }
            let v = self.call_python(full, pos, kw, span)?;
            self.charge_result(&v, span)?;
            if let Some((_, cache)) = replay {
                cache.push(v.clone());
            }
            return Ok(v);
        }
        let call = plugin.bind(full, pos, kw).map_err(|m| error("RuntimeException", m, span, self.m.sources))?;
        crate::references::check_plugin_args(self, full, plugin, &call, span)?;
        if !plugin.accepts_unknown
            && let Some(u) = call
                .args
                .iter()
                .chain(call.varargs.iter())
                .chain(call.kwargs.iter().map(|(_, v)| v))
                .find(|v| v.contains_unknown())
        {
            let u = match u {
                Value::Unknown(u) => u.clone(),
                other => unknown_of(other, other),
            };
            return Ok(Value::Unknown(u));
        }
        let mut replay = replay.filter(|_| plugin.side_effect);
        if let Some((seq, cache)) = replay.as_mut() {
            let at = **seq;
            **seq += 1;
            if let Some(v) = cache.get(at) {
                return Ok(v.clone());
            }
        }
        let mut call = PluginCall { span, scope, ..call };
        match (plugin.f)(self, &mut call) {
            Ok(v) => {
                self.charge_result(&v, span)?;
                if let Some((_, cache)) = replay {
                    cache.push(v.clone());
                }
                Ok(v)
            }
            Err(PErr::Wait(w)) => Err(Flow::Wait(w)),
            Err(PErr::Flow(f)) => Err(f),
            Err(PErr::Kind(kind, m)) => Err(error(kind, m, span, self.m.sources)),
        }
    }

    pub(crate) fn resolve_plugin(&self, ns: NsId, name: &Ident) -> EResult<String> {
        let n = &name.name;
        match n.rfind("::") {
            None => {
                if self.plugins.get(n).is_some() {
                    return Ok(n.clone());
                }
                // Inmanta looks an unqualified name up in the namespace, then in each enclosing one.
                if let Some(full) =
                    self.m.types.short_candidates(ns, n).into_iter().find(|full| self.plugins.get(full).is_some())
                {
                    return Ok(full);
                }
                Err(error(
                    "TypeNotFoundException",
                    format!("Plugin or function {n} not found; plugins are called as module::name(...)"),
                    name.span,
                    self.m.sources,
                ))
            }
            Some(p) => {
                let (prefix, short) = (&n[..p], &n[p + 2..]);
                let target = self.m.types.visible_namespace(ns, prefix);
                match target {
                    Some(t) => {
                        let full = format!("{t}::{short}");
                        if self.plugins.get(&full).is_some() {
                            Ok(full)
                        } else {
                            Err(error(
                                "TypeNotFoundException",
                                format!(
                                    "Plugin {short} not found in module {t} (neither built in nor defined by the module's Python code)"
                                ),
                                name.span,
                                self.m.sources,
                            ))
                        }
                    }
                    None => Err(error(
                        "MissingImportException",
                        format!("Plugin {n} is used but module {prefix} is not imported (import {prefix})"),
                        name.span,
                        self.m.sources,
                    )),
                }
            }
        }
    }

    fn binary(&mut self, op: BinOp, l: &'a Expr, r: &'a Expr, span: Span, cx: &mut Cx) -> EResult<Value> {
        if matches!(op, BinOp::And | BinOp::Or) {
            let lv = self.eval(l, cx)?;
            let lb = match &lv {
                Value::Unknown(_) => None,
                Value::Bool(b) => Some(*b),
                other => {
                    return Err(error(
                        "RuntimeException",
                        format!("Invalid operand for {}: expected a bool, got {}", op.symbol(), self.repr(other)),
                        l.span,
                        self.m.sources,
                    ));
                }
            };
            match (op, lb) {
                (BinOp::Or, Some(true)) => return Ok(Value::Bool(true)),
                (BinOp::And, Some(false)) => return Ok(Value::Bool(false)),
                (_, None) => return Ok(lv),
                _ => {}
            }
            let rv = self.eval(r, cx)?;
            return match rv {
                Value::Unknown(_) | Value::Bool(_) => Ok(rv),
                other => Err(error(
                    "RuntimeException",
                    format!("Invalid operand for {}: expected a bool, got {}", op.symbol(), self.repr(&other)),
                    r.span,
                    self.m.sources,
                )),
            };
        }
        let lv = self.eval(l, cx)?;
        let rv = self.eval(r, cx)?;
        if let (BinOp::Add, Value::Str(a), Value::Str(b)) = (op, &lv, &rv) {
            self.charge(Built::Str(a.len() + b.len()), span)?;
        }
        if lv.is_unknown() || rv.is_unknown() {
            return Ok(Value::Unknown(unknown_of(&lv, &rv)));
        }
        binop_values(op, &lv, &rv).map_err(|(kind, m)| error(kind, m, span, self.m.sources))
    }
}

fn defined(v: &Value) -> Value {
    match v {
        Value::Unknown(_) => v.clone(),
        Value::Null => Value::Bool(false),
        // a list of unknowns only may or may not hold a value (Inmanta's IsDefinedGradual)
        Value::List(l) if !l.is_empty() && l.iter().all(Value::is_unknown) => Value::Unknown(unknown_of(v, v)),
        Value::List(l) => Value::Bool(!l.is_empty()),
        _ => Value::Bool(true),
    }
}

pub(crate) fn unknown_of(a: &Value, b: &Value) -> Rc<super::value::UnknownSource> {
    fn find(v: &Value) -> Option<Rc<super::value::UnknownSource>> {
        match v {
            Value::Unknown(u) => Some(u.clone()),
            Value::List(l) => l.iter().find_map(find),
            Value::Dict(d) => d.iter().find_map(|(_, v)| find(v)),
            _ => None,
        }
    }
    find(a).or_else(|| find(b)).unwrap_or_else(|| {
        Rc::new(super::value::UnknownSource {
            parameter: String::new(),
            source: "plugin".into(),
            resource: String::new(),
        })
    })
}

/// A number as Python sees it: `bool` is an `int`.
#[derive(Clone, Copy)]
enum Num<'v> {
    Int(i64),
    Big(&'v BigInt),
    Float(f64),
}

fn as_num(v: &Value) -> Option<Num<'_>> {
    match v {
        Value::Int(i) => Some(Num::Int(*i)),
        Value::Bool(b) => Some(Num::Int(*b as i64)),
        Value::BigInt(i) => Some(Num::Big(i)),
        Value::Float(f) => Some(Num::Float(*f)),
        _ => None,
    }
}

type OpErr = (&'static str, String);

impl Num<'_> {
    /// The float Python converts this number to in mixed arithmetic; an int past the float
    /// range is Python's `OverflowError`.
    fn f(self) -> Result<f64, OpErr> {
        match self {
            Num::Int(i) => Ok(i as f64),
            Num::Big(i) => big_to_f64(i).ok_or(("OverflowError", "int too large to convert to float".into())),
            Num::Float(f) => Ok(f),
        }
    }

    /// The int as a big integer (`None` for a float).
    fn big(self) -> Option<BigInt> {
        match self {
            Num::Int(i) => Some(BigInt::from(i)),
            Num::Big(i) => Some(i.clone()),
            Num::Float(_) => None,
        }
    }

    fn cmp(self, other: Num<'_>) -> Option<std::cmp::Ordering> {
        match (self, other) {
            (Num::Int(x), Num::Int(y)) => Some(x.cmp(&y)),
            (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y),
            (Num::Int(x), Num::Float(y)) => int_cmp_float(x, y),
            (Num::Big(x), Num::Float(y)) => big_cmp_float(x, y),
            (Num::Float(_), _) => other.cmp(self).map(std::cmp::Ordering::reverse),
            (x, y) => Some(x.big()?.cmp(&y.big()?)),
        }
    }
}

/// Python's `==` on two values: `1 == 1.0 == true`.
pub(crate) fn py_eq(a: &Value, b: &Value) -> bool {
    match (as_num(a), as_num(b)) {
        (Some(Num::Int(x)), Some(Num::Int(y))) => x == y,
        (Some(x), Some(y)) => x.cmp(y) == Some(std::cmp::Ordering::Equal),
        _ => match (a, b) {
            (Value::List(x), Value::List(y)) => x.len() == y.len() && x.iter().zip(y.iter()).all(|(p, q)| py_eq(p, q)),
            (Value::Dict(x), Value::Dict(y)) => {
                x.len() == y.len() && x.iter().all(|(k, v)| dict_get(y, k).is_some_and(|w| py_eq(v, w)))
            }
            _ => a == b,
        },
    }
}

fn is_zero(n: Num<'_>) -> bool {
    match n {
        Num::Int(i) => i == 0,
        Num::Big(_) => false,
        Num::Float(f) => f == 0.0,
    }
}

/// The largest int `**` computes (in bits): Python goes on until memory runs out; a model that
/// asks for more is surely wrong, and stopping beats exhausting the machine.
const MAX_POW_BITS: u64 = 1 << 24;

/// `a ** b` on ints with `b >= 0`.
fn int_pow(a: Num<'_>, b: Num<'_>) -> Result<Value, OpErr> {
    if let (Num::Int(a), Num::Int(b)) = (a, b)
        && let Some(v) = u32::try_from(b).ok().and_then(|b| a.checked_pow(b))
    {
        return Ok(Value::Int(v));
    }
    let (Some(base), Some(exp)) = (a.big(), b.big()) else { unreachable!("ints") };
    let one = BigInt::from(1);
    if base == one || base.bits() == 0 {
        return Ok(Value::int(base));
    }
    if base == -one {
        return Ok(Value::Int(if (&exp % 2u32).bits() == 0 { 1 } else { -1 }));
    }
    match u32::try_from(&exp) {
        Ok(e) if base.bits().saturating_mul(e as u64) <= MAX_POW_BITS => Ok(Value::int(base.pow(e))),
        _ => Err(("RuntimeException", format!("the result of {base} ** {exp} is too large"))),
    }
}

/// Python's true division of two ints: the float nearest the exact quotient (not the quotient of
/// the two rounded floats, which can be an ulp off once an operand is past 2**53).
fn int_div(a: Num<'_>, b: Num<'_>) -> Result<Value, OpErr> {
    const EXACT: i64 = 1 << 53;
    if let (Num::Int(x), Num::Int(y)) = (a, b)
        && x.unsigned_abs() <= EXACT as u64
        && y.unsigned_abs() <= EXACT as u64
    {
        return Ok(Value::Float(x as f64 / y as f64));
    }
    let (Some(x), Some(y)) = (a.big(), b.big()) else { unreachable!("ints") };
    let negative = (x.sign() == num_bigint::Sign::Minus) != (y.sign() == num_bigint::Sign::Minus);
    let (x, y) = (x.magnitude().clone(), y.magnitude().clone());
    // scale so the integer quotient has 55 or 56 bits: 53 kept, a rounding bit, and below it a
    // sticky bit set when anything was left over; u64 -> f64 then rounds half to even exactly
    let shift = 55 - (x.bits() as i64 - y.bits() as i64);
    let (n, d) = if shift >= 0 { (x << shift as u64, y) } else { (x, y << (-shift) as u64) };
    let (q, r) = (&n / &d, &n % &d);
    let q = u64::try_from(&q).unwrap_or(u64::MAX) | u64::from(r.bits() != 0);
    let mut f = q as f64;
    let mut e = -shift;
    while e > 1000 {
        f *= 2f64.powi(1000);
        e -= 1000;
    }
    while e < -1000 {
        f *= 2f64.powi(-1000);
        e += 1000;
    }
    f *= 2f64.powi(e as i32);
    if f.is_infinite() {
        return Err(("OverflowError", "integer division result too large for a float".into()));
    }
    Ok(Value::Float(if negative { -f } else { f }))
}

/// Applies a binary operator to two known values, with Inmanta's (Python's) rules: arithmetic and
/// comparisons on numbers (booleans count as integers), `+` also on two strings, `in` on a list or
/// a dict only; anything else is a `TypingException`.
pub(crate) fn binop_values(op: BinOp, lv: &Value, rv: &Value) -> Result<Value, (&'static str, String)> {
    use Value::*;
    let bad = || {
        Err((
            "TypingException",
            format!(
                "Unsupported operand types for {}: {} {} and {} {}",
                op.symbol(),
                lv.type_name(),
                short_repr(lv),
                rv.type_name(),
                short_repr(rv)
            ),
        ))
    };
    match op {
        BinOp::Eq => Ok(Bool(py_eq(lv, rv))),
        BinOp::Ne => Ok(Bool(!py_eq(lv, rv))),
        BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge => {
            let (Some(a), Some(b)) = (as_num(lv), as_num(rv)) else { return bad() };
            let ord = a.cmp(b);
            use std::cmp::Ordering::*;
            Ok(Bool(match op {
                BinOp::Lt => ord == Some(Less),
                BinOp::Gt => ord == Some(Greater),
                BinOp::Le => matches!(ord, Some(Less | Equal)),
                _ => matches!(ord, Some(Greater | Equal)),
            }))
        }
        BinOp::In | BinOp::NotIn => {
            let r = match rv {
                List(l) => {
                    let found = l.iter().any(|x| py_eq(x, lv));
                    // not found while the list holds an unknown: the answer is unknown too
                    if !found && let Some(u) = l.iter().find_map(|x| if let Unknown(u) = x { Some(u) } else { None }) {
                        return Ok(Unknown(u.clone()));
                    }
                    found
                }
                Dict(d) => match lv {
                    Str(s) => dict_get(d, s).is_some(),
                    _ => false,
                },
                _ => {
                    return Err((
                        "TypingException",
                        format!(
                            "Operand two of 'in' can only be a list or dict, got {} {}",
                            rv.type_name(),
                            short_repr(rv)
                        ),
                    ));
                }
            };
            Ok(Bool(if op == BinOp::In { r } else { !r }))
        }
        BinOp::Add => match (lv, rv) {
            (Str(a), Str(b)) => Ok(Value::str(&format!("{a}{b}"))),
            (Str(_), _) => Err((
                "TypingException",
                format!("Can only concatenate a string to a string, not {} {}", rv.type_name(), short_repr(rv)),
            )),
            _ => match (as_num(lv), as_num(rv)) {
                (Some(Num::Int(a)), Some(Num::Int(b))) => {
                    Ok(a.checked_add(b).map_or_else(|| Value::int(num_bigint::BigInt::from(a) + b), Int))
                }
                (Some(a), Some(b)) => match (a.big(), b.big()) {
                    (Some(x), Some(y)) => Ok(Value::int(x + y)),
                    _ => Ok(Float(a.f()? + b.f()?)),
                },
                _ => bad(),
            },
        },
        BinOp::Sub | BinOp::Mul => match (as_num(lv), as_num(rv)) {
            (Some(Num::Int(a)), Some(Num::Int(b))) => {
                let r = if op == BinOp::Sub { a.checked_sub(b) } else { a.checked_mul(b) };
                Ok(r.map_or_else(
                    || {
                        Value::int(if op == BinOp::Sub {
                            num_bigint::BigInt::from(a) - b
                        } else {
                            num_bigint::BigInt::from(a) * b
                        })
                    },
                    Int,
                ))
            }
            (Some(a), Some(b)) => match (a.big(), b.big()) {
                (Some(x), Some(y)) => Ok(Value::int(if op == BinOp::Sub { x - y } else { x * y })),
                _ => Ok(Float(if op == BinOp::Sub { a.f()? - b.f()? } else { a.f()? * b.f()? })),
            },
            _ => bad(),
        },
        BinOp::Div => match (as_num(lv), as_num(rv)) {
            (Some(_), Some(b)) if is_zero(b) => Err(("ZeroDivisionError", "division by zero".into())),
            (Some(a @ (Num::Int(_) | Num::Big(_))), Some(b @ (Num::Int(_) | Num::Big(_)))) => int_div(a, b),
            (Some(a), Some(b)) => Ok(Float(a.f()? / b.f()?)),
            _ => bad(),
        },
        BinOp::Mod => match (as_num(lv), as_num(rv)) {
            (Some(_), Some(b)) if is_zero(b) => Err(("ZeroDivisionError", "modulo by zero".into())),
            (Some(Num::Int(a)), Some(Num::Int(b))) => match a.checked_rem(b) {
                Some(r) if r != 0 && ((r < 0) != (b < 0)) => Ok(Int(r + b)),
                Some(r) => Ok(Int(r)),
                None => Ok(Int(0)),
            },
            (Some(a), Some(b)) => match (a.big(), b.big()) {
                (Some(x), Some(y)) => {
                    // Python's modulo takes the divisor's sign
                    let r = &x % &y;
                    let neg = |v: &num_bigint::BigInt| v.sign() == num_bigint::Sign::Minus;
                    Ok(Value::int(if r.bits() != 0 && neg(&r) != neg(&y) { r + y } else { r }))
                }
                _ => {
                    // Python's float modulo: fmod, then moved to the divisor's sign
                    let (a, b) = (a.f()?, b.f()?);
                    let m = a % b;
                    Ok(Float(if m != 0.0 && ((m < 0.0) != (b < 0.0)) {
                        m + b
                    } else if m == 0.0 {
                        0.0f64.copysign(b)
                    } else {
                        m
                    }))
                }
            },
            _ => bad(),
        },
        BinOp::Pow => match (as_num(lv), as_num(rv)) {
            (Some(a @ (Num::Int(_) | Num::Big(_))), Some(b @ (Num::Int(_) | Num::Big(_))))
                if b.cmp(Num::Int(0)) != Some(std::cmp::Ordering::Less) =>
            {
                int_pow(a, b)
            }
            (Some(a), Some(b)) if is_zero(a) && b.cmp(Num::Int(0)) == Some(std::cmp::Ordering::Less) => {
                Err(("ZeroDivisionError", "0 can not be raised to a negative power".into()))
            }
            (Some(a), Some(b)) => Ok(Float(a.f()?.powf(b.f()?))),
            _ => bad(),
        },
        BinOp::And | BinOp::Or => unreachable!("handled with short-circuit"),
    }
}
