//! The scheduler of one environment: a single task that owns the state of its resources, so no
//! locks are needed. It (re)loads the released version, answers commands, queues deploys, hands
//! ready ones to agents through [`Dispatch`], applies their results (deploys.rs) and collects
//! the writes for its writer.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use api::state::ResourceState;
use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use super::command::Command;
use super::journal::Journal;
use super::lease::Lease;
use super::model::{Model, Resource, Rid};
use super::queue::Queue;
use super::recovery::Recovery;
use super::task::{Dispatch, Priority, SchedulerStatus, Scope, TaskOutcome};
use super::timers::Timers;
use super::writer::Writer;
use crate::{Orchestrator, Result};

/// How a stopping scheduler waits for its last results to be stored.
const STOP_FLUSH_TIMEOUT: Duration = Duration::from_secs(10);
/// How often collected writes are handed to the writer.
const FLUSH_EVERY: Duration = Duration::from_millis(100);
/// How often the timers are checked.
const TIMERS_EVERY: Duration = Duration::from_secs(1);

/// Which dirty resources a reload schedules.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// At start and on resume: every dirty resource.
    Everything,
    /// A new version: those it changed (and, with `redeploy_failed_on_export`, all dirty ones).
    NewIntent,
}

/// What the environment's settings tell its scheduler.
pub(crate) struct EnvSettings {
    pub halted: bool,
    pub timers: Timers,
    /// `realtime_repair`: watch deployed resources for drift.
    pub realtime_repair: bool,
    /// `redeploy_failed_on_export`: a new version also retries resources whose last run
    /// failed although their intent did not change (otherwise the deploy timer does).
    pub redeploy_failed_on_export: bool,
}

/// Who waits for the scheduler to be done.
#[derive(Default)]
pub(crate) struct Waiters {
    /// Answered once nothing is queued or running and everything is stored.
    idle: Vec<oneshot::Sender<()>>,
    /// Set by [`Command::Drain`]: dispatch nothing, answer once nothing runs.
    pub draining: Option<oneshot::Sender<()>>,
}

/// A handler run that ended, as its spawned task reports it to the loop.
pub(crate) struct Done {
    pub rid: Rid,
    pub started: DateTime<Utc>,
    pub outcome: TaskOutcome,
}

/// A deploy handed out whose handler runs once its action is stored (several servers): the
/// batch numbered `after` holds that action.
pub(crate) struct Gated {
    pub agent: String,
    pub rid: Rid,
    pub job: super::task::Task,
    pub started: DateTime<Utc>,
    pub after: u64,
}

pub(crate) struct EnvScheduler {
    pub env: Uuid,
    pub orchestrator: Orchestrator,
    pub dispatch: Arc<dyn Dispatch>,
    /// This server's lease on the environment (several servers); every write is fenced by it.
    pub lease: Option<Arc<Lease>>,
    pub model: Model,
    pub queue: Queue,
    pub settings: EnvSettings,
    pub journal: Journal,
    pub recovery: Recovery,
    pub waiters: Waiters,
    /// Deploys waiting for their action to be stored before their handler runs.
    pub gate: Vec<Gated>,
    pub done_tx: mpsc::UnboundedSender<Done>,
    done_rx: Option<mpsc::UnboundedReceiver<Done>>,
}

