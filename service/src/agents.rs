//! In-process agents: the scheduler's handler calls run here with the agent crate's executor,
//! on blocking threads, reading file contents from the server's own store. Deployed files,
//! directories and symlinks on local hosts are watched; a change made behind the orchestrator's
//! back is repaired at once (`realtime_repair`). A resource type without a built-in handler runs
//! the executable its version ships (docs/handlers.md), cached in the state directory, or the
//! `@provider` of the version's Python modules in a Python executor (docs/modules.md).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use agent::{
    DriftWatcher, Events, Executor, FactSource, FileSource, HandlerStatus, Mode, PythonCode, PythonSettings,
    ResourceRequest, VersionCode,
};
use orchestrator::Orchestrator;
use orchestrator::scheduler::{Dispatch, Schedulers, Scope, Task, TaskKind, TaskOutcome};
use serde_json::{Map, Value};
use uuid::Uuid;

/// File contents by hash from the database, for handlers running on blocking threads.
pub struct StoreFiles {
    orchestrator: Orchestrator,
    runtime: tokio::runtime::Handle,
}

impl StoreFiles {
    /// Must be called on the runtime that serves the reads.
    pub fn new(orchestrator: Orchestrator) -> StoreFiles {
        StoreFiles { orchestrator, runtime: tokio::runtime::Handle::current() }
    }
}

/// How long a handler waits for the database to give it a file's content before its resource
/// fails: a passing outage delays the deploy instead of failing it.
const FILE_READ_PATIENCE: std::time::Duration = std::time::Duration::from_secs(300);

impl FileSource for StoreFiles {
    fn get(&self, hash: &str) -> Result<Vec<u8>, String> {
        self.runtime
            .block_on(self.orchestrator.get_file_for_deploy(hash, FILE_READ_PATIENCE))
            .map_err(|e| format!("file {hash}: {e}"))
    }
}

/// Facts of resources from the database, for std's fact references (handlers run on blocking
/// threads).
pub struct StoreFacts {
    orchestrator: Orchestrator,
    runtime: tokio::runtime::Handle,
}

impl StoreFacts {
    /// Must be called on the runtime that serves the reads.
    pub fn new(orchestrator: Orchestrator) -> StoreFacts {
        StoreFacts { orchestrator, runtime: tokio::runtime::Handle::current() }
    }
}

impl FactSource for StoreFacts {
    fn facts(&self, environment: &str, resource_id: &str) -> Result<Map<String, Value>, String> {
        let env = Uuid::parse_str(environment).map_err(|_| format!("{environment:?} is not an environment id"))?;
        let facts =
            self.runtime.block_on(self.orchestrator.resource_facts(env, resource_id)).map_err(|e| e.to_string())?;
        Ok(facts.into_iter().map(|f| (f.name, Value::String(f.value))).collect())
    }
}

/// The executor of in-process agents (and of `inmanta deploy --dry-run`): files and facts from
/// the server's own store. Must be called on the runtime that serves those reads.
pub fn in_process_executor(orchestrator: &Orchestrator, handler_dir: PathBuf, python: PythonSettings) -> Executor {
    Executor::new(Arc::new(StoreFiles::new(orchestrator.clone())))
        .with_facts(Arc::new(StoreFacts::new(orchestrator.clone())))
        .with_shipped_handlers(handler_dir)
        .with_python(python)
}

/// Which environments a watched resource id is deployed in.
type Watched = Arc<Mutex<HashMap<String, HashSet<Uuid>>>>;

/// The Python modules of versions already looked up (versions never change).
type PythonCodes = Arc<Mutex<HashMap<(Uuid, i64), Option<Arc<PythonCode>>>>>;

/// Versions whose Python code is kept in memory at most.
const PYTHON_CODES_KEPT: usize = 256;

/// Runs every agent of every environment inside the server process.
pub struct InProcessAgents {
    orchestrator: Orchestrator,
    executor: Arc<Executor>,
    watcher: Option<Arc<DriftWatcher>>,
    watched: Watched,
    drift: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<api::ResourceId>>>,
    python_codes: PythonCodes,
    /// The server's router, for the API calls of Python handlers (set by [`InProcessAgents::serve_api_with`]).
    api: Arc<crate::rest::in_process_api::RouterApi>,
}

