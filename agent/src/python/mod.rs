//! Python handlers: the `@provider` handlers of Inmanta modules (`CRUDHandler`, `ResourceHandler`,
//! `DiscoveryHandler`), run unchanged by inmanta-core's own handler classes in a Python executor
//! process per environment, agent and code version (docs/modules.md, "Python handlers").
//!
//! - `code`: the modules a version ships ([`PythonCode`]) and their files on disk, checked by sha1;
//! - `process`: one executor process, spoken to in JSON lines, killed on a time-out;
//! - here: the pool of processes ([`PythonExecutors`], with a warm spare that has inmanta-core
//!   imported before any code needs it) and the [`Handler`] that calls into it.
//!
//! A handler that raises fails its resource with the Python error; one that hangs past
//! [`PythonSettings::handler_timeout`] or kills its process fails its resource too, and the next
//! resource gets a fresh process. The agent itself never stops.

mod code;
mod process;
mod protocol;
mod server_api;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Map, Value, json};

pub use code::{ModuleFile, PythonCode, PythonModule};
use process::{CallError, Launch, Load, PythonProcess, Ready};
use protocol::{HandlerReply, HandlerRequest, Request, ResolveReply, ServerAnswer, ServerCall};
pub use server_api::{ApiRequest, NoServerApi, ServerApi};

use crate::handler::{Change, Handler, HandlerContext, HandlerError, HandlerStatus};
use crate::references::FactSource;
use crate::resource::{FileSource, ResourceRequest};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

/// The executor shim, written next to the code it runs.
const SHIM: &str = include_str!("../../python/inmanta_executor.py");

/// How Python handlers run.
#[derive(Debug, Clone)]
pub struct PythonSettings {
    /// The interpreter; inmanta-core must be importable by it (module wheels depend on it), and so
    /// must every module a version names without shipping its files (installed as packages).
    pub python: PathBuf,
    /// Where the shim and the versions' module code are kept (`code/<code id>/`).
    pub cache_dir: PathBuf,
    /// Longest one handler call may take before its process is killed and the resource fails.
    pub handler_timeout: Duration,
    /// Longest an executor may take to start (import inmanta-core and the modules).
    pub start_timeout: Duration,
    /// Executor processes kept at most; the least recently used idle one is stopped beyond it.
    pub max_processes: usize,
    /// Keep one process started ahead of need (inmanta-core imported, no code yet), so that a new
    /// executor only imports its modules: see [`PythonExecutors::prestart`].
    pub warm_spare: bool,
}

