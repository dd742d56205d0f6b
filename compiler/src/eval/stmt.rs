//! Statements: blocks, assignments, `for`, `if`, implementations, late constructor arguments
//! and variables.

use super::*;
use crate::diagnostics::ErrorKind;

impl<'a> Evaluator<'a> {
    pub(super) fn exec_block(&mut self, block: &'a [Stmt], parent: ScopeId, extra: &[&'a str], span: Span) -> ScopeId {
        let mut names: Vec<&'a str> = extra.to_vec();
        for n in declared(block) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        let ns = self.m.scopes[parent as usize].ns;
        let sc = self.new_scope(Some(parent), ns, &names, span);
        // back to front, as Inmanta runs them: its parser builds a nested block's statement list
        // that way (`stmt_list : statement stmt_list` appends), and the first error it meets is
        // the one it reports (a file's top level is in source order)
        for s in block.iter().rev() {
            self.spawn(TaskKind::Stmt(s, sc));
        }
        sc
    }

    pub(super) fn exec_stmt(&mut self, s: &'a Stmt, cx: &mut expr::Cx<'_>) -> EResult<()> {
        match s {
            Stmt::Expr(e) => {
                self.eval(e, cx)?;
                Ok(())
            }
            Stmt::Assign { target, value, add, span } => match &target.kind {
                ExprKind::Var(name) => {
                    let v = match self.queue.turned.remove(&self.queue.current) {
                        Some(v) => v,
                        None if !*add && computed_by_call(value) => {
                            let v = self.eval(value, cx)?;
                            self.queue.turned.insert(self.queue.current, v);
                            return Err(Flow::Wait(Wait::Turn));
                        }
                        None => self.eval(value, cx)?,
                    };
                    let self_instance = self
                        .lookup_decl(cx.scope, "self")
                        .and_then(|sc| self.m.scopes[sc as usize].vars.get("self"))
                        .is_some_and(|slot| matches!(slot.value, Some((Value::Instance(_), _))));
                    if &**name == "self" && !*add && self_instance {
                        // Inmanta lets an implementation assign `self` without effect on the instance
                        return Ok(());
                    }
                    if *add {
                        return Err(error(
                            ErrorKind::TypingException,
                            format!("Can not use += on variable {name}; += only adds to relations"),
                            *span,
                            self.m.sources,
                        ));
                    }
                    if name.contains("::") {
                        return Err(error(
                            ErrorKind::NotFoundException,
                            format!("Can not assign to variable {name} of another namespace"),
                            *span,
                            self.m.sources,
                        ));
                    }
                    self.set_var(cx.scope, name, v, *span)
                }
                ExprKind::Attr(obj, attr) => {
                    let o = self.eval(obj, cx)?;
                    let inst = match o {
                        Value::Instance(i) => i,
                        Value::Unknown(_) => return Ok(()),
                        Value::List(_) => {
                            return Err(error(
                                ErrorKind::TypingException,
                                format!(
                                    "Can not set attribute {} on a list: {} is a multi-valued relation or list",
                                    attr.name,
                                    expr::describe_expr(obj)
                                ),
                                obj.span,
                                self.m.sources,
                            ));
                        }
                        other => {
                            return Err(error(
                                ErrorKind::TypingException,
                                format!(
                                    "Can not set attribute {} on {} value {}",
                                    attr.name,
                                    other.type_name(),
                                    self.repr(&other)
                                ),
                                obj.span,
                                self.m.sources,
                            ));
                        }
                    };
                    let ent = self.m.instances[inst as usize].entity;
                    let Some((ai, a)) = self.m.types.entities[ent].attr(&attr.name) else {
                        return Err(error(
                            ErrorKind::NotFoundException,
                            format!("Entity {} has no attribute {}", self.m.types.entities[ent].name, attr.name),
                            attr.span,
                            self.m.sources,
                        ));
                    };
                    let target_ent = match &a.kind {
                        AttrKind::Rel { target, .. } => Some(*target),
                        _ => None,
                    };
                    let multi_target = matches!(a.kind, AttrKind::Rel { hi, .. } if hi != Some(1));
                    if *add && !multi_target {
                        // Inmanta checks this before it computes the value (no AttributeException)
                        return Err(self.add_to_single(ent, ai as u32, *span));
                    }
                    if multi_target && gradual::is_gradual(value, true) {
                        let sink = gradual::Sink::Rel { inst, attr: ai as u32, span: *span, constructor: false };
                        return self.emit_now(value, sink, cx.scope, cx.ns, &cx.locals);
                    }
                    if multi_target && let Some(src) = self.gradual_source(value, cx)? {
                        self.add_gradually(src, inst, ai as u32, *span);
                        return Ok(());
                    }
                    let prev = std::mem::replace(&mut cx.infer, target_ent);
                    let v = self.eval(value, cx);
                    cx.infer = prev;
                    // Inmanta computes the value and sets it in one unit of work, which reports any
                    // failure as an AttributeException of the attribute it was for
                    match v.and_then(|v| self.assign_attr(inst, ai as u32, v, *add, *span)) {
                        Err(Flow::Err(d)) => Err(self.wrap_attr_error(inst, &attr.name, d, *span)),
                        r => r,
                    }
                }
                _ => Err(error(ErrorKind::ParserException, "invalid assignment target", *span, self.m.sources)),
            },
            Stmt::For { var, iter, body, span } => {
                if gradual::is_gradual(iter, false) {
                    let sink = gradual::Sink::For { body, scope: cx.scope, var, span: *span };
                    return self.emit_now(iter, sink, cx.scope, cx.ns, &cx.locals);
                }
                if let Some(src) = self.gradual_source(iter, cx)? {
                    let mut all: Vec<Rc<str>> = Vec::new();
                    for b in body {
                        all.extend(self.stmt_writes(b).iter().cloned());
                    }
                    let l = Listener::For { body, scope: cx.scope, var, span: *span, writes: Rc::from(all) };
                    self.listen(src, l);
                    return Ok(());
                }
                let it = self.eval(iter, cx)?;
                let items: Vec<Value> = match it {
                    Value::List(l) => l.iter().cloned().collect(),
                    Value::Unknown(_) => vec![],
                    other => {
                        return Err(error(
                            ErrorKind::TypingException,
                            format!(
                                "A for loop can only iterate over a list or a relation, not over {} {}",
                                other.type_name(),
                                self.repr(&other)
                            ),
                            iter.span,
                            self.m.sources,
                        ));
                    }
                };
                for item in items {
                    if item.is_unknown() {
                        continue;
                    }
                    let sc = self.exec_block(body, cx.scope, &[var.name.as_str()], *span);
                    let slot = self.m.scopes[sc as usize].vars.get_mut(var.name.as_str()).expect("loop variable");
                    slot.value = Some((item, var.span));
                }
                Ok(())
            }
            Stmt::If { branches, otherwise, span } => {
                let blocks: Vec<&'a ast::Block> = branches.iter().map(|(_, b)| b).chain([otherwise]).collect();
                self.check_branch_promises(&blocks, cx)?;
                for (cond, block) in branches {
                    let c = self.eval(cond, cx)?;
                    match c {
                        Value::Unknown(_) => return Ok(()),
                        Value::Bool(true) => {
                            self.exec_block(block, cx.scope, &[], *span);
                            return Ok(());
                        }
                        Value::Bool(false) => continue,
                        other => {
                            return Err(error(
                                ErrorKind::RuntimeException,
                                format!(
                                    "Invalid value {}: the condition of an if statement must be a bool",
                                    self.repr(&other)
                                ),
                                cond.span,
                                self.m.sources,
                            ));
                        }
                    }
                }
                self.exec_block(otherwise, cx.scope, &[], *span);
                Ok(())
            }
        }
    }

    /// Sets a constructor argument that had to wait (see [`LateArg`]).
    pub(super) fn exec_late_arg(&mut self, inst: InstId, arg: LateArg<'a>, cx: &mut expr::Cx<'_>) -> EResult<()> {
        let (target, multi) = match &self.entity_of(inst).attrs[arg.attr as usize].kind {
            AttrKind::Rel { target, hi, .. } => (Some(*target), *hi != Some(1)),
            AttrKind::Prim { .. } => (None, false),
        };
        if multi && gradual::is_gradual(arg.value, true) {
            let sink = gradual::Sink::Rel { inst, attr: arg.attr, span: arg.value.span, constructor: false };
            return self.emit_now(arg.value, sink, cx.scope, cx.ns, &cx.locals);
        }
        if multi && let Some(src) = self.gradual_source(arg.value, cx)? {
            self.add_gradually(src, inst, arg.attr, arg.constructor);
            return Ok(());
        }
        let prev = std::mem::replace(&mut cx.infer, target);
        let v = self.eval(arg.value, cx);
        cx.infer = prev;
        match v.and_then(|v| self.assign_attr(inst, arg.attr, v, false, arg.value.span)) {
            Err(Flow::Err(d)) => {
                let name = self.entity_of(inst).attrs[arg.attr as usize].name.clone();
                Err(self.wrap_attr_error(inst, &name, d, arg.constructor))
            }
            r => r,
        }
    }

    /// Runs a constructor argument later, in its own task.
    pub(crate) fn spawn_late_arg(&mut self, inst: InstId, arg: LateArg<'a>, scope: ScopeId, ns: NsId) {
        self.spawn(TaskKind::SetAttr { inst, arg, scope, ns });
    }

    pub(super) fn exec_implement(
        &mut self,
        inst: InstId,
        ent: EntId,
        idx: usize,
        cx: &mut expr::Cx<'_>,
    ) -> EResult<()> {
        let stmt = &self.m.types.entities[ent].implements[idx];
        let when = stmt.when;
        let impls = stmt.impls.clone();
        let selected = match when {
            None => true,
            Some(w) => match self.eval(w, cx)? {
                Value::Unknown(_) => {
                    self.m.instances[inst as usize].unknown_when = true;
                    false
                }
                Value::Bool(b) => b,
                other => {
                    return Err(error(
                        ErrorKind::RuntimeException,
                        format!(
                            "The condition of an implement statement must be a bool, got {} {}",
                            other.type_name(),
                            self.repr(&other)
                        ),
                        w.span,
                        self.m.sources,
                    ));
                }
            },
        };
        self.m.instances[inst as usize].pending_impl -= 1;
        if selected {
            self.m.instances[inst as usize].selected += 1;
            for i in impls {
                let im = &self.m.types.implementations[i];
                let (body, ns, span) = (im.body, im.ns, im.span);
                let parent = self.m.ns_scopes[ns];
                let sc = self.exec_block(body, parent, &["self"], span);
                let slot = self.m.scopes[sc as usize].vars.get_mut("self").expect("self");
                slot.value = Some((Value::Instance(inst), span));
            }
        }
        Ok(())
    }

    pub(crate) fn set_var(&mut self, scope: ScopeId, name: &str, v: Value, span: Span) -> EResult<()> {
        let sources = self.m.sources;
        match self.m.store_var(scope, name, v, span) {
            Ok(woken) => {
                self.wake(woken);
                Ok(())
            }
            Err(conflict) => {
                let msg = conflict.message(sources, span);
                Err(Flow::Err(Box::new(
                    Diagnostic::error(
                        ErrorKind::DoubleSetException,
                        format!("Variable {name}: {msg}"),
                        Some(span),
                        sources,
                    )
                    .with_note(format!("first set at {}", loc_str(sources, conflict.old_span))),
                )))
            }
        }
    }

    /// Reads a variable through the scope chain.
    pub(crate) fn read_var(&mut self, scope: ScopeId, name: &str, span: Span) -> EResult<Value> {
        let Some(sc) = self.lookup_decl(scope, name) else {
            let error =
                Diagnostic::error(ErrorKind::NotFoundException, var_not_found(name), Some(span), self.m.sources);
            return Err(Flow::Err(Box::new(error.raised_by(crate::diagnostics::Origin::VariableLookup))));
        };
        match &self.m.scopes[sc as usize].vars.get(name).expect("declared").value {
            Some((v, _)) => Ok(v.clone()),
            None => Err(Flow::Wait(Wait::Var(sc, Rc::from(name)))),
        }
    }
}
