//! Reads: variables (short and qualified names), attributes of instances, and `is defined`.

use super::*;
use crate::diagnostics::ErrorKind;

impl<'a> Evaluator<'a> {
    /// Reads `a.b.c` for interpolation.
    pub(super) fn read_path(&mut self, path: &[String], span: Span, cx: &mut Cx<'_>) -> EResult<Value> {
        let mut v = self.lookup_short(&path[0], span, cx)?;
        for seg in &path[1..] {
            v = self.read_attr_span(&v, seg, span)?;
        }
        Ok(v)
    }

    pub(super) fn lookup_short(&mut self, name: &str, span: Span, cx: &mut Cx<'_>) -> EResult<Value> {
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

    pub(super) fn eval_var(&mut self, name: &str, span: Span, cx: &mut Cx<'_>) -> EResult<Value> {
        if cx.constraint && !cx.locals.iter().any(|(n, _)| &**n == name) {
            return Err(error(
                ErrorKind::NotFoundException,
                format!("Unable to resolve `{name}`: a type constraint can not reference variables."),
                span,
                self.m.sources,
            ));
        }
        // a byte search first: most names have no namespace, and a substring searcher costs more
        let qualified = if name.as_bytes().contains(&b':') { name.rfind("::") } else { None };
        if let Some(p) = qualified {
            let (prefix, short) = (&name[..p], &name[p + 2..]);
            let target = match self.m.types.visible_namespace(cx.ns, prefix) {
                Some(t) => t,
                None => {
                    if self.m.types.ns_by_name.contains_key(prefix) {
                        return Err(error(
                            ErrorKind::MissingImportException,
                            format!("Variable {name} is used but namespace {prefix} is not imported"),
                            span,
                            self.m.sources,
                        ));
                    }
                    return Err(error(
                        ErrorKind::NotFoundException,
                        format!("variable {name} not found: namespace {prefix} is not imported"),
                        span,
                        self.m.sources,
                    ));
                }
            };
            let Some(&ns) = self.m.types.ns_by_name.get(&target) else {
                return Err(error(
                    ErrorKind::NotFoundException,
                    format!("variable {name} not found: namespace {target} is not loaded"),
                    span,
                    self.m.sources,
                ));
            };
            let sc = self.ns_scope(ns);
            if !self.m.scopes[sc as usize].vars.contains_key(short) {
                return Err(error(
                    ErrorKind::NotFoundException,
                    format!("variable {short} not found in namespace {target}"),
                    span,
                    self.m.sources,
                ));
            }
            return self.read_var(sc, short, span);
        }
        self.lookup_short(name, span, cx)
    }

    pub(super) fn read_attr(&mut self, o: &Value, name: &str, span: Span, obj: &Expr) -> EResult<Value> {
        match o {
            Value::Instance(_) | Value::Unknown(_) => self.read_attr_span(o, name, span),
            Value::Null => Err(error(
                ErrorKind::RuntimeException,
                format!("Can not get attribute {name} of null ({} is not set)", describe_expr(obj)),
                span,
                self.m.sources,
            )),
            Value::List(_) => Err(error(
                ErrorKind::RuntimeException,
                format!(
                    "Can not get attribute {name} of a list ({} holds several values); use a for loop or a list comprehension",
                    describe_expr(obj)
                ),
                span,
                self.m.sources,
            )),
            other => Err(error(
                ErrorKind::RuntimeException,
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
                    ErrorKind::OptionalValueException,
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
                ErrorKind::NotFoundException,
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
                } else if let Some(u) = r.unknown.first() {
                    Ok(Value::Unknown(u.clone()))
                } else if r.frozen {
                    if lo == 0 {
                        Err(error(
                            ErrorKind::OptionalValueException,
                            format!(
                                "Optional variable accessed that has no value: attribute {name} of {}",
                                self.inst_name(inst)
                            ),
                            span,
                            self.m.sources,
                        ))
                    } else {
                        Err(error(
                            ErrorKind::UnsetException,
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
                    items.extend(r.unknown.iter().map(|u| Value::Unknown(u.clone())));
                    Ok(Value::list(items))
                } else {
                    Err(Flow::Wait(Wait::Rel(inst, ai as u32)))
                }
            }
        }
    }

    pub(super) fn is_defined(&mut self, inner: &'a Expr, cx: &mut Cx<'_>) -> EResult<Value> {
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
                    // Inmanta's sugar: `k in d and d[k] != null and d[k] != []`
                    (Value::Dict(m), Value::Str(s)) => Value::Bool(dict_get(m, s).is_some_and(|v| match v {
                        Value::Null => false,
                        Value::List(l) => !l.is_empty(),
                        _ => true,
                    })),
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
                ErrorKind::NotFoundException,
                format!("Entity {} has no attribute {name}", ent.name),
                span,
                self.m.sources,
            ));
        };
        match &self.m.instances[inst as usize].slots[ai] {
            Slot::Rel(r) => {
                if !r.items.is_empty() {
                    Ok(Value::Bool(true))
                } else if let Some(u) = r.unknown.first() {
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
}