impl PythonSettings {
    /// Defaults: 300 s per handler call, 120 s to start, 16 processes, a warm spare.
    pub fn new(python: PathBuf, cache_dir: PathBuf) -> PythonSettings {
        PythonSettings {
            python,
            cache_dir,
            handler_timeout: Duration::from_secs(300),
            start_timeout: Duration::from_secs(120),
            max_processes: 16,
            warm_spare: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    environment: String,
    agent: String,
    code: String,
}

/// One executor: its process when running, and what it said at start.
#[derive(Default)]
struct Slot {
    process: Mutex<Option<(PythonProcess, Ready)>>,
    last_used: AtomicU64,
}

/// A process being started ahead of need, with inmanta-core imported and no code yet.
type Spare = std::thread::JoinHandle<Result<(PythonProcess, Ready), String>>;

/// Executor processes per environment, agent and code version; started on first use, from the
/// warm spare when there is one.
pub struct PythonExecutors {
    settings: PythonSettings,
    slots: Mutex<HashMap<Key, Arc<Slot>>>,
    shim: OnceLock<Result<PathBuf, String>>,
    clock: AtomicU64,
    spare: Mutex<Option<Spare>>,
    /// Set by [`PythonExecutors::prestart`]; cleared when a spare fails to start (no
    /// inmanta-core in that Python: nothing to keep warm).
    keep_spare: std::sync::atomic::AtomicBool,
}

/// A reply from the executor and the import errors it reported at start, or why there is none.
type Reply<R> = Result<(R, Vec<(String, String)>), String>;

impl PythonExecutors {
    pub fn new(settings: PythonSettings) -> PythonExecutors {
        PythonExecutors {
            settings,
            slots: Mutex::default(),
            shim: OnceLock::new(),
            clock: AtomicU64::new(0),
            spare: Mutex::default(),
            keep_spare: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Starts a spare executor process in the background and keeps one ready from then on:
    /// importing inmanta-core is most of an executor's start (about a second), so the first
    /// resource of a new environment, agent or code version then waits only for its modules'
    /// import. Does nothing when `warm_spare` is off; stops keeping one when a spare fails (for
    /// example when the interpreter has no inmanta-core: nobody runs Python handlers here).
    pub fn prestart(&self) {
        if !self.settings.warm_spare {
            return;
        }
        self.keep_spare.store(true, Ordering::Relaxed);
        self.start_spare();
    }

    fn start_spare(&self) {
        let mut spare = self.spare.lock().unwrap_or_else(|p| p.into_inner());
        if spare.is_some() || !self.keep_spare.load(Ordering::Relaxed) {
            return;
        }
        let shim = match self.shim() {
            Ok(shim) => shim,
            Err(e) => {
                tracing::warn!(error = %e, "no spare Python executor");
                return;
            }
        };
        let (python, start_timeout) = (self.settings.python.clone(), self.settings.start_timeout);
        let started = std::thread::Builder::new()
            .name("python-executor-spare".into())
            .spawn(move || PythonProcess::start(&Launch { python: &python, shim: &shim, start_timeout }));
        match started {
            Ok(handle) => *spare = Some(handle),
            Err(e) => tracing::warn!(error = %e, "cannot start a thread for the spare Python executor"),
        }
    }

    /// Whether a spare process is kept (started or starting).
    pub fn has_spare(&self) -> bool {
        self.spare.lock().map(|s| s.is_some()).unwrap_or(false)
    }

    /// The spare, once it is ready (waiting for it is never longer than starting a new one).
    fn take_spare(&self) -> Option<(PythonProcess, Ready)> {
        let handle = self.spare.lock().unwrap_or_else(|p| p.into_inner()).take()?;
        match handle.join() {
            Ok(Ok((mut process, ready))) => process.alive().then_some((process, ready)),
            Ok(Err(e)) => {
                tracing::info!(error = %e, "the spare Python executor did not start; no spare is kept");
                self.keep_spare.store(false, Ordering::Relaxed);
                None
            }
            Err(_) => None,
        }
    }

    pub fn settings(&self) -> &PythonSettings {
        &self.settings
    }

    /// How many executor processes run now.
    pub fn running(&self) -> usize {
        let slots: Vec<Arc<Slot>> = self.slots.lock().map(|s| s.values().cloned().collect()).unwrap_or_default();
        slots
            .iter()
            .filter(|s| s.process.try_lock().map(|mut p| p.as_mut().is_some_and(|(p, _)| p.alive())).unwrap_or(true))
            .count()
    }

    fn shim(&self) -> Result<PathBuf, String> {
        self.shim
            .get_or_init(|| {
                let hash = sha1_smol::Sha1::from(SHIM).digest().to_string();
                let path = self.settings.cache_dir.join(format!("inmanta_executor-{}.py", &hash[..12]));
                if std::fs::read(&path).is_ok_and(|c| c == SHIM.as_bytes()) {
                    return Ok(path);
                }
                std::fs::create_dir_all(&self.settings.cache_dir)
                    .map_err(|e| format!("cannot create {}: {e}", self.settings.cache_dir.display()))?;
                let temp = path.with_extension(format!("{}.tmp", std::process::id()));
                std::fs::write(&temp, SHIM)
                    .and_then(|()| std::fs::rename(&temp, &path))
                    .map_err(|e| format!("cannot write the executor shim {}: {e}", path.display()))?;
                Ok(path)
            })
            .clone()
    }

    fn slot(&self, key: Key) -> Arc<Slot> {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let slot = slots.entry(key.clone()).or_default().clone();
        slot.last_used.store(self.clock.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
        if slots.len() > self.settings.max_processes {
            // Stop the least recently used executor that is not working now.
            let mut idle: Vec<(u64, Key)> = slots
                .iter()
                .filter(|(k, s)| **k != key && s.process.try_lock().is_ok())
                .map(|(k, s)| (s.last_used.load(Ordering::Relaxed), k.clone()))
                .collect();
            idle.sort_by_key(|(used, _)| *used);
            for (_, k) in idle.into_iter().take(slots.len() - self.settings.max_processes) {
                slots.remove(&k);
            }
        }
        slot
    }

    /// Runs one request in the executor of `(environment, agent, code)`, starting it if needed.
    /// Returns the reply and the import errors the executor reported at start.
    fn call<R: serde::de::DeserializeOwned>(
        &self,
        environment: &str,
        agent: &str,
        code: &PythonCode,
        files: &dyn FileSource,
        request: Request,
        serve: &mut dyn FnMut(&ServerCall) -> ServerAnswer,
    ) -> Reply<R> {
        let key = Key { environment: environment.into(), agent: agent.into(), code: code.id().into() };
        let slot = self.slot(key);
        let mut guard = slot.process.lock().unwrap_or_else(|p| p.into_inner());
        if guard.as_mut().is_none_or(|(p, _)| !p.alive()) {
            *guard = None;
            let shim = self.shim()?;
            let code_dirs = if code.ships_files() {
                vec![code.materialize(&self.settings.cache_dir.join("code"), files)?]
            } else {
                Vec::new()
            };
            let (mut process, mut ready) = match self.take_spare() {
                Some(spare) => spare,
                None => PythonProcess::start(&Launch {
                    python: &self.settings.python,
                    shim: &shim,
                    start_timeout: self.settings.start_timeout,
                })?,
            };
            // The next new executor finds a spare again.
            self.start_spare();
            let load =
                Load { code_dirs, modules: code.modules().iter().map(|m| m.name.clone()).collect(), environment };
            ready.import_errors = process.load(&load, self.settings.start_timeout)?;
            tracing::info!(
                environment, agent, code = code.id(), pid = process.pid(), python = %ready.python,
                inmanta_core = %ready.inmanta_core, "Python executor started"
            );
            *guard = Some((process, ready));
        }
        let Some((process, ready)) = guard.as_mut() else { return Err("the Python executor is not running".into()) };
        let import_errors = ready.import_errors.clone();
        match process.call_serving(request, self.settings.handler_timeout, serve) {
            Ok(reply) => Ok((reply, import_errors)),
            Err(e) => {
                *guard = None;
                Err(match e {
                    CallError::TimedOut(_) => format!(
                        "{e} (time limit {} s); the next resource of this agent starts a new executor",
                        self.settings.handler_timeout.as_secs_f64()
                    ),
                    CallError::Died(_) | CallError::Protocol(_) => {
                        format!("{e}; the next resource of this agent starts a new executor")
                    }
                })
            }
        }
    }
}

/// Runs one resource's Python handler in its version's executor.
pub(crate) struct PythonHandler {
    pub(crate) executors: Arc<PythonExecutors>,
    pub(crate) code: Arc<PythonCode>,
    pub(crate) environment: String,
    pub(crate) files: Arc<dyn FileSource>,
    /// For std's fact references, which inmanta-core resolves in the executor.
    pub(crate) facts: Arc<dyn FactSource>,
    /// For every other API call of a handler (`self.get_client()`), sent as the agent.
    pub(crate) server_api: Arc<dyn ServerApi>,
}

impl PythonHandler {
    /// Runs the resource's handler for `action` (deploy, dry_run or facts) and takes what the
    /// reply reports besides its outcome: the values to redact, the logs and the facts.
    fn request(
        &self,
        ctx: &mut HandlerContext<'_>,
        action: fn(HandlerRequest) -> Request,
        resource: &ResourceRequest,
    ) -> Result<HandlerReply, HandlerError> {
        let request = action(HandlerRequest {
            resource: resource.to_json(),
            dependency_changed: ctx.events().dependency_changed,
        });
        let mut serve = |call: &ServerCall| self.serve(call);
        let (reply, import_errors) = self
            .executors
            .call::<HandlerReply>(&self.environment, &resource.id.agent, &self.code, &*self.files, request, &mut serve)
            .map_err(HandlerError::Failed)?;
        if let Some(resolved) = &reply.resolved {
            ctx.add_secrets(&resolved.values, resolved.attributes.iter().map(String::as_str));
        }
        record_logs(ctx, reply.logs.iter().flatten());
        for (name, value) in reply.facts.iter().flatten() {
            ctx.set_fact(name, value.clone());
        }
        if reply.status == Some(HandlerStatus::Unavailable) {
            let module = resource.id.entity_type.split("::").next().unwrap_or_default();
            for (failed, traceback) in import_errors.iter().filter(|(m, _)| m == module) {
                let mut kwargs = Map::new();
                kwargs.insert("traceback".into(), traceback.clone().into());
                ctx.log("ERROR", format!("module {failed} failed to import in the Python executor"), kwargs);
            }
        }
        if let Some(error) = &reply.error {
            return Err(HandlerError::failed(format!("the Python executor did not run the handler: {error}")));
        }
        Ok(reply)
    }
}

/// The log lines of a reply, as the handler context logs them.
fn record_logs<'r>(ctx: &mut HandlerContext<'_>, logs: impl IntoIterator<Item = &'r protocol::LogLine>) {
    for line in logs {
        ctx.log(&line.level.to_uppercase(), line.msg.clone(), line.kwargs.clone());
    }
}

impl PythonHandler {
    /// Resolves the references of a resource whose handler is not Python but whose references
    /// include a type a Python module of its version defines: the executor runs the reference
    /// classes and the mutators (its `resolve` action), with `known` (std's kinds, resolved by
    /// the agent) as given. Returns the attributes with the values in place, and every value.
    pub(crate) fn resolve_references(
        &self,
        resource: &ResourceRequest,
        known: Map<String, Value>,
    ) -> Result<crate::references::Resolved<'static>, String> {
        let request = Request::Resolve { resource: resource.to_json(), known: known.clone() };
        let mut serve = |call: &ServerCall| self.serve(call);
        let (reply, _) = self.executors.call::<ResolveReply>(
            &self.environment,
            &resource.id.agent,
            &self.code,
            &*self.files,
            request,
            &mut serve,
        )?;
        let values: Vec<Value> =
            reply.resolved.map(|r| r.values).unwrap_or_default().into_iter().chain(known.into_values()).collect();
        let mut secrets = crate::references::Secrets::default();
        for value in &values {
            secrets.add_value(value);
        }
        if let Some(error) = reply.error {
            // The reference's own exception: it may quote what it resolved, never shown.
            return Err(format!(
                "cannot resolve the references of {} in the Python executor: {}",
                resource.id,
                secrets.redact_str(&error)
            ));
        }
        let Some(attributes) = reply.attributes else {
            return Err("the Python executor answered a resolve without attributes".into());
        };
        crate::references::resolved_elsewhere(resource, attributes, &values).map_err(|e| e.to_string())
    }

    /// Answers a server call of the handler or of a reference it resolves as the server would.
    fn serve(&self, call: &ServerCall) -> ServerAnswer {
        match call {
            ServerCall::GetFile { hash } => match self.files.get(hash) {
                Ok(content) => ServerAnswer::new(200, json!({"content": BASE64.encode(content)})),
                Err(e) => ServerAnswer::new(404, json!({"message": e})),
            },
            ServerCall::GetFacts { tid, rid } => match self.facts.facts(tid, rid) {
                Ok(facts) => {
                    let data: Vec<Value> = facts
                        .into_iter()
                        .map(|(name, value)| json!({"name": name, "value": value, "resource_id": rid}))
                        .collect();
                    ServerAnswer::new(200, json!({"data": data}))
                }
                Err(e) => ServerAnswer::new(500, json!({"message": e})),
            },
            // The process answers it itself (it redacts its stderr): see PythonProcess::call_serving.
            ServerCall::Redact { .. } => ServerAnswer::new(200, json!({})),
            ServerCall::Api(call) => server_api::serve(&*self.server_api, &self.environment, call),
        }
    }
}

impl Handler for PythonHandler {
    fn resolves_references(&self) -> bool {
        true
    }

    fn run(&self, ctx: &mut HandlerContext<'_>, resource: &ResourceRequest) -> Result<(), HandlerError> {
        // A report-only resource is checked by the handler itself, also in a deploy (Inmanta's own rule).
        let action = if ctx.is_dry_run() && !resource.bool("report_only") { Request::DryRun } else { Request::Deploy };
        let reply = self.request(ctx, action, resource)?;
        for (name, change) in reply.changes.into_iter().flatten() {
            ctx.add_change(&name, change.current, change.desired);
        }
        for found in reply.discovered.into_iter().flatten() {
            ctx.report_discovered(found);
        }
        if let Some(change) = reply.change
            && change != Change::NoChange
        {
            ctx.set_change(change)?;
        }
        ctx.set_status(reply.status.unwrap_or(HandlerStatus::Failed));
        Ok(())
    }

    fn facts(&self, ctx: &mut HandlerContext<'_>, resource: &ResourceRequest) -> Result<(), HandlerError> {
        let reply = self.request(ctx, Request::Facts, resource)?;
        match reply.status {
            Some(HandlerStatus::Failed | HandlerStatus::Unavailable) => {
                Err(HandlerError::failed(format!("the handler of {} could not report facts", resource.id.entity_type)))
            }
            _ => Ok(()),
        }
    }
}
