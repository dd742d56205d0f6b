//! The task queue: runs ready tasks, parks those that wait, wakes them, feeds relation listeners
//! (gradual execution) and freezes relations when nothing can run.

use super::*;
use crate::diagnostics::ErrorKind;

/// The tasks and what they wait for: the ready queue, parked tasks, waiters on index entries,
/// listeners on relations and relations that may be frozen.
#[derive(Default)]
pub(super) struct Queue<'a> {
    pub(super) tasks: Vec<Task<'a>>,
    pub(super) ready: VecDeque<TaskId>,
    pub(super) live_tasks: usize,
    pub(super) index_waiters: FastMap<(usize, String), Vec<TaskId>>,
    pub(super) freeze_candidates: Vec<(InstId, u32)>,
    /// waits of parked tasks, for the end-of-compile report
    pub(super) parked: FastMap<TaskId, Wait>,
    pub(super) listeners: FastMap<(InstId, u32), Vec<Listener<'a>>>,
    /// the task that runs
    pub(super) current: TaskId,
    /// values computed by a call, of the tasks that went to the back of the queue to set them
    /// (see [`computed_by_call`])
    pub(super) turned: FastMap<TaskId, Value>,
    /// (relation, listener index, new element) to process
    pub(super) deferred: VecDeque<(InstId, u32, usize, InstId)>,
}

impl<'a> Evaluator<'a> {
    /// Frees what only the evaluation needed: the tasks and their caches, the scopes of blocks
    /// and implementation bodies, listeners and index waiters (the waiters of slots are empty
    /// once every task ran), and the namespace scopes too unless `keep_root_variables` (they
    /// hold the root variables, e.g. a model's data list). Called after [`Evaluator::run`],
    /// before the export, which is where the compile's memory peaks: at 100 000 resources this
    /// state was about 350 MB of a 1.35 GB peak.
    pub(crate) fn release_queue(&mut self, keep_root_variables: bool) {
        self.queue.tasks = Vec::new();
        self.queue.ready = VecDeque::new();
        self.queue.deferred = VecDeque::new();
        self.queue.listeners = FastMap::default();
        self.queue.parked = FastMap::default();
        self.queue.index_waiters = FastMap::default();
        self.queue.freeze_candidates = Vec::new();
        self.pending_writes.potential_writes = FastMap::default();
        self.pending_writes.write_cache = FastMap::default();
        // namespace scopes are made first (`run`), so they are a prefix of `scopes`
        let keep = if keep_root_variables {
            self.m.ns_scopes.iter().map(|s| *s as usize + 1).max().unwrap_or(0)
        } else {
            self.m.ns_scopes.clear();
            0
        };
        self.m.scopes.truncate(keep);
        self.m.scopes.shrink_to_fit();
    }

    pub(super) fn finish_task(&mut self, t: TaskId) {
        let writes = self.queue.tasks[t as usize].writes.clone();
        for w in writes.iter() {
            if let Some(c) = self.pending_writes.potential_writes.get_mut(w) {
                *c -= 1;
            }
        }
        self.queue.tasks[t as usize].cache = Vec::new();
        self.queue.live_tasks -= 1;
    }

