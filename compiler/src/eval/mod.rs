//! Evaluation: a scheduler of waiting statements (Inmanta-style gradual execution).
//!
//! Every statement is a task. A task that reads a value that does not exist yet (an unassigned
//! variable, an unset attribute, a relation that is not frozen, a missing index entry) returns
//! [`Flow::Wait`] and is parked on that slot; it runs again from the start when the slot changes.
//! Side effects inside a statement (constructors, plugin calls) are recorded in the task's cache
//! in the order they happen, so running a statement again reuses them instead of repeating them.
//! When nothing is ready, the scheduler freezes relations that somebody waits on.

pub(crate) mod budget;
pub(crate) mod build;
pub(crate) mod expr;
pub(crate) mod format;
mod promises;
mod report;
pub(crate) mod state;
pub(crate) mod value;

pub(crate) use report::is_end_of_compile;
pub(crate) use state::{Instance, Model, RelSlot, Scope, Slot, VAR_PROBES, Vars};
use state::{NO_SPAN, VarSlot, Waiters, value_set_twice};

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::rc::Rc;

use crate::diagnostics::Diagnostic;
use crate::model::*;
use crate::syntax::ast::{self, ExprKind, Stmt};
use crate::syntax::{SourceMap, Span};
use value::{InstId, UnknownSource, Value};

/// How the error for an instance of the wrong entity in a relation starts.
const WRONG_ENTITY: &str = "Invalid type for relation";

pub(crate) type TaskId = u32;
pub(crate) type ScopeId = u32;

/// What a task waits on.
#[derive(Debug, Clone)]
pub(crate) enum Wait {
    Var(ScopeId, Rc<str>),
    Prim(InstId, u32),
    Rel(InstId, u32),
    Index(usize, String, Span),
    /// Not a wait: the task goes to the back of the queue once (see [`computed_by_call`]).
    Turn,
}

pub(crate) enum Flow {
    Wait(Wait),
    Err(Box<Diagnostic>),
}

pub(crate) type EResult<T> = Result<T, Flow>;

enum TaskKind<'a> {
    Stmt(&'a Stmt, ScopeId),
    Implement {
        inst: InstId,
        ent: EntId,
        idx: usize,
        scope: ScopeId,
    },
    /// A constructor argument set after its instance exists (see [`LateArg`]).
    SetAttr {
        inst: InstId,
        arg: LateArg<'a>,
        scope: ScopeId,
        ns: NsId,
    },
}

/// A constructor argument that waits for a value: as in Inmanta, the instance is made without it
/// and the argument is set when its value exists (`c = C(peer=c)` refers to its own instance).
#[derive(Clone, Copy)]
pub(crate) struct LateArg<'a> {
    pub attr: u32,
    pub value: &'a ast::Expr,
    /// the constructor, where Inmanta reports a failure to set the attribute
    pub constructor: Span,
}

struct Task<'a> {
    kind: TaskKind<'a>,
    cache: Vec<Value>,
    writes: Rc<[Rc<str>]>,
}

/// Whether an assigned value comes out of a plugin or cast call. Inmanta runs each call as a unit
/// of its own that the assignment then waits for: the call runs in its turn, but its value is set
/// one turn of the queue after a plain one (`x = number("42")` then `x = 42` keeps the int 42).
fn computed_by_call(e: &ast::Expr) -> bool {
    match &e.kind {
        ExprKind::Call { .. } => true,
        ExprKind::Binary(_, a, b) | ExprKind::MapLookup(a, b) => computed_by_call(a) || computed_by_call(b),
        ExprKind::Not(a) | ExprKind::Attr(a, _) => computed_by_call(a),
        ExprKind::List(items) => items.iter().any(computed_by_call),
        ExprKind::Dict(items) => items.iter().any(|(_, v)| computed_by_call(v)),
        _ => false,
    }
}

/// A consumer that processes the elements of a relation as they arrive (gradual execution).
enum Listener<'a> {
    /// `for var in x.rel: body end`
    For { body: &'a [Stmt], scope: ScopeId, var: &'a ast::Ident, span: Span, writes: Rc<[Rc<str>]> },
    /// `y.other = x.rel` / `y.other += x.rel`
    AddTo { inst: InstId, attr: u32, span: Span, writes: Rc<[Rc<str>]> },
}

impl Listener<'_> {
    fn writes(&self) -> &Rc<[Rc<str>]> {
        match self {
            Listener::For { writes, .. } | Listener::AddTo { writes, .. } => writes,
        }
    }
}

