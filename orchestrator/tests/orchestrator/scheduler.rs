//! The scheduler's rules (Inmanta 20.1's skips, events, priorities and timers) against a real database, with a dispatch
//! that behaves like `std::testing::NullResource`: it records every call and fails the
//! resources it is told to fail.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use api::version::PutVersion;
use orchestrator::Orchestrator;
use orchestrator::agents::AgentAction;
use orchestrator::paging::PageRequest;
use orchestrator::scheduler::{Dispatch, Schedulers, Scope, Task, TaskOutcome};
use serde_json::json;
use uuid::Uuid;

#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<(String, bool)>>,
    failing: Mutex<HashSet<String>>,
    seen: Mutex<HashSet<String>>,
}

struct NullDispatch(Arc<Recorder>);

impl Dispatch for NullDispatch {
    fn execute(&self, _agent: &str, task: Task) -> Pin<Box<dyn Future<Output = TaskOutcome> + Send>> {
        let recorder = self.0.clone();
        Box::pin(async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            let rid = task.resource_id.to_string();
            recorder.calls.lock().unwrap().push((rid.clone(), task.dependency_changed));
            let fail = recorder.failing.lock().unwrap().contains(&rid);
            let first = recorder.seen.lock().unwrap().insert(format!("{rid}{:?}", task.attributes.get("value")));
            TaskOutcome {
                status: if fail { api::HandlerStatus::Failed } else { api::HandlerStatus::Deployed },
                change: if fail || !first { api::Change::NoChange } else { api::Change::Created },
                changes: Default::default(),
                logs: vec![],
            }
        })
    }
}

fn null(agent: &str, name: &str, value: &str, requires: &[&str]) -> serde_json::Map<String, serde_json::Value> {
    let requires: Vec<String> = requires.iter().map(|r| rid(agent_of(r), r)).collect();
    json!({
        "id": format!("{},v=0", rid(agent, name)), "name": name, "agentname": agent, "value": value,
        "send_event": true, "receive_events": true, "purged": false, "requires": requires,
    })
    .as_object()
    .cloned()
    .unwrap()
}

/// Names starting with `x` live on agent-x, the others on agent-a.
fn agent_of(name: &str) -> &'static str {
    if name.starts_with('x') { "agent-x" } else { "agent-a" }
}

fn rid(agent: &str, name: &str) -> String {
    format!("std::testing::NullResource[{agent},name={name}]")
}

struct Setup {
    o: Orchestrator,
    env: Uuid,
    recorder: Arc<Recorder>,
    schedulers: Arc<Schedulers>,
    _dir: tempfile::TempDir,
}

async fn setup() -> Setup {
    let (o, env, dir) = crate::common::setup().await;
    let recorder = Arc::new(Recorder::default());
    let schedulers = Schedulers::start(o.clone(), Arc::new(NullDispatch(recorder.clone()))).await.unwrap();
    Setup { o, env, recorder, schedulers, _dir: dir }
}

impl Setup {
    async fn release(&self, resources: Vec<serde_json::Map<String, serde_json::Value>>, undefined: &[&str]) {
        let version = self.o.reserve_version(self.env).await.unwrap();
        let resource_state = undefined.iter().map(|n| (rid(agent_of(n), n), "undefined".to_string())).collect();
        self.o
            .put_version(self.env, PutVersion { version, resources, resource_state, ..Default::default() })
            .await
            .unwrap();
    }

    async fn idle(&self) {
        // The release event reaches the scheduler asynchronously; give it a moment to queue work.
        tokio::time::sleep(Duration::from_millis(50)).await;
        tokio::time::timeout(Duration::from_secs(20), self.schedulers.wait_idle(self.env)).await.unwrap().unwrap();
    }

    fn calls(&self) -> Vec<String> {
        self.recorder.calls.lock().unwrap().drain(..).map(|(r, _)| r).collect()
    }

