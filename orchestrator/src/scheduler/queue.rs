//! The work of one environment's scheduler: deploys queued per resource, a ready heap per agent
//! in priority order, and the deploys running.
//!
//! A task becomes ready when none of its direct requirements is queued or running: each task
//! keeps a count of those, so readiness costs O(dependents) per finished deploy, not a scan.
//! Each agent runs one task at a time; agents run in parallel.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use api::ResourceId;
use api::state::Blocked;

use super::model::{Model, Rid};
use super::task::Priority;

/// A queued deploy.
pub(crate) struct Pending {
    pub priority: Priority,
    /// Order of queueing within a priority; an older heap entry of a task is stale.
    pub seq: u64,
    /// Requirements still scheduled or running.
    pub waiting: usize,
    pub dependency_changed: bool,
}

/// A deploy handed to an agent.
pub(crate) struct Running {
    /// The intent it deploys: a result for an older intent leaves the resource dirty.
    pub hash: String,
    pub priority: Priority,
    /// Scheduled again while running (an event or a new intent): run once more afterwards,
    /// at this priority, with or without a changed dependency.
    pub again: Option<(Priority, bool)>,
    /// Running when a database fault ended: if it fails (it may have met the fault, e.g. its
    /// file could not be read), run again at this priority (scheduler/recovery.rs).
    pub retry_if_failed: Option<Priority>,
    /// The id of its action when that was stored before the handler ran (several servers).
    pub action_id: Option<uuid::Uuid>,
}

#[derive(Default)]
pub(crate) struct AgentQueue {
    ready: BinaryHeap<Reverse<(Priority, u64, Rid)>>,
    pub busy: bool,
    pub paused: bool,
}

impl AgentQueue {
    /// Whether it can start a task now.
    pub fn free(&self) -> bool {
        !self.busy && !self.paused && !self.ready.is_empty()
    }
}

#[derive(Default)]
pub(crate) struct Queue {
    pub tasks: HashMap<Rid, Pending>,
    pub running: HashMap<Rid, Running>,
    pub agents: HashMap<String, AgentQueue>,
    seq: u64,
}

impl Queue {
    /// Whether a deploy of `rid` is queued or running.
    pub fn holds(&self, rid: &ResourceId) -> bool {
        self.tasks.contains_key(rid) || self.running.contains_key(rid)
    }

    pub fn is_idle(&self) -> bool {
        self.tasks.is_empty() && self.running.is_empty()
    }

    /// Forgets every queued task (nothing runs); agents keep their pause marks.
    pub fn clear(&mut self) {
        self.tasks.clear();
        for queue in self.agents.values_mut() {
            queue.ready.clear();
            queue.busy = false;
        }
    }

    /// Queues a deploy of `rid`; a resource already queued keeps one task at the best priority,
    /// one that is running runs once more afterwards.
    pub fn schedule(&mut self, model: &Model, rid: &Rid, prio: Priority, dependency_changed: bool) {
        let Some(resource) = model.get(rid) else { return };
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
                self.push_if_ready(model, rid);
            }
            return;
        }
        let waiting = self.waiting_for(model, rid);
        for dependent in model.dependents_of(rid) {
            if let Some(task) = self.tasks.get_mut(dependent) {
                task.waiting += 1;
            }
        }
        self.tasks.insert(rid.clone(), Pending { priority: prio, seq, waiting, dependency_changed });
        self.push_if_ready(model, rid);
    }

    /// How many requirements of `rid` are queued or running.
    pub fn waiting_for(&self, model: &Model, rid: &ResourceId) -> usize {
        model.get(rid).map_or(0, |r| r.requires.iter().filter(|q| self.holds(q)).count())
    }

    /// Puts the task of `rid` on its agent's ready heap when nothing it requires is pending.
    pub fn push_if_ready(&mut self, model: &Model, rid: &Rid) {
        let Some(task) = self.tasks.get(rid) else { return };
        if task.waiting != 0 {
            return;
        }
        let Some(resource) = model.get(rid) else { return };
        let entry = Reverse((task.priority, task.seq, rid.clone()));
        self.agents.entry(resource.id.agent.clone()).or_default().ready.push(entry);
    }

    /// Recomputes every task's waiting count against a new graph and queues the ready ones;
    /// tasks of resources that are gone are dropped (their heap entries go stale).
    pub fn rebase(&mut self, model: &Model) {
        self.tasks.retain(|rid, _| model.resources.contains_key(rid));
        let rids: Vec<Rid> = self.tasks.keys().cloned().collect();
        for rid in &rids {
            let waiting = self.waiting_for(model, rid);
            if let Some(task) = self.tasks.get_mut(rid) {
                task.waiting = waiting;
            }
        }
        for rid in &rids {
            self.push_if_ready(model, rid);
        }
    }

    /// A task of `rid` ended: its dependents wait for one requirement less.
    pub fn release_dependents(&mut self, model: &Model, rid: &ResourceId) {
        for dependent in model.dependents_of(rid) {
            if let Some(task) = self.tasks.get_mut(dependent) {
                task.waiting = task.waiting.saturating_sub(1);
            }
            self.push_if_ready(model, dependent);
        }
    }

    /// The agents that can start a task now.
    pub fn free_agents(&self) -> Vec<String> {
        self.agents.iter().filter(|(_, q)| q.free()).map(|(a, _)| a.clone()).collect()
    }

    /// Takes the best ready task of `agent` off its heap, skipping stale entries.
    pub fn pop_ready(&mut self, agent: &str) -> Option<Rid> {
        while let Some(Reverse((prio, seq, rid))) = self.agents.get_mut(agent).and_then(|q| q.ready.pop()) {
            let valid = self.tasks.get(&rid).is_some_and(|t| t.seq == seq && t.waiting == 0 && t.priority == prio);
            if valid {
                return Some(rid);
            }
        }
        None
    }

    pub fn agent_busy(&self, agent: &str) -> bool {
        self.agents.get(agent).is_some_and(|q| q.busy)
    }

    pub fn set_busy(&mut self, agent: &str, busy: bool) {
        if let Some(queue) = self.agents.get_mut(agent) {
            queue.busy = busy;
        }
    }

    /// Queued tasks per agent, every known agent included.
    pub fn depths<'a>(&'a self, model: &'a Model) -> HashMap<&'a str, usize> {
        let mut depth: HashMap<&str, usize> = self.agents.keys().map(|a| (a.as_str(), 0)).collect();
        for rid in self.tasks.keys() {
            if let Some(resource) = model.get(rid) {
                *depth.entry(resource.id.agent.as_str()).or_default() += 1;
            }
        }
        depth
    }
}
