//! Expression evaluation.

use crate::diagnostics::ErrorKind;
use std::rc::Rc;

use super::budget::Built;
use super::format::{apply_spec, interp_into, short_repr};
use num_bigint::BigInt;

use super::format::Bounded;
use super::value::{InstId, Value, big_cmp_float, big_to_f64, dict_get, int_cmp_float};
use super::{EResult, Evaluator, Flow, ScopeId, Slot, Wait, error};
use crate::builtins::{PErr, PluginCall};
use crate::model::{AttrKind, EntId, FastMap, NsId};
use crate::syntax::Span;
use crate::syntax::ast::{Args, BinOp, Expr, ExprKind, FPart, Ident, KwArg, StrPart};

mod call;
mod construct;
mod lookup;
mod operators;

use operators::binop_values;

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
    error(ErrorKind::TypingException, msg, span, ev.sources)
}

impl<'a> Evaluator<'a> {
    pub(crate) fn eval(&mut self, e: &'a Expr, cx: &mut Cx<'_>) -> EResult<Value> {
        cx.depth += 1;
        if cx.depth > 1500 {
            cx.depth -= 1;
            return Err(error(ErrorKind::RuntimeException, "Expression nested too deeply", e.span, self.m.sources));
        }
        let r = self.eval_inner(e, cx);
        cx.depth -= 1;
        r
    }

    fn eval_inner(&mut self, e: &'a Expr, cx: &mut Cx<'_>) -> EResult<Value> {
        match &e.kind {
            ExprKind::Null => Ok(Value::Null),
            ExprKind::Bool(b) => Ok(Value::Bool(*b)),
            ExprKind::Int(i) => Ok(Value::Int(*i)),
            ExprKind::BigInt(i) => Ok(Value::BigInt(i.clone())),
            ExprKind::Float(f) => Ok(Value::Float(*f)),
            ExprKind::Str(s) => Ok(Value::str(s)),
            ExprKind::Regex(_) => {
                Err(error(ErrorKind::TypingException, "A regex can only be used in a typedef", e.span, self.m.sources))
            }
            ExprKind::Interp(_) if cx.constraint => Err(error(
                ErrorKind::DirectExecuteException,
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
                        ErrorKind::RuntimeException,
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
                        ErrorKind::NotFoundException,
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
                            ErrorKind::KeyException,
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
                        ErrorKind::RuntimeException,
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
                        ErrorKind::RuntimeException,
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
    fn lookup_args(
        &mut self,
        args: &'a [KwArg],
        cx: &mut Cx<'_>,
    ) -> EResult<Result<Vec<(Rc<str>, Value, Span)>, Value>> {
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
        cx: &mut Cx<'_>,
        out: &mut Vec<Value>,
    ) -> EResult<()> {
        if level == fors.len() {
            match self.guards_keep(guards, cx)? {
                Value::Bool(true) => {}
                Value::Bool(false) => return Ok(()),
                unknown => {
                    out.push(unknown);
                    return Ok(());
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
            // as Inmanta: an unknown iterable is one unknown element, which the guard still sees
            Value::Unknown(_) => vec![it],
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
                // Inmanta stands the unknown in for the value expression but still runs the guard
                // on it, so a guard (`not std::is_unknown(x)`) may leave it out
                if level + 1 == fors.len() && !guards.is_empty() {
                    cx.locals.push((Rc::from(var.name.as_str()), item.clone()));
                    let kept = self.guards_keep(guards, cx);
                    cx.locals.pop();
                    match kept? {
                        Value::Bool(true) => out.push(item),
                        Value::Bool(false) => {}
                        unknown => out.push(unknown),
                    }
                } else {
                    out.push(item);
                }
                continue;
            }
            cx.locals.push((Rc::from(var.name.as_str()), item));
            let r = self.comprehension(value, fors, guards, level + 1, cx, out);
            cx.locals.pop();
            r?;
        }
        Ok(())
    }

    /// Whether a comprehension's guards keep the current element: true, false, or an unknown
    /// when a guard is unknown.
    pub(super) fn guards_keep(&mut self, guards: &'a [Expr], cx: &mut Cx<'_>) -> EResult<Value> {
        for g in guards {
            match self.eval(g, cx)? {
                gv @ Value::Unknown(_) => return Ok(gv),
                Value::Bool(true) => {}
                Value::Bool(false) => return Ok(Value::Bool(false)),
                other => {
                    // a typedef's constraint runs directly, where Inmanta calls it a type error
                    let kind = if cx.constraint { ErrorKind::TypingException } else { ErrorKind::RuntimeException };
                    return Err(error(
                        kind,
                        format!("The condition of a list comprehension must be a bool, got {}", self.repr(&other)),
                        g.span,
                        self.m.sources,
                    ));
                }
            }
        }
        Ok(Value::Bool(true))
    }

    fn fstring(
        &mut self,
        parts: &'a [FPart],
        span: Span,
        cx: &mut Cx<'_>,
        out: &mut Bounded,
    ) -> EResult<Option<Value>> {
        for p in parts {
            match p {
                FPart::Lit(s) => _ = out.push(s),
                FPart::Field { path, conversion, spec, span: fspan } => {
                    if path.is_empty() {
                        let msg = "f-strings do not support positional substitutions via '{}', use variable or attribute keys instead";
                        return Err(error(ErrorKind::RuntimeException, msg, span, self.m.sources));
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
                            return Err(error(ErrorKind::OverflowError, m, span, self.m.sources));
                        }
                        Err(m) => {
                            return Err(error(
                                ErrorKind::RuntimeException,
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

    fn binary(&mut self, op: BinOp, l: &'a Expr, r: &'a Expr, span: Span, cx: &mut Cx<'_>) -> EResult<Value> {
        if matches!(op, BinOp::And | BinOp::Or) {
            let lv = self.eval(l, cx)?;
            let lb = match &lv {
                Value::Unknown(_) => None,
                Value::Bool(b) => Some(*b),
                other => {
                    return Err(error(
                        ErrorKind::RuntimeException,
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
                    ErrorKind::RuntimeException,
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
