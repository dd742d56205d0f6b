//! In-process agents: the scheduler's handler calls run here with the agent crate's executor,
//! on blocking threads, reading file contents from the server's own store.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use agent::{Events, Executor, FileSource, Mode, ResourceRequest};
use orchestrator::Orchestrator;
use orchestrator::scheduler::{Dispatch, Task, TaskOutcome};

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

impl FileSource for StoreFiles {
    fn get(&self, hash: &str) -> Result<Vec<u8>, String> {
        self.runtime.block_on(self.orchestrator.get_file(hash)).map_err(|e| format!("file {hash}: {e}"))
    }
}

/// Runs every agent of every environment inside the server process.
pub struct InProcessAgents {
    executor: Arc<Executor>,
}

impl InProcessAgents {
    /// Must be called on the runtime the handlers' file reads use.
    pub fn new(orchestrator: Orchestrator) -> InProcessAgents {
        let files = StoreFiles::new(orchestrator);
        InProcessAgents { executor: Arc::new(Executor::new(Arc::new(files))) }
    }
}

impl Dispatch for InProcessAgents {
    fn execute(&self, _agent: &str, task: Task) -> Pin<Box<dyn Future<Output = TaskOutcome> + Send>> {
        let executor = self.executor.clone();
        Box::pin(async move {
            let request = ResourceRequest { id: task.resource_id, version: task.version, attributes: task.attributes };
            let mode = if task.dry_run { Mode::DryRun } else { Mode::Deploy };
            let events = Events { dependency_changed: task.dependency_changed };
            match tokio::task::spawn_blocking(move || executor.execute(&request, mode, &events)).await {
                Ok(outcome) => TaskOutcome {
                    status: outcome.status.as_str().to_string(),
                    change: outcome.change.as_str().to_string(),
                    changes: outcome
                        .changes
                        .into_iter()
                        .map(|(name, c)| (name, serde_json::json!({"current": c.current, "desired": c.desired})))
                        .collect(),
                    logs: outcome.logs,
                },
                Err(e) => TaskOutcome {
                    status: "unavailable".into(),
                    change: "nochange".into(),
                    changes: Default::default(),
                    logs: vec![api::resource::LogLine {
                        level: "ERROR".into(),
                        msg: format!("the handler thread failed: {e}"),
                        args: vec![],
                        kwargs: Default::default(),
                        timestamp: orchestrator::store::now(),
                    }],
                },
            }
        })
    }
}