    async fn status(&self, name: &str) -> String {
        self.o.released_resource(self.env, &rid(agent_of(name), name)).await.unwrap().status.to_string()
    }
}

#[tokio::test]
async fn requires_order_the_deploys_and_only_changes_are_redeployed() {
    let s = setup().await;
    s.release(
        vec![
            null("agent-a", "c", "1", &["b"]),
            null("agent-a", "b", "1", &["a"]),
            null("agent-a", "a", "1", &[]),
            null("agent-x", "x1", "1", &["a"]),
        ],
        &[],
    )
    .await;
    s.idle().await;
    let calls = s.calls();
    let pos = |name: &str| {
        calls.iter().position(|c| c == &rid(agent_of(name), name)).unwrap_or_else(|| panic!("{name} ran: {calls:?}"))
    };
    assert!(pos("a") < pos("b") && pos("b") < pos("c"), "{calls:?}");
    assert!(pos("a") < pos("x1"), "cross-agent requires are respected: {calls:?}");
    for name in ["a", "b", "c", "x1"] {
        assert_eq!(s.status(name).await, "deployed", "{name}");
    }

    // A new version that changes only b: b runs; c receives an event from b's change.
    s.release(
        vec![
            null("agent-a", "c", "1", &["b"]),
            null("agent-a", "b", "2", &["a"]),
            null("agent-a", "a", "1", &[]),
            null("agent-x", "x1", "1", &["a"]),
        ],
        &[],
    )
    .await;
    s.idle().await;
    let calls: Vec<(String, bool)> = s.recorder.calls.lock().unwrap().drain(..).collect();
    assert_eq!(
        calls,
        vec![(rid("agent-a", "b"), false), (rid("agent-a", "c"), true)],
        "only the changed resource and the receiver of its event run"
    );
}

#[tokio::test]
async fn failures_skip_dependents_until_recovery_and_undefined_blocks() {
    let s = setup().await;
    s.recorder.failing.lock().unwrap().insert(rid("agent-a", "a"));
    s.release(
        vec![
            null("agent-a", "a", "1", &[]),
            null("agent-a", "b", "1", &["a"]),
            null("agent-a", "c", "1", &["b"]),
            null("agent-a", "u", "1", &[]),
            null("agent-a", "w", "1", &["u"]),
        ],
        &["u"],
    )
    .await;
    s.idle().await;
    let calls = s.calls();
    assert_eq!(
        calls,
        vec![rid("agent-a", "a")],
        "dependents of a failure and undefined resources never reach a handler"
    );
    assert_eq!(s.status("a").await, "failed");
    assert_eq!(s.status("b").await, "skipped");
    assert_eq!(s.status("c").await, "skipped");
    assert_eq!(s.status("u").await, "undefined");
    assert_eq!(s.status("w").await, "skipped_for_undefined");
    let logs = s.o.resource_logs(s.env, &rid("agent-a", "b"), &PageRequest::default()).await.unwrap();
    assert!(logs.items.iter().any(|l| l.msg.contains("failed")), "the skip says why: {:?}", logs.items);

    // The failure is fixed; a user deploy retries a, and its recovery redeploys b, then c.
    s.recorder.failing.lock().unwrap().clear();
    let scheduled = s.schedulers.deploy(s.env, false, Scope::default()).await.unwrap();
    assert_eq!(scheduled, vec![rid("agent-a", "a")], "temporarily blocked resources are not dirty");
    s.idle().await;
    assert_eq!(s.calls(), vec![rid("agent-a", "a"), rid("agent-a", "b"), rid("agent-a", "c")]);
    for name in ["a", "b", "c"] {
        assert_eq!(s.status(name).await, "deployed", "{name}");
    }
    assert_eq!(s.status("w").await, "skipped_for_undefined");

    // A repair runs every resource that is not blocked, whatever its state.
    let scheduled = s.schedulers.deploy(s.env, true, Scope::default()).await.unwrap();
    assert_eq!(scheduled.len(), 3);
    s.idle().await;
    assert_eq!(s.calls().len(), 3);
}