impl InProcessAgents {
    /// Must be called on the runtime the handlers' file reads use. Shipped handler executables
    /// are kept in `handler_dir`; Python handlers run as `python` says.
    pub fn new(orchestrator: Orchestrator, handler_dir: PathBuf, python: PythonSettings) -> InProcessAgents {
        let api = crate::rest::in_process_api::RouterApi::new();
        let executor = Arc::new(in_process_executor(&orchestrator, handler_dir, python).with_server_api(api.clone()));
        let (watcher, drift) = match DriftWatcher::new() {
            Ok((watcher, drift)) => (Some(Arc::new(watcher)), Some(drift)),
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch files; drift is repaired by the repair interval only");
                (None, None)
            }
        };
        InProcessAgents {
            orchestrator,
            executor,
            watcher,
            watched: Arc::default(),
            drift: Mutex::new(drift),
            python_codes: Arc::default(),
            api,
        }
    }

    /// The handler code the task's version ships for its resource type, when no handler is built
    /// in for it: the sha1 of an executable, else the version's Python modules (those also for a
    /// built-in handler's resource whose references need them). Dry runs and
    /// deploys alike go through here.
    pub fn version_code(&self, task: &Task) -> impl Future<Output = Result<VersionCode, String>> + Send + 'static {
        let built_in = self.executor.handles(&task.resource_id.entity_type);
        // A reference type of a module's own resolves in the version's Python executor, whatever
        // the handler.
        let python_references = agent::references_need_python(&task.attributes);
        let orchestrator = self.orchestrator.clone();
        let codes = self.python_codes.clone();
        let (env, version, resource_type) = (task.environment, task.version, task.resource_id.entity_type.clone());
        async move {
            let mut code = VersionCode { environment: env.to_string(), ..VersionCode::default() };
            if built_in {
                if python_references {
                    code.python = python_code(&orchestrator, &codes, env, version).await?;
                }
                return Ok(code);
            }
            code.shipped_handler = orchestrator.shipped_handler(env, version, &resource_type).await.map_err(|e| {
                format!("cannot look up the handler that version {version} ships for {resource_type}: {e}")
            })?;
            if code.shipped_handler.is_none() {
                code.python = python_code(&orchestrator, &codes, env, version).await?;
            }
            Ok(code)
        }
    }

    /// Sends the API calls of Python handlers (`self.get_client()`) through `router`, the
    /// server's REST router (for `inmanta deploy`, one that listens nowhere), as an agent of the
    /// resource's environment. Until then they are answered 503.
    pub fn serve_api_with(&self, router: axum::Router) {
        self.api.set_router(router);
    }

    /// Keeps a Python executor started ahead of need (`[agent] python-warm-spare`), so the first
    /// Python handler of a version does not wait for inmanta-core's import.
    pub fn prestart_python(&self) {
        if let Some(python) = self.executor.python() {
            python.prestart();
        }
    }

    /// Repairs every drifted resource through its environment's scheduler. Call once.
    pub fn repair_drift(&self, schedulers: Arc<Schedulers>) {
        let Some(mut drift) = self.drift.lock().ok().and_then(|mut d| d.take()) else { return };
        let watched = self.watched.clone();
        tokio::spawn(async move {
            while let Some(rid) = drift.recv().await {
                let rid = rid.to_string();
                let envs: Vec<Uuid> =
                    watched.lock().map(|w| w.get(&rid).into_iter().flatten().copied().collect()).unwrap_or_default();
                for env in envs {
                    tracing::info!(%env, resource = %rid, "drift detected: repairing");
                    let scope = Scope { agents: None, resources: Some(vec![rid.clone()]) };
                    if let Err(e) = schedulers.deploy(env, true, scope).await {
                        tracing::warn!(%env, resource = %rid, error = %e, "drift repair not scheduled");
                    }
                }
            }
        });
    }
}

