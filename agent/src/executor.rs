//! [`Executor`]: finds the handler and host for a resource, runs it and turns what happened into
//! an [`Outcome`]; handler errors and panics never escape.

use std::collections::{BTreeMap, HashMap};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::external::ExternalHandler;
use crate::handler::{AttributeChange, Change, Crud, Handler, HandlerContext, HandlerError, HandlerStatus, now};
use crate::handlers::{exec::RunHandler, fs, null::NullHandler};
use crate::host::{Host, LocalHost, SshHost, SshOptions, SudoHost};
use crate::python::{NoServerApi, PythonCode, PythonExecutors, PythonHandler, PythonSettings, ServerApi};
use crate::references::{FactSource, NoFacts, Resolved, resolve};
use crate::resource::{FileSource, ResourceRequest};
use crate::shipped::ShippedHandlers;
use api::resource::{DiscoveredResourceInput, LogLine};

/// Deploy for real, or only compute what would change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Deploy,
    DryRun,
}

/// What happened to the resource's dependencies since its last run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Events {
    /// A requirement with `send_event` produced changes since this resource's last successful run.
    pub dependency_changed: bool,
}

/// The result of one handler run.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub status: HandlerStatus,
    pub change: Change,
    pub changes: BTreeMap<String, AttributeChange>,
    pub logs: Vec<LogLine>,
    /// Facts the handler reported while it ran (`ctx.set_fact` in a Python handler).
    pub facts: Map<String, Value>,
    /// Resources a discovery handler found (deploys only); the agent reports them to the server.
    pub discovered: Vec<DiscoveredResourceInput>,
}

/// The handler code a resource's version ships, as the server tells the agent with each task:
/// an executable for the resource's type, and the version's Python modules.
#[derive(Debug, Clone, Default)]
pub struct VersionCode {
    /// The environment (Python executors are kept per environment).
    pub environment: String,
    /// sha1 of the executable a module ships for the resource's type (docs/handlers.md).
    pub shipped_handler: Option<String>,
    /// The version's Python modules (its `module_version_info`).
    pub python: Option<Arc<PythonCode>>,
}

/// A resource's handler and the host it acts on.
type HandlerAndHost = (Arc<dyn Handler>, Arc<dyn Host>);

/// Runs handlers: the built-in ones, registered external programs and the executables that
/// versions ship.
pub struct Executor {
    files: Arc<dyn FileSource>,
    /// The server's facts, for std's fact references.
    facts: Arc<dyn FactSource>,
    /// The server's API, for Python handlers that call it themselves (`self.get_client()`).
    server_api: Arc<dyn ServerApi>,
    handlers: HashMap<String, Arc<dyn Handler>>,
    /// Where shipped handler executables are kept; `None` refuses to run them.
    shipped: Option<ShippedHandlers>,
    /// Python executors for `@provider` handlers of modules; `None` refuses to run them.
    python: Option<Arc<PythonExecutors>>,
    /// Open connections per `via`, reused by every run.
    hosts: Mutex<HashMap<String, Arc<dyn Host>>>,
}

impl Executor {
    /// An executor with every built-in handler registered.
    pub fn new(files: Arc<dyn FileSource>) -> Executor {
        let mut handlers: HashMap<String, Arc<dyn Handler>> = HashMap::new();
        handlers.insert("fs::File".into(), Arc::new(Crud(fs::FileHandler)));
        handlers.insert("fs::Directory".into(), Arc::new(Crud(fs::DirectoryHandler)));
        handlers.insert("fs::Symlink".into(), Arc::new(Crud(fs::SymlinkHandler)));
        handlers.insert("exec::Run".into(), Arc::new(RunHandler));
        handlers.insert("std::testing::NullResource".into(), Arc::new(Crud(NullHandler)));
        Executor {
            files,
            facts: Arc::new(NoFacts),
            server_api: Arc::new(NoServerApi),
            handlers,
            shipped: None,
            python: None,
            hosts: Mutex::new(HashMap::new()),
        }
    }