#[tokio::test]
async fn paused_agents_wait_and_halted_environments_refuse() {
    let s = setup().await;
    s.release(vec![null("agent-a", "a", "1", &[])], &[]).await;
    s.idle().await;
    s.calls();
    s.o.agent_action(s.env, Some("agent-a"), AgentAction::Pause).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    s.release(vec![null("agent-a", "a", "2", &[])], &[]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(s.calls().is_empty(), "a paused agent takes no work");
    let agents = s.o.agents(s.env, &PageRequest::default()).await.unwrap();
    assert_eq!(agents.items[0].agent.status, api::AgentStatus::Paused);
    s.o.agent_action(s.env, Some("agent-a"), AgentAction::Unpause).await.unwrap();
    s.idle().await;
    assert_eq!(s.calls(), vec![rid("agent-a", "a")]);
    assert_eq!(s.o.agents(s.env, &PageRequest::default()).await.unwrap().items[0].agent.status, api::AgentStatus::Up);

    s.o.set_halted(s.env, true).await.unwrap();
    assert!(matches!(s.schedulers.deploy(s.env, true, Scope::default()).await, Err(orchestrator::Error::Conflict(_))));
    assert!(matches!(
        s.o.agent_action(s.env, Some("agent-a"), AgentAction::Unpause).await,
        Err(orchestrator::Error::Forbidden(_))
    ));
    s.o.set_halted(s.env, false).await.unwrap();
    assert_eq!(
        s.o.agents(s.env, &PageRequest::default()).await.unwrap().items[0].agent.status,
        api::AgentStatus::Up,
        "resume unpauses"
    );
}

#[tokio::test]
async fn a_restarted_scheduler_resumes_from_the_database() {
    let s = setup().await;
    s.recorder.failing.lock().unwrap().insert(rid("agent-a", "b"));
    s.release(vec![null("agent-a", "a", "1", &[]), null("agent-a", "b", "1", &[])], &[]).await;
    s.idle().await;
    s.calls();
    // A crash left `a` marked deploying.
    s.o.mark_deploying(s.env, &[rid("agent-a", "a")]).await.unwrap();
    assert_eq!(s.status("a").await, "deploying");
    let Setup { o, env, recorder, schedulers, _dir } = s;
    drop(schedulers);
    tokio::time::sleep(Duration::from_millis(50)).await;

    recorder.failing.lock().unwrap().clear();
    let schedulers = Schedulers::start(o.clone(), Arc::new(NullDispatch(recorder.clone()))).await.unwrap();
    let s = Setup { o, env, recorder, schedulers, _dir };
    s.idle().await;
    assert_eq!(s.calls(), vec![rid("agent-a", "b")], "only the failed resource is retried");
    assert_eq!(s.status("a").await, "deployed", "nothing stays deploying after a restart");
    assert_eq!(s.status("b").await, "deployed");
}

#[tokio::test]
async fn the_deploy_interval_retries_failures_and_user_deploys_go_first() {
    let s = setup().await;
    s.o.set_environment_setting(s.env, "autostart_agent_deploy_interval", &json!("1")).await.unwrap();
    s.recorder.failing.lock().unwrap().insert(rid("agent-a", "a"));
    s.release(vec![null("agent-a", "a", "1", &[])], &[]).await;
    s.idle().await;
    assert_eq!(s.calls(), vec![rid("agent-a", "a")]);
    assert_eq!(s.status("a").await, "failed");

    // Fixed behind the scheduler's back: the periodic retry picks it up within about a second.
    s.recorder.failing.lock().unwrap().clear();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while s.status("a").await != "deployed" {
        assert!(std::time::Instant::now() < deadline, "the failed resource was not retried");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(s.calls(), vec![rid("agent-a", "a")], "retried once");

    // While an agent is paused, queued work of lower priority (a repair) waits behind a user
    // deploy of higher priority once the agent resumes.
    s.release(
        vec![null("agent-a", "a", "1", &[]), null("agent-a", "b", "1", &[]), null("agent-a", "c", "1", &[])],
        &[],
    )
    .await;
    s.idle().await;
    s.calls();
    s.o.agent_action(s.env, Some("agent-a"), AgentAction::Pause).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    s.schedulers.deploy(s.env, true, Scope { agents: None, resources: Some(vec![rid("agent-a", "a")]) }).await.unwrap();
    s.release(
        vec![null("agent-a", "a", "1", &[]), null("agent-a", "b", "1", &[]), null("agent-a", "c", "2", &[])],
        &[],
    )
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    s.schedulers.deploy(s.env, false, Scope::default()).await.unwrap();
    s.o.agent_action(s.env, Some("agent-a"), AgentAction::Unpause).await.unwrap();
    s.idle().await;
    assert_eq!(
        s.calls(),
        vec![rid("agent-a", "c"), rid("agent-a", "a")],
        "the user deploy of the changed resource (priority 0) runs before the repair (priority 2)"
    );
}

#[tokio::test]
async fn a_cron_repair_runs_every_resource_at_its_times() {
    let s = setup().await;
    s.release(vec![null("agent-a", "a", "1", &[]), null("agent-a", "b", "1", &[])], &[]).await;
    s.idle().await;
    assert_eq!(s.calls().len(), 2);
    // Every second (seven fields start with seconds): both resources are repaired.
    s.o.set_environment_setting(s.env, "autostart_agent_repair_interval", &json!("* * * * * * *")).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let calls = s.recorder.calls.lock().unwrap().len();
        if calls >= 2 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the cron repair did not run");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(api::cron::next_fire("*/5 * * * *", chrono::Utc::now()).is_some());
    assert!(api::cron::next_fire("every tuesday", chrono::Utc::now()).is_none());
}

#[tokio::test]
async fn a_wake_up_lost_in_a_crash_is_recovered_at_restart() {
    let s = setup().await;
    s.recorder.failing.lock().unwrap().insert(rid("agent-a", "a"));
    s.release(
        vec![null("agent-a", "a", "1", &[]), null("agent-a", "b", "1", &["a"]), null("agent-a", "c", "1", &["b"])],
        &[],
    )
    .await;
    s.idle().await;
    assert_eq!(s.status("b").await, "skipped");
    let Setup { o, env, recorder, schedulers, _dir } = s;
    drop(schedulers);
    tokio::time::sleep(Duration::from_millis(50)).await;

    // The server stored a's successful deploy and died before storing that b and c are no longer
    // blocked: nothing will deploy a again, so no deploy of a can wake them.
    let version = o.released_intents(env).await.unwrap()[0].version;
    let a = api::ResourceId::parse(&rid("agent-a", "a")).unwrap();
    o.record_actions(
        env,
        &[orchestrator::resources::FinishedAction {
            action_id: Uuid::new_v4(),
            version,
            action: api::ActionKind::Deploy,
            started: "2026-01-01T00:00:00.000000".parse().unwrap(),
            resource_ids: vec![a],
            outcome: orchestrator::ActionOutcome {
                status: api::HandlerStatus::Deployed,
                messages: vec![],
                changes: None,
                change: Some(api::Change::NoChange),
                send_event: Some(false),
            },
        }],
    )
    .await
    .unwrap();
    recorder.failing.lock().unwrap().clear();
    let schedulers = Schedulers::start(o.clone(), Arc::new(NullDispatch(recorder.clone()))).await.unwrap();
    let s = Setup { o, env, recorder, schedulers, _dir };
    s.idle().await;
    // `a` may run once more (its recorded result is not the scheduler's own); b and c must follow.
    let calls = s.calls();
    let pos = |name: &str| calls.iter().position(|c| c == &rid("agent-a", name));
    assert!(pos("b").is_some() && pos("b") < pos("c"), "the blocked dependents are woken: {calls:?}");
    for name in ["a", "b", "c"] {
        assert_eq!(s.status(name).await, "deployed", "{name}");
    }
}

#[tokio::test]
async fn a_new_version_retries_failures_only_when_redeploy_failed_on_export_is_on() {
    let s = setup().await;
    s.recorder.failing.lock().unwrap().insert(rid("agent-a", "a"));
    s.release(vec![null("agent-a", "a", "1", &[]), null("agent-a", "b", "1", &[])], &[]).await;
    s.idle().await;
    let mut calls = s.calls();
    calls.sort();
    assert_eq!(calls, vec![rid("agent-a", "a"), rid("agent-a", "b")]);
    assert_eq!(s.status("a").await, "failed");

    // As in Inmanta: a new version deploys what it changed; the failed resource with the same
    // intent waits for its deploy timer.
    s.release(vec![null("agent-a", "a", "1", &[]), null("agent-a", "b", "2", &[])], &[]).await;
    s.idle().await;
    assert_eq!(s.calls(), vec![rid("agent-a", "b")], "only the changed resource is deployed");

    s.o.set_environment_setting(s.env, "redeploy_failed_on_export", &json!(true)).await.unwrap();
    s.release(vec![null("agent-a", "a", "1", &[]), null("agent-a", "b", "3", &[])], &[]).await;
    s.idle().await;
    let mut calls = s.calls();
    calls.sort();
    assert_eq!(calls, vec![rid("agent-a", "a"), rid("agent-a", "b")], "the failed resource is retried too");
}

#[tokio::test]
async fn a_resource_that_leaves_the_model_and_returns_is_deployed_again() {
    let s = setup().await;
    s.release(vec![null("agent-a", "a", "1", &[]), null("agent-a", "c", "1", &[])], &[]).await;
    s.idle().await;
    assert_eq!(s.calls().len(), 2);
    s.release(vec![null("agent-a", "a", "1", &[])], &[]).await;
    s.idle().await;
    assert_eq!(s.calls(), Vec::<String>::new(), "nothing changed for the resource that stays");
    // Back with the very same intent: no longer managed in between, so deployed again.
    s.release(vec![null("agent-a", "a", "1", &[]), null("agent-a", "c", "1", &[])], &[]).await;
    s.idle().await;
    assert_eq!(s.calls(), vec![rid("agent-a", "c")]);
    assert_eq!(s.status("c").await, "deployed");
}

#[tokio::test]
async fn deploy_logs_are_framed_and_every_version_records_a_store_action() {
    let s = setup().await;
    s.release(vec![null("agent-a", "a", "1", &[])], &[]).await;
    s.idle().await;
    let query = orchestrator::ActionQuery { resource_id: Some(rid("agent-a", "a")), ..Default::default() };
    let actions = s.o.resource_actions(s.env, &query).await.unwrap();
    let kinds: Vec<&str> = actions.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(kinds, vec!["deploy", "store"], "newest first");
    let store = &actions[1];
    assert_eq!(store.status, None);
    let rvids: Vec<String> = store.resource_version_ids.iter().map(ToString::to_string).collect();
    assert_eq!(rvids, vec![format!("{},v=1", rid("agent-a", "a"))]);
    let line = &store.messages.as_ref().unwrap()[0];
    assert_eq!((line.level.as_str(), line.msg.as_str()), ("INFO", "Successfully stored version 1"));
    assert_eq!(line.kwargs["version"], 1);
    let messages = actions[0].messages.as_ref().unwrap();
    assert!(messages[0].msg.starts_with("Start run because a new version was released (deploy_id: "), "{messages:?}");
    assert_eq!(messages[0].kwargs["resource"]["attribute_value"], "a");
    let last = messages.last().unwrap();
    assert!(last.msg.starts_with(&format!("End run for resource {},v=1. (deploy_id: ", rid("agent-a", "a"))));
    assert_eq!(last.kwargs["deploy_id"], messages[0].kwargs["deploy_id"]);
}
