//! How a scheduler gets over a database that failed under it, without a restart of the server.
//!
//! - Its state could not be loaded (at start, on a new version, after a resync): it tries again
//!   every [`START_RETRY`] until it can, deploying nothing meanwhile, and tells the health check.
//! - Its writer gave a batch up (writer.rs): what the scheduler holds in memory and
//!   the database no longer agree, so it waits for what runs, forgets its state and loads it
//!   again from the database; whatever the database does not show as done is deployed again.
//! - A write fault ended (the database came back, the disk has room again): resources whose
//!   deploy failed while the fault lasted (a handler could not read its file from the database)
//!   and their blocked dependents are deployed again now, instead of at the next deploy timer.

use std::time::{Duration, Instant};

use super::env_loop::EnvScheduler;
use super::model::Rid;
use super::task::Priority;
use super::writer::Writer;

/// Pause between two attempts to load a scheduler's state.
const START_RETRY: Duration = Duration::from_secs(1);

/// Deploys that ended this long before a write fault began count as failed by it: a handler
/// that read from the database fails a moment before the next batch of writes does.
const FAULT_MARGIN: Duration = Duration::from_secs(5);

/// Where a scheduler stands in getting over a database fault.
pub(crate) struct Recovery {
    /// The state must be (re)loaded from the database before anything is dispatched: the last
    /// load failed, or the writer gave a batch up.
    pub needs_start: bool,
    last_start_attempt: Option<Instant>,
    /// Failed loads in a row.
    start_failures: u32,
    /// The writer's count of ended faults when this scheduler last looked.
    recoveries_seen: u64,
}

impl Default for Recovery {
    fn default() -> Recovery {
        Recovery { needs_start: true, last_start_attempt: None, start_failures: 0, recoveries_seen: 0 }
    }
}

impl EnvScheduler {
    /// Called after every event of the scheduler's loop.
    pub(super) async fn recover(&mut self) {
        if self.journal.writer.dropped() && !self.recovery.needs_start {
            tracing::warn!(env = %self.env, "the scheduler reloads its state from the database");
            self.recovery.needs_start = true;
        }
        if self.recovery.needs_start {
            self.drop_gated();
            // What runs now reports to the state it was started from: wait for it.
            let due = self.recovery.last_start_attempt.is_none_or(|at| at.elapsed() >= START_RETRY);
            if self.queue.running.is_empty() && due {
                self.try_start().await;
            }
            return;
        }
        let recoveries = self.journal.writer.recoveries();
        if recoveries != self.recovery.recoveries_seen {
            self.recovery.recoveries_seen = recoveries;
            self.retry_after_fault();
        }
    }

    /// Loads the scheduler's state from the database, from scratch; on failure it is tried
    /// again later ([`EnvScheduler::recover`]).
    pub(super) async fn try_start(&mut self) {
        let env = self.env;
        self.recovery.last_start_attempt = Some(Instant::now());
        if self.journal.writer.dropped() {
            // The old writer skips what it still holds; the state comes from the database.
            self.journal.writer.abandon();
            self.journal.writer =
                Writer::start(self.orchestrator.clone(), env, self.lease.as_ref().map(|l| l.fence.clone()));
            self.recovery.recoveries_seen = 0;
        } else {
            // Results not stored yet are stored first, or the database would look older.
            self.journal.flush().await;
        }
        self.forget();
        match self.start().await {
            Ok(()) => {
                if self.recovery.needs_start && self.recovery.start_failures > 0 {
                    tracing::info!(%env, attempts = self.recovery.start_failures + 1, "the scheduler loaded its state");
                }
                self.recovery.needs_start = false;
                self.recovery.start_failures = 0;
                self.orchestrator.health_monitor().scheduler_fault(env, None);
            }
            Err(e) => {
                if self.recovery.start_failures == 0 {
                    tracing::error!(%env, error = %e, "the scheduler cannot load its state; trying again every second");
                }
                self.recovery.needs_start = true;
                self.recovery.start_failures += 1;
                self.orchestrator.health_monitor().scheduler_fault(env, Some(e.to_string()));
            }
        }
    }

    /// Forgets everything loaded from the database (nothing runs); kept: pause marks of agents,
    /// which [`EnvScheduler::start`] reads again anyway.
    fn forget(&mut self) {
        self.model.clear();
        self.queue.clear();
        self.journal.clear();
    }

    /// A write fault ended: deploys that failed while it lasted run again now, and what they
    /// blocked follows them.
    fn retry_after_fault(&mut self) {
        let Some(began) = self.journal.writer.last_fault_began() else { return };
        let since = began.checked_sub(FAULT_MARGIN).unwrap_or(began);
        let due: Vec<Rid> = self
            .model
            .resources
            .iter()
            .filter(|(_, r)| r.retryable() && r.last_end.is_some_and(|end| end >= since))
            .filter(|(rid, _)| !self.queue.holds(rid))
            .map(|(rid, _)| rid.clone())
            .collect();
        if !due.is_empty() {
            tracing::info!(env = %self.env, resources = due.len(), "deploying again what failed while the database failed");
        }
        for rid in due {
            self.queue.schedule(&self.model, &rid, Priority::IntervalDeploy, false);
        }
        // A run that began during the fault may still fail because of it (a file read that
        // waited for the database): it runs again if it does.
        for run in self.queue.running.values_mut() {
            run.retry_if_failed = Some(Priority::IntervalDeploy);
        }
        self.wake_blocked(Priority::IntervalDeploy);
    }
}
