//! The schedulers of every environment of a server: started on demand, one task each, reached
//! through a command channel; with several servers only those whose lease this server holds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

use super::command::Command;
use super::env_loop::EnvScheduler;
use super::lease::Lease;
use super::task::{Dispatch, SchedulerStatus, Scope};
use crate::{Error, Event, Orchestrator, Result};

/// The schedulers of every environment of a server.
pub struct Schedulers {
    pub(crate) orchestrator: Orchestrator,
    pub(crate) dispatch: Arc<dyn Dispatch>,
    running: Mutex<HashMap<Uuid, mpsc::UnboundedSender<Command>>>,
    /// With several servers: the environments whose lease this server holds. Only those get a
    /// scheduler here; `None` on a single server (SQLite), which runs every scheduler.
    pub(crate) owned: Option<Mutex<HashMap<Uuid, Arc<Lease>>>>,
}

impl Schedulers {
    /// An empty registry; `clustered` when several servers share the database (leases decide
    /// which schedulers run here).
    pub(crate) fn new(orchestrator: Orchestrator, dispatch: Arc<dyn Dispatch>, clustered: bool) -> Schedulers {
        Schedulers {
            orchestrator,
            dispatch,
            running: Mutex::new(HashMap::new()),
            owned: clustered.then(|| Mutex::new(HashMap::new())),
        }
    }

    /// Follows the orchestrator's events: releases, halts, settings and deletions reach the
    /// schedulers they concern.
    pub(crate) fn follow_events(self: &Arc<Self>) {
        let mut events = self.orchestrator.subscribe();
        let me = Arc::downgrade(self);
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

    /// A repair of every resource of the released `version`, once this scheduler has read it
    /// (what `inmanta deploy` asks after its release: the machine ends as the model says, not
    /// only where the model changed); a resource that already ran for its new intent is not run
    /// again. Returns the resource ids that were scheduled.
    pub async fn repair_version(&self, env: Uuid, version: i64) -> Result<Vec<String>> {
        let Some(tx) = self.ensure(env) else {
            return self.forward_deploy(env, true, Scope::default()).await;
        };
        let (reply, answer) = oneshot::channel();
        tx.send(Command::RepairVersion { version, reply })
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

    /// Waits until nothing is scheduled or running and every result is stored.
    pub async fn wait_idle(&self, env: Uuid) -> Result<()> {
        let Some(tx) = self.ensure(env) else { return Err(not_here(env)) };
        let (reply, answer) = oneshot::channel();
        let _ = tx.send(Command::WaitIdle(reply));
        answer.await.map_err(|_| Error::Conflict("the scheduler of this environment stopped".into()))
    }
}

fn not_here(env: Uuid) -> Error {
    Error::Conflict(format!(
        "the scheduler of environment {env} runs on another server: see /api/v2/serverstatus for which one"
    ))
}

impl crate::health::SchedulerView for Schedulers {
    fn environments(&self) -> usize {
        Schedulers::environments(self)
    }

    fn lease_counts(&self) -> (usize, usize) {
        Schedulers::lease_counts(self)
    }
}