    pub(super) fn run_task(&mut self, t: TaskId) {
        self.queue.parked.remove(&t);
        self.queue.current = t;
        let mut cache = std::mem::take(&mut self.queue.tasks[t as usize].cache);
        let result = match self.queue.tasks[t as usize].kind {
            TaskKind::Stmt(s, scope) => {
                let mut cx = expr::Cx::new(scope, self.m.scopes[scope as usize].ns, &mut cache);
                self.exec_stmt(s, &mut cx)
            }
            TaskKind::Implement { inst, ent, idx, scope } => {
                let ns = self.m.types.entities[ent].implements[idx].ns;
                let mut cx = expr::Cx::new(scope, ns, &mut cache);
                cx.locals.push((Rc::from("self"), Value::Instance(inst)));
                self.exec_implement(inst, ent, idx, &mut cx)
            }
            TaskKind::SetAttr { inst, arg, scope, ns } => {
                let mut cx = expr::Cx::new(scope, ns, &mut cache);
                self.exec_late_arg(inst, arg, &mut cx)
            }
            TaskKind::Emit { what, ref sink, scope, ns, ref locals } => {
                let (sink, locals) = (sink.clone(), locals.clone());
                let mut cx = expr::Cx::new(scope, ns, &mut cache);
                cx.locals.extend(locals.iter().cloned());
                cx.infer = self.sink_target(&sink);
                self.exec_emit(what, &sink, &mut cx)
            }
            TaskKind::Element { ref sink, ref item, scope, ns } => {
                let (sink, item) = (sink.clone(), item.clone());
                let mut cx = expr::Cx::new(scope, ns, &mut cache);
                cx.infer = self.sink_target(&sink);
                self.exec_element(&sink, item, &mut cx)
            }
        };
        self.queue.tasks[t as usize].cache = cache;
        match result {
            Ok(()) => self.finish_task(t),
            Err(Flow::Wait(w)) => self.park(t, w),
            Err(Flow::Err(d)) => {
                self.errors.push(*d);
                self.finish_task(t);
            }
        }
    }

    pub(super) fn run_deferred(&mut self, (src, ai, idx, elem): (InstId, u32, usize, InstId)) {
        let Some(l) = self.queue.listeners.get(&(src, ai)).and_then(|ls| ls.get(idx)) else { return };
        match l {
            Listener::For { body, scope, var, span, .. } => {
                let (body, scope, var, span) = (*body, *scope, *var, *span);
                let sc = self.exec_block(body, scope, &[var.name.as_str()], span);
                let slot = self.m.scopes[sc as usize].vars.get_mut(var.name.as_str()).expect("loop variable");
                slot.value = Some((Value::Instance(elem), var.span));
            }
            Listener::AddTo { inst, attr, span, .. } => {
                let (inst, attr, span) = (*inst, *attr, *span);
                if let Err(Flow::Err(d)) = self.assign_attr(inst, attr, Value::Instance(elem), false, span) {
                    let name = self.entity_of(inst).attrs[attr as usize].name.clone();
                    let Flow::Err(d) = self.wrap_attr_error(inst, &name, d, span) else { unreachable!() };
                    self.errors.push(*d);
                }
            }
            Listener::Sink { sink, .. } => {
                let sink = sink.clone();
                // the scope only names where the element tasks run; a sink carries its own
                let scope = self.m.ns_scopes.first().copied().unwrap_or(0);
                let mut cache = Vec::new();
                let mut cx = expr::Cx::new(scope, self.m.scopes[scope as usize].ns, &mut cache);
                if let Err(Flow::Err(d)) = self.deliver(&sink, Value::Instance(elem), &mut cx) {
                    self.errors.push(*d);
                }
            }
        }
    }

    /// The relation an expression reads, when it is a multi-valued relation that is not frozen
    /// yet: consumers of such a relation can process its elements as they arrive.
    pub(super) fn gradual_source(&mut self, e: &'a ast::Expr, cx: &mut expr::Cx<'_>) -> EResult<Option<(InstId, u32)>> {
        if let ExprKind::Var(name) = &e.kind {
            // a relation of `self` named bare in its implementation (`for x in peers:`) is as
            // gradual as `self.peers`: Inmanta resolves the name to the same relation variable
            if name.contains("::") || cx.locals.iter().any(|(n, _)| **n == **name) {
                return Ok(None);
            }
            let Some(inst) = self.self_attr_in_scope(cx.scope, name) else { return Ok(None) };
            return Ok(self.unfrozen_multi(inst, name));
        }
        if let ExprKind::Cond(cond, yes, no) = &e.kind {
            // as Inmanta: the branch the condition selects is consumed gradually
            let seq = cx.seq;
            let branch = match self.eval(cond, cx)? {
                Value::Bool(true) => yes,
                Value::Bool(false) => no,
                _ => {
                    cx.seq = seq;
                    return Ok(None);
                }
            };
            let found = self.gradual_source(branch, cx)?;
            if found.is_none() {
                cx.seq = seq;
            }
            return Ok(found);
        }
        let ExprKind::Attr(obj, name) = &e.kind else { return Ok(None) };
        // The caller evaluates `e` again when this returns None: rewind the side-effect counter so
        // that constructors in `obj` are taken from the cache instead of running twice.
        let seq = cx.seq;
        let found = match self.eval(obj, cx)? {
            Value::Instance(i) => self.unfrozen_multi(i, &name.name),
            _ => None,
        };
        if found.is_none() {
            cx.seq = seq;
        }
        Ok(found)
    }

