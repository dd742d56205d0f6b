//! Gradual execution of list comprehensions and list literals, as Inmanta runs them where their
//! value goes to a multi-valued relation or a `for` loop: each element is passed on as soon as
//! it can be computed instead of once the whole list is complete. A comprehension over a
//! relation that is not frozen yet handles each element as it arrives, so a model may add to a
//! relation what a comprehension over it computes (`test_list_comprehension_gradual`).
//!
//! What a value goes to is a [`Sink`]. An [`Emit`](super::TaskKind::Emit) task computes an
//! expression into a sink; an [`Element`](super::TaskKind::Element) task runs one element of a
//! comprehension (its guards, then its value expression). Side effects are never repeated: a
//! task waits (and runs again from its start) only before it passed anything on; a list that
//! waits at a later item hands that item and the rest, with the side effects they made so far
//! (their part of the task's cache), to a new task.

use super::*;
use crate::diagnostics::ErrorKind;

/// Where the values of a gradually computed expression go.
pub(crate) enum Sink<'a> {
    /// added to a multi-valued relation of an instance; `constructor`: given in its
    /// constructor, where a value the relation refuses is not an `AttributeException`
    Rel { inst: InstId, attr: u32, span: Span, constructor: bool },
    /// each element is one iteration of `for var in ...: body end`
    For { body: &'a [Stmt], scope: ScopeId, var: &'a ast::Ident, span: Span },
    /// each element is one element of loop `level` of a comprehension, whose values go on to
    /// `then`; `locals` are the comprehension's loop variables of the outer levels
    Each { comprehension: &'a ast::Expr, level: usize, locals: Rc<[(Rc<str>, Value)]>, then: Rc<Sink<'a>> },
}

impl Sink<'_> {
    /// Where the values this sink receives come from, for a message.
    pub(crate) fn span(&self) -> Span {
        match self {
            Sink::Rel { span, .. } | Sink::For { span, .. } => *span,
            Sink::Each { comprehension, .. } => comprehension.span,
        }
    }
}

