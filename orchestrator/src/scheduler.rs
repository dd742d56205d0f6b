//! The scheduler: one per environment, inside the server (ARCHITECTURE.md, `orchestrator`).
//!
//! Each environment's scheduler is a single task that owns the state of its resources (intent,
//! dirty, blocked, last run), so no locks are needed. Work is queued per agent in priority order;
//! a task becomes ready when none of its direct requirements is scheduled or running (a count per
//! task, so readiness costs O(dependents) per finished deploy, not a scan). Each agent runs one
//! task at a time, agents run in parallel. Handler calls go through [`Dispatch`], which the server
//! implements with the agent crate (in-process) or a remote agent session: this crate knows no
//! handler. Results are written to the database in batches, so thousands of deploys cost a few
//! commits; everything that matters after a crash is in the database, and a restarted scheduler
//! rebuilds from it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use api::ResourceId;
use api::cron::next_fire;
use api::resource::LogLine;
use api::state::{ActionKind, Blocked, Change, HandlerStatus, ResourceDiffStatus, ResourceState, StateVector};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use crate::resources::{ActionOutcome, FinishedAction, ResourceIntent};
use crate::scheduler_writes::{Batch, Writer};
use crate::store::now;
use crate::{Error, Event, Orchestrator, Result};

mod recovery;

/// One handler call for an agent to run.
#[derive(Debug, Clone)]
pub struct Task {
    pub environment: Uuid,
    pub resource_id: ResourceId,
    pub version: i64,
    pub attributes: serde_json::Map<String, serde_json::Value>,
    pub kind: TaskKind,
    /// A requirement with `send_event` changed something since this resource's last deploy.
    pub dependency_changed: bool,
    /// After a successful deploy, watch the resource for drift (`realtime_repair`).
    pub watch: bool,
    /// The lease epoch of the scheduler that handed the task out (0: a single server).
    pub epoch: i64,
}

/// What a task asks of the resource's handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskKind {
    /// Bring the resource to its desired state.
    Deploy,
    /// Say what a deploy would change, changing nothing.
    DryRun,
    /// Report the resource's facts (Inmanta's `getfact`), changing nothing.
    Facts,
}

/// What the handler reported.
#[derive(Debug, Clone)]
pub struct TaskOutcome {
    pub status: HandlerStatus,
    pub change: Change,
    /// `{attribute: {current, desired}}`.
    pub changes: serde_json::Map<String, serde_json::Value>,
    pub logs: Vec<LogLine>,
}

/// Runs handler calls on agents. Implemented by the server (in-process agents, remote agents).
pub trait Dispatch: Send + Sync + 'static {
    fn execute(&self, agent: &str, task: Task) -> Pin<Box<dyn Future<Output = TaskOutcome> + Send>>;
}

/// Task priorities, those of Inmanta 20.1's `TaskPriority` (inmanta/deploy/work.py): lower runs first.
pub mod priority {
    pub const USER_DEPLOY: u8 = 0;
    pub const NEW_VERSION: u8 = 1;
    pub const USER_REPAIR: u8 = 2;
    pub const DRY_RUN: u8 = 3;
    pub const INTERVAL_DEPLOY: u8 = 4;
    pub const FACT_REFRESH: u8 = 5;
    pub const INTERVAL_REPAIR: u8 = 6;
}

/// Which resources a user deploy or repair is about.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub agents: Option<Vec<String>>,
    pub resources: Option<Vec<String>>,
}

/// What the scheduler holds, for `GET /api/v2/scheduler_status` and for tests.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SchedulerStatus {
    pub scheduled: usize,
    pub running: usize,
    pub dirty: usize,
    /// Results of handler runs not yet stored in the database (our extension: the scheduler is
    /// done with what it ran once this and `running` are 0).
    pub unsaved: usize,
    /// resource id -> status as the scheduler sees it.
    pub resource_states: HashMap<String, ResourceState>,
}

pub(crate) enum Command {
    /// A version was released (its number when known): read it unless already read.
    Reload(Option<i64>),
    Settings,
    Halt(bool),
    Deploy {
        repair: bool,
        scope: Scope,
        reply: oneshot::Sender<Vec<String>>,
    },
    Status(oneshot::Sender<SchedulerStatus>),
    WaitIdle(oneshot::Sender<()>),
    /// Dispatch nothing more, finish what runs, store it and stop (the lease is handed on).
    Drain(oneshot::Sender<()>),
    Stop,
}

/// This server's lease on the scheduler of one environment (several servers on PostgreSQL).
pub struct Lease {
    pub fence: crate::cluster::Fence,
    /// Until when this server may hand out work: renewed with the lease, and ending a margin
    /// before the lease itself so a server that cannot renew stops first.
    valid_until: Mutex<Instant>,
    /// Work the previous holder had in flight (it died with its lease still running) may still
    /// run until that lease would have ended: nothing is handed out before.
    hold_until: Instant,
    /// Being handed to another server: not renewed into a new scheduler.
    releasing: std::sync::atomic::AtomicBool,
}

impl Lease {
    pub fn new(fence: crate::cluster::Fence, valid_until: Instant, hold_until: Instant) -> Lease {
        Lease { fence, valid_until: Mutex::new(valid_until), hold_until, releasing: Default::default() }
    }

    pub fn valid(&self) -> bool {
        self.valid_until.lock().map(|v| Instant::now() < *v).unwrap_or(false)
    }