    /// Attribute `name` of `inst`, when it is a multi-valued relation that is not frozen yet.
    pub(super) fn unfrozen_multi(&self, inst: InstId, name: &str) -> Option<(InstId, u32)> {
        match self.entity_of(inst).attr(name) {
            Some((ai, a)) if matches!(a.kind, AttrKind::Rel { hi, .. } if hi != Some(1)) => {
                match &self.m.instances[inst as usize].slots[ai] {
                    Slot::Rel(r) if !r.frozen => Some((inst, ai as u32)),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// `inst.attr += src` for a relation `src` that is not frozen yet: each element is added as
    /// it arrives.
    pub(crate) fn add_gradually(&mut self, src: (InstId, u32), inst: InstId, attr: u32, span: Span) {
        let mut writes = Vec::new();
        let name = self.m.types.entities[self.m.instances[inst as usize].entity].attrs[attr as usize].name.clone();
        self.add_name_and_reverse(&name, &mut writes);
        self.listen(src, Listener::AddTo { inst, attr, span, writes: Rc::from(writes) });
    }

    pub(super) fn listen(&mut self, src: (InstId, u32), l: Listener<'a>) {
        for w in l.writes().iter() {
            *self.pending_writes.potential_writes.entry(w.clone()).or_insert(0) += 1;
        }
        let ls = self.queue.listeners.entry(src).or_default();
        ls.push(l);
        let idx = ls.len() - 1;
        let Slot::Rel(r) = &mut self.m.instances[src.0 as usize].slots[src.1 as usize] else { return };
        for &elem in &r.items {
            self.queue.deferred.push_back((src.0, src.1, idx, elem));
        }
        if !r.unknown.is_empty() {
            let unknowns: Vec<Value> = r.unknown.iter().map(|u| Value::Unknown(u.clone())).collect();
            self.pass_on_unknowns(src.0, src.1, Some(idx), &unknowns);
        }
        let Slot::Rel(r) = &mut self.m.instances[src.0 as usize].slots[src.1 as usize] else { return };
        // a relation with consumers is a freeze candidate, like one with waiters
        if !r.candidate {
            r.candidate = true;
            self.queue.freeze_candidates.push(src);
        }
    }

    pub(super) fn park(&mut self, t: TaskId, w: Wait) {
        match &w {
            Wait::Var(s, n) => {
                if let Some(v) = self.m.scopes[*s as usize].vars.get_mut(n) {
                    v.waiters.push(t);
                }
            }
            Wait::Prim(i, a) => {
                if let Slot::Prim { waiters, .. } = &mut self.m.instances[*i as usize].slots[*a as usize] {
                    waiters.push(t);
                }
            }
            Wait::Rel(i, a) => {
                if let Slot::Rel(r) = &mut self.m.instances[*i as usize].slots[*a as usize] {
                    r.waiters.push(t);
                    if !r.candidate {
                        r.candidate = true;
                        self.queue.freeze_candidates.push((*i, *a));
                    }
                }
            }
            Wait::Index(idx, key, _) => self.queue.index_waiters.entry((*idx, key.clone())).or_default().push(t),
            Wait::Turn => {
                self.queue.ready.push_back(t);
                return;
            }
        }
        self.queue.parked.insert(t, w);
    }

    pub(super) fn wake(&mut self, waiters: impl IntoIterator<Item = TaskId>) {
        self.queue.ready.extend(waiters);
    }

    /// Runs the whole model. `root_order` lists the namespaces whose statements are scheduled.
    pub(crate) fn run(&mut self) {
        // namespace scopes
        for ns in 0..self.m.types.namespaces.len() {
            let file = self.m.types.namespaces[ns].file;
            let stmts: Vec<&'a Stmt> = file
                .map(|f| {
                    f.items.iter().filter_map(|t| if let ast::Top::Stmt(s) = t { Some(s) } else { None }).collect()
                })
                .unwrap_or_default();
            let mut names: Vec<&'a str> = Vec::new();
            let mut seen: HashSet<&'a str> = HashSet::new();
            for s in &stmts {
                if let Stmt::Assign { target, add: false, .. } = s
                    && let ExprKind::Var(n) = &target.kind
                    && !n.contains("::")
                    && seen.insert(n.as_str())
                {
                    names.push(n.as_str());
                }
            }
            let sc = self.new_scope(None, ns, &names, Span::default());
            self.m.ns_scopes.push(sc);
        }
        if let Err(e) = self.check_defaults() {
            self.errors.extend(e);
            return;
        }
        for ns in 0..self.m.types.namespaces.len() {
            let sc = self.m.ns_scopes[ns];
            if let Some(f) = self.m.types.namespaces[ns].file {
                for t in &f.items {
                    if let ast::Top::Stmt(s) = t {
                        self.spawn(TaskKind::Stmt(s, sc));
                    }
                }
            }
        }
        loop {
            while let Some(t) =
                self.queue.deferred.pop_front().map(Err).or_else(|| self.queue.ready.pop_front().map(Ok))
            {
                let t = match t {
                    Ok(t) => t,
                    Err(d) => {
                        self.run_deferred(d);
                        continue;
                    }
                };
                self.limits.steps += 1;
                if self.limits.steps > self.limits.max_steps {
                    self.errors.push(Diagnostic::plain(
                        ErrorKind::RuntimeException,
                        format!(
                            "Compilation did not finish within {} steps (statement runs): the model may loop without \
                             end (a model this large can raise the limit with `[compiler] max-steps` or \
                             INMANTA_COMPILER_MAX_STEPS)",
                            self.limits.max_steps
                        ),
                    ));
                    return;
                }
                if self.m.instances.len() as u64 > self.limits.max_instances {
                    self.errors.push(Diagnostic::plain(
                        ErrorKind::RuntimeException,
                        format!(
                            "the model made more than {} instances: it may create instances without end, e.g. an \
                             implementation that constructs its own entity (a model this large can raise the \
                             limit with `[compiler] max-instances` or INMANTA_COMPILER_MAX_INSTANCES)",
                            self.limits.max_instances
                        ),
                    ));
                    return;
                }
                self.run_task(t);
            }
            if !self.freeze_step() {
                break;
            }
        }
        self.finish();
    }

    pub(super) fn spawn(&mut self, kind: TaskKind<'a>) {
        let writes = match &kind {
            TaskKind::Stmt(s, _) => self.stmt_writes(s),
            TaskKind::SetAttr { inst, arg, .. } => {
                let name = self.entity_of(*inst).attrs[arg.attr as usize].name.clone();
                let mut all = Vec::new();
                self.add_name_and_reverse(&name, &mut all);
                self.expr_writes(arg.value, &mut all, 0);
                Rc::from(all)
            }
            TaskKind::Emit { what, sink, .. } => {
                let mut all = Vec::new();
                self.sink_writes(sink, &mut all);
                match what {
                    gradual::Emitted::Expr(e) => self.expr_writes(e, &mut all, 0),
                    gradual::Emitted::Items(items) => items.iter().for_each(|e| self.expr_writes(e, &mut all, 0)),
                }
                Rc::from(all)
            }
            TaskKind::Element { sink, .. } => {
                let mut all = Vec::new();
                self.sink_writes(sink, &mut all);
                Rc::from(all)
            }
            TaskKind::Implement { ent, idx, .. } => {
                let impls = self.m.types.entities[*ent].implements[*idx].impls.clone();
                let mut all: Vec<Rc<str>> = Vec::new();
                for i in impls {
                    all.extend(self.impl_writes(i).iter().cloned());
                }
                Rc::from(all)
            }
        };
        for w in writes.iter() {
            *self.pending_writes.potential_writes.entry(w.clone()).or_insert(0) += 1;
        }
        self.queue.tasks.push(Task { kind, cache: Vec::new(), writes });
        self.queue.live_tasks += 1;
        self.queue.ready.push_back((self.queue.tasks.len() - 1) as TaskId);
    }
}