/// What an [`Emit`](super::TaskKind::Emit) task computes: an expression, or the items of a list
/// literal from one that waited on.
#[derive(Clone, Copy)]
pub(crate) enum Emitted<'a> {
    Expr(&'a ast::Expr),
    Items(&'a [ast::Expr]),
}

/// Whether a value is computed gradually: a comprehension, a list literal when `lists` (what
/// goes to a multi-valued relation; a `for` loop takes a list literal whole), or a conditional
/// expression whose branch is one.
pub(crate) fn is_gradual(e: &ast::Expr, lists: bool) -> bool {
    match &e.kind {
        ExprKind::Comprehension { .. } => true,
        ExprKind::List(_) => lists,
        ExprKind::Cond(_, a, b) => is_gradual(a, lists) || is_gradual(b, lists),
        _ => false,
    }
}

impl<'a> Evaluator<'a> {
    /// Computes `what` into `sink` in a task of its own, with the loop variables `locals`.
    pub(crate) fn spawn_emit(
        &mut self,
        what: Emitted<'a>,
        sink: Rc<Sink<'a>>,
        scope: ScopeId,
        ns: NsId,
        locals: Rc<[(Rc<str>, Value)]>,
        cache: Vec<Value>,
    ) {
        self.spawn(TaskKind::Emit { what, sink, scope, ns, locals });
        let t = self.queue.tasks.len() - 1;
        self.queue.tasks[t].cache = cache;
    }

    /// Computes `e` into `sink` now, as far as it can be computed; what waits goes on in a task
    /// of its own.
    pub(crate) fn emit_now(
        &mut self,
        e: &'a ast::Expr,
        sink: Sink<'a>,
        scope: ScopeId,
        ns: NsId,
        locals: &[(Rc<str>, Value)],
    ) -> EResult<()> {
        let sink = Rc::new(sink);
        let mut cache = Vec::new();
        let mut cx = expr::Cx::new(scope, ns, &mut cache);
        cx.locals.extend(locals.iter().cloned());
        cx.infer = self.sink_target(&sink);
        match self.exec_emit(Emitted::Expr(e), &sink, &mut cx) {
            Err(Flow::Wait(_)) => {
                self.spawn_emit(Emitted::Expr(e), sink, scope, ns, Rc::from(locals), cache);
                Ok(())
            }
            r => r,
        }
    }

    /// The entity a sink's relation holds, which a short constructor name may stand for.
    pub(crate) fn sink_target(&self, sink: &Sink<'a>) -> Option<EntId> {
        match sink {
            Sink::Rel { inst, attr, .. } => match &self.entity_of(*inst).attrs[*attr as usize].kind {
                AttrKind::Rel { target, .. } => Some(*target),
                AttrKind::Prim { .. } => None,
            },
            Sink::For { .. } => None,
            Sink::Each { then, .. } => self.sink_target(then),
        }
    }

    /// The attribute names a sink may add to, for the freezing of relations.
    pub(crate) fn sink_writes(&mut self, sink: &Sink<'a>, out: &mut Vec<Rc<str>>) {
        match sink {
            Sink::Rel { inst, attr, .. } => {
                let name = self.entity_of(*inst).attrs[*attr as usize].name.clone();
                self.add_name_and_reverse(&name, out);
            }
            Sink::For { body, .. } => {
                for b in *body {
                    out.extend(self.stmt_writes(b).iter().cloned());
                }
            }
            Sink::Each { comprehension, then, .. } => {
                self.expr_writes(comprehension, out, 0);
                self.sink_writes(then, out);
            }
        }
    }

    /// Runs an [`Emit`](super::TaskKind::Emit) task.
    pub(super) fn exec_emit(&mut self, what: Emitted<'a>, sink: &Rc<Sink<'a>>, cx: &mut expr::Cx<'_>) -> EResult<()> {
        match what {
            Emitted::Expr(e) => self.emit_expr(e, sink, false, cx),
            Emitted::Items(items) => self.emit_items(items, sink, cx),
        }
    }

    /// `in_list`: `e` is an item of a list literal, so any value is one element (a whole
    /// comprehension's iterable must be a list).
    fn emit_expr(
        &mut self,
        e: &'a ast::Expr,
        sink: &Rc<Sink<'a>>,
        in_list: bool,
        cx: &mut expr::Cx<'_>,
    ) -> EResult<()> {
        match &e.kind {
            ExprKind::Cond(c, yes, no) => match self.eval(c, cx)? {
                Value::Bool(true) => self.emit_expr(yes, sink, in_list, cx),
                Value::Bool(false) => self.emit_expr(no, sink, in_list, cx),
                Value::Unknown(u) => self.deliver(sink, Value::Unknown(u), cx),
                // the evaluation reports the condition that is no bool
                _ => {
                    let v = self.eval(e, cx)?;
                    self.deliver(sink, v, cx)
                }
            },
            ExprKind::List(items) => self.emit_items(items, sink, cx),
            ExprKind::Comprehension { fors, .. } => {
                let each = Rc::new(Sink::Each {
                    comprehension: e,
                    level: 0,
                    locals: Rc::from(cx.locals.clone()),
                    then: sink.clone(),
                });
                // a short constructor name stands for the relation's entity in the value only
                let infer = cx.infer.take();
                let r = self.emit_expr(&fors[0].1, &each, false, cx);
                cx.infer = infer;
                r
            }
            _ => {
                if let Some(src) = self.gradual_source(e, cx)? {
                    let mut writes = Vec::new();
                    self.sink_writes(sink, &mut writes);
                    self.listen(src, Listener::Sink { sink: sink.clone(), writes: Rc::from(writes) });
                    return Ok(());
                }
                let v = self.eval(e, cx)?;
                if let Sink::Each { .. } = &**sink
                    && !in_list
                    && !matches!(v, Value::List(_) | Value::Unknown(_) | Value::Null | Value::Instance(_))
                {
                    return Err(error(
                        ErrorKind::TypingException,
                        format!("Can not iterate over {} {}", v.type_name(), self.repr(&v)),
                        e.span,
                        self.m.sources,
                    ));
                }
                self.deliver(sink, v, cx)
            }
        }
    }

    /// The items of a list literal, each passed on as soon as it is computed.
    fn emit_items(&mut self, items: &'a [ast::Expr], sink: &Rc<Sink<'a>>, cx: &mut expr::Cx<'_>) -> EResult<()> {
        for (k, item) in items.iter().enumerate() {
            let seq = cx.seq;
            match self.emit_expr(item, sink, true, cx) {
                Ok(()) => {}
                Err(Flow::Wait(w)) if k == 0 => return Err(Flow::Wait(w)),
                Err(Flow::Wait(_)) => {
                    // items before this one were passed on: this one and the rest go on in a
                    // task of their own, with the side effects this one made so far
                    let made = cx.cache.split_off(seq.min(cx.cache.len()));
                    cx.seq = seq;
                    let locals: Rc<[(Rc<str>, Value)]> = Rc::from(cx.locals.clone());
                    self.spawn_emit(Emitted::Items(&items[k..]), sink.clone(), cx.scope, cx.ns, locals, made);
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Passes a computed value on to `sink`.
    pub(super) fn deliver(&mut self, sink: &Rc<Sink<'a>>, v: Value, cx: &mut expr::Cx<'_>) -> EResult<()> {
        match &**sink {
            Sink::Rel { inst, attr, span, constructor } => {
                let (inst, attr, span) = (*inst, *attr, *span);
                match self.assign_attr(inst, attr, v, false, span) {
                    Err(Flow::Err(d)) if !constructor => {
                        let name = self.entity_of(inst).attrs[attr as usize].name.clone();
                        Err(self.wrap_attr_error(inst, &name, d, span))
                    }
                    r => r,
                }
            }
            Sink::For { body, scope, var, span } => {
                let (body, scope, var, span) = (*body, *scope, *var, *span);
                let items: Vec<Value> = match v {
                    Value::List(l) => l.iter().cloned().collect(),
                    Value::Unknown(_) | Value::Null => Vec::new(),
                    other => vec![other],
                };
                for item in items {
                    if item.is_unknown() {
                        continue;
                    }
                    let sc = self.exec_block(body, scope, &[var.name.as_str()], span);
                    let slot = self.m.scopes[sc as usize].vars.get_mut(var.name.as_str()).expect("loop variable");
                    slot.value = Some((item, var.span));
                }
                Ok(())
            }
            Sink::Each { .. } => {
                let items: Vec<Value> = match v {
                    Value::List(l) => l.iter().cloned().collect(),
                    Value::Null => Vec::new(),
                    v => vec![v],
                };
                for item in items {
                    self.spawn(TaskKind::Element { sink: sink.clone(), item, scope: cx.scope, ns: cx.ns });
                }
                Ok(())
            }
        }
    }

    /// Unknowns a relation received, passed on to what consumes it gradually (listener
    /// `only`, or all): as in Inmanta, each unknown is an element of the relation.
    pub(super) fn pass_on_unknowns(&mut self, inst: InstId, ai: u32, only: Option<usize>, unknowns: &[Value]) {
        let Some(listeners) = self.queue.listeners.get(&(inst, ai)) else { return };
        let targets: Vec<Result<Rc<Sink<'a>>, (InstId, u32, Span)>> = listeners
            .iter()
            .enumerate()
            .filter(|(n, _)| only.is_none_or(|o| o == *n))
            .filter_map(|(_, l)| match l {
                Listener::Sink { sink, .. } => Some(Ok(sink.clone())),
                Listener::AddTo { inst, attr, span, .. } => Some(Err((*inst, *attr, *span))),
                Listener::For { .. } => None,
            })
            .collect();
        let scope = self.m.ns_scopes.first().copied().unwrap_or(0);
        for target in targets {
            for u in unknowns {
                let r = match &target {
                    Ok(sink) => {
                        let mut cache = Vec::new();
                        let mut cx = expr::Cx::new(scope, self.m.scopes[scope as usize].ns, &mut cache);
                        self.deliver(sink, u.clone(), &mut cx)
                    }
                    Err((to, attr, span)) => self.assign_attr(*to, *attr, u.clone(), false, *span),
                };
                if let Err(Flow::Err(d)) = r {
                    self.errors.push(*d);
                }
            }
        }
    }

    /// Runs an [`Element`](super::TaskKind::Element) task: one element of a comprehension's loop.
    pub(super) fn exec_element(&mut self, sink: &Rc<Sink<'a>>, item: Value, cx: &mut expr::Cx<'_>) -> EResult<()> {
        let Sink::Each { comprehension, level, locals, then } = &**sink else { return Ok(()) };
        let ExprKind::Comprehension { value, fors, guards } = &comprehension.kind else { return Ok(()) };
        let (value, fors, guards, level) = (&**value, &fors[..], &guards[..], *level);
        cx.locals.extend(locals.iter().cloned());
        cx.locals.push((Rc::from(fors[level].0.name.as_str()), item.clone()));
        if level + 1 < fors.len() {
            if item.is_unknown() {
                // as the whole comprehension: an unknown element stands for its inner loops
                return self.deliver(then, item, cx);
            }
            let inner = Rc::new(Sink::Each {
                comprehension,
                level: level + 1,
                locals: Rc::from(cx.locals.clone()),
                then: then.clone(),
            });
            cx.infer = None;
            return self.emit_expr(&fors[level + 1].1, &inner, false, cx);
        }
        let infer = cx.infer.take();
        let kept = self.guards_keep(guards, cx)?;
        cx.infer = infer;
        match kept {
            Value::Bool(false) => Ok(()),
            // the value expression is not run for an unknown element, nor under an unknown guard
            Value::Bool(true) if item.is_unknown() => self.deliver(then, item, cx),
            Value::Bool(true) => self.emit_expr(value, then, false, cx),
            unknown => self.deliver(then, unknown, cx),
        }
    }
}