    /// Reads the facts that std's fact references name from `facts` (the server's fact store).
    pub fn with_facts(mut self, facts: Arc<dyn FactSource>) -> Executor {
        self.facts = facts;
        self
    }

    /// Sends the API calls of Python handlers (`self.get_client()`) through `server_api`, as
    /// the agent; without it they are answered 501.
    pub fn with_server_api(mut self, server_api: Arc<dyn ServerApi>) -> Executor {
        self.server_api = server_api;
        self
    }

    /// The resource as its handler gets it: references resolved and mutators applied, unless the
    /// handler resolves them itself. A reference type that only a Python module of the version
    /// defines is resolved in the version's Python executor (std's kinds still here).
    fn resolved<'r>(
        &self,
        req: &'r ResourceRequest,
        handler: &dyn Handler,
        code: &VersionCode,
    ) -> Result<Resolved<'r>, String> {
        if handler.resolves_references() {
            return Ok(Resolved { request: std::borrow::Cow::Borrowed(req), secrets: Default::default() });
        }
        if let (true, Some(executors), Some(python)) =
            (crate::references::needs_python(req), &self.python, code.python.as_ref().filter(|p| !p.is_empty()))
        {
            let known = crate::references::resolve_known(req, &*self.facts).map_err(|e| e.to_string())?;
            let handler = self.python_handler(executors, python, code);
            return handler.resolve_references(req, known);
        }
        resolve(req, &*self.facts).map_err(|e| e.to_string())
    }

    /// Runs the `@provider` handlers of the Python modules a version names (docs/modules.md).
    pub fn with_python(mut self, settings: PythonSettings) -> Executor {
        self.python = Some(Arc::new(PythonExecutors::new(settings)));
        self
    }

    /// The Python executors, when this executor runs Python handlers.
    pub fn python(&self) -> Option<&PythonExecutors> {
        self.python.as_deref()
    }

    /// Runs the handler executables that versions ship (docs/handlers.md), fetched through this
    /// executor's file source and kept in `dir` as `<sha1>`.
    pub fn with_shipped_handlers(mut self, dir: PathBuf) -> Executor {
        self.shipped = Some(ShippedHandlers::new(dir));
        self
    }

    /// Handles `resource_type` with an executable speaking the JSON protocol of docs/handlers.md;
    /// replaces a built-in handler of the same type.
    pub fn register_external(&mut self, resource_type: &str, program: PathBuf) {
        self.handlers.insert(resource_type.to_string(), Arc::new(ExternalHandler::new(program)));
    }

    /// Adds (or replaces) a handler written in Rust.
    pub fn register(&mut self, resource_type: &str, handler: Arc<dyn Handler>) {
        self.handlers.insert(resource_type.to_string(), handler);
    }

    pub fn handles(&self, resource_type: &str) -> bool {
        self.handlers.contains_key(resource_type)
    }

    /// Deploys (or dry-runs) one resource with a built-in or registered handler. Blocking; never
    /// panics.
    pub fn execute(&self, req: &ResourceRequest, mode: Mode, events: &Events) -> Outcome {
        self.execute_with(req, None, mode, events)
    }

    /// Deploys (or dry-runs) one resource of a version that ships `shipped_handler`, the sha1 of
    /// the executable a module ships for the resource's type; it runs when no handler is built in
    /// or registered for the type. Blocking; never panics.
    pub fn execute_with(
        &self,
        req: &ResourceRequest,
        shipped_handler: Option<&str>,
        mode: Mode,
        events: &Events,
    ) -> Outcome {
        let code = VersionCode { shipped_handler: shipped_handler.map(str::to_string), ..VersionCode::default() };
        self.execute_code(req, &code, mode, events)
    }

    /// Deploys (or dry-runs) one resource with the handler the resource's type has: built in or
    /// registered, else the executable its version ships, else the `@provider` of the version's
    /// Python modules. Blocking; never panics.
    pub fn execute_code(&self, req: &ResourceRequest, code: &VersionCode, mode: Mode, events: &Events) -> Outcome {
        let early = |status, msg: String| Outcome {
            status,
            change: Change::NoChange,
            changes: BTreeMap::new(),
            logs: vec![LogLine { level: "ERROR".into(), msg, args: Vec::new(), kwargs: Map::new(), timestamp: now() }],
            facts: Map::new(),
            discovered: Vec::new(),
        };
        let (handler, host) = match self.handler_and_host(req, code) {
            Ok(found) => found,
            Err(message) => return early(HandlerStatus::Unavailable, message),
        };
        // A reference that does not resolve fails the resource; the message names the reference
        // and the reason, never a value.
        let Resolved { request: req, secrets } = match self.resolved(req, &*handler, code) {
            Ok(resolved) => resolved,
            Err(message) => return early(HandlerStatus::Failed, message),
        };
        let req = &*req;
        let report_only = req.bool("report_only");
        let apply = mode == Mode::Deploy && !report_only;
        let mut ctx = HandlerContext::new(if apply { Mode::Deploy } else { Mode::DryRun }, events, host, &*self.files)
            .with_secrets(secrets);
        let result = catch_unwind(AssertUnwindSafe(|| handler.run(&mut ctx, req)))
            .unwrap_or_else(|p| Err(HandlerError::Failed(format!("the handler panicked: {}", panic_message(&*p)))));
        let status = match result {
            Err(HandlerError::Failed(msg)) => {
                let (msg, kwargs) = deploy_error(&req.id, &msg);
                ctx.log("ERROR", msg, kwargs);
                HandlerStatus::Failed
            }
            Err(HandlerError::Skipped(msg)) => {
                ctx.info(format!("skipped: {msg}"));
                HandlerStatus::Skipped
            }
            Ok(()) => match ctx.status {
                // A handler that decides its own status reports a dry run as deployed.
                Some(HandlerStatus::Deployed) if mode == Mode::DryRun => HandlerStatus::Dry,
                Some(s) => s,
                None if mode == Mode::DryRun => HandlerStatus::Dry,
                None if report_only && !ctx.changes.is_empty() => HandlerStatus::NonCompliant,
                None => HandlerStatus::Deployed,
            },
        };
        Outcome {
            status,
            change: ctx.change,
            changes: ctx.changes,
            logs: ctx.logs,
            facts: ctx.facts,
            discovered: ctx.discovered,
        }
    }

    /// The facts a handler reports about a resource (`getfact`).
    pub fn facts(&self, req: &ResourceRequest) -> Result<Map<String, Value>, String> {
        self.facts_with(req, &VersionCode::default())
    }

    /// The facts a handler of a version's code reports about a resource.
    pub fn facts_with(&self, req: &ResourceRequest, code: &VersionCode) -> Result<Map<String, Value>, String> {
        let (handler, host) = self.handler_and_host(req, code)?;
        let Resolved { request: req, secrets } = self.resolved(req, &*handler, code)?;
        let req = &*req;
        let events = Events::default();
        let mut ctx = HandlerContext::new(Mode::DryRun, &events, host, &*self.files).with_secrets(secrets);
        catch_unwind(AssertUnwindSafe(|| handler.facts(&mut ctx, req)))
            .unwrap_or_else(|p| Err(HandlerError::Failed(format!("the handler panicked: {}", panic_message(&*p)))))
            .map_err(|e| e.to_string())?;
        Ok(ctx.facts)
    }

    /// The handler of a resource and the host its `via` names (Python handlers reach their hosts
    /// themselves, through the module's own io proxy).
    /// A Python handler for `python` (a version's code) on this executor's file and fact sources.
    fn python_handler(
        &self,
        executors: &Arc<PythonExecutors>,
        python: &Arc<PythonCode>,
        code: &VersionCode,
    ) -> PythonHandler {
        PythonHandler {
            executors: executors.clone(),
            code: python.clone(),
            environment: code.environment.clone(),
            files: self.files.clone(),
            facts: self.facts.clone(),
            server_api: self.server_api.clone(),
        }
    }

    fn handler_and_host(&self, req: &ResourceRequest, code: &VersionCode) -> Result<HandlerAndHost, String> {
        let resource_type = &req.id.entity_type;
        if !self.handlers.contains_key(resource_type)
            && code.shipped_handler.is_none()
            && let Some(python) = code.python.as_ref().filter(|p| !p.is_empty())
        {
            let Some(executors) = &self.python else {
                return Err(format!(
                    "resource type {resource_type} is handled by the Python modules of its version, \
                     but this agent runs no Python executor"
                ));
            };
            let handler = self.python_handler(executors, python, code);
            return Ok((Arc::new(handler), Arc::new(LocalHost)));
        }
        let handler = self.handler_for(resource_type, code.shipped_handler.as_deref())?;
        Ok((handler, self.host_for(req.attributes.get("via"))?))
    }

    /// The built-in or registered handler of a type, else the shipped executable.
    fn handler_for(&self, resource_type: &str, shipped_handler: Option<&str>) -> Result<Arc<dyn Handler>, String> {
        if let Some(handler) = self.handlers.get(resource_type) {
            return Ok(handler.clone());
        }
        let Some(hash) = shipped_handler else {
            return Err(format!(
                "no handler for resource type {resource_type}: none is built in, no module of this version \
                 ships an executable for it (handlers/{}) and the version names no Python module",
                resource_type.replace("::", "__")
            ));
        };
        let Some(shipped) = &self.shipped else {
            return Err(format!(
                "resource type {resource_type} is handled by a shipped handler ({hash}), \
                 but this agent has no directory to keep shipped handlers in"
            ));
        };
        let program = shipped.program(hash, &*self.files)?;
        Ok(Arc::new(ExternalHandler::new(program)))
    }

    /// The host a `via` names, reusing an open connection to it.
    pub fn host_for(&self, via: Option<&Value>) -> Result<Arc<dyn Host>, String> {
        let via = match via {
            None | Some(Value::Null) => return Ok(Arc::new(LocalHost)),
            Some(Value::Object(v)) => v,
            Some(other) => return Err(format!("`via` must be an object, got {other}")),
        };
        let method = via.get("method_name").and_then(Value::as_str).unwrap_or("local");
        if method == "local" {
            return Ok(Arc::new(LocalHost));
        }
        let key = Value::Object(via.clone()).to_string();
        if let Some(h) = self.hosts.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return Ok(h.clone());
        }
        let host: Arc<dyn Host> = match method {
            "ssh" => Arc::new(SshHost::new(SshOptions::from_via(via)?)),
            "sudo" => Arc::new(SudoHost::from_via(self.host_for(via.get("via"))?, via)),
            other => return Err(format!("unsupported `via` method {other:?} (supported: local, ssh, sudo)")),
        };
        self.hosts.lock().unwrap_or_else(|p| p.into_inner()).insert(key, host.clone());
        Ok(host)
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// The log line of a failed handler run in Inmanta's words and keys (`CRUDHandler.execute`):
/// the message names the resource and the error, and `kwargs` holds `resource_id`, `exception`
/// (`Exception('<message>')`, the Python form) and `traceback`. A built-in handler has no Python
/// stack: its traceback is the last line a Python one ends with (`Exception: <message>`).
fn deploy_error(id: &api::ResourceId, message: &str) -> (String, Map<String, Value>) {
    let exception = format!("Exception('{message}')");
    let text = format!("An error occurred during deployment of {id} (exception: {exception})");
    let mut kwargs = Map::new();
    kwargs.insert("resource_id".into(), Value::String(id.to_string()));
    kwargs.insert("exception".into(), Value::String(exception));
    kwargs.insert("traceback".into(), Value::String(format!("Exception: {message}\n")));
    (text, kwargs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shareable_across_blocking_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Executor>();
        send_sync::<crate::DriftWatcher>();
        send_sync::<Outcome>();
    }
}
