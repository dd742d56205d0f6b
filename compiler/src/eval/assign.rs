//! Instances and their attributes: creation, implementation selection, assignment of values and
//! relations (with the errors Inmanta reports for them).

use super::*;
use crate::diagnostics::ErrorKind;

impl<'a> Evaluator<'a> {
    /// A failure to set attribute `attr` as the AttributeException Inmanta wraps it in (one that
    /// already is one stays as it is).
    pub(super) fn wrap_attr_error(&self, inst: InstId, attr: &str, cause: Box<Diagnostic>, span: Span) -> Flow {
        // a name that is not found fails where Inmanta looks names up, before that unit of work
        if cause.kind == ErrorKind::AttributeException || cause.origin == crate::diagnostics::Origin::VariableLookup {
            return Flow::Err(cause);
        }
        let Diagnostic { kind, message, notes, .. } = *cause;
        let Flow::Err(mut d) = self.attr_error(inst, attr, &kind, message, span) else { unreachable!() };
        d.notes = notes;
        Flow::Err(d)
    }

    pub(super) fn attr_error(&self, inst: InstId, attr: &str, cause: &ErrorKind, msg: String, span: Span) -> Flow {
        Flow::Err(Box::new(Diagnostic::error(
            ErrorKind::AttributeException,
            format!("Could not set attribute `{attr}` on instance `{}`: {cause}: {msg}", self.inst_name(inst)),
            Some(span),
            self.m.sources,
        )))
    }

    /// Creates an instance with empty slots.
    pub(crate) fn new_instance(&mut self, ent: EntId, span: Span) -> InstId {
        let slots = self.m.types.entities[ent]
            .attrs
            .iter()
            .map(|a| match a.kind {
                AttrKind::Prim { .. } => Slot::Prim { value: None, waiters: Waiters::default() },
                AttrKind::Rel { .. } => Slot::Rel(RelSlot {
                    items: Vec::new(),
                    set: None,
                    frozen: false,
                    waiters: Waiters::default(),
                    candidate: false,
                    first: NO_SPAN,
                    unknown: Default::default(),
                }),
            })
            .collect();
        let id = self.m.instances.len() as InstId;
        let n_impl = self.m.types.entities[ent].implements.len() as u32;
        self.m.instances.push(Instance {
            entity: ent,
            slots,
            span,
            selected: 0,
            pending_impl: n_impl,
            unknown_when: false,
            depth: 0,
        });
        self.m.by_entity[ent].push(id);
        id
    }

    /// Schedules the implement statements of a new instance.
    pub(crate) fn select_implementations(&mut self, inst: InstId) {
        let ent = self.m.instances[inst as usize].entity;
        for idx in 0..self.m.types.entities[ent].implements.len() {
            let ns = self.m.types.entities[ent].implements[idx].ns;
            let parent = self.m.ns_scopes[ns];
            self.spawn(TaskKind::Implement { inst, ent, idx, scope: parent });
        }
    }

    /// The error for `+=` on an attribute that holds at most one value.
    pub(super) fn add_to_single(&self, ent: EntId, ai: u32, span: Span) -> Flow {
        let attr = &self.m.types.entities[ent].attrs[ai as usize];
        let msg = match attr.kind {
            AttrKind::Prim { .. } => {
                format!("Can not use += on attribute {}: += can only be used on relations", attr.name)
            }
            AttrKind::Rel { .. } => format!(
                "Can not use += on relation {}.{} because it holds at most one value; use =",
                self.m.types.entities[ent].name, attr.name
            ),
        };
        error(ErrorKind::TypingException, msg, span, self.m.sources)
    }