impl EnvScheduler {
    pub fn new(
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
            lease,
            model: Model::default(),
            queue: Queue::default(),
            settings: EnvSettings {
                halted: false,
                timers: Timers::default(),
                realtime_repair: true,
                redeploy_failed_on_export: false,
            },
            journal: Journal::new(writer),
            recovery: Recovery::default(),
            waiters: Waiters::default(),
            gate: Vec::new(),
            done_tx,
            done_rx: Some(done_rx),
        }
    }

    pub async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Command>) {
        let env = self.env;
        self.try_start().await;
        let mut done_rx = self.done_rx.take().expect("receiver set in new");
        let mut flush = tokio::time::interval(FLUSH_EVERY);
        let mut timers = tokio::time::interval(TIMERS_EVERY);
        let stored = self.journal.writer.stored_signal();
        loop {
            tokio::select! {
                command = commands.recv() => match command {
                    None | Some(Command::Stop) => break,
                    Some(command) => self.command(command).await,
                },
                Some(done) = done_rx.recv() => self.finish(done),
                _ = flush.tick() => self.journal.flush_in_background(),
                // Held back by unsaved results, or deploys waiting for their actions to be
                // stored: hand the next batch over as soon as one is stored.
                _ = stored.notified(), if self.journal.held_back() || !self.gate.is_empty() => {
                    self.journal.flush_in_background()
                }
                _ = timers.tick() => self.timers(),
            }
            if self.journal.writer.lost() {
                tracing::warn!(
                    %env,
                    "the scheduler lease is held by another server or under a newer epoch now: stopping this scheduler"
                );
                self.journal.writer.abandon();
                return;
            }
            self.recover().await;
            self.release_gated();
            self.dispatch_ready();
            if self.gate_unsent() {
                self.journal.flush_in_background();
            }
            if self.waiters.draining.is_some() && self.queue.running.is_empty() {
                self.journal.flush().await;
                if let Some(reply) = self.waiters.draining.take() {
                    let _ = reply.send(());
                }
                tracing::info!(%env, "scheduler drained: handed to another server");
                return;
            }
            if self.queue.is_idle() && !self.recovery.needs_start && !self.waiters.idle.is_empty() {
                self.journal.flush().await;
                for waiter in self.waiters.idle.drain(..) {
                    let _ = waiter.send(());
                }
            }
        }
        // The database may be gone for good: do not hold the stop up for it. What is not stored
        // is redeployed by the next scheduler, which reads the database.
        if tokio::time::timeout(STOP_FLUSH_TIMEOUT, self.journal.flush()).await.is_err() {
            self.journal.writer.abandon();
            tracing::warn!(%env, "the scheduler stopped with results it could not store; they are deployed again");
        }
        let _ =
            tokio::time::timeout(STOP_FLUSH_TIMEOUT, self.orchestrator.mark_agents_up(env, false, self.fence())).await;
        self.orchestrator.health_monitor().scheduler_fault(env, None);
        tracing::info!(%env, "scheduler stopped");
    }

    pub(super) async fn start(&mut self) -> Result<()> {
        let env = self.env;
        // Nothing is deploying after a restart: what was running when the server died runs again.
        self.orchestrator.reset_deploying(env, self.fence()).await?;
        self.load_settings().await?;
        self.reload(Priority::NewVersion, Trigger::Everything).await?;
        tracing::info!(
            %env,
            resources = self.model.resources.len(),
            scheduled = self.queue.tasks.len(),
            "scheduler started"
        );
        Ok(())
    }

    async fn load_settings(&mut self) -> Result<()> {
        use api::settings::names::{REALTIME_REPAIR, REDEPLOY_FAILED_ON_EXPORT};
        let environment = self.orchestrator.get_environment(self.env, Default::default()).await?;
        let settings = self.orchestrator.environment_settings(self.env).await?.settings;
        let flag =
            |name: &str, default: bool| settings.get(name).and_then(api::SettingValue::as_bool).unwrap_or(default);
        self.settings = EnvSettings {
            halted: environment.halted,
            timers: Timers::from_settings(&settings),
            realtime_repair: flag(REALTIME_REPAIR, true),
            redeploy_failed_on_export: flag(REDEPLOY_FAILED_ON_EXPORT, false),
        };
        let paused: HashSet<String> = self.orchestrator.paused_agents(self.env).await?.into_iter().collect();
        for (name, queue) in &mut self.queue.agents {
            queue.paused = paused.contains(name);
        }
        for name in paused {
            self.queue.agents.entry(name).or_default().paused = true;
        }
        Ok(())
    }

    /// Reads the latest released version: unchanged resources keep their state, new and changed
    /// ones become dirty; the dirty resources that `trigger` names are scheduled.
    pub(super) async fn reload(&mut self, prio: Priority, trigger: Trigger) -> Result<()> {
        // Results still waiting to be written would make the database look older than it is.
        self.journal.flush().await;
        let intents = self.orchestrator.released_intents(self.env).await?;
        let newest = intents.iter().map(|i| i.version).max().unwrap_or(0);
        let newer = newest > self.model.loaded_version || self.model.loaded_at.is_none();
        self.model.loaded_version = newest.max(self.model.loaded_version);
        let mut fresh: HashMap<Rid, Resource> = HashMap::with_capacity(intents.len());
        // Resources that are new to this scheduler or whose intent changed.
        let mut new_intent: HashSet<Rid> = HashSet::new();
        for intent in intents {
            let mut resource = Resource::from_intent(intent);
            let rid = resource.id.clone();
            // An unchanged intent keeps what this scheduler knows of it: the database lags behind
            // (a deploy whose result is not stored yet would read as not deployed, and its
            // dependents would be skipped with nothing left to wake them).
            match self.model.resources.remove(&rid) {
                Some(old) if old.hash == resource.hash => {
                    resource.dirty = old.dirty;
                    resource.last_end = old.last_end;
                    resource.blocked = old.blocked;
                    resource.last_deployed_hash = old.last_deployed_hash;
                    resource.last_status = old.last_status;
                }
                _ => {
                    new_intent.insert(rid.clone());
                }
            }
            fresh.insert(rid, resource);
        }
        self.model.replace(fresh);
        if newer {
            // After `Resource::from_intent`, which counts a resource's last run from now.
            self.model.loaded_at = Some(std::time::Instant::now());
        }
        self.queue.rebase(&self.model);
        let redeploy_failed = self.settings.redeploy_failed_on_export;
        let dirty: Vec<Rid> = self
            .model
            .resources
            .iter()
            .filter(|(_, r)| r.retryable())
            // A deploy already running for this very intent is not repeated.
            .filter(|(rid, r)| self.queue.running.get(*rid).is_none_or(|run| run.hash != r.hash))
            // As in Inmanta, a new version deploys what it changed; a resource that failed with
            // the same intent waits for its timer unless `redeploy_failed_on_export` is on.
            .filter(|(rid, _)| trigger == Trigger::Everything || redeploy_failed || new_intent.contains(*rid))
            .map(|(rid, _)| rid.clone())
            .collect();
        for rid in dirty {
            self.queue.schedule(&self.model, &rid, prio, false);
        }
        self.wake_blocked(prio);
        // A new version may name new agents: this scheduler serves them too.
        self.orchestrator.mark_agents_up(self.env, true, self.fence()).await?;
        Ok(())
    }

    async fn command(&mut self, command: Command) {
        let env = self.env;
        let needs_start = self.recovery.needs_start;
        match command {
            Command::Reload(Some(version)) if version <= self.model.loaded_version => {}
            // Before its state is loaded, a load reads everything anyway.
            Command::Reload(_) | Command::Settings if needs_start => {}
            Command::Reload(_) => {
                if let Err(e) = self.reload(Priority::NewVersion, Trigger::NewIntent).await {
                    tracing::error!(%env, error = %e, "scheduler could not read the new version; reloading its state");
                    self.recovery.needs_start = true;
                }
            }
            Command::Settings => {
                if let Err(e) = self.load_settings().await {
                    tracing::error!(%env, error = %e, "scheduler could not read the settings; reloading its state");
                    self.recovery.needs_start = true;
                }
            }
            Command::Halt(halted) => {
                self.settings.halted = halted;
                if needs_start {
                    return;
                }
                let _ = self.load_settings().await;
                if !halted && let Err(e) = self.reload(Priority::NewVersion, Trigger::Everything).await {
                    tracing::error!(%env, error = %e, "scheduler could not reload on resume; reloading its state");
                    self.recovery.needs_start = true;
                }
            }
            Command::Deploy { repair, scope, reply } => {
                let scheduled = self.user_deploy(repair, &scope);
                let _ = reply.send(scheduled.iter().map(|rid| rid.to_string()).collect());
            }
            Command::RepairVersion { version, reply } => {
                if version > self.model.loaded_version
                    && !needs_start
                    && let Err(e) = self.reload(Priority::NewVersion, Trigger::NewIntent).await
                {
                    tracing::error!(%env, error = %e, "scheduler could not read the new version; reloading its state");
                    self.recovery.needs_start = true;
                }
                let scheduled = self.repair_version();
                let _ = reply.send(scheduled.iter().map(|rid| rid.to_string()).collect());
            }
            Command::Status(reply) => {
                let _ = reply.send(self.status());
            }
            Command::WaitIdle(reply) => self.waiters.idle.push(reply),
            Command::Drain(reply) => self.waiters.draining = Some(reply),
            Command::Stop => {}
        }
    }

    fn status(&self) -> SchedulerStatus {
        let resource_states = self.model.resources.keys().map(|rid| (rid.to_string(), self.status_of(rid))).collect();
        SchedulerStatus {
            scheduled: self.queue.tasks.len(),
            running: self.queue.running.len(),
            dirty: self.model.dirty_count(),
            unsaved: self.journal.unsaved(),
            resource_states,
        }
    }

    fn user_deploy(&mut self, repair: bool, scope: &Scope) -> Vec<Rid> {
        let chosen = self.model.choose(repair, scope);
        let prio = if repair { Priority::UserRepair } else { Priority::UserDeploy };
        for rid in &chosen {
            self.queue.schedule(&self.model, rid, prio, false);
        }
        chosen
    }

    /// A repair of the loaded version: every resource that is not blocked, but those that ran
    /// (or run now) for their current intent since the version was loaded, so a resource the
    /// new version changed is not deployed twice.
    fn repair_version(&mut self) -> Vec<Rid> {
        let loaded_at = self.model.loaded_at;
        let mut chosen = self.model.choose(true, &Scope::default());
        chosen.retain(|rid| {
            let Some(resource) = self.model.get(rid) else { return false };
            let running_now = self.queue.running.get(rid).is_some_and(|run| run.hash == resource.hash);
            let ran_since = resource.last_deployed_hash.as_deref() == Some(resource.hash.as_str())
                && resource.last_end.zip(loaded_at).is_some_and(|(end, loaded)| end > loaded);
            !running_now && !ran_since
        });
        for rid in &chosen {
            self.queue.schedule(&self.model, rid, Priority::UserRepair, false);
        }
        chosen
    }

    /// The single status of a resource as the scheduler knows it (`api::state::StateVector::status`).
    pub(super) fn status_of(&self, rid: &api::ResourceId) -> ResourceState {
        match self.model.get(rid) {
            Some(r) => r.status(self.queue.running.contains_key(rid)),
            None => ResourceState::Orphaned,
        }
    }

    /// Starts the best ready task of every free agent.
    fn dispatch_ready(&mut self) {
        // What a previous owner that died had in flight may still run until its lease would
        // have ended (its results, and which tasks it had started, are not all stored): no
        // handler runs here before that.
        let blocked = self.settings.halted || self.recovery.needs_start || self.waiters.draining.is_some();
        if blocked || self.lease.as_ref().is_some_and(|l| !l.may_dispatch()) || self.journal.held_back() {
            return;
        }
        for agent in self.queue.free_agents() {
            while let Some(rid) = self.queue.pop_ready(&agent) {
                self.start_task(&agent, &rid);
                // A task skipped for its dependencies finishes at once: the agent is free again.
                if self.queue.agent_busy(&agent) || self.journal.held_back() {
                    break;
                }
            }
        }
    }

    /// Once a second: the queue-depth gauge, then whatever the timers make due.
    fn timers(&mut self) {
        for (agent, n) in self.queue.depths(&self.model) {
            crate::metrics::scheduler_queue(self.env, agent, n);
        }
        if self.settings.halted {
            return;
        }
        for (rid, prio) in self.settings.timers.due(&mut self.model, &self.queue) {
            self.queue.schedule(&self.model, &rid, prio, false);
        }
    }

    pub(super) fn fence(&self) -> Option<&crate::cluster::Fence> {
        self.lease.as_ref().map(|l| &l.fence)
    }
}

/// How long ago a handler run started (zero if the clock went back).
pub(super) fn since(started: DateTime<Utc>) -> Duration {
    (Utc::now() - started).to_std().unwrap_or_default()
}