impl Dispatch for InProcessAgents {
    fn execute(&self, _agent: &str, task: Task) -> Pin<Box<dyn Future<Output = TaskOutcome> + Send>> {
        let executor = self.executor.clone();
        let watcher = self.watcher.clone();
        let watched = self.watched.clone();
        let code = self.version_code(&task);
        let orchestrator = self.orchestrator.clone();
        Box::pin(async move {
            let code = match code.await {
                Ok(code) => code,
                Err(message) => return unavailable(message),
            };
            let env = task.environment;
            let task_rid = task.resource_id.to_string();
            let watch = task.watch && task.kind == TaskKind::Deploy;
            let request = ResourceRequest { id: task.resource_id, version: task.version, attributes: task.attributes };
            if task.kind == TaskKind::Facts {
                let gathered = tokio::task::spawn_blocking(move || executor.facts_with(&request, &code)).await;
                return match gathered {
                    Ok(Ok(facts)) => {
                        store_facts(&orchestrator, env, &task_rid, facts).await;
                        facts_gathered()
                    }
                    Ok(Err(message)) => unavailable(message),
                    Err(e) => unavailable(format!("the handler thread failed: {e}")),
                };
            }
            let mode = if task.kind == TaskKind::DryRun { Mode::DryRun } else { Mode::Deploy };
            let events = Events { dependency_changed: task.dependency_changed };
            let run = move || {
                // Our own writes are not drift.
                let _quiet = watcher.as_ref().map(|w| w.suspend(&request.id));
                let outcome = executor.execute_code(&request, &code, mode, &events);
                drop(_quiet);
                if let Some(watcher) = watcher.filter(|_| mode == Mode::Deploy) {
                    let purged = request.attributes.get("purged").and_then(|p| p.as_bool()).unwrap_or(false);
                    let paths = agent::watch_paths(&request);
                    let rid = request.id.to_string();
                    if watch && outcome.status == HandlerStatus::Deployed && !purged && !paths.is_empty() {
                        if watcher.watch(&request.id, &paths).is_ok()
                            && let Ok(mut w) = watched.lock()
                        {
                            w.entry(rid).or_default().insert(env);
                        }
                    } else if let Ok(mut w) = watched.lock()
                        && let Some(envs) = w.get_mut(&rid)
                    {
                        envs.remove(&env);
                        if envs.is_empty() {
                            w.remove(&rid);
                            watcher.unwatch(&request.id);
                        }
                    }
                }
                outcome
            };
            let rid = task_rid.clone();
            match tokio::task::spawn_blocking(run).await {
                Ok(mut outcome) => {
                    store_facts(&orchestrator, env, &rid, std::mem::take(&mut outcome.facts)).await;
                    if !outcome.discovered.is_empty() {
                        let reported = orchestrator.create_discovered_resources(env, &outcome.discovered).await;
                        if let Err(e) = reported {
                            report_failed(&mut outcome, e.to_string());
                        }
                    }
                    TaskOutcome {
                        status: outcome.status,
                        change: outcome.change,
                        changes: outcome
                            .changes
                            .into_iter()
                            .map(|(name, c)| (name, serde_json::json!({"current": c.current, "desired": c.desired})))
                            .collect(),
                        logs: outcome.logs,
                    }
                }
                Err(e) => unavailable(format!("the handler thread failed: {e}")),
            }
        })
    }
}

/// A discovery handler's findings did not reach the server: the run failed, as Inmanta's
/// `DiscoveryHandler` fails it.
pub(crate) fn report_failed(outcome: &mut agent::Outcome, why: String) {
    outcome.status = HandlerStatus::Failed;
    outcome.logs.push(api::resource::LogLine {
        level: "ERROR".into(),
        msg: format!("Failed to report discovered resources to the server: {why}"),
        args: vec![],
        kwargs: Default::default(),
        timestamp: api::Timestamp::now(),
    });
}

/// Stores the facts a handler reported during a run as facts of its resource.
pub(crate) async fn store_facts(
    orchestrator: &Orchestrator,
    env: Uuid,
    rid: &str,
    facts: serde_json::Map<String, serde_json::Value>,
) {
    for (name, value) in facts {
        let fact = orchestrator::parameters::NewParameter {
            name: name.clone(),
            source: "fact".into(),
            value,
            resource_id: Some(rid.to_string()),
            ..Default::default()
        };
        if let Err(e) = orchestrator.set_parameter(env, fact).await {
            tracing::warn!(%env, resource = %rid, fact = %name, error = %e, "a fact the handler reported was not stored");
        }
    }
}

/// The Python modules of a version (its `module_version_info`), looked up once per version.
async fn python_code(
    orchestrator: &Orchestrator,
    codes: &PythonCodes,
    env: Uuid,
    version: i64,
) -> Result<Option<Arc<PythonCode>>, String> {
    if let Some(code) = codes.lock().ok().and_then(|c| c.get(&(env, version)).cloned()) {
        return Ok(code);
    }
    let info = orchestrator
        .module_version_info(env, version)
        .await
        .map_err(|e| format!("cannot look up the Python modules of version {version}: {e}"))?;
    let code = match info {
        None => None,
        Some(info) => Some(Arc::new(
            PythonCode::from_module_version_info(&info)
                .map_err(|e| format!("version {version} names its Python modules wrongly: {e}"))?,
        )),
    };
    if let Ok(mut codes) = codes.lock() {
        if codes.len() >= PYTHON_CODES_KEPT {
            codes.clear();
        }
        codes.insert((env, version), code.clone());
    }
    Ok(code)
}

/// The outcome of a task whose handler could not run.
/// The outcome of a fact gathering that went well (the facts themselves are stored apart).
pub(crate) fn facts_gathered() -> TaskOutcome {
    TaskOutcome {
        status: HandlerStatus::Deployed,
        change: agent::Change::NoChange,
        changes: Default::default(),
        logs: vec![],
    }
}

pub(crate) fn unavailable(message: String) -> TaskOutcome {
    TaskOutcome {
        status: HandlerStatus::Unavailable,
        change: agent::Change::NoChange,
        changes: Default::default(),
        logs: vec![api::resource::LogLine {
            level: "ERROR".into(),
            msg: message,
            args: vec![],
            kwargs: Default::default(),
            timestamp: api::Timestamp::now(),
        }],
    }
}