/// Context of the project, for plugins that read files.
#[derive(Default, Clone)]
pub(crate) struct ProjectCtx {
    /// module name -> module directory (for files/ and templates/)
    pub module_dirs: HashMap<String, PathBuf>,
    pub plugin_inputs: crate::PluginInputs,
    /// The project's directory (`data/passwordfile.txt` for `std::password`).
    pub project_dir: PathBuf,
    /// Resource mappings declared by the loaded modules (module.yml `resources`).
    pub resource_mappings: Vec<crate::export::Mapping>,
}

/// The scheduler: runs statements as tasks, parks those that wait, wakes them when what they
/// wait for is written, freezes relations when nothing can run. It owns the [`Model`] (`m`);
/// reads go through `Deref`, writes through `m` here.
pub(crate) struct Evaluator<'a> {
    pub m: Model<'a>,
    tasks: Vec<Task<'a>>,
    ready: VecDeque<TaskId>,
    live_tasks: usize,
    index_waiters: HashMap<(usize, String), Vec<TaskId>>,
    freeze_candidates: Vec<(InstId, u32)>,
    potential_writes: FastMap<Rc<str>, u32>,
    write_cache: FastMap<usize, Rc<[Rc<str>]>>,
    impl_writes: Vec<Option<Rc<[Rc<str>]>>>,
    /// waits of parked tasks, for the end-of-compile report
    parked: FastMap<TaskId, Wait>,
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    warned: HashSet<(String, Span)>,
    pub unknowns: Vec<UnknownSource>,
    pub printed: Vec<String>,
    pub project: ProjectCtx,
    pub plugins: Rc<crate::builtins::Plugins>,
    pub max_steps: u64,
    pub max_instances: u64,
    pub max_depth: u64,
    pub budget: budget::Budget,
    pub steps: u64,
    listeners: FastMap<(InstId, u32), Vec<Listener<'a>>>,
    /// the task that runs
    current: TaskId,
    /// values computed by a call, of the tasks that went to the back of the queue to set them
    /// (see [`computed_by_call`])
    turned: FastMap<TaskId, Value>,
    /// (relation, listener index, new element) to process
    deferred: VecDeque<(InstId, u32, usize, InstId)>,
    /// `relation_precedence_policy`: (A, x) is frozen before (B, y).
    precedence: Vec<(EntId, String, EntId, String)>,
    /// The Python process of the modules' plugins, when a loaded module has Python code.
    pub python: Option<crate::python::bridge::Bridge>,
    /// Files that Python resource mappers uploaded (sha1, content).
    pub python_files: Vec<(String, Vec<u8>)>,
}

pub(crate) fn loc_str(sources: &SourceMap, span: Span) -> String {
    sources.location(span).map(|l| format!("{}:{}", l.file, l.line)).unwrap_or_else(|| "<unknown>".into())
}

/// The message of a variable that no scope declares.
pub(crate) fn var_not_found(name: &str) -> String {
    format!("variable {name} not found")
}

fn is_var_not_found(message: &str) -> bool {
    message.strip_prefix("variable ").and_then(|m| m.strip_suffix(" not found")).is_some_and(|n| !n.contains(' '))
}

pub(crate) fn error(kind: &str, msg: impl Into<String>, span: Span, sources: &SourceMap) -> Flow {
    Flow::Err(Box::new(Diagnostic::error(kind, msg, Some(span), sources)))
}

/// Names of variables assigned directly in a block.
/// Linear in the block's length: a set, not a scan of `out`, finds names already seen (a scan
/// is quadratic in the number of names assigned in a block).
fn declared(block: &[Stmt]) -> Vec<&str> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for s in block {
        if let Stmt::Assign { target, add: false, .. } = s
            && let ExprKind::Var(n) = &target.kind
            && !n.contains("::")
            && seen.insert(n.as_str())
        {
            out.push(n.as_str());
        }
    }
    out
}

impl<'a> std::ops::Deref for Evaluator<'a> {
    type Target = Model<'a>;

    fn deref(&self) -> &Model<'a> {
        &self.m
    }
}

impl<'a> Evaluator<'a> {
    pub(crate) fn new(types: Types<'a>, sources: &'a SourceMap, project: ProjectCtx) -> Self {
        let nimpl = types.implementations.len();
        Evaluator {
            m: Model::new(types, sources),
            tasks: Vec::new(),
            ready: VecDeque::new(),
            live_tasks: 0,
            index_waiters: HashMap::new(),
            freeze_candidates: Vec::new(),
            potential_writes: FastMap::default(),
            write_cache: FastMap::default(),
            impl_writes: vec![None; nimpl],
            parked: FastMap::default(),
            errors: Vec::new(),
            warnings: Vec::new(),
            warned: HashSet::new(),
            unknowns: Vec::new(),
            printed: Vec::new(),
            project,
            plugins: Rc::new(crate::builtins::Plugins::new()),
            max_steps: 5_000_000,
            max_instances: u64::MAX,
            max_depth: u64::MAX,
            budget: budget::Budget::new(budget::DEFAULT_MAX_MEMORY),
            steps: 0,
            precedence: Vec::new(),
            listeners: FastMap::default(),
            current: 0,
            turned: FastMap::default(),
            deferred: VecDeque::new(),
            python: None,
            python_files: Vec::new(),
        }
    }

