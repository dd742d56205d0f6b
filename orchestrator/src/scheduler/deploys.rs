//! One deploy through the scheduler: handed to its agent unless a requirement is not deployed
//! (then skipped at once, as Inmanta does), and its result applied when the agent reports it:
//! the resource's marks, the events and wake-ups for its dependents, the run once more that was
//! asked for meanwhile, and the action the writer stores.

use api::resource::LogLine;
use api::state::{ActionKind, Blocked, Change, HandlerStatus, ResourceState};
use api::{ResourceId, Timestamp};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::env_loop::{Done, EnvScheduler, Gated, since};
use super::model::Rid;
use super::queue::Running;
use super::task::{Priority, Task, TaskKind, TaskOutcome};
use crate::resources::{ActionOutcome, FinishedAction, StartedAction};

impl EnvScheduler {
    pub(super) fn start_task(&mut self, agent: &str, rid: &Rid) {
        let Some(task) = self.queue.tasks.remove(rid) else { return };
        let Some(resource) = self.model.get(rid) else { return };
        let started = Utc::now();
        let mut running = Running {
            hash: resource.hash.clone(),
            priority: task.priority,
            again: None,
            retry_if_failed: None,
            action_id: None,
        };
        // With several servers another one may run this deploy again after a failover: its
        // action is stored before the handler runs, so every run is in the action log.
        let announced = self.lease.is_some().then(|| StartedAction {
            action_id: crate::resources::new_action_id(),
            version: resource.version,
            started: started.into(),
            resource_id: (*resource.id).clone(),
        });
        running.action_id = announced.as_ref().map(|a| a.action_id);
        self.queue.running.insert(rid.clone(), running);
        // The handler runs only when every requirement is deployed, as in Inmanta.
        let blocking = if resource.flag("report_only", false) {
            None
        } else {
            resource.requires.iter().find_map(|req| self.blocking(req))
        };
        if let Some(reason) = blocking {
            let log = LogLine {
                level: "INFO".into(),
                msg: reason,
                args: vec![],
                kwargs: Default::default(),
                timestamp: Timestamp::now(),
            };
            let outcome = TaskOutcome {
                status: HandlerStatus::SkippedForDependency,
                change: Change::NoChange,
                changes: Default::default(),
                logs: vec![log],
            };
            self.finish(Done { rid: rid.clone(), started, outcome });
            return;
        }
        let job = Task {
            environment: self.env,
            resource_id: (*resource.id).clone(),
            version: resource.version,
            attributes: resource.attributes.clone(),
            kind: TaskKind::Deploy,
            dependency_changed: task.dependency_changed,
            watch: self.settings.realtime_repair,
            epoch: self.lease.as_ref().map_or(0, |l| l.fence.epoch),
        };
        self.queue.set_busy(agent, true);
        self.journal.started(rid.clone());
        match announced {
            Some(action) => {
                self.journal.announce(action);
                let after = self.journal.next_batch();
                self.gate.push(Gated { agent: agent.to_string(), rid: rid.clone(), job, started, after });
            }
            None => self.launch(agent, rid.clone(), job, started),
        }
    }

    /// Hands a task to its agent; its result comes back to the loop as a [`Done`].
    fn launch(&mut self, agent: &str, rid: Rid, job: Task, started: DateTime<Utc>) {
        let future = self.dispatch.execute(agent, job);
        let done = self.done_tx.clone();
        tokio::spawn(async move {
            let outcome = future.await;
            let _ = done.send(Done { rid, started, outcome });
        });
    }

    /// Hands to their agents the deploys whose action is stored now.
    pub(super) fn release_gated(&mut self) {
        let writer = &self.journal.writer;
        let stopped = writer.dropped() || writer.lost();
        if self.gate.is_empty() || stopped || self.lease.as_ref().is_some_and(|l| !l.may_dispatch()) {
            return;
        }
        let done = writer.batches_done();
        let (ready, waiting): (Vec<Gated>, Vec<Gated>) =
            std::mem::take(&mut self.gate).into_iter().partition(|g| g.after <= done);
        self.gate = waiting;
        for g in ready {
            self.launch(&g.agent, g.rid, g.job, g.started);
        }
    }

    /// Whether a deploy waits for its action to go out with the next batch.
    pub(super) fn gate_unsent(&self) -> bool {
        let sent = self.journal.writer.batches_sent();
        self.gate.iter().any(|g| g.after > sent)
    }

    /// The scheduler reloads its state: deploys whose handler did not start yet never run here
    /// (their stored actions are closed by the load, `Orchestrator::reset_deploying`).
    pub(super) fn drop_gated(&mut self) {
        for g in std::mem::take(&mut self.gate) {
            self.queue.running.remove(&g.rid);
            self.queue.set_busy(&g.agent, false);
        }
    }

    /// Why a requirement in this state keeps its dependent from deploying; none when deployed.
    fn blocking(&self, req: &ResourceId) -> Option<String> {
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
    }