    /// Assigns (or adds, for relations) a value to an attribute of an instance.
    pub(crate) fn assign_attr(&mut self, inst: InstId, ai: u32, v: Value, add: bool, span: Span) -> EResult<()> {
        let ent = self.m.instances[inst as usize].entity;
        let attrs = self.m.types.entities[ent].attrs.clone();
        let attr = &attrs[ai as usize];
        match &attr.kind {
            AttrKind::Prim { ty, .. } => {
                if add {
                    return Err(self.add_to_single(ent, ai, span));
                }
                // as Inmanta's `ResultVariable.set_value`: a value equal to the one set already is
                // dropped before its type is checked (`int` 4 then 4.0 from a division)
                if let Slot::Prim { value: Some((old, _)), .. } = &self.m.instances[inst as usize].slots[ai as usize]
                    && *old == v
                    && !v.is_unknown()
                {
                    return Ok(());
                }
                if let Value::Reference(r) = &v {
                    crate::references::check_not_indexed(self, ent, &attr.name, r, span)?;
                }
                let v = match self.check_type(&v, ty, span) {
                    Ok(v) => v,
                    Err(Flow::Err(d)) => {
                        let cause = d.kind.clone();
                        return Err(self.attr_error(inst, &attr.name, &cause, d.message, span));
                    }
                    Err(w) => return Err(w),
                };
                self.set_prim(inst, ai, &attr.name, v, span)
            }
            AttrKind::Rel { target, hi, lo, reverse } => {
                let (target, hi, lo) = (*target, *hi, *lo);
                if add && hi == Some(1) {
                    return Err(self.add_to_single(ent, ai, span));
                }
                let items: Vec<Value> = match v {
                    // a relation that holds at most one value takes an instance, never a list
                    Value::List(l) if hi == Some(1) => {
                        let msg = format!(
                            "Invalid type for value '{}', should be type {}",
                            self.repr(&Value::List(l)),
                            self.m.types.entities[target].name
                        );
                        return Err(self.attr_error(inst, &attr.name, &ErrorKind::RuntimeException, msg, span));
                    }
                    Value::List(l) => l.iter().cloned().collect(),
                    Value::Null => {
                        let Slot::Rel(r) = &mut self.m.instances[inst as usize].slots[ai as usize] else {
                            unreachable!()
                        };
                        if !r.items.is_empty() {
                            return Err(self.attr_error(
                                inst,
                                &attr.name,
                                &ErrorKind::RuntimeException,
                                "can not set null on a relation that already has values".into(),
                                span,
                            ));
                        }
                        if lo > 0 {
                            return Err(self.attr_error(
                                inst,
                                &attr.name,
                                &ErrorKind::RuntimeException,
                                format!("null is not valid for a relation with lower bound {lo}"),
                                span,
                            ));
                        }
                        self.freeze(inst, ai);
                        return Ok(());
                    }
                    other => vec![other],
                };
                for item in items {
                    let other = match item {
                        Value::Instance(o) => o,
                        Value::Unknown(u) => {
                            if let Slot::Rel(r) = &mut self.m.instances[inst as usize].slots[ai as usize]
                                && r.unknown.add(u.clone())
                            {
                                self.pass_on_unknowns(inst, ai, None, &[Value::Unknown(u)]);
                            }
                            if hi == Some(1) {
                                self.freeze(inst, ai);
                            }
                            continue;
                        }
                        Value::Null => continue,
                        other => {
                            let msg = format!(
                                "Can not assign {} {} to relation {}.{}: expected an instance of {}",
                                other.type_name(),
                                self.repr(&other),
                                self.m.types.entities[ent].name,
                                attr.name,
                                self.m.types.entities[target].name
                            );
                            return Err(self.attr_error(inst, &attr.name, &ErrorKind::TypingException, msg, span));
                        }
                    };
                    let oe = self.m.instances[other as usize].entity;
                    if !self.m.types.is_subtype(oe, target) {
                        return Err(error(
                            ErrorKind::TypingException,
                            format!(
                                "{WRONG_ENTITY} {}.{}: expected {}, got {}",
                                self.m.types.entities[ent].name,
                                attr.name,
                                self.m.types.entities[target].name,
                                self.inst_name(other)
                            ),
                            span,
                            self.m.sources,
                        ));
                    }
                    self.add_rel(inst, ai, other, span)?;
                    if let Some(rev) = reverse {
                        let (rai, _) = self.entity_of(other).attr(rev).expect("reverse relation exists");
                        // a write through the reverse end: Inmanta places its error at the
                        // instance whose attribute it could not set
                        if let Err(Flow::Err(mut d)) = self.add_rel(other, rai as u32, inst, span) {
                            d.location = self.m.sources.location(self.m.instances[other as usize].span);
                            return Err(Flow::Err(d));
                        }
                    }
                }
                Ok(())
            }
        }
    }