    pub(crate) fn warn(&mut self, kind: &str, msg: String, span: Span) {
        if self.warned.insert((msg.clone(), span)) {
            self.warnings.push(Diagnostic::warning(kind, msg, Some(span), self.m.sources));
        }
    }

    fn new_scope(&mut self, parent: Option<ScopeId>, ns: NsId, names: &[&'a str], span: Span) -> ScopeId {
        let mut vars = Vec::with_capacity(names.len());
        for n in names {
            if let Some(p) = parent
                && self.lookup_decl(p, n).is_some()
                && *n != "self"
            {
                self.warn(
                    "VariableShadowWarning",
                    format!("Variable `{n}` shadows a variable of an enclosing scope"),
                    span,
                );
            }
            vars.push((*n, VarSlot { value: None, waiters: Waiters::default() }));
        }
        self.m.scopes.push(Scope { parent, ns, vars: Vars::new(vars) });
        (self.m.scopes.len() - 1) as ScopeId
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
            while let Some(t) = self.deferred.pop_front().map(Err).or_else(|| self.ready.pop_front().map(Ok)) {
                let t = match t {
                    Ok(t) => t,
                    Err(d) => {
                        self.run_deferred(d);
                        continue;
                    }
                };
                self.steps += 1;
                if self.steps > self.max_steps {
                    self.errors.push(Diagnostic::plain(
                        "RuntimeException",
                        format!(
                            "Compilation did not finish within {} steps (statement runs): the model may loop without \
                             end (a model this large can raise the limit with `[compiler] max-steps` or \
                             INMANTA_COMPILER_MAX_STEPS)",
                            self.max_steps
                        ),
                    ));
                    return;
                }
                if self.m.instances.len() as u64 > self.max_instances {
                    self.errors.push(Diagnostic::plain(
                        "RuntimeException",
                        format!(
                            "the model made more than {} instances: it may create instances without end, e.g. an \
                             implementation that constructs its own entity (a model this large can raise the \
                             limit with `[compiler] max-instances` or INMANTA_COMPILER_MAX_INSTANCES)",
                            self.max_instances
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

    fn spawn(&mut self, kind: TaskKind<'a>) {
        let writes = match &kind {
            TaskKind::Stmt(s, _) => self.stmt_writes(s),
            TaskKind::SetAttr { inst, arg, .. } => {
                let name = self.entity_of(*inst).attrs[arg.attr as usize].name.clone();
                let mut all = Vec::new();
                self.add_name_and_reverse(&name, &mut all);
                self.expr_writes(arg.value, &mut all, 0);
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
            *self.potential_writes.entry(w.clone()).or_insert(0) += 1;
        }
        self.tasks.push(Task { kind, cache: Vec::new(), writes });
        self.live_tasks += 1;
        self.ready.push_back((self.tasks.len() - 1) as TaskId);
    }

    fn impl_writes(&mut self, i: usize) -> Rc<[Rc<str>]> {
        if let Some(w) = &self.impl_writes[i] {
            return w.clone();
        }
        // provisional empty entry breaks recursion
        self.impl_writes[i] = Some(Rc::from(Vec::new()));
        let body = self.m.types.implementations[i].body;
        let mut all = Vec::new();
        for s in body {
            all.extend(self.stmt_writes(s).iter().cloned());
        }
        let r: Rc<[Rc<str>]> = Rc::from(all);
        self.impl_writes[i] = Some(r.clone());
        r
    }

    /// Static approximation of the attribute names a statement may add to.
    fn stmt_writes(&mut self, s: &'a Stmt) -> Rc<[Rc<str>]> {
        let key = s as *const Stmt as usize;
        if let Some(w) = self.write_cache.get(&key) {
            return w.clone();
        }
        let mut names: Vec<Rc<str>> = Vec::new();
        self.collect_writes(s, &mut names, 0);
        names.sort();
        names.dedup();
        let r: Rc<[Rc<str>]> = Rc::from(names);
        self.write_cache.insert(key, r.clone());
        r
    }

    fn collect_writes(&mut self, s: &'a Stmt, out: &mut Vec<Rc<str>>, depth: usize) {
        if depth > 8 {
            return;
        }
        match s {
            Stmt::Assign { target, value, .. } => {
                if let ExprKind::Attr(_, a) = &target.kind {
                    self.add_name_and_reverse(&a.name, out);
                }
                self.expr_writes(value, out, depth);
            }
            Stmt::For { iter, body, .. } => {
                self.expr_writes(iter, out, depth);
                for b in body {
                    self.collect_writes(b, out, depth + 1);
                }
            }
            Stmt::If { branches, otherwise, .. } => {
                for (_, b) in branches {
                    for s in b {
                        self.collect_writes(s, out, depth + 1);
                    }
                }
                for s in otherwise {
                    self.collect_writes(s, out, depth + 1);
                }
            }
            Stmt::Expr(e) => self.expr_writes(e, out, depth),
        }
    }

    fn add_name_and_reverse(&self, name: &str, out: &mut Vec<Rc<str>>) {
        out.push(Rc::from(name));
        for e in &self.m.types.entities {
            for a in &e.own {
                if a.name == name
                    && let AttrKind::Rel { reverse: Some(r), .. } = &a.kind
                {
                    out.push(Rc::from(r.as_str()));
                }
            }
        }
    }

    fn expr_writes(&mut self, e: &'a ast::Expr, out: &mut Vec<Rc<str>>, depth: usize) {
        match &e.kind {
            ExprKind::Constructor { class, args } => {
                for k in &args.keyword {
                    self.add_name_and_reverse(&k.name.name, out);
                    self.expr_writes(&k.value, out, depth);
                }
                // implementations of the constructed entity
                let short = class.name.rsplit("::").next().unwrap_or("");
                let ents: Vec<EntId> = self
                    .types
                    .entities
                    .iter()
                    .enumerate()
                    .filter(|(_, en)| en.name.rsplit("::").next() == Some(short))
                    .map(|(i, _)| i)
                    .collect();
                if depth < 4 {
                    for en in ents {
                        let impls: Vec<usize> =
                            self.m.types.entities[en].implements.iter().flat_map(|i| i.impls.clone()).collect();
                        for i in impls {
                            out.extend(self.impl_writes(i).iter().cloned());
                        }
                    }
                }
            }
            ExprKind::List(items) => items.iter().for_each(|i| self.expr_writes(i, out, depth)),
            ExprKind::Call { args, .. } => {
                args.positional.iter().for_each(|i| self.expr_writes(i, out, depth));
                args.keyword.iter().for_each(|k| self.expr_writes(&k.value, out, depth));
            }
            ExprKind::Cond(_, a, b) => {
                self.expr_writes(a, out, depth);
                self.expr_writes(b, out, depth);
            }
            ExprKind::Comprehension { value, .. } => self.expr_writes(value, out, depth),
            _ => {}
        }
    }

    fn finish_task(&mut self, t: TaskId) {
        let writes = self.tasks[t as usize].writes.clone();
        for w in writes.iter() {
            if let Some(c) = self.potential_writes.get_mut(w) {
                *c -= 1;
            }
        }
        self.tasks[t as usize].cache = Vec::new();
        self.live_tasks -= 1;
    }

    fn run_task(&mut self, t: TaskId) {
        self.parked.remove(&t);
        self.current = t;
        let mut cache = std::mem::take(&mut self.tasks[t as usize].cache);
        let result = match self.tasks[t as usize].kind {
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
        };
        self.tasks[t as usize].cache = cache;
        match result {
            Ok(()) => self.finish_task(t),
            Err(Flow::Wait(w)) => self.park(t, w),
            Err(Flow::Err(d)) => {
                self.errors.push(*d);
                self.finish_task(t);
            }
        }
    }

    fn run_deferred(&mut self, (src, ai, idx, elem): (InstId, u32, usize, InstId)) {
        let Some(l) = self.listeners.get(&(src, ai)).and_then(|ls| ls.get(idx)) else { return };
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
        }
    }

    /// The relation an expression reads, when it is a multi-valued relation that is not frozen
    /// yet: consumers of such a relation can process its elements as they arrive.
    fn gradual_source(&mut self, e: &'a ast::Expr, cx: &mut expr::Cx) -> EResult<Option<(InstId, u32)>> {
        if let ExprKind::Var(name) = &e.kind {
            // a relation of `self` named bare in its implementation (`for x in peers:`) is as
            // gradual as `self.peers`: Inmanta resolves the name to the same relation variable
            if name.contains("::") || cx.locals.iter().any(|(n, _)| **n == **name) {
                return Ok(None);
            }
            let Some(inst) = self.self_attr_in_scope(cx.scope, name) else { return Ok(None) };
            return Ok(self.unfrozen_multi(inst, name));
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
    fn unfrozen_multi(&self, inst: InstId, name: &str) -> Option<(InstId, u32)> {
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

    fn listen(&mut self, src: (InstId, u32), l: Listener<'a>) {
        for w in l.writes().iter() {
            *self.potential_writes.entry(w.clone()).or_insert(0) += 1;
        }
        let ls = self.listeners.entry(src).or_default();
        ls.push(l);
        let idx = ls.len() - 1;
        let Slot::Rel(r) = &mut self.m.instances[src.0 as usize].slots[src.1 as usize] else { return };
        for &elem in &r.items {
            self.deferred.push_back((src.0, src.1, idx, elem));
        }
        // a relation with consumers is a freeze candidate, like one with waiters
        if !r.candidate {
            r.candidate = true;
            self.freeze_candidates.push(src);
        }
    }

    fn park(&mut self, t: TaskId, w: Wait) {
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
                        self.freeze_candidates.push((*i, *a));
                    }
                }
            }
            Wait::Index(idx, key, _) => self.index_waiters.entry((*idx, key.clone())).or_default().push(t),
            Wait::Turn => {
                self.ready.push_back(t);
                return;
            }
        }
        self.parked.insert(t, w);
    }

    fn wake(&mut self, waiters: impl IntoIterator<Item = TaskId>) {
        self.ready.extend(waiters);
    }

    fn exec_block(&mut self, block: &'a [Stmt], parent: ScopeId, extra: &[&'a str], span: Span) -> ScopeId {
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

    fn exec_stmt(&mut self, s: &'a Stmt, cx: &mut expr::Cx) -> EResult<()> {
        match s {
            Stmt::Expr(e) => {
                self.eval(e, cx)?;
                Ok(())
            }
            Stmt::Assign { target, value, add, span } => match &target.kind {
                ExprKind::Var(name) => {
                    let v = match self.turned.remove(&self.current) {
                        Some(v) => v,
                        None if !*add && computed_by_call(value) => {
                            let v = self.eval(value, cx)?;
                            self.turned.insert(self.current, v);
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
                            "TypingException",
                            format!("Can not use += on variable {name}; += only adds to relations"),
                            *span,
                            self.m.sources,
                        ));
                    }
                    if name.contains("::") {
                        return Err(error(
                            "NotFoundException",
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
                                "TypingException",
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
                                "TypingException",
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
                            "NotFoundException",
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
                _ => Err(error("ParserException", "invalid assignment target", *span, self.m.sources)),
            },
            Stmt::For { var, iter, body, span } => {
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
                            "TypingException",
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
                                "RuntimeException",
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
    fn exec_late_arg(&mut self, inst: InstId, arg: LateArg<'a>, cx: &mut expr::Cx) -> EResult<()> {
        let (target, multi) = match &self.entity_of(inst).attrs[arg.attr as usize].kind {
            AttrKind::Rel { target, hi, .. } => (Some(*target), *hi != Some(1)),
            AttrKind::Prim { .. } => (None, false),
        };
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

    fn exec_implement(&mut self, inst: InstId, ent: EntId, idx: usize, cx: &mut expr::Cx) -> EResult<()> {
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
                        "RuntimeException",
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
                    Diagnostic::error("DoubleSetException", format!("Variable {name}: {msg}"), Some(span), sources)
                        .with_note(format!("first set at {}", loc_str(sources, conflict.old_span))),
                )))
            }
        }
    }

    /// Reads a variable through the scope chain.
    pub(crate) fn read_var(&mut self, scope: ScopeId, name: &str, span: Span) -> EResult<Value> {
        let Some(sc) = self.lookup_decl(scope, name) else {
            return Err(error("NotFoundException", var_not_found(name), span, self.m.sources));
        };
        match &self.m.scopes[sc as usize].vars.get(name).expect("declared").value {
            Some((v, _)) => Ok(v.clone()),
            None => Err(Flow::Wait(Wait::Var(sc, Rc::from(name)))),
        }
    }

    /// A failure to set attribute `attr` as the AttributeException Inmanta wraps it in (one that
    /// already is one stays as it is).
    fn wrap_attr_error(&self, inst: InstId, attr: &str, cause: Box<Diagnostic>, span: Span) -> Flow {
        // a name that is not found fails where Inmanta looks names up, before that unit of work
        if cause.kind == "AttributeException" || (cause.kind == "NotFoundException" && is_var_not_found(&cause.message))
        {
            return Flow::Err(cause);
        }
        let Diagnostic { kind, message, notes, .. } = *cause;
        let Flow::Err(mut d) = self.attr_error(inst, attr, &kind, message, span) else { unreachable!() };
        d.notes = notes;
        Flow::Err(d)
    }

    fn attr_error(&self, inst: InstId, attr: &str, cause: &str, msg: String, span: Span) -> Flow {
        Flow::Err(Box::new(Diagnostic::error(
            "AttributeException",
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
                    unknown: None,
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
    fn add_to_single(&self, ent: EntId, ai: u32, span: Span) -> Flow {
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
        error("TypingException", msg, span, self.m.sources)
    }

    /// Assigns (or adds, for relations) a value to an attribute of an instance.
    pub(crate) fn assign_attr(&mut self, inst: InstId, ai: u32, v: Value, add: bool, span: Span) -> EResult<()> {
        let ent = self.m.instances[inst as usize].entity;
        let attr = self.m.types.entities[ent].attrs[ai as usize].clone();
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
                        return Err(self.attr_error(inst, &attr.name, "RuntimeException", msg, span));
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
                                "RuntimeException",
                                "can not set null on a relation that already has values".into(),
                                span,
                            ));
                        }
                        if lo > 0 {
                            return Err(self.attr_error(
                                inst,
                                &attr.name,
                                "RuntimeException",
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
                            if let Slot::Rel(r) = &mut self.m.instances[inst as usize].slots[ai as usize] {
                                r.unknown.get_or_insert(u);
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
                            return Err(self.attr_error(inst, &attr.name, "TypingException", msg, span));
                        }
                    };
                    let oe = self.m.instances[other as usize].entity;
                    if !self.m.types.is_subtype(oe, target) {
                        return Err(error(
                            "TypingException",
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

    fn set_prim(&mut self, inst: InstId, ai: u32, name: &str, v: Value, span: Span) -> EResult<()> {
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
                let Flow::Err(d) = self.attr_error(inst, name, "DoubleSetException", msg, span) else { unreachable!() };
                Err(Flow::Err(Box::new(d.with_note(format!("first set at {}", loc_str(sources, conflict.old_span))))))
            }
        }
    }

    fn add_rel(&mut self, inst: InstId, ai: u32, other: InstId, span: Span) -> EResult<()> {
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
                return Err(self.attr_error(inst, &name, "DoubleSetException", msg, span));
            }
            if let Some(h) = hi
                && r.items.len() as u32 >= h
            {
                return Err(self.attr_error(
                    inst,
                    &name,
                    "RuntimeException",
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
                "ModifiedAfterFreezeException",
                format!("Attempting to modify the relation {name} after it was frozen (it was read as complete before this value was added)"),
                span,
            ));
        }
        r.push(other);
        if r.first == NO_SPAN {
            r.first = span;
        }
        if let Some(ls) = self.listeners.get(&(inst, ai)) {
            for idx in 0..ls.len() {
                self.deferred.push_back((inst, ai, idx, other));
            }
        }
        if let Some(h) = hi
            && r.items.len() as u32 >= h
        {
            self.freeze(inst, ai);
            self.check_index_completion(inst, ai);
        }
        Ok(())
    }

    pub(crate) fn freeze(&mut self, inst: InstId, ai: u32) {
        let Some(woken) = self.m.freeze_slot(inst, ai) else { return };
        self.wake(woken);
        if let Some(ls) = self.listeners.get(&(inst, ai)) {
            for l in ls {
                for name in l.writes().iter() {
                    if let Some(c) = self.potential_writes.get_mut(name) {
                        *c = c.saturating_sub(1);
                    }
                }
            }
        }
    }

    /// When nothing is ready: freeze relations that tasks wait on. Returns false when stuck.
    fn freeze_step(&mut self) -> bool {
        let cands = std::mem::take(&mut self.freeze_candidates);
        let mut safe = Vec::new();
        let mut risky = Vec::new();
        for (i, a) in cands {
            let inst = &self.m.instances[i as usize];
            let Slot::Rel(r) = &inst.slots[a as usize] else { continue };
            if r.frozen || (r.waiters.is_empty() && !self.listeners.contains_key(&(i, a))) {
                continue;
            }
            let attr = &self.m.types.entities[inst.entity].attrs[a as usize];
            let AttrKind::Rel { lo, hi, reverse, .. } = &attr.kind else { continue };
            // a required single relation that is still empty can only be completed by an assignment
            if *hi == Some(1) && *lo == 1 {
                risky.push((i, a, true));
                continue;
            }
            let pending = |n: &str| self.potential_writes.get(n).copied().unwrap_or(0) > 0;
            let blocked = pending(&attr.name) || reverse.as_deref().is_some_and(pending);
            if blocked { risky.push((i, a, false)) } else { safe.push((i, a)) }
        }
        if !self.precedence.is_empty() {
            // `A.x before B.y`: while an A.x relation waits to be frozen, hold B.y back
            let all: Vec<(InstId, u32)> = safe.iter().copied().chain(risky.iter().map(|(i, a, _)| (*i, *a))).collect();
            let held: HashSet<(InstId, u32)> = all
                .iter()
                .copied()
                .filter(|c| {
                    self.precedence.iter().any(|(e1, n1, e2, n2)| {
                        self.rel_matches(*c, *e2, n2) && all.iter().any(|o| o != c && self.rel_matches(*o, *e1, n1))
                    })
                })
                .collect();
            if held.len() < all.len() {
                let mut deferred = Vec::new();
                safe.retain(|c| {
                    if held.contains(c) {
                        deferred.push(*c);
                        false
                    } else {
                        true
                    }
                });
                risky.retain(|(i, a, _)| {
                    if held.contains(&(*i, *a)) {
                        deferred.push((*i, *a));
                        false
                    } else {
                        true
                    }
                });
                self.freeze_candidates.extend(deferred);
            }
        }
        if !safe.is_empty() {
            for (i, a) in safe {
                self.freeze(i, a);
            }
            for (i, a, _) in risky {
                if let Slot::Rel(r) = &mut self.m.instances[i as usize].slots[a as usize] {
                    r.candidate = true;
                }
                self.freeze_candidates.push((i, a));
            }
            return true;
        }
        // Nothing is safe: freeze the optional/multi relation with the most waiters.
        // Prefer a relation that nothing else waits behind: one whose waiting statements (directly
        // or through what they would write) do not lead to a writer of another candidate.
        let downstream_of_other = self.downstream_of_other(&risky);
        let upstream_exists = risky.iter().enumerate().any(|(n, (_, _, req))| !req && !downstream_of_other[n]);
        let best = risky
            .iter()
            .enumerate()
            .filter(|(n, (_, _, req))| !req && (!upstream_exists || !downstream_of_other[*n]))
            .max_by_key(|(n, (i, a, _))| {
                let Slot::Rel(r) = &self.m.instances[*i as usize].slots[*a as usize] else { return (0, 0) };
                (r.waiters.len(), usize::MAX - n)
            })
            .map(|(n, _)| n);
        let Some(b) = best else {
            for (i, a, _) in risky {
                self.freeze_candidates.push((i, a));
            }
            return false;
        };
        for (n, (i, a, _)) in risky.into_iter().enumerate() {
            if n == b {
                self.freeze(i, a);
            } else {
                self.freeze_candidates.push((i, a));
            }
        }
        true
    }

    /// For each candidate relation: whether freezing another candidate could let a statement
    /// run that still adds to it (that statement waits, directly or through the attributes the
    /// waiting statements would write, on the other candidate). Those are frozen last.
    fn downstream_of_other(&self, candidates: &[(InstId, u32, bool)]) -> Vec<bool> {
        let name_of = |i: InstId, a: u32| -> &str {
            self.m.types.entities[self.m.instances[i as usize].entity].attrs[a as usize].name.as_str()
        };
        let mut waiting_on: HashMap<&str, Vec<TaskId>> = HashMap::new();
        let mut waiting_exact: HashMap<(InstId, u32), Vec<TaskId>> = HashMap::new();
        for (t, w) in &self.parked {
            if let Wait::Rel(i, a) | Wait::Prim(i, a) = w {
                waiting_on.entry(name_of(*i, *a)).or_default().push(*t);
                waiting_exact.entry((*i, *a)).or_default().push(*t);
            }
        }
        // the attribute names each candidate's freezing may lead to writing
        let reach: Vec<HashSet<&str>> = candidates
            .iter()
            .map(|(i, a, _)| {
                let mut names: HashSet<&str> = HashSet::new();
                let mut queue: Vec<TaskId> = waiting_exact.get(&(*i, *a)).cloned().unwrap_or_default();
                let mut seen: HashSet<TaskId> = HashSet::new();
                while let Some(t) = queue.pop() {
                    if !seen.insert(t) || seen.len() > 10_000 {
                        continue;
                    }
                    for w in self.tasks[t as usize].writes.iter() {
                        if names.insert(w) {
                            queue.extend(waiting_on.get(&**w).into_iter().flatten().copied());
                        }
                    }
                }
                names
            })
            .collect();
        candidates
            .iter()
            .enumerate()
            .map(|(d, (i, a, _))| {
                let name = name_of(*i, *a);
                (0..candidates.len()).any(|c| {
                    let (ci, ca, _) = candidates[c];
                    c != d && reach[c].contains(name) && !reach[d].contains(name_of(ci, ca))
                })
            })
            .collect()
    }

    fn rel_matches(&self, (i, a): (InstId, u32), ent: EntId, name: &str) -> bool {
        let inst = &self.m.instances[i as usize];
        self.m.types.is_subtype(inst.entity, ent) && self.m.types.entities[inst.entity].attrs[a as usize].name == name
    }

    /// Reads `relation_precedence_policy` rules (`A.x before B.y`) and checks them for cycles.
    pub(crate) fn set_precedence(&mut self, rules: &[String]) -> Result<(), Vec<Diagnostic>> {
        let mut errors = Vec::new();
        let re = regex::Regex::new(r"^\s*([\w:]+)\.(\w+)\s+before\s+([\w:]+)\.(\w+)\s*$").expect("valid regex");
        let config = self.m.types.ns_by_name.get("__config__").copied().unwrap_or(0);
        for rule in rules {
            let Some(c) = re.captures(rule) else {
                errors.push(Diagnostic::plain(
                    "InvalidRelationPrecedenceRuleError",
                    format!("Invalid rule in relation_precedence_policy: '{rule}': expected '<entity>.<relation> before <entity>.<relation>'"),
                ));
                continue;
            };
            let side = |e: &str, n: &str| -> Option<EntId> {
                let id = build::lookup_entity(&self.m.types, config, e).ok()?;
                match self.m.types.entities[id].attr(n) {
                    Some((_, a)) if a.is_relation() => Some(id),
                    _ => None,
                }
            };
            match (side(&c[1], &c[2]), side(&c[3], &c[4])) {
                (Some(a), Some(b)) => self.precedence.push((a, c[2].to_string(), b, c[4].to_string())),
                _ => errors.push(Diagnostic::plain(
                    "InvalidRelationPrecedenceRuleError",
                    format!(
                        "Invalid rule in relation_precedence_policy: '{rule}': the entity or relation does not exist"
                    ),
                )),
            }
        }
        // cycle check over (entity, relation) nodes
        let nodes: Vec<(EntId, &str)> = self
            .precedence
            .iter()
            .flat_map(|(a, x, b, y)| [(*a, x.as_str()), (*b, y.as_str())])
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let idx = |n: (EntId, &str)| nodes.iter().position(|m| *m == n).unwrap_or(0);
        let mut indeg = vec![0usize; nodes.len()];
        let edges: Vec<(usize, usize)> =
            self.precedence.iter().map(|(a, x, b, y)| (idx((*a, x.as_str())), idx((*b, y.as_str())))).collect();
        for (_, t) in &edges {
            indeg[*t] += 1;
        }
        let mut queue: Vec<usize> = (0..nodes.len()).filter(|n| indeg[*n] == 0).collect();
        let mut seen = 0;
        while let Some(n) = queue.pop() {
            seen += 1;
            for (f, t) in &edges {
                if *f == n {
                    indeg[*t] -= 1;
                    if indeg[*t] == 0 {
                        queue.push(*t);
                    }
                }
            }
        }
        if seen < nodes.len() {
            errors.push(Diagnostic::plain(
                "CycleInRelationPrecedencePolicyError",
                format!("The relation_precedence_policy contains a cycle: {}", rules.join("; ")),
            ));
        }
        if errors.is_empty() { Ok(()) } else { Err(errors) }
    }

    /// Checks every attribute's default value against the attribute's type, used or not, as
    /// Inmanta does when it defines the entity: a wrong one is a `RuntimeException` at the attribute.
    fn check_defaults(&mut self) -> Result<(), Vec<Diagnostic>> {
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
                // (a constraint that can not run keeps its own kind)
                let kind =
                    if not_a_list || e.kind != "TypingException" { e.kind.clone() } else { "RuntimeException".into() };
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
                "TypingException",
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
                "TypingException",
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
                            "TypingException",
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
                                "DirectExecuteException",
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
                            "TypingException",
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

    fn check_index_completion(&mut self, inst: InstId, ai: u32) {
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
                    self.errors.push(Diagnostic::error("DuplicateException", msg, Some(span), self.m.sources));
                }
                Some(_) => {}
                None => {
                    self.m.index_tables[idx].insert(key.clone(), inst);
                    if let Some(w) = self.index_waiters.remove(&(idx, key)) {
                        self.wake(w);
                    }
                }
            }
        }
    }

    /// Frees what only the evaluation needed: the tasks and their caches, the scopes of blocks
    /// and implementation bodies, listeners and index waiters (the waiters of slots are empty
    /// once every task ran), and the namespace scopes too unless `keep_root_variables` (they
    /// hold the root variables, e.g. a model's data list). Called after [`Evaluator::run`],
    /// before the export, which is where the compile's memory peaks: at 100 000 resources this
    /// state was about 350 MB of a 1.35 GB peak.
    pub(crate) fn release_scheduler(&mut self, keep_root_variables: bool) {
        self.tasks = Vec::new();
        self.ready = VecDeque::new();
        self.deferred = VecDeque::new();
        self.listeners = FastMap::default();
        self.parked = FastMap::default();
        self.index_waiters = HashMap::new();
        self.freeze_candidates = Vec::new();
        self.potential_writes = FastMap::default();
        self.write_cache = FastMap::default();
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
}
