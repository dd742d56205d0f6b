//! Evaluation: a task queue of waiting statements (Inmanta-style gradual execution).
//!
//! Every statement is a task. A task that reads a value that does not exist yet (an unassigned
//! variable, an unset attribute, a relation that is not frozen, a missing index entry) returns
//! [`Flow::Wait`] and is parked on that slot; it runs again from the start when the slot changes.
//! Side effects inside a statement (constructors, plugin calls) are recorded in the task's cache
//! in the order they happen, so running a statement again reuses them instead of repeating them.
//! When nothing is ready, the evaluator freezes relations that somebody waits on.

mod assign;
pub(crate) mod budget;
pub(crate) mod build;
mod checks;
pub(crate) mod expr;
pub(crate) mod format;
mod freeze;
mod gradual;
mod promises;
mod queue;
mod report;
pub(crate) mod state;
mod stmt;
pub(crate) mod value;
mod writes;

pub(crate) use report::is_end_of_compile;
pub(crate) use state::{Instance, Model, RelSlot, Scope, Slot, VAR_PROBES, Vars};
use state::{NO_SPAN, VarSlot, Waiters, value_set_twice};

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::rc::Rc;

use crate::diagnostics::{Diagnostic, ErrorKind};
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
    /// A value computed gradually into a sink (see [`gradual`]).
    Emit {
        what: gradual::Emitted<'a>,
        sink: Rc<gradual::Sink<'a>>,
        scope: ScopeId,
        ns: NsId,
        locals: Rc<[(Rc<str>, Value)]>,
    },
    /// One element of a comprehension computed gradually (see [`gradual`]).
    Element {
        sink: Rc<gradual::Sink<'a>>,
        item: Value,
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
    /// a comprehension or `for` loop computed gradually (see [`gradual`])
    Sink { sink: Rc<gradual::Sink<'a>>, writes: Rc<[Rc<str>]> },
}

impl Listener<'_> {
    fn writes(&self) -> &Rc<[Rc<str>]> {
        match self {
            Listener::For { writes, .. } | Listener::AddTo { writes, .. } | Listener::Sink { writes, .. } => writes,
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

/// The evaluator: runs statements as tasks, parks those that wait, wakes them when what they
/// wait for is written, freezes relations when nothing can run. It owns the [`Model`] (`m`);
/// reads go through `Deref`, writes through `m` here.
pub(crate) struct Evaluator<'a> {
    pub m: Model<'a>,
    queue: queue::Queue<'a>,
    pending_writes: writes::PendingWrites,
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    warned: HashSet<(String, Span)>,
    pub unknowns: Vec<UnknownSource>,
    pub printed: Vec<String>,
    pub project: ProjectCtx,
    pub plugins: Rc<crate::builtins::Plugins>,
    pub limits: Limits,
    /// `relation_precedence_policy`: (A, x) is frozen before (B, y).
    precedence: Vec<(EntId, String, EntId, String)>,
    /// The Python process of the modules' plugins, when a loaded module has Python code.
    pub python: Option<crate::python::bridge::Bridge>,
    /// Files that Python resource mappers uploaded (sha1, content).
    pub python_files: Vec<(String, Vec<u8>)>,
    /// Entities that constructor class names resolved to, by (namespace, inferred relation
    /// target, the name's place in the source): a constructor in a loop or an implementation
    /// resolves its name once, not on every run (the types do not change while evaluating).
    resolved_classes: FastMap<(NsId, Option<EntId>, Span), EntId>,
}

/// What a compile may use (the options' limits) and what it has used.
pub(crate) struct Limits {
    pub max_steps: u64,
    pub max_instances: u64,
    pub max_depth: u64,
    pub budget: budget::Budget,
    /// statements run, against `max_steps`
    pub steps: u64,
}

pub(crate) fn loc_str(sources: &SourceMap, span: Span) -> String {
    sources.location(span).map(|l| format!("{}:{}", l.file, l.line)).unwrap_or_else(|| "<unknown>".into())
}

/// The message of a variable that no scope declares.
pub(crate) fn var_not_found(name: &str) -> String {
    format!("variable {name} not found")
}

pub(crate) fn error(kind: impl Into<ErrorKind>, msg: impl Into<String>, span: Span, sources: &SourceMap) -> Flow {
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
            queue: queue::Queue::default(),
            pending_writes: writes::PendingWrites::new(nimpl),
            errors: Vec::new(),
            warnings: Vec::new(),
            warned: HashSet::new(),
            unknowns: Vec::new(),
            printed: Vec::new(),
            project,
            plugins: Rc::new(crate::builtins::Plugins::new()),
            limits: Limits {
                max_steps: 5_000_000,
                max_instances: u64::MAX,
                max_depth: u64::MAX,
                budget: budget::Budget::new(budget::DEFAULT_MAX_MEMORY),
                steps: 0,
            },
            precedence: Vec::new(),
            python: None,
            python_files: Vec::new(),
            resolved_classes: FastMap::default(),
        }
    }

    pub(crate) fn warn(&mut self, kind: impl Into<ErrorKind>, msg: String, span: Span) {
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
                    ErrorKind::VariableShadowWarning,
                    format!("Variable `{n}` shadows a variable of an enclosing scope"),
                    span,
                );
            }
            vars.push((*n, VarSlot { value: None, waiters: Waiters::default() }));
        }
        self.m.scopes.push(Scope { parent, ns, vars: Vars::new(vars) });
        (self.m.scopes.len() - 1) as ScopeId
    }
}