    /// Applies a finished deploy and queues its writes.
    pub(super) fn finish(&mut self, done: Done) {
        let Done { rid, started, outcome } = done;
        let Some(run) = self.queue.running.remove(&rid) else { return };
        let Some(resource) = self.model.get(&rid) else { return };
        let agent = resource.id.agent.clone();
        self.queue.set_busy(&agent, false);
        self.queue.release_dependents(&self.model, &rid);
        let Some(resource) = self.model.get_mut(&rid) else { return };
        let stale = run.hash != resource.hash;
        let status = outcome.status;
        let db_status = ResourceState::from(status);
        crate::metrics::resource_deployed(self.env, db_status, since(started));
        resource.last_end = Some(std::time::Instant::now());
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
                        self.journal.blocked(rid.clone(), Blocked::NotBlocked);
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
                    self.journal.blocked(rid.clone(), Blocked::TemporarilyBlocked);
                }
                _ => resource.dirty = true,
            }
        }
        let failed = !stale && resource.dirty;
        let version = resource.version;
        let id = resource.id.clone();
        let mut changes = serde_json::Map::new();
        if !outcome.changes.is_empty() {
            changes.insert(id.versioned_text(version as u64), serde_json::Value::Object(outcome.changes.clone()));
        }
        let messages = self.framed_log(&id, version, run.priority, started, outcome.logs);
        self.journal.finished.push(FinishedAction {
            action_id: run.action_id.unwrap_or_else(crate::resources::new_action_id),
            version,
            action: ActionKind::Deploy,
            started: started.into(),
            resource_ids: vec![(*id).clone()],
            outcome: ActionOutcome {
                status: outcome.status,
                messages,
                changes: (!changes.is_empty()).then_some(serde_json::Value::Object(changes)),
                change: Some(outcome.change),
                send_event: Some(send_events),
            },
        });
        let dependents = self.model.dependents_of(&rid).to_vec();
        if recovered {
            for dependent in &dependents {
                if self.model.temporarily_blocked(dependent) {
                    self.unblock(dependent, run.priority);
                }
            }
        }
        if send_events {
            for dependent in &dependents {
                let receives = self
                    .model
                    .get(dependent)
                    .is_some_and(|d| d.blocked == Blocked::NotBlocked && d.flag("receive_events", true));
                if receives {
                    self.queue.schedule(&self.model, dependent, run.priority, true);
                }
            }
        }
        if let Some((prio, changed)) = run.again {
            self.queue.schedule(&self.model, &rid, prio, changed);
        } else if let Some(prio) = run.retry_if_failed.filter(|_| failed) {
            tracing::info!(env = %self.env, resource = %rid, "deploying again what failed while the database came back");
            self.queue.schedule(&self.model, &rid, prio, false);
        }
    }

    /// Lifts the temporary block of every resource whose requirements are all deployed or about
    /// to run. The wake-up a requirement's deploy sends can be lost (the server died before the
    /// unblock was stored, or the requirement deployed while this resource was not loaded), so
    /// it is not trusted: after every (re)load the blocks are checked against the requirements'
    /// real states. A resource woken here lets its own blocked dependents pass the same test.
    pub(super) fn wake_blocked(&mut self, prio: Priority) {
        let mut candidates: Vec<Rid> = self
            .model
            .resources
            .iter()
            .filter(|(_, r)| r.blocked == Blocked::TemporarilyBlocked)
            .map(|(rid, _)| rid.clone())
            .collect();
        while let Some(rid) = candidates.pop() {
            let Some(resource) = self.model.get(&rid) else { continue };
            if resource.blocked != Blocked::TemporarilyBlocked {
                continue;
            }
            let clear = resource
                .requires
                .iter()
                .all(|req| self.queue.holds(req) || self.status_of(req) == ResourceState::Deployed);
            if !clear {
                continue;
            }
            self.unblock(&rid, prio);
            for dependent in self.model.dependents_of(&rid) {
                if self.model.temporarily_blocked(dependent) {
                    candidates.push(dependent.clone());
                }
            }
        }
    }

    /// Ends a temporary block: the resource is dirty again and scheduled.
    fn unblock(&mut self, rid: &Rid, prio: Priority) {
        let Some(resource) = self.model.get_mut(rid) else { return };
        resource.blocked = Blocked::NotBlocked;
        resource.dirty = true;
        self.journal.blocked(rid.clone(), Blocked::NotBlocked);
        self.queue.schedule(&self.model, rid, prio, false);
    }

    /// A deploy's log between the lines Inmanta's executor writes around every run: why it
    /// started (with the resource's id fields) and how long it took, under one deploy id.
    fn framed_log(
        &self,
        id: &ResourceId,
        version: i64,
        priority: Priority,
        started: DateTime<Utc>,
        logs: Vec<LogLine>,
    ) -> Vec<LogLine> {
        let reason = self.settings.timers.reason(priority);
        let deploy_id = Uuid::new_v4().to_string();
        let rvid = id.versioned_text(version as u64);
        let duration = since(started).as_secs_f64();
        let details = serde_json::json!({
            "agent_name": id.agent, "attribute": id.attribute, "attribute_value": id.value,
            "entity_type": id.entity_type, "version": version,
        });
        let line = |msg: String, kwargs: serde_json::Value, timestamp: Timestamp| LogLine {
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
            started.into(),
        ));
        out.extend(logs);
        out.push(line(
            format!("End run for resource {rvid}. (deploy_id: {deploy_id}) - duration: {duration:.4} s"),
            serde_json::json!({"deploy_id": deploy_id, "duration": duration, "r_id": rvid}),
            Timestamp::now(),
        ));
        out
    }
}
