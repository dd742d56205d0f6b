//! Times the scheduler and its bookkeeping alone: 10 000 resources on one agent, released, with a
//! dispatch that answers `deployed` at once (what `std::testing::NullResource` does, minus the
//! thread hop), until the scheduler is idle and every result is stored. SQLite, and PostgreSQL
//! when `INMANTA_TEST_POSTGRES` holds an admin URL. Run: `cargo bench -p orchestrator --bench scheduler`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use api::environment::EnvironmentCreate;
use api::version::PutVersion;
use orchestrator::Orchestrator;
use orchestrator::scheduler::{Dispatch, Schedulers, Task, TaskOutcome};
use serde_json::json;

struct Instant0;

impl Dispatch for Instant0 {
    fn execute(&self, _agent: &str, _task: Task) -> Pin<Box<dyn Future<Output = TaskOutcome> + Send>> {
        Box::pin(async {
            TaskOutcome {
                status: api::HandlerStatus::Deployed,
                change: api::Change::NoChange,
                changes: Default::default(),
                logs: vec![],
            }
        })
    }
}

async fn run(label: &str, url: &str, n: usize) {
    let o = Orchestrator::open(url).await.expect("open database");
    let project = o.create_project("bench", None).await.expect("project").id;
    let env = o
        .create_environment(EnvironmentCreate { project_id: project, name: "bench".into(), ..Default::default() })
        .await
        .expect("environment")
        .id;
    let schedulers = Schedulers::start(o.clone(), Arc::new(Instant0)).await.expect("schedulers");
    let version = o.reserve_version(env).await.expect("reserve");
    let resources = (0..n)
        .map(|i| {
            json!({"id": format!("std::testing::NullResource[agent1,name=n{i}],v={version}"), "name": format!("n{i}"),
                   "agentname": "agent1", "purged": false, "send_event": false, "receive_events": false, "requires": []})
            .as_object()
            .cloned()
            .unwrap_or_default()
        })
        .collect();
    let started = Instant::now();
    o.put_version(env, PutVersion { version, resources, ..Default::default() }).await.expect("put_version");
    let stored = started.elapsed();
    loop {
        schedulers.wait_idle(env).await.expect("idle");
        let summary = o.deploy_summary(env).await.expect("summary");
        if summary.by_state.get(&api::ResourceState::Deployed).copied() == Some(n as u64) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    println!(
        "scheduler, {n} resources on one agent on {label}: all deployed and stored {:.2} s after put_version \
         (put_version {:.2} s)",
        started.elapsed().as_secs_f64(),
        stored.as_secs_f64()
    );
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let n = std::env::var("NULLS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    run("SQLite", &format!("sqlite://{}", dir.path().join("bench.db").display()), n).await;
    if std::env::var("INMANTA_TEST_POSTGRES").is_ok_and(|v| !v.is_empty()) {
        let url = orchestrator::testing::fresh_database_url(dir.path()).await.expect("postgres");
        run("PostgreSQL", &url, n).await;
    }
}
