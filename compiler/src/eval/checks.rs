//! Type checks: values against declared types, attribute defaults, and index completion.

use super::*;
use crate::diagnostics::ErrorKind;

impl<'a> Evaluator<'a> {
    /// Checks every attribute's default value against the attribute's type, used or not, as
    /// Inmanta does when it defines the entity: a wrong one is a `RuntimeException` at the attribute.
    pub(super) fn check_defaults(&mut self) -> Result<(), Vec<Diagnostic>> {
        let mut defaults = Vec::new();
        for ent in &self.m.types.entities {
            for a in &ent.own {
                if let AttrKind::Prim { ty, default: Some(d), .. } = &a.kind {
                    defaults.push((ty.clone(), d.clone(), a.span));
                }
            }
        }
        for (ty, d, span) in defaults {
            if let Err(Flow::Err(e)) = self.check_type(&d, &ty, span) {
                // Inmanta's list type rejects a value that is no list (null included) with a
                // TypingException, every other wrong value is a RuntimeException
                let not_a_list = !matches!(d, Value::List(_)) && matches!(ty, Type::List | Type::TypedList(_));
                // (a constraint that can not run keeps its own kind, and so does an error its
                // expression raised, placed in the expression rather than at the attribute)
                let at_attribute = e.location.as_ref().map(|l| (l.line, l.col))
                    == self.sources.location(span).map(|l| (l.line, l.col));
                let kind = if not_a_list || !at_attribute || e.kind != ErrorKind::TypingException {
                    e.kind.clone()
                } else {
                    ErrorKind::RuntimeException
                };
                return Err(vec![Diagnostic { kind, ..*e }]);
            }
        }
        Ok(())
    }

    /// Checks a value against a type, converting where the language does.
    pub(crate) fn check_type(&mut self, v: &Value, ty: &Type, span: Span) -> EResult<Value> {
        if v.is_unknown() {
            return Ok(v.clone());
        }
        let bad = |s: &Self, v: &Value| {
            error(
                ErrorKind::TypingException,
                format!("Invalid value {}: expected {}", s.repr(v), s.types.type_name(ty)),
                span,
                s.sources,
            )
        };
        if let Value::Reference(r) = v {
            return if crate::references::fits(self, r, ty) { Ok(v.clone()) } else { Err(bad(self, v)) };
        }
        match ty {
            Type::Any => Ok(v.clone()),
            Type::Nullable(inner) => {
                if matches!(v, Value::Null) {
                    Ok(Value::Null)
                } else {
                    self.check_type(v, inner, span)
                }
            }
            _ if matches!(v, Value::Null) => Err(error(
                ErrorKind::TypingException,
                format!(
                    "Invalid value null: expected {} (the type is not nullable; use {}?)",
                    self.m.types.type_name(ty),
                    self.m.types.type_name(ty)
                ),
                span,
                self.m.sources,
            )),
            Type::String => {
                if matches!(v, Value::Str(_)) {
                    Ok(v.clone())
                } else {
                    Err(bad(self, v))
                }
            }
            Type::Int => {
                if matches!(v, Value::Int(_) | Value::BigInt(_)) {
                    Ok(v.clone())
                } else {
                    Err(bad(self, v))
                }
            }
            Type::Float => match v {
                Value::Float(_) => Ok(v.clone()),
                _ => Err(bad(self, v)),
            },
            Type::Number => {
                if matches!(v, Value::Int(_) | Value::BigInt(_) | Value::Float(_)) {
                    Ok(v.clone())
                } else {
                    Err(bad(self, v))
                }
            }
            Type::Bool => {
                if matches!(v, Value::Bool(_)) {
                    Ok(v.clone())
                } else {
                    Err(bad(self, v))
                }
            }
            Type::Dict => {
                if matches!(v, Value::Dict(_)) {
                    Ok(v.clone())
                } else {
                    Err(bad(self, v))
                }
            }
            Type::List => match v {
                Value::List(l) if !l.iter().any(|x| matches!(x, Value::Instance(_))) => Ok(v.clone()),
                _ => Err(bad(self, v)),
            },
            Type::TypedList(inner) => match v {
                Value::List(l) => {
                    let mut out = Vec::with_capacity(l.len());
                    for x in l.iter() {
                        out.push(self.check_type(x, inner, span)?);
                    }
                    Ok(Value::list(out))
                }
                _ => Err(bad(self, v)),
            },
            Type::Typedef(t) => {
                let base = self.m.types.typedefs[*t].base.clone();
                let v = self.check_type(v, &base, span)?;
                if let Some(re) = &self.m.types.typedefs[*t].regex {
                    let Value::Str(s) = &v else { return Err(bad(self, &v)) };
                    // a match that gives up (back-tracking limit) is no match, as a failed check
                    if !re.is_match(s.as_ref()).unwrap_or(false) {
                        return Err(error(
                            ErrorKind::TypingException,
                            format!(
                                "Invalid value {}, does not match constraint `{}` of type {}",
                                format::short_repr(&v),
                                re.as_str().trim_start_matches("^(?:").trim_end_matches(')'),
                                self.m.types.typedefs[*t].name
                            ),
                            span,
                            self.m.sources,
                        ));
                    }
                    return Ok(v);
                }
                if let Some(c) = self.m.types.typedef_constraints[*t] {
                    let ns = self.m.types.typedefs[*t].ns;
                    let mut cache = Vec::new();
                    let mut cx = expr::Cx::new(self.m.ns_scopes[ns], ns, &mut cache);
                    cx.locals.push((Rc::from("self"), v.clone()));
                    cx.constraint = true;
                    let r = match self.eval(c, &mut cx) {
                        Ok(r) => r,
                        Err(Flow::Wait(_)) => {
                            return Err(error(
                                ErrorKind::DirectExecuteException,
                                format!(
                                    "The constraint of type {} can not be evaluated directly",
                                    self.m.types.typedefs[*t].name
                                ),
                                span,
                                self.m.sources,
                            ));
                        }
                        Err(e) => return Err(e),
                    };
                    if !r.truthy() && !r.is_unknown() {
                        return Err(error(
                            ErrorKind::TypingException,
                            format!(
                                "Invalid value {}, does not match constraint of type {}",
                                format::short_repr(&v),
                                self.m.types.typedefs[*t].name
                            ),
                            span,
                            self.m.sources,
                        ));
                    }
                }
                Ok(v)
            }
        }
    }

    pub(super) fn check_index_completion(&mut self, inst: InstId, ai: u32) {
        let ent = self.m.instances[inst as usize].entity;
        let name = &self.m.types.entities[ent].attrs[ai as usize].name;
        let idxs: Vec<usize> = self.m.types.entities[ent]
            .indexes
            .iter()
            .copied()
            .filter(|i| self.m.types.indexes[*i].fields.contains(name))
            .collect();
        for idx in idxs {
            let Some(key) = self.index_key(inst, idx) else { continue };
            match self.m.index_tables[idx].get(&key) {
                Some(&other) if other != inst => {
                    let msg = format!(
                        "Duplicate instance for index {}: {} and {} have the same key",
                        self.index_desc(idx),
                        self.inst_name(other),
                        self.inst_name(inst)
                    );
                    let span = self.m.instances[inst as usize].span;
                    self.errors.push(Diagnostic::error(ErrorKind::DuplicateException, msg, Some(span), self.m.sources));
                }
                Some(_) => {}
                None => {
                    self.m.index_tables[idx].insert(key.clone(), inst);
                    if let Some(w) = self.queue.index_waiters.remove(&(idx, key)) {
                        self.wake(w);
                    }
                }
            }
        }
    }
}