    pub(super) fn set_prim(&mut self, inst: InstId, ai: u32, name: &str, v: Value, span: Span) -> EResult<()> {
        let sources = self.m.sources;
        match self.m.store_prim(inst, ai, v, span) {
            Ok(None) => Ok(()),
            Ok(Some(woken)) => {
                self.wake(woken);
                self.check_index_completion(inst, ai);
                Ok(())
            }
            Err(conflict) => {
                let msg = conflict.message(sources, span);
                let Flow::Err(d) = self.attr_error(inst, name, &ErrorKind::DoubleSetException, msg, span) else {
                    unreachable!()
                };
                Err(Flow::Err(Box::new(d.with_note(format!("first set at {}", loc_str(sources, conflict.old_span))))))
            }
        }
    }

    pub(super) fn add_rel(&mut self, inst: InstId, ai: u32, other: InstId, span: Span) -> EResult<()> {
        let ent = self.m.instances[inst as usize].entity;
        let (hi, name) = match &self.m.types.entities[ent].attrs[ai as usize] {
            Attribute { kind: AttrKind::Rel { hi, .. }, name, .. } => (*hi, name.clone()),
            _ => unreachable!(),
        };
        let Slot::Rel(r) = &mut self.m.instances[inst as usize].slots[ai as usize] else { unreachable!() };
        if r.contains(other) {
            return Ok(());
        }
        if r.frozen {
            if hi == Some(1) && !r.items.is_empty() {
                let old = r.items[0];
                let first = r.first();
                let msg = value_set_twice(
                    &self.inst_name(old),
                    &first.map(|s| loc_str(self.m.sources, s)).unwrap_or_default(),
                    &self.inst_name(other),
                    &loc_str(self.m.sources, span),
                );
                return Err(self.attr_error(inst, &name, &ErrorKind::DoubleSetException, msg, span));
            }
            if let Some(h) = hi
                && r.items.len() as u32 >= h
            {
                return Err(self.attr_error(
                    inst,
                    &name,
                    &ErrorKind::RuntimeException,
                    format!(
                        "Exceeded relation arity on attribute '{name}' of instance '{}': at most {h} values allowed",
                        self.inst_name(inst)
                    ),
                    span,
                ));
            }
            return Err(self.attr_error(
                inst,
                &name,
                &ErrorKind::ModifiedAfterFreezeException,
                format!("Attempting to modify the relation {name} after it was frozen (it was read as complete before this value was added)"),
                span,
            ));
        }
        r.push(other);
        if r.first == NO_SPAN {
            r.first = span;
        }
        // what only needs an element (`is defined`, Inmanta's gradual IsDefined) goes on now; a
        // read of the whole relation waits again, for its freezing
        let woken = if r.items.len() == 1 { std::mem::take(&mut r.waiters) } else { Default::default() };
        let full = hi.is_some_and(|h| r.items.len() as u32 >= h);
        self.wake(woken);
        if let Some(ls) = self.queue.listeners.get(&(inst, ai)) {
            for idx in 0..ls.len() {
                self.queue.deferred.push_back((inst, ai, idx, other));
            }
        }
        if full {
            self.freeze(inst, ai);
            self.check_index_completion(inst, ai);
        }
        Ok(())
    }
}