    pub fn is_releasing(&self) -> bool {
        self.releasing.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn set_releasing(&self) {
        self.releasing.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn extend(&self, until: Instant) {
        if let Ok(mut v) = self.valid_until.lock() {
            *v = until.max(*v);
        }
    }
}

/// The schedulers of every environment of a server.
pub struct Schedulers {
    pub(crate) orchestrator: Orchestrator,
    dispatch: Arc<dyn Dispatch>,
    running: Mutex<HashMap<Uuid, mpsc::UnboundedSender<Command>>>,
    /// With several servers: the environments whose lease this server holds. Only those get a
    /// scheduler here; `None` on a single server (SQLite), which runs every scheduler.
    pub(crate) owned: Option<Mutex<HashMap<Uuid, Arc<Lease>>>>,
}

impl Schedulers {
    /// Starts a scheduler for every environment that has released something and is not halted,
    /// and follows the orchestrator's events from then on.
    pub async fn start(orchestrator: Orchestrator, dispatch: Arc<dyn Dispatch>) -> Result<Arc<Schedulers>> {
        let node = orchestrator.node().cloned();
        if node.is_none() {
            orchestrator.mark_all_agents_down().await?;
        }
        let schedulers = Arc::new(Schedulers {
            orchestrator: orchestrator.clone(),
            dispatch,
            running: Mutex::new(HashMap::new()),
            owned: node.as_ref().map(|_| Mutex::new(HashMap::new())),
        });
        orchestrator.health_monitor().set_schedulers(Arc::downgrade(&schedulers));
        let mut events = orchestrator.subscribe();
        match node {
            // Schedulers start as their leases are won.
            Some(node) => crate::ownership::start(Arc::downgrade(&schedulers), node),
            None => {
                for env in orchestrator.list_environments().await? {
                    if !env.halted {
                        schedulers.ensure(env.id);
                    }
                }
            }
        }
        let me = Arc::downgrade(&schedulers);
        tokio::spawn(async move {
            loop {
                let event = events.recv().await;
                let Some(me) = me.upgrade() else { return };
                match event {
                    Ok(Event::VersionReleased { env, version }) => me.send(env, Command::Reload(Some(version)), true),
                    Ok(Event::Halted { env, halted }) => me.send(env, Command::Halt(halted), true),
                    Ok(Event::SettingsChanged { env }) => me.send(env, Command::Settings, false),
                    Ok(Event::EnvironmentDeleted { env }) => me.stop(env),
                    Ok(Event::SchedulerRequest { env }) => me.take_requests(env).await,
                    Ok(
                        Event::ResourcesChanged { .. }
                        | Event::CompileChanged { .. }
                        | Event::DryRunChanged { .. }
                        | Event::AgentTask { .. },
                    ) => {}
                    Ok(Event::Resync) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        let envs: Vec<Uuid> =
                            me.running.lock().map(|r| r.keys().copied().collect()).unwrap_or_default();
                        for env in envs {
                            me.send(env, Command::Reload(None), false);
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        Ok(schedulers)
    }

    /// The lease this server holds on `env`, with several servers.
    pub(crate) fn lease(&self, env: Uuid) -> Option<Arc<Lease>> {
        self.owned.as_ref()?.lock().ok()?.get(&env).cloned()
    }

    /// Whether this server runs (or may start) the scheduler of `env`.
    pub fn owns(&self, env: Uuid) -> bool {
        self.owned.is_none() || self.lease(env).is_some_and(|l| !l.is_releasing())
    }

    /// The scheduler of `env`, started if it is not running; `None` when another server owns it.
    fn ensure(&self, env: Uuid) -> Option<mpsc::UnboundedSender<Command>> {
        let lease = match &self.owned {
            None => None,
            Some(_) => Some(self.lease(env).filter(|l| !l.is_releasing())?),
        };
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = running.get(&env).filter(|tx| !tx.is_closed()) {
            return Some(tx.clone());
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let scheduler = EnvScheduler::new(env, self.orchestrator.clone(), self.dispatch.clone(), lease);
        tokio::spawn(scheduler.run(rx));
        running.insert(env, tx.clone());
        Some(tx)
    }

    /// Starts the scheduler of `env` unless it is halted (what a server does at start).
    pub(crate) fn start_unless_halted(&self, env: Uuid, halted: bool) {
        if !halted {
            self.ensure(env);
        }
    }

    /// Stops the scheduler of `env` once what it runs finished and is stored.
    pub(crate) async fn drain(&self, env: Uuid) {
        let tx = self.running.lock().unwrap_or_else(|e| e.into_inner()).remove(&env);
        if let Some(tx) = tx {
            let (reply, done) = oneshot::channel();
            if tx.send(Command::Drain(reply)).is_ok() {
                let _ = done.await;
            }
        }
    }

    pub(crate) fn send(&self, env: Uuid, command: Command, start: bool) {
        let tx = if start {
            self.ensure(env)
        } else {
            self.running.lock().unwrap_or_else(|e| e.into_inner()).get(&env).cloned()
        };
        if let Some(tx) = tx {
            let _ = tx.send(command);
        }
    }

    pub(crate) fn stop(&self, env: Uuid) {
        if let Some(tx) = self.running.lock().unwrap_or_else(|e| e.into_inner()).remove(&env) {
            let _ = tx.send(Command::Stop);
        }
    }

    /// A user deploy (dirty resources) or repair (every resource that is not blocked) in
    /// `scope`; returns the resource ids that were scheduled.
    pub async fn deploy(&self, env: Uuid, repair: bool, scope: Scope) -> Result<Vec<String>> {
        let environment = self.orchestrator.get_environment(env, Default::default()).await?;
        if environment.halted {
            return Err(Error::Conflict(format!("environment {env} is halted: resume it to deploy")));
        }
        let Some(tx) = self.ensure(env) else {
            return self.forward_deploy(env, repair, scope).await;
        };
        let (reply, answer) = oneshot::channel();
        tx.send(Command::Deploy { repair, scope, reply })
            .map_err(|_| Error::Conflict("the scheduler of this environment stopped".into()))?;
        answer.await.map_err(|_| Error::Conflict("the scheduler of this environment stopped".into()))
    }

    /// How many environments have a scheduler running now.
    pub fn environments(&self) -> usize {
        self.running.lock().unwrap_or_else(|e| e.into_inner()).values().filter(|tx| !tx.is_closed()).count()
    }

    pub async fn status(&self, env: Uuid) -> Result<SchedulerStatus> {
        let environment = self.orchestrator.get_environment(env, Default::default()).await?;
        if environment.halted {
            return Err(Error::NotFound(format!("environment {env} is halted: its scheduler is not running")));
        }
        let Some(tx) = self.ensure(env) else { return Err(not_here(env)) };
        let (reply, answer) = oneshot::channel();
        let _ = tx.send(Command::Status(reply));
        answer.await.map_err(|_| Error::NotFound("the scheduler of this environment stopped".into()))
    }

    /// Starts a dry run of `version`: every resource that needs its handler is read and diffed
    /// (one at a time per agent, agents in parallel); returns the report id at once.
    pub async fn dry_run(&self, env: Uuid, version: i64) -> Result<Uuid> {
        let (dryrun, targets) = self.orchestrator.create_dryrun(env, version).await?;
        let mut per_agent: HashMap<String, Vec<crate::dryrun::DryRunTarget>> = HashMap::new();
        for target in targets {
            per_agent.entry(target.id.agent.clone()).or_default().push(target);
        }
        for (agent, targets) in per_agent {
            let orchestrator = self.orchestrator.clone();
            let dispatch = self.dispatch.clone();
            let id = dryrun.id;
            tokio::spawn(async move {
                // Results are stored in batches (at most every 100 ms): one commit per resource
                // made a dry run of 100 000 resources take minutes.
                let mut batch = Vec::new();
                let mut flushed = std::time::Instant::now();
                let total = targets.len();
                for (done, target) in targets.into_iter().enumerate() {
                    let resource_id = target.id.clone();
                    let task = Task {
                        environment: env,
                        resource_id: target.id,
                        version,
                        attributes: target.attributes,
                        kind: TaskKind::DryRun,
                        dependency_changed: false,
                        watch: false,
                        epoch: 0,
                    };
                    let outcome = dispatch.execute(&agent, task).await;
                    let status = crate::dryrun::status_of_outcome(outcome.status, &outcome.changes);
                    let mut changes = outcome.changes;
                    if status == ResourceDiffStatus::Failed {
                        let error = outcome.logs.iter().rev().find(|l| l.level == "ERROR").map(|l| l.msg.clone());
                        changes.insert("handler_error".into(), serde_json::json!({"current": error, "desired": null}));
                    }
                    batch.push(crate::dryrun::DryRunResult { resource_id, status, changes });
                    if done + 1 == total || flushed.elapsed() >= std::time::Duration::from_millis(100) {
                        if let Err(e) = orchestrator.dryrun_update_many(env, id, &batch).await {
                            tracing::error!(%env, dryrun = %id, error = %e, "could not store dry-run results");
                        }
                        batch.clear();
                        flushed = std::time::Instant::now();
                    }
                }
            });
        }
        Ok(dryrun.id)
    }

    /// Asks the agent of a released resource for its facts, as Inmanta does when a fact is
    /// asked for that the server does not know: records a `getfact` action and runs the
    /// handler's fact gathering in the background (the facts are stored when it reports them).
    pub async fn request_facts(&self, env: Uuid, rid: &ResourceId) -> Result<()> {
        let Some(intent) = self.orchestrator.released_intent(env, rid).await? else {
            return Ok(());
        };
        self.orchestrator.record_getfact_action(env, rid, intent.version).await?;
        let dispatch = self.dispatch.clone();
        let agent = rid.agent.clone();
        let task = Task {
            environment: env,
            resource_id: intent.id,
            version: intent.version,
            attributes: intent.attributes,
            kind: TaskKind::Facts,
            dependency_changed: false,
            watch: false,
            epoch: 0,
        };
        tokio::spawn(async move {
            let outcome = dispatch.execute(&agent, task).await;
            if outcome.status != HandlerStatus::Deployed {
                let error = outcome.logs.iter().rev().find(|l| l.level == "ERROR").map(|l| l.msg.clone());
                tracing::warn!(%env, resource = %agent, error = ?error, "fact gathering failed");
            }
        });
        Ok(())
    }

    /// Waits until nothing is scheduled or running and every result is stored.
    pub async fn wait_idle(&self, env: Uuid) -> Result<()> {
        let Some(tx) = self.ensure(env) else { return Err(not_here(env)) };
        let (reply, answer) = oneshot::channel();
        let _ = tx.send(Command::WaitIdle(reply));
        answer.await.map_err(|_| Error::Conflict("the scheduler of this environment stopped".into()))
    }
}

/// The resources a user deploy (dirty ones) or repair (all but blocked ones) in `scope` takes.
fn choose<'a>(resources: impl Iterator<Item = (&'a String, &'a Resource)>, repair: bool, scope: &Scope) -> Vec<String> {
    let wanted: Option<HashSet<&String>> = scope.resources.as_ref().map(|r| r.iter().collect());
    let agents: Option<HashSet<&String>> = scope.agents.as_ref().map(|a| a.iter().collect());
    let mut chosen: Vec<String> = resources
        .filter(|(rid, r)| {
            wanted.as_ref().is_none_or(|w| w.contains(rid))
                && agents.as_ref().is_none_or(|a| a.contains(&r.id.agent))
                && r.blocked != Blocked::Blocked
                && (repair || r.dirty)
        })
        .map(|(rid, _)| rid.clone())
        .collect();
    chosen.sort();
    chosen
}

impl Schedulers {
    /// A deploy or repair asked through a server that does not run the environment's scheduler:
    /// stored for the owner (which takes it at once when notified, or at its next lease tick)
    /// and answered with the resources it will take, as the database knows them.
    async fn forward_deploy(&self, env: Uuid, repair: bool, scope: Scope) -> Result<Vec<String>> {
        let resources: Vec<(String, Resource)> = self
            .orchestrator
            .released_intents(env)
            .await?
            .into_iter()
            .map(|i| (i.id.to_string(), Resource::from_intent(i)))
            .collect();
        let chosen = choose(resources.iter().map(|(k, r)| (k, r)), repair, &scope);
        let request = serde_json::json!({"repair": repair, "agents": scope.agents, "resources": scope.resources});
        let mut tx = self.orchestrator.store().begin_write().await?;
        sqlx::query("INSERT INTO scheduler_request (id, environment, requested, request) VALUES ($1, $2, $3, $4)")
            .bind(Uuid::new_v4().to_string())
            .bind(env.to_string())
            .bind(now())
            .bind(request.to_string())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.orchestrator.publish(Event::SchedulerRequest { env });
        Ok(chosen)
    }

    /// Hands the deploys and repairs other servers stored for `env` to its scheduler, if this
    /// server runs it.
    pub(crate) async fn take_requests(&self, env: Uuid) {
        if self.owned.is_none() || !self.owns(env) {
            return;
        }
        let taken: std::result::Result<Vec<String>, sqlx::Error> =
            sqlx::query_scalar("DELETE FROM scheduler_request WHERE environment = $1 RETURNING request")
                .bind(env.to_string())
                .fetch_all(self.orchestrator.store().pool())
                .await;
        let requests = match taken {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(%env, error = %e, "cannot read the deploy requests of other servers");
                return;
            }
        };
        for text in requests {
            let Ok(request) = serde_json::from_str::<serde_json::Value>(&text) else { continue };
            let list = |key: &str| {
                request[key].as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
            };
            let scope = Scope { agents: list("agents"), resources: list("resources") };
            let (reply, _) = oneshot::channel();
            let repair = request["repair"].as_bool().unwrap_or(false);
            self.send(env, Command::Deploy { repair, scope, reply }, true);
        }
    }
}

fn not_here(env: Uuid) -> Error {
    Error::Conflict(format!(
        "the scheduler of environment {env} runs on another server: see /api/v2/serverstatus for which one"
    ))
}

struct Resource {
    id: ResourceId,
    version: i64,
    attributes: serde_json::Map<String, serde_json::Value>,
    requires: Vec<String>,
    hash: String,
    undefined: bool,
    blocked: Blocked,
    last_deployed_hash: Option<String>,
    last_status: Option<ResourceState>,
    /// Needs a deploy: intent changed or the last run did not end compliant.
    dirty: bool,
    /// When the last handler run ended, for the interval timers.
    last_end: Option<Instant>,
}

impl Resource {
    fn from_intent(intent: ResourceIntent) -> Resource {
        let blocked = intent.blocked;
        let compliant = intent.last_deployed_attribute_hash.as_deref() == Some(intent.attribute_hash.as_str())
            && intent.last_status == Some(ResourceState::Deployed);
        Resource {
            id: intent.id,
            version: intent.version,
            dirty: !compliant && blocked == Blocked::NotBlocked,
            attributes: intent.attributes,
            requires: intent.requires,
            hash: intent.attribute_hash,
            undefined: intent.undefined,
            blocked,
            last_deployed_hash: intent.last_deployed_attribute_hash,
            last_status: intent.last_status,
            // Interval timers count from the scheduler's start for resources deployed before it.
            last_end: intent.last_deploy.map(|_| Instant::now()),
        }
    }

    fn flag(&self, name: &str, default: bool) -> bool {
        self.attributes.get(name).and_then(|v| v.as_bool()).unwrap_or(default)
    }
}

/// Which dirty resources a reload schedules.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trigger {
    /// At start and on resume: every dirty resource.
    Everything,
    /// A new version: those it changed (and, with `redeploy_failed_on_export`, all dirty ones).
    NewIntent,
}

struct Pending {
    priority: u8,
    seq: u64,
    /// Requirements still scheduled or running.
    waiting: usize,
    dependency_changed: bool,
}

struct Running {
    hash: String,
    priority: u8,
    /// Scheduled again while running (an event or a new intent): run once more afterwards.
    again: Option<(u8, bool)>,
    /// Running when a database fault ended: if it fails (it may have met the fault, e.g. its
    /// file could not be read), run again at this priority (scheduler/recovery.rs).
    retry_if_failed: Option<u8>,
}

#[derive(Default)]
struct AgentQueue {
    ready: BinaryHeap<Reverse<(u8, u64, String)>>,
    busy: bool,
    paused: bool,
}

/// When a deploy or repair timer fires, from `autostart_agent_deploy_interval` /
/// `autostart_agent_repair_interval` (seconds, or a cron expression).
#[derive(Debug, Clone, PartialEq)]
enum Timer {
    Off,
    /// Per resource: this long after its last deploy ended.
    Every(Duration),
    /// One global run at the times a cron expression names (UTC).
    Cron(String),
}

fn timer(value: Option<&api::SettingValue>, default: u64) -> Timer {
    let text = match value {
        Some(api::SettingValue::Int(i)) => i.to_string(),
        Some(api::SettingValue::Str(s)) => s.clone(),
        Some(other) => format!("{other:?}"),
        None => default.to_string(),
    };
    match text.trim().parse::<u64>() {
        Ok(0) => Timer::Off,
        Ok(seconds) => Timer::Every(Duration::from_secs(seconds)),
        Err(_) if next_fire(&text, chrono::Utc::now()).is_some() => Timer::Cron(text.trim().to_string()),
        Err(_) => {
            tracing::warn!(value = %text, "not a number of seconds nor a cron expression; the timer is off");
            Timer::Off
        }
    }
}

struct EnvScheduler {
    env: Uuid,
    orchestrator: Orchestrator,
    dispatch: Arc<dyn Dispatch>,
    resources: HashMap<String, Resource>,
    dependents: HashMap<String, Vec<String>>,
    tasks: HashMap<String, Pending>,
    running: HashMap<String, Running>,
    agents: HashMap<String, AgentQueue>,
    seq: u64,
    halted: bool,
    deploy_timer: Timer,
    repair_timer: Timer,
    /// The next global runs of cron timers.
    next_deploy_run: Option<chrono::DateTime<chrono::Utc>>,
    next_repair_run: Option<chrono::DateTime<chrono::Utc>>,
    realtime_repair: bool,
    /// `redeploy_failed_on_export`: a new version also retries resources whose last run
    /// failed although their intent did not change (otherwise the deploy timer does).
    redeploy_failed_on_export: bool,
    /// The released version the resources were read from.
    loaded_version: i64,
    // Writes waiting for the next flush.
    started: Vec<String>,
    finished: Vec<FinishedAction>,
    blocked_changes: Vec<(String, Blocked)>,
    idle_waiters: Vec<oneshot::Sender<()>>,
    /// This server's lease on the environment (several servers); every write is fenced by it.
    lease: Option<Arc<Lease>>,
    /// Set by [`Command::Drain`]: dispatch nothing, answer once nothing runs.
    draining: Option<oneshot::Sender<()>>,
    /// Commits the writes beside the loop (`scheduler_writes`); a write refused because the
    /// lease is gone ends this scheduler.
    writer: Writer,
    done_tx: mpsc::UnboundedSender<(String, String, TaskOutcome)>,
    done_rx: Option<mpsc::UnboundedReceiver<(String, String, TaskOutcome)>>,
    /// The state must be (re)loaded from the database before anything is dispatched
    /// (scheduler/recovery.rs): the last load failed, or the writer gave a batch up.
    needs_start: bool,
    last_start_attempt: Option<Instant>,
    /// Failed loads in a row.
    start_failures: u32,
    /// The writer's count of ended faults when this scheduler last looked.
    recoveries_seen: u64,
}

impl EnvScheduler {
    fn new(
        env: Uuid,
        orchestrator: Orchestrator,
        dispatch: Arc<dyn Dispatch>,
        lease: Option<Arc<Lease>>,
    ) -> EnvScheduler {
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let writer = Writer::start(orchestrator.clone(), env, lease.as_ref().map(|l| l.fence.clone()));
        EnvScheduler {
            env,
            orchestrator,
            dispatch,
            resources: HashMap::new(),
            dependents: HashMap::new(),
            tasks: HashMap::new(),
            running: HashMap::new(),
            agents: HashMap::new(),
            seq: 0,
            halted: false,
            deploy_timer: Timer::Off,
            repair_timer: Timer::Off,
            next_deploy_run: None,
            next_repair_run: None,
            realtime_repair: true,
            redeploy_failed_on_export: false,
            loaded_version: 0,
            started: vec![],
            finished: vec![],
            blocked_changes: vec![],
            idle_waiters: vec![],
            lease,
            draining: None,
            writer,
            done_tx,
            done_rx: Some(done_rx),
            needs_start: true,
            last_start_attempt: None,
            start_failures: 0,
            recoveries_seen: 0,
        }
    }

    async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        let env = self.env;
        self.try_start().await;
        let mut done_rx = self.done_rx.take().expect("receiver set in new");
        let mut flush = tokio::time::interval(Duration::from_millis(100));
        let mut timers = tokio::time::interval(Duration::from_secs(1));
        let stored = self.writer.stored_signal();
        loop {
            tokio::select! {
                command = commands.recv() => match command {
                    None | Some(Command::Stop) => break,
                    Some(command) => self.command(command).await,
                },
                Some((rid, started, outcome)) = done_rx.recv() => self.finish(&rid, started, outcome),
                _ = flush.tick() => self.flush_in_background(),
                // Held back by unsaved results: hand the next batch over as soon as one is stored.
                _ = stored.notified(), if self.held_back() => {
                    self.flush_in_background()
                }
                _ = timers.tick() => self.timers(),
            }
            if self.writer.lost() {
                tracing::warn!(
                    %env,
                    "the scheduler lease is held by another server or under a newer epoch now: stopping this scheduler"
                );
                self.writer.abandon();
                return;
            }
            self.recover().await;
            self.dispatch_ready();
            if self.draining.is_some() && self.running.is_empty() {
                self.flush().await;
                if let Some(reply) = self.draining.take() {
                    let _ = reply.send(());
                }
                tracing::info!(%env, "scheduler drained: handed to another server");
                return;
            }
            if self.tasks.is_empty() && self.running.is_empty() && !self.needs_start && !self.idle_waiters.is_empty() {
                self.flush().await;
                for waiter in self.idle_waiters.drain(..) {
                    let _ = waiter.send(());
                }
            }
        }
        // The database may be gone for good: do not hold the stop up for it. What is not stored
        // is redeployed by the next scheduler, which reads the database.
        if tokio::time::timeout(STOP_FLUSH_TIMEOUT, self.flush()).await.is_err() {
            self.writer.abandon();
            tracing::warn!(%env, "the scheduler stopped with results it could not store; they are deployed again");
        }
        let _ =
            tokio::time::timeout(STOP_FLUSH_TIMEOUT, self.orchestrator.mark_agents_up(env, false, self.fence())).await;
        self.orchestrator.health_monitor().scheduler_fault(env, None);
        tracing::info!(%env, "scheduler stopped");
    }

    async fn start(&mut self) -> Result<()> {
        let env = self.env;
        // Nothing is deploying after a restart: what was running when the server died runs again.
        self.orchestrator.reset_deploying(env, self.fence()).await?;
        self.load_settings().await?;
        self.reload(priority::NEW_VERSION, Trigger::Everything).await?;
        tracing::info!(%env, resources = self.resources.len(), scheduled = self.tasks.len(), "scheduler started");
        Ok(())
    }

    async fn load_settings(&mut self) -> Result<()> {
        let environment = self.orchestrator.get_environment(self.env, Default::default()).await?;
        self.halted = environment.halted;
        let settings = self.orchestrator.environment_settings(self.env).await?.settings;
        self.deploy_timer = timer(settings.get(api::settings::names::DEPLOY_INTERVAL), 600);
        self.repair_timer = timer(settings.get(api::settings::names::REPAIR_INTERVAL), 86400);
        let now = chrono::Utc::now();
        let next = |t: &Timer| if let Timer::Cron(expr) = t { next_fire(expr, now) } else { None };
        self.next_deploy_run = next(&self.deploy_timer);
        self.next_repair_run = next(&self.repair_timer);
        self.realtime_repair =
            settings.get(api::settings::names::REALTIME_REPAIR).and_then(api::SettingValue::as_bool).unwrap_or(true);
        self.redeploy_failed_on_export = settings
            .get(api::settings::names::REDEPLOY_FAILED_ON_EXPORT)
            .and_then(api::SettingValue::as_bool)
            .unwrap_or(false);
        let paused: HashSet<String> = self.orchestrator.paused_agents(self.env).await?.into_iter().collect();
        for (name, queue) in &mut self.agents {
            queue.paused = paused.contains(name);
        }
        for name in paused {
            self.agents.entry(name).or_default().paused = true;
        }
        Ok(())
    }

    /// Reads the latest released version: unchanged resources keep their state, new and changed
    /// ones become dirty; the dirty resources that `trigger` names are scheduled.
    async fn reload(&mut self, prio: u8, trigger: Trigger) -> Result<()> {
        // Results still waiting to be written would make the database look older than it is.
        self.flush().await;
        let intents = self.orchestrator.released_intents(self.env).await?;
        self.loaded_version = intents.iter().map(|i| i.version).max().unwrap_or(0).max(self.loaded_version);
        let mut fresh: HashMap<String, Resource> = HashMap::with_capacity(intents.len());
        // Resources that are new to this scheduler or whose intent changed.
        let mut new_intent: HashSet<String> = HashSet::new();
        for intent in intents {
            let rid = intent.id.to_string();
            let mut resource = Resource::from_intent(intent);
            if self.resources.get(&rid).is_none_or(|old| old.hash != resource.hash) {
                new_intent.insert(rid.clone());
            }
            // An unchanged intent keeps what this scheduler knows of it: the database lags behind
            // (a deploy whose result is not stored yet would read as not deployed, and its
            // dependents would be skipped with nothing left to wake them).
            if let Some(old) = self.resources.remove(&rid)
                && old.hash == resource.hash
            {
                resource.dirty = old.dirty;
                resource.last_end = old.last_end;
                resource.blocked = old.blocked;
                resource.last_deployed_hash = old.last_deployed_hash;
                resource.last_status = old.last_status;
            }
            fresh.insert(rid, resource);
        }
        // Tasks of resources that are gone are dropped; their heap entries go stale.
        self.tasks.retain(|rid, _| fresh.contains_key(rid));
        self.resources = fresh;
        self.dependents.clear();
        for (rid, resource) in &self.resources {
            for req in &resource.requires {
                self.dependents.entry(req.clone()).or_default().push(rid.clone());
            }
        }
        // Waiting counts are recomputed against the new graph.
        let rids: Vec<String> = self.tasks.keys().cloned().collect();
        for rid in &rids {
            let waiting = self.waiting_for(rid);
            if let Some(task) = self.tasks.get_mut(rid) {
                task.waiting = waiting;
            }
        }
        for rid in &rids {
            self.push_if_ready(rid);
        }
        let dirty: Vec<String> = self
            .resources
            .iter()
            .filter(|(_, r)| r.dirty && r.blocked == Blocked::NotBlocked)
            // A deploy already running for this very intent is not repeated.
            .filter(|(rid, r)| self.running.get(*rid).is_none_or(|run| run.hash != r.hash))
            // As in Inmanta, a new version deploys what it changed; a resource that failed with
            // the same intent waits for its timer unless `redeploy_failed_on_export` is on.
            .filter(|(rid, _)| {
                trigger == Trigger::Everything || self.redeploy_failed_on_export || new_intent.contains(*rid)
            })
            .map(|(k, _)| k.clone())
            .collect();
        for rid in dirty {
            self.schedule(&rid, prio, false);
        }
        self.wake_blocked(prio);
        // A new version may name new agents: this scheduler serves them too.
        self.orchestrator.mark_agents_up(self.env, true, self.fence()).await?;
        Ok(())
    }

    async fn command(&mut self, command: Command) {
        let env = self.env;
        match command {
            Command::Reload(Some(version)) if version <= self.loaded_version => {}
            // Before its state is loaded, a load reads everything anyway.
            Command::Reload(_) | Command::Settings if self.needs_start => {}
            Command::Reload(_) => {
                if let Err(e) = self.reload(priority::NEW_VERSION, Trigger::NewIntent).await {
                    tracing::error!(%env, error = %e, "scheduler could not read the new version; reloading its state");
                    self.needs_start = true;
                }
            }
            Command::Settings => {
                if let Err(e) = self.load_settings().await {
                    tracing::error!(%env, error = %e, "scheduler could not read the settings; reloading its state");
                    self.needs_start = true;
                }
            }
            Command::Halt(halted) => {
                self.halted = halted;
                if self.needs_start {
                    return;
                }
                let _ = self.load_settings().await;
                if !halted && let Err(e) = self.reload(priority::NEW_VERSION, Trigger::Everything).await {
                    tracing::error!(%env, error = %e, "scheduler could not reload on resume; reloading its state");
                    self.needs_start = true;
                }
            }
            Command::Deploy { repair, scope, reply } => {
                let scheduled = self.user_deploy(repair, &scope);
                let _ = reply.send(scheduled);
            }
            Command::Status(reply) => {
                let resource_states = self.resources.keys().map(|rid| (rid.clone(), self.status_of(rid))).collect();
                let _ = reply.send(SchedulerStatus {
                    scheduled: self.tasks.len(),
                    running: self.running.len(),
                    dirty: self.resources.values().filter(|r| r.dirty).count(),
                    unsaved: self.unsaved(),
                    resource_states,
                });
            }
            Command::WaitIdle(reply) => self.idle_waiters.push(reply),
            Command::Drain(reply) => self.draining = Some(reply),
            Command::Stop => {}
        }
    }

    fn user_deploy(&mut self, repair: bool, scope: &Scope) -> Vec<String> {
        let chosen = choose(self.resources.iter(), repair, scope);
        let prio = if repair { priority::USER_REPAIR } else { priority::USER_DEPLOY };
        for rid in &chosen {
            self.schedule(rid, prio, false);
        }
        chosen
    }

    /// Lifts the temporary block of every resource whose requirements are all deployed or about
    /// to run. The wake-up a requirement's deploy sends can be lost (the server died before the
    /// unblock was stored, or the requirement deployed while this resource was not loaded), so
    /// it is not trusted: after every (re)load the blocks are checked against the requirements'
    /// real states. A resource woken here lets its own blocked dependents pass the same test.
    fn wake_blocked(&mut self, prio: u8) {
        let mut candidates: Vec<String> = self
            .resources
            .iter()
            .filter(|(_, r)| r.blocked == Blocked::TemporarilyBlocked)
            .map(|(rid, _)| rid.clone())
            .collect();
        while let Some(rid) = candidates.pop() {
            let Some(resource) = self.resources.get(&rid) else { continue };
            if resource.blocked != Blocked::TemporarilyBlocked {
                continue;
            }
            let clear = resource.requires.iter().all(|req| {
                self.tasks.contains_key(req)
                    || self.running.contains_key(req)
                    || self.status_of(req) == ResourceState::Deployed
            });
            if !clear {
                continue;
            }
            self.unblock(&rid, prio);
            for dependent in self.dependents.get(&rid).cloned().unwrap_or_default() {
                if self.resources.get(&dependent).is_some_and(|d| d.blocked == Blocked::TemporarilyBlocked) {
                    candidates.push(dependent);
                }
            }
        }
    }

    /// Ends a temporary block: the resource is dirty again and scheduled.
    fn unblock(&mut self, rid: &str, prio: u8) {
        let Some(resource) = self.resources.get_mut(rid) else { return };
        resource.blocked = Blocked::NotBlocked;
        resource.dirty = true;
        self.blocked_changes.push((rid.to_string(), Blocked::NotBlocked));
        self.schedule(rid, prio, false);
    }

    fn waiting_for(&self, rid: &str) -> usize {
        self.resources.get(rid).map_or(0, |r| {
            r.requires.iter().filter(|q| self.tasks.contains_key(*q) || self.running.contains_key(*q)).count()
        })
    }

    fn push_if_ready(&mut self, rid: &str) {
        let Some(task) = self.tasks.get(rid) else { return };
        if task.waiting != 0 {
            return;
        }
        let Some(resource) = self.resources.get(rid) else { return };
        let agent = resource.id.agent.clone();
        self.agents.entry(agent).or_default().ready.push(Reverse((task.priority, task.seq, rid.to_string())));
    }

    /// Queues a deploy of `rid`; a resource already queued keeps one task at the best priority,
    /// one that is running runs once more afterwards.
    fn schedule(&mut self, rid: &str, prio: u8, dependency_changed: bool) {
        let Some(resource) = self.resources.get(rid) else { return };
        if resource.blocked == Blocked::Blocked || resource.undefined {
            return;
        }
        if let Some(run) = self.running.get_mut(rid) {
            let (p, changed) = run.again.unwrap_or((prio, false));
            run.again = Some((p.min(prio), changed || dependency_changed));
            return;
        }
        self.seq += 1;
        let seq = self.seq;
        if let Some(task) = self.tasks.get_mut(rid) {
            task.dependency_changed |= dependency_changed;
            if prio < task.priority {
                task.priority = prio;
                task.seq = seq;
                self.push_if_ready(rid);
            }
            return;
        }
        let waiting = self.waiting_for(rid);
        for dependent in self.dependents.get(rid).cloned().unwrap_or_default() {
            if let Some(task) = self.tasks.get_mut(&dependent) {
                task.waiting += 1;
            }
        }
        self.tasks.insert(rid.to_string(), Pending { priority: prio, seq, waiting, dependency_changed });
        self.push_if_ready(rid);
    }

    /// The single status of a resource as the scheduler knows it (`api::state::StateVector::status`).
    fn status_of(&self, rid: &str) -> ResourceState {
        let Some(r) = self.resources.get(rid) else { return ResourceState::Orphaned };
        StateVector {
            orphan: false,
            deploying: self.running.contains_key(rid),
            undefined: r.undefined,
            blocked: r.blocked,
            last_status: r.last_status,
            deployed_current_intent: r.last_deployed_hash.as_deref() == Some(r.hash.as_str()),
        }
        .status()
    }

    /// Starts the best ready task of every free agent.
    fn dispatch_ready(&mut self) {
        // What a previous owner that died had in flight may still run until its lease would
        // have ended (its results, and which tasks it had started, are not all stored): no
        // handler runs here before that.
        let waiting = |l: &Arc<Lease>| !l.valid() || l.hold_until > Instant::now();
        let blocked = self.halted || self.needs_start || self.draining.is_some();
        if blocked || self.lease.as_ref().is_some_and(waiting) || self.held_back() {
            return;
        }
        let free: Vec<String> = self
            .agents
            .iter()
            .filter(|(_, q)| !q.busy && !q.paused && !q.ready.is_empty())
            .map(|(a, _)| a.clone())
            .collect();
        for agent in free {
            while let Some(Reverse((prio, seq, rid))) = self.agents.get_mut(&agent).and_then(|q| q.ready.pop()) {
                let valid = self.tasks.get(&rid).is_some_and(|t| t.seq == seq && t.waiting == 0 && t.priority == prio);
                if !valid {
                    continue;
                }
                self.start_task(&agent, &rid);
                // A task skipped for its dependencies finishes at once: the agent is free again.
                if self.agents.get(&agent).is_some_and(|q| q.busy) || self.held_back() {
                    break;
                }
            }
        }
    }

    fn start_task(&mut self, agent: &str, rid: &str) {
        let Some(task) = self.tasks.remove(rid) else { return };
        let Some(resource) = self.resources.get(rid) else { return };
        let started = now();
        self.running.insert(
            rid.to_string(),
            Running { hash: resource.hash.clone(), priority: task.priority, again: None, retry_if_failed: None },
        );
        // The handler runs only when every requirement is deployed, as in Inmanta.
        let report_only = resource.flag("report_only", false);
        let blocking = if report_only {
            None
        } else {
            resource.requires.iter().find_map(|req| {
                let status = self.status_of(req);
                match status {
                    ResourceState::Deployed => None,
                    ResourceState::Dry | ResourceState::Undefined | ResourceState::SkippedForUndefined => {
                        Some(format!("requirement {req} is {status}: this resource cannot be deployed"))
                    }
                    ResourceState::Available | ResourceState::Deploying => {
                        Some(format!("requirement {req} is not deployed yet ({status}); retry when it is"))
                    }
                    _ => Some(format!("skipped because requirement {req} is {status}")),
                }
            })
        };
        if let Some(reason) = blocking {
            let outcome = TaskOutcome {
                status: HandlerStatus::SkippedForDependency,
                change: Change::NoChange,
                changes: Default::default(),
                logs: vec![LogLine {
                    level: "INFO".into(),
                    msg: reason,
                    args: vec![],
                    kwargs: Default::default(),
                    timestamp: now(),
                }],
            };
            self.finish(rid, started, outcome);
            return;
        }
        if let Some(queue) = self.agents.get_mut(agent) {
            queue.busy = true;
        }
        self.started.push(rid.to_string());
        let job = Task {
            environment: self.env,
            resource_id: resource.id.clone(),
            version: resource.version,
            attributes: resource.attributes.clone(),
            kind: TaskKind::Deploy,
            dependency_changed: task.dependency_changed,
            watch: self.realtime_repair,
            epoch: self.lease.as_ref().map_or(0, |l| l.fence.epoch),
        };
        let future = self.dispatch.execute(agent, job);
        let done = self.done_tx.clone();
        let rid = rid.to_string();
        tokio::spawn(async move {
            let outcome = future.await;
            let _ = done.send((rid, started, outcome));
        });
    }

    /// Applies a finished deploy and queues its writes.
    fn finish(&mut self, rid: &str, started: String, outcome: TaskOutcome) {
        let Some(run) = self.running.remove(rid) else { return };
        let Some(resource) = self.resources.get(rid) else { return };
        let agent = resource.id.agent.clone();
        if let Some(queue) = self.agents.get_mut(&agent) {
            queue.busy = false;
        }
        for dependent in self.dependents.get(rid).cloned().unwrap_or_default() {
            if let Some(task) = self.tasks.get_mut(&dependent) {
                task.waiting = task.waiting.saturating_sub(1);
            }
            self.push_if_ready(&dependent);
        }
        let Some(resource) = self.resources.get_mut(rid) else { return };
        let stale = run.hash != resource.hash;
        let status = outcome.status;
        let db_status = ResourceState::from(status);
        crate::metrics::resource_deployed(self.env, db_status, since(&started));
        resource.last_end = Some(Instant::now());
        resource.last_deployed_hash = Some(run.hash.clone());
        resource.last_status = Some(db_status);
        let mut recovered = false;
        let mut send_events = false;
        if !stale {
            match status {
                HandlerStatus::Deployed | HandlerStatus::NonCompliant => {
                    resource.dirty = false;
                    if resource.blocked == Blocked::TemporarilyBlocked {
                        resource.blocked = Blocked::NotBlocked;
                        self.blocked_changes.push((rid.to_string(), Blocked::NotBlocked));
                    }
                    // Every deploy wakes the dependents it blocked, whatever the state before:
                    // a dependent may have been skipped while this resource was deployed for an
                    // older intent, or its earlier wake-up lost in a crash.
                    recovered = status == HandlerStatus::Deployed;
                    send_events = outcome.change != Change::NoChange && resource.flag("send_event", true);
                }
                HandlerStatus::SkippedForDependency => {
                    resource.dirty = false;
                    resource.blocked = Blocked::TemporarilyBlocked;
                    self.blocked_changes.push((rid.to_string(), Blocked::TemporarilyBlocked));
                }
                _ => resource.dirty = true,
            }
        }
        let failed = !stale && resource.dirty;
        let version = resource.version;
        let id = resource.id.clone();
        let mut changes = serde_json::Map::new();
        if !outcome.changes.is_empty() {
            changes.insert(id.versioned(version as u64), serde_json::Value::Object(outcome.changes.clone()));
        }
        let messages = self.framed_log(&id, version, run.priority, &started, outcome.logs);
        self.finished.push(FinishedAction {
            action_id: crate::resources::new_action_id(),
            version,
            action: ActionKind::Deploy,
            started,
            resource_ids: vec![id],
            outcome: ActionOutcome {
                status: outcome.status,
                messages,
                changes: (!changes.is_empty()).then_some(serde_json::Value::Object(changes)),
                change: Some(outcome.change),
                send_event: Some(send_events),
            },
        });
        let dependents = self.dependents.get(rid).cloned().unwrap_or_default();
        if recovered {
            for dependent in &dependents {
                if self.resources.get(dependent).is_some_and(|d| d.blocked == Blocked::TemporarilyBlocked) {
                    self.unblock(dependent, run.priority);
                }
            }
        }
        if send_events {
            for dependent in &dependents {
                let receives = self
                    .resources
                    .get(dependent)
                    .is_some_and(|d| d.blocked == Blocked::NotBlocked && d.flag("receive_events", true));
                if receives {
                    self.schedule(dependent, run.priority, true);
                }
            }
        }
        if let Some((prio, changed)) = run.again {
            self.schedule(rid, prio, changed);
        } else if let Some(prio) = run.retry_if_failed.filter(|_| failed) {
            tracing::info!(env = %self.env, resource = rid, "deploying again what failed while the database came back");
            self.schedule(rid, prio, false);
        }
    }

    /// Timers: per resource, retry dirty ones after the deploy interval and repair every one
    /// after the repair interval; with cron expressions, one global retry or repair at those
    /// times.
    /// The metrics gauge of queued tasks per agent (once a second, from the timers).
    /// A deploy's log between the lines Inmanta's executor writes around every run: why it
    /// started (with the resource's id fields) and how long it took, under one deploy id.
    fn framed_log(
        &self,
        id: &ResourceId,
        version: i64,
        priority: u8,
        started: &str,
        logs: Vec<LogLine>,
    ) -> Vec<LogLine> {
        let reason = self.reason(priority);
        let deploy_id = Uuid::new_v4().to_string();
        let rvid = id.versioned(version as u64);
        let duration = since(started).as_secs_f64();
        let details = serde_json::json!({
            "agent_name": id.agent, "attribute": id.attribute, "attribute_value": id.value,
            "entity_type": id.entity_type, "version": version,
        });
        let line = |msg: String, kwargs: serde_json::Value, timestamp: String| LogLine {
            level: "DEBUG".into(),
            msg,
            args: vec![],
            kwargs: kwargs.as_object().cloned().unwrap_or_default(),
            timestamp,
        };
        let mut out = Vec::with_capacity(logs.len() + 2);
        out.push(line(
            format!("Start run because {reason} (deploy_id: {deploy_id})."),
            serde_json::json!({"deploy_id": deploy_id, "reason": reason, "resource": details}),
            started.to_string(),
        ));
        out.extend(logs);
        out.push(line(
            format!("End run for resource {rvid}. (deploy_id: {deploy_id}) - duration: {duration:.4} s"),
            serde_json::json!({"deploy_id": deploy_id, "duration": duration, "r_id": rvid}),
            now(),
        ));
        out
    }

    /// Why a task of this priority runs, in the words Inmanta's executor logs.
    fn reason(&self, priority: u8) -> String {
        let interval = |timer: &Timer, what: &str| match timer {
            Timer::Every(every) => format!("previous {what} happened more than {}s ago", every.as_secs()),
            _ => format!("a global {what} was triggered by a cron expression"),
        };
        match priority {
            priority::USER_DEPLOY => "user requested a deploy".into(),
            priority::USER_REPAIR => "user requested a repair".into(),
            priority::INTERVAL_DEPLOY => interval(&self.deploy_timer, "deploy"),
            priority::INTERVAL_REPAIR => interval(&self.repair_timer, "repair"),
            priority::FACT_REFRESH => "facts were requested".into(),
            _ => "a new version was released".into(),
        }
    }

    fn record_queue_depths(&self) {
        let mut depth: HashMap<&str, usize> = self.agents.keys().map(|a| (a.as_str(), 0)).collect();
        for rid in self.tasks.keys() {
            if let Some(resource) = self.resources.get(rid) {
                *depth.entry(resource.id.agent.as_str()).or_default() += 1;
            }
        }
        for (agent, n) in depth {
            crate::metrics::scheduler_queue(self.env, agent, n);
        }
    }

    fn timers(&mut self) {
        self.record_queue_depths();
        if self.halted {
            return;
        }
        let now = Instant::now();
        let deploy_every = if let Timer::Every(d) = self.deploy_timer { Some(d) } else { None };
        let repair_every = if let Timer::Every(d) = self.repair_timer { Some(d) } else { None };
        let wall = chrono::Utc::now();
        let fires = |next: &mut Option<chrono::DateTime<chrono::Utc>>, timer: &Timer| match (next.as_ref(), timer) {
            (Some(at), Timer::Cron(expr)) if *at <= wall => {
                *next = next_fire(expr, wall);
                true
            }
            _ => false,
        };
        let global_deploy = fires(&mut self.next_deploy_run, &self.deploy_timer.clone());
        let global_repair = fires(&mut self.next_repair_run, &self.repair_timer.clone());
        let mut due: Vec<(String, u8)> = vec![];
        // This walks every resource once a second: whether a resource is due is decided first
        // from its own fields, and only a due one is looked up in the queues (two hash lookups
        // per resource per second were most of this walk at 100 000 resources).
        for (rid, r) in &self.resources {
            if r.blocked == Blocked::Blocked {
                continue;
            }
            let elapsed = r.last_end.map(|end| now.saturating_duration_since(end));
            let retry = r.dirty && r.blocked == Blocked::NotBlocked;
            let prio = if global_repair {
                priority::INTERVAL_REPAIR
            } else if global_deploy && retry {
                priority::INTERVAL_DEPLOY
            } else if let Some(elapsed) = elapsed {
                if retry && deploy_every.is_some_and(|every| elapsed >= every) {
                    priority::INTERVAL_DEPLOY
                } else if repair_every.is_some_and(|every| elapsed >= every) {
                    priority::INTERVAL_REPAIR
                } else {
                    continue;
                }
            } else {
                continue;
            };
            if !self.tasks.contains_key(rid) && !self.running.contains_key(rid) {
                due.push((rid.clone(), prio));
            }
        }
        for (rid, prio) in due {
            // Re-arm: the timer restarts from now even if the run is queued behind others.
            if let Some(r) = self.resources.get_mut(&rid) {
                r.last_end = Some(now);
            }
            self.schedule(&rid, prio, false);
        }
    }

    fn fence(&self) -> Option<&crate::cluster::Fence> {
        self.lease.as_ref().map(|l| &l.fence)
    }

    /// Results of handler runs not yet stored: handed to the writer or collected for it.
    fn unsaved(&self) -> usize {
        self.finished.len() + self.writer.unsaved()
    }

    /// Too many results wait to be stored: no new handler run starts until the writer catches
    /// up (scheduler_writes.rs).
    fn held_back(&self) -> bool {
        self.unsaved() >= crate::scheduler_writes::MAX_UNSAVED
    }

    /// What was written down since the last batch.
    fn take_batch(&mut self) -> Batch {
        Batch {
            started: std::mem::take(&mut self.started),
            finished: std::mem::take(&mut self.finished),
            blocked: std::mem::take(&mut self.blocked_changes).into_iter().collect(),
        }
    }

    /// Hands the writes collected so far to the writer unless it is still storing the previous
    /// batch (then they wait for the next tick and go out together): the loop goes on
    /// dispatching while the database commits.
    fn flush_in_background(&mut self) {
        if self.writer.idle() {
            let batch = self.take_batch();
            self.writer.hand_over(batch);
        }
    }

    /// Stores every write collected so far and waits until it is stored: before the scheduler
    /// reads the database, hands over or stops, and before it answers that it is idle.
    async fn flush(&mut self) {
        let batch = self.take_batch();
        self.writer.write_and_wait(batch).await;
    }
}

/// How long a stopping scheduler waits for its last results to be stored.
const STOP_FLUSH_TIMEOUT: Duration = Duration::from_secs(10);

/// Time since a stored timestamp (zero when it cannot be read).
fn since(started: &str) -> Duration {
    crate::store::parse_time(started).ok().and_then(|t| (chrono::Utc::now() - t).to_std().ok()).unwrap_or_default()
}
