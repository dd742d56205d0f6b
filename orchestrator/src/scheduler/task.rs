//! What the scheduler hands to agents and what it is asked: tasks, their outcome, the dispatch
//! the server implements, priorities, the scope of a user deploy and the status it reports.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;

use api::ResourceId;
use api::resource::LogLine;
use api::state::{Change, HandlerStatus, ResourceState};
use uuid::Uuid;

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

/// Why a deploy is queued, in the order of Inmanta 20.1's `TaskPriority` (inmanta/deploy/work.py):
/// an earlier variant runs first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    UserDeploy,
    NewVersion,
    UserRepair,
    DryRun,
    IntervalDeploy,
    FactRefresh,
    IntervalRepair,
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
