//! Resource views, actions, logs, facts, parameters and notifications against a real database
//! (SQLite, or PostgreSQL when `INMANTA_TEST_POSTGRES` holds an admin URL).

use api::ResourceId;
use api::environment::EnvironmentCreate;
use api::operations::NotificationUpdate;
use api::resource::LogLine;
use api::state::{ActionKind, Change, HandlerStatus, ResourceState};
use api::version::PutVersion;
use orchestrator::paging::{PageRequest, page_request};
use orchestrator::parameters::{NewParameter, ParamLookup};
use orchestrator::{ActionOutcome, ActionQuery, Error, Orchestrator};
use serde_json::json;
use uuid::Uuid;

use crate::common::setup;

fn file(path: &str, content: &str, requires: &[&str]) -> serde_json::Map<String, serde_json::Value> {
    json!({
        "id": format!("fs::File[host1,path={path}],v=0"),
        "path": path, "hash": content, "permissions": 644, "purged": false,
        "send_event": true, "requires": requires,
    })
    .as_object()
    .cloned()
    .unwrap()
}

async fn put(
    o: &Orchestrator,
    env: Uuid,
    resources: Vec<serde_json::Map<String, serde_json::Value>>,
    undefined: &[&str],
) -> i64 {
    let version = o.reserve_version(env).await.unwrap();
    let resource_state = undefined.iter().map(|r| (r.to_string(), "undefined".to_string())).collect();
    o.put_version(env, PutVersion { version, resources, resource_state, ..Default::default() }).await.unwrap();
    version
}

fn page(pairs: &[(&str, &str)]) -> PageRequest {
    let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    page_request(&pairs).unwrap()
}

fn rid(path: &str) -> String {
    format!("fs::File[host1,path={path}]")
}

fn line(level: &str, msg: &str) -> LogLine {
    LogLine {
        level: level.into(),
        msg: msg.into(),
        args: vec![],
        kwargs: Default::default(),
        timestamp: api::Timestamp::now(),
    }
}

#[tokio::test]
async fn release_tracks_status_orphans_and_summary() {
    let (o, env, _dir) = setup().await;
    let a = rid("/a");
    let v1 = put(
        &o,
        env,
        vec![file("/a", "1", &[]), file("/b", "1", &[&a]), file("/u", "1", &[]), file("/w", "1", &[&rid("/u")])],
        &[&rid("/u")],
    )
    .await;
    let (list, summary) = o.released_resources(env, &page(&[("sort", "resource_id.asc")]), true).await.unwrap();
    let statuses: Vec<(String, String)> =
        list.items.iter().map(|r| (r.resource_id.to_string(), r.status.to_string())).collect();
    assert_eq!(
        statuses,
        vec![
            (a.clone(), "available".into()),
            (rid("/b"), "available".into()),
            (rid("/u"), "undefined".into()),
            (rid("/w"), "skipped_for_undefined".into()),
        ]
    );
    assert_eq!(list.items[1].requires, vec![ResourceId::parse(&a).unwrap().versioned(v1 as u64)]);
    let summary = summary.unwrap();
    assert_eq!(summary.total, 4);
    assert_eq!(summary.by_state[&ResourceState::Available], 2);
    assert_eq!(summary.by_state[&ResourceState::Deployed], 0);
    assert!(!summary.by_state.contains_key(&ResourceState::Dry));

    // A deploy of /a succeeds, /b fails: states, notification, logs.
    let id_a = ResourceId::parse(&a).unwrap();
    let start = line("INFO", "start");
    o.record_scheduler_batch(env, std::slice::from_ref(&a), &[], &[], None).await.unwrap();
    let deploying = o.released_resource(env, &a).await.unwrap();
    assert_eq!(deploying.status, "deploying");
    let id_b = ResourceId::parse(&rid("/b")).unwrap();
    let finished = [
        finished_action(
            v1,
            id_a,
            ActionOutcome {
                status: HandlerStatus::Deployed,
                messages: vec![start, line("DEBUG", "content written")],
                changes: Some(json!({ format!("{a},v={v1}"): {"hash": {"current": null, "desired": "1"}} })),
                change: Some(Change::Created),
                send_event: Some(true),
            },
        ),
        finished_action(
            v1,
            id_b,
            ActionOutcome {
                status: HandlerStatus::Failed,
                messages: vec![line("ERROR", "permission denied")],
                changes: None,
                change: Some(Change::NoChange),
                send_event: None,
            },
        ),
    ];
    o.record_scheduler_batch(env, &[], &finished, &[], None).await.unwrap();
    // The same batch again (a retry after a commit whose answer was lost) stores nothing twice.
    assert!(o.record_scheduler_batch(env, &[], &finished, &[], None).await.unwrap_err().is_unique_violation());

    let details = o.released_resource(env, &rid("/b")).await.unwrap();
    assert_eq!(details.status, "failed");
    assert_eq!(details.requires_status[&ResourceId::parse(&a).unwrap()], "deployed");
    assert_eq!(details.attributes["path"], "/b");
    assert!(details.last_deploy.is_some());

    let failed = o.released_resources(env, &page(&[("filter.status", "failed")]), false).await.unwrap().0;
    assert_eq!(failed.items.len(), 1);
    let not_failed = o.released_resources(env, &page(&[("filter.status", "!failed")]), false).await.unwrap().0;
    assert_eq!(not_failed.items.len(), 3);

    let notes = o.notifications(env, &page(&[])).await.unwrap();
    assert_eq!(notes.items.len(), 1);
    assert!(notes.items[0].message.contains("permission denied"), "{:?}", notes.items[0]);
    let note = o
        .update_notification(env, notes.items[0].id, NotificationUpdate { read: Some(true), cleared: None })
        .await
        .unwrap();
    assert!(note.read && !note.cleared);
    let unread = o.notifications(env, &page(&[("filter.read", "false")])).await.unwrap();
    assert!(unread.items.is_empty());

    let logs = o.resource_logs(env, &a, &page(&[])).await.unwrap();
    let messages: Vec<&str> = logs.items.iter().map(|l| l.msg.as_str()).collect();
    // The deploy's two lines and, oldest, the line of the `store` action every version records.
    assert_eq!(messages, vec!["content written", "start", "Successfully stored version 1"]);
    let info = o.resource_logs(env, &a, &page(&[("filter.minimal_log_level", "INFO")])).await.unwrap();
    assert_eq!(
        info.items.iter().map(|l| l.msg.as_str()).collect::<Vec<_>>(),
        vec!["start", "Successfully stored version 1"]
    );
    assert!(matches!(
        o.resource_logs(env, &a, &page(&[("filter.minimal_log_level", "LOUD")])).await,
        Err(Error::BadRequest(_))
    ));
    let errors = ActionQuery { log_severity: Some("ERROR".into()), ..Default::default() };
    let actions = o.resource_actions(env, &errors).await.unwrap();
    assert_eq!(actions.len(), 1);
    assert_eq!(actions[0].status, Some(HandlerStatus::Failed));
    let created = o
        .resource_actions(env, &ActionQuery { exclude_changes: vec!["nochange".into()], ..Default::default() })
        .await
        .unwrap();
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].change, Some(Change::Created));

    // A new version without /a makes it an orphan; /b changes, so it is available again.
    let v2 = put(&o, env, vec![file("/b", "2", &[])], &[]).await;
    assert!(v2 > v1);
    let (list, summary) = o.released_resources(env, &page(&[("sort", "resource_id.asc")]), true).await.unwrap();
    let statuses: Vec<&str> = list.items.iter().map(|r| r.status.as_str()).collect();
    assert_eq!(statuses, vec!["orphaned", "available", "orphaned", "orphaned"]);
    assert_eq!(summary.unwrap().total, 1);

    let history = o.resource_history(env, &rid("/b"), &page(&[])).await.unwrap();
    assert_eq!(history.items.len(), 2);
    assert_eq!(history.items[0].attributes["hash"], "2", "newest first");
    assert!(matches!(o.resource_history(env, &rid("/nope"), &page(&[])).await, Err(Error::NotFound(_))));
}

#[tokio::test]
async fn parameters_and_facts() {
    let (o, env, _dir) = setup().await;
    let param = o
        .set_parameter(
            env,
            NewParameter {
                name: "db_host".into(),
                source: "user".into(),
                value: json!("10.0.0.1"),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(!param.expires);
    match o.get_param(env, "db_host", None).await.unwrap() {
        ParamLookup::Found(p) => assert_eq!(p.value, "10.0.0.1"),
        other => panic!("{other:?}"),
    }
    // Setting again replaces the value, keeping the id.
    let again = o
        .set_parameter(
            env,
            NewParameter { name: "db_host".into(), source: "user".into(), value: json!(5), ..Default::default() },
        )
        .await
        .unwrap();
    assert_eq!((again.id, again.value.as_str()), (param.id, "5"));
    assert!(matches!(
        o.set_parameter(env, NewParameter { name: "x".into(), source: "magic".into(), ..Default::default() }).await,
        Err(Error::BadRequest(_))
    ));
    assert!(matches!(o.get_param(env, "nope", None).await, Err(Error::NotFound(_))));

    let r = rid("/a");
    assert_eq!(o.get_param(env, "size", Some(&r)).await.unwrap(), ParamLookup::AskAgents);
    let fact = o
        .set_parameter(
            env,
            NewParameter {
                name: "size".into(),
                source: "fact".into(),
                value: json!("42"),
                resource_id: Some(format!("{r},v=3")),
                metadata: Some(json!({"unit": "bytes"})),
                expires: None,
                recompile: false,
            },
        )
        .await
        .unwrap();
    assert_eq!(fact.resource_id.map(|id| id.to_string()), Some(r.clone()));
    assert!(fact.expires);
    assert!(matches!(o.get_param(env, "size", Some(&r)).await.unwrap(), ParamLookup::Found(_)));
    assert_eq!(o.resource_facts(env, &r).await.unwrap().len(), 1);
    assert_eq!(o.resource_fact(env, &r, fact.id).await.unwrap().value, "42");
    assert!(matches!(o.resource_fact(env, &rid("/b"), fact.id).await, Err(Error::NotFound(_))));

    let params = o.parameters(env, &page(&[])).await.unwrap();
    assert_eq!(params.items.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), vec!["db_host"]);
    let facts = o.facts(env, &page(&[("filter.resource_id", "path=/a")])).await.unwrap();
    assert_eq!(facts.items.len(), 1);
    let by_meta = o.list_params(env, json!({"unit": "bytes"}).as_object().unwrap()).await.unwrap();
    assert_eq!(by_meta.len(), 1);

    o.delete_param(env, "size", Some(&r)).await.unwrap();
    assert!(matches!(o.delete_param(env, "size", Some(&r)).await, Err(Error::NotFound(_))));
}

#[tokio::test]
async fn failed_compile_export_notifies() {
    let (o, env, _dir) = setup().await;
    let version = o.reserve_version(env).await.unwrap();
    let version_info =
        json!({"export_metadata": {"inmanta:compile:state": "failed", "message": "boom", "type": "api"}});
    o.put_version(
        env,
        PutVersion { version, resources: vec![], version_info: Some(version_info), ..Default::default() },
    )
    .await
    .unwrap();
    let notes = o.notifications(env, &page(&[("filter.severity", "error")])).await.unwrap();
    assert_eq!(notes.items.len(), 1);
    assert!(notes.items[0].message.contains("boom"));
}

/// The console follows compiles and dry runs through the event bus.
#[tokio::test]
async fn compiles_and_dry_runs_publish_events() {
    use orchestrator::Event;
    use orchestrator::compiles::{CompileOutcome, CompileRequest, StageResult};
    let (o, env, _dir) = setup().await;
    let mut events = o.subscribe();
    let mut expect = |what: &str| {
        let event = events.try_recv().unwrap_or_else(|e| panic!("no event after {what}: {e}"));
        assert_eq!(event, Event::CompileChanged { env }, "{what}");
    };
    let id = o.request_compile(env, CompileRequest::default()).await.unwrap().id.unwrap();
    expect("queued");
    assert!(o.start_compile(id, std::time::Duration::from_secs(30)).await.unwrap());
    expect("started");
    let stage = o.begin_compile_stage(env, id, "Init", "").await.unwrap();
    expect("stage begun");
    o.finish_compile_stage(stage, &StageResult { returncode: Some(0), ..Default::default() }).await.unwrap();
    expect("stage finished");
    o.finish_compile(env, id, &CompileOutcome { success: true, ..Default::default() }).await.unwrap();
    expect("finished");

    let version = put(&o, env, vec![file("/a", "h1", &[])], &[]).await;
    while events.try_recv().is_ok() {}
    let (run, targets) = o.create_dryrun(env, version).await.unwrap();
    assert_eq!(events.try_recv().unwrap(), Event::DryRunChanged { env });
    let rid = targets[0].id.versioned(version as u64).to_string();
    o.dryrun_update(env, run.id, &rid, api::ResourceDiffStatus::Unmodified, &serde_json::Map::new()).await.unwrap();
    assert_eq!(events.try_recv().unwrap(), Event::DryRunChanged { env });

    // The server status counts the compile queue (nothing waits now) and says no scheduler runs.
    let status = o.server_status(None).await;
    let slice = |name: &str| status.slices.iter().find(|s| s.name == name).unwrap().clone();
    assert_eq!(slice("core.compiler").status, json!({"task_queue": 0, "running": false, "queued": 0}));
    assert_eq!(slice("core.scheduler_manager").reported_status, api::status::ReportedStatus::Warning);
    assert_eq!(status.status, api::status::ReportedStatus::Warning);
    o.request_compile(env, CompileRequest::default()).await.unwrap();
    let status = o.server_status(None).await;
    assert_eq!(status.slices.iter().find(|s| s.name == "core.compiler").unwrap().status["queued"], 1);
}

fn finished_action(version: i64, id: ResourceId, outcome: ActionOutcome) -> orchestrator::resources::FinishedAction {
    orchestrator::resources::FinishedAction {
        action_id: Uuid::new_v4(),
        version,
        action: ActionKind::Deploy,
        started: api::Timestamp::now(),
        resource_ids: vec![id],
        outcome,
    }
}

fn deployed(version: i64, path: &str, change: Change) -> orchestrator::resources::FinishedAction {
    let outcome = ActionOutcome {
        status: HandlerStatus::Deployed,
        messages: vec![],
        changes: None,
        change: Some(change),
        send_event: Some(false),
    };
    finished_action(version, ResourceId::parse(&rid(path)).unwrap(), outcome)
}

#[tokio::test]
async fn deploy_changes_are_those_of_one_version() {
    let (o, env, _dir) = setup().await;
    let v1 = put(&o, env, vec![file("/a", "1", &[]), file("/b", "1", &[])], &[]).await;
    o.record_actions(env, &[deployed(v1, "/a", Change::Created), deployed(v1, "/b", Change::Created)]).await.unwrap();
    let v2 = put(&o, env, vec![file("/a", "2", &[]), file("/b", "1", &[])], &[]).await;
    o.record_actions(env, &[deployed(v2, "/a", Change::Updated), deployed(v2, "/b", Change::NoChange)]).await.unwrap();

    let first = o.deploy_changes(env, v1).await.unwrap();
    assert_eq!(first.len(), 2, "{first:?}");
    assert_eq!(first[&rid("/a")], "created");
    let second = o.deploy_changes(env, v2).await.unwrap();
    assert_eq!(second.into_iter().collect::<Vec<_>>(), vec![(rid("/a"), "updated".to_string())]);
    // A repair of the same version: the latest deploy's change is the one reported.
    o.record_actions(env, &[deployed(v2, "/b", Change::Updated)]).await.unwrap();
    assert_eq!(o.deploy_changes(env, v2).await.unwrap().len(), 2);
}

/// Clearing or deleting an environment removes its actions' log lines and resource links and
/// nothing of another environment's. On PostgreSQL these tables have no foreign key to
/// `resource_action` (migration 0045): their rows go because they are deleted by name, not by a
/// cascade.
#[tokio::test]
async fn clearing_an_environment_leaves_no_log_lines_or_links() {
    let (o, env, _dir) = setup().await;
    let project = o.list_projects().await.unwrap()[0].id;
    let other = o
        .create_environment(EnvironmentCreate { project_id: project, name: "other".into(), ..Default::default() })
        .await
        .unwrap()
        .id;
    let logged = |version: i64| {
        let mut action = deployed(version, "/a", Change::Created);
        action.outcome.messages = vec![line("INFO", "created"), line("DEBUG", "done")];
        action
    };
    for e in [env, other] {
        let v = put(&o, e, vec![file("/a", "1", &[])], &[]).await;
        o.record_actions(e, &[logged(v)]).await.unwrap();
    }
    let rows = |table: &'static str, e: Uuid| {
        let o = o.clone();
        async move {
            sqlx::query_scalar::<_, i64>(&format!("SELECT COUNT(*) FROM {table} WHERE environment = $1"))
                .bind(e.to_string())
                .fetch_one(o.store().pool())
                .await
                .unwrap()
        }
    };
    let before = (rows("resource_log", other).await, rows("resource_action_resource", other).await);
    assert!(rows("resource_log", env).await >= 2 && rows("resource_action_resource", env).await >= 1);
    assert!(before.0 >= 2 && before.1 >= 1);

    o.clear_environment(env).await.unwrap();
    assert_eq!(rows("resource_log", env).await, 0, "log lines of a cleared environment");
    assert_eq!(rows("resource_action_resource", env).await, 0, "links of a cleared environment");
    assert_eq!((rows("resource_log", other).await, rows("resource_action_resource", other).await), before);

    o.delete_environment(other).await.unwrap();
    assert_eq!(rows("resource_log", other).await, 0, "log lines of a deleted environment");
    assert_eq!(rows("resource_action_resource", other).await, 0, "links of a deleted environment");
}

/// A result records the attribute hash of the version it ran for: a late result of an older
/// version leaves a resource whose intent changed since `available`, one whose intent is the same
/// `deployed`; a result of the current version takes the current hash.
#[tokio::test]
async fn a_result_records_the_hash_of_the_version_it_ran_for() {
    let (o, env, _dir) = setup().await;
    let v1 = put(&o, env, vec![file("/a", "1", &[]), file("/b", "1", &[])], &[]).await;
    let v2 = put(&o, env, vec![file("/a", "2", &[]), file("/b", "1", &[])], &[]).await;
    o.record_actions(env, &[deployed(v1, "/a", Change::Created), deployed(v1, "/b", Change::Created)]).await.unwrap();
    let status = |path: &'static str| {
        let o = o.clone();
        async move { o.released_resource(env, &rid(path)).await.unwrap().status }
    };
    assert_eq!(status("/a").await, ResourceState::Available, "v1's /a is not v2's");
    assert_eq!(status("/b").await, ResourceState::Deployed, "v1's /b is v2's");
    o.record_actions(env, &[deployed(v2, "/a", Change::Updated)]).await.unwrap();
    assert_eq!(status("/a").await, ResourceState::Deployed);
}

/// On PostgreSQL, a bulk write refreshes the planner's statistics at once (the diff of two fresh
/// versions was planned as a nested loop over every row without them); SQLite has nothing to do.
#[tokio::test]
async fn bulk_writes_refresh_postgres_statistics() {
    if test_support::postgres_admin_url().is_none() {
        return;
    }
    let (o, env, _dir) = setup().await;
    let resources = (0..1500).map(|i| file(&format!("/f{i}"), "1", &[])).collect();
    put(&o, env, resources, &[]).await; // auto_deploy releases it
    let analyzed = |table: &'static str| {
        let o = o.clone();
        async move {
            // Bounded wait for the background ANALYZE; what is asserted is that it happened.
            for _ in 0..300 {
                let at: Option<String> =
                    sqlx::query_scalar("SELECT CAST(last_analyze AS TEXT) FROM pg_stat_user_tables WHERE relname = $1")
                        .bind(table)
                        .fetch_one(o.store().pool())
                        .await
                        .unwrap();
                if at.is_some() {
                    return true;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            false
        }
    };
    assert!(analyzed("resource").await, "resource was not analyzed after a put_version of 1 500");
    assert!(analyzed("resource_persistent_state").await, "states were not analyzed after a release of 1 500");
}

/// The scheduler's intents are read in pages of 5 000: every resource comes back once.
#[tokio::test]
async fn released_intents_cover_every_resource_across_pages() {
    let (o, env, _dir) = setup().await;
    let resources = (0..5003).map(|i| file(&format!("/f{i:05}"), "1", &[])).collect();
    put(&o, env, resources, &[]).await; // auto_deploy releases it
    let intents = o.released_intents(env).await.unwrap();
    let ids: std::collections::BTreeSet<String> = intents.iter().map(|i| i.id.to_string()).collect();
    assert_eq!((intents.len(), ids.len()), (5003, 5003));
    assert!(ids.contains(&rid("/f00000")) && ids.contains(&rid("/f05002")));
}

/// Deploy results arrive a batch at a time: once their sum passes 1 000 the action table is
/// analyzed too (the foreign-key checks of a session planned on an empty table walked every
/// action of the environment per result).
#[tokio::test]
async fn many_small_result_batches_refresh_postgres_statistics() {
    if test_support::postgres_admin_url().is_none() {
        return;
    }
    let (o, env, _dir) = setup().await;
    let v = put(&o, env, vec![file("/a", "1", &[])], &[]).await;
    for _ in 0..11 {
        let batch: Vec<_> = (0..100).map(|_| deployed(v, "/a", Change::NoChange)).collect();
        o.record_actions(env, &batch).await.unwrap();
    }
    let mut analyzed = false;
    for _ in 0..300 {
        let at: Option<String> = sqlx::query_scalar(
            "SELECT CAST(last_analyze AS TEXT) FROM pg_stat_user_tables WHERE relname = 'resource_action'",
        )
        .fetch_one(o.store().pool())
        .await
        .unwrap();
        if at.is_some() {
            analyzed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(analyzed, "resource_action was not analyzed after 1 100 results in batches of 100");
}

/// Deploy results are appended a batch of at most 1 000 at a time: the action tables are
/// analyzed when their sums pass 1 000, 10 000, ... and not after every full batch (which had
/// them analyzed a hundred times each during a first deploy of 100 000 resources).
#[tokio::test]
async fn full_result_batches_are_analyzed_on_postgres_by_their_sum_only() {
    if test_support::postgres_admin_url().is_none() {
        return;
    }
    let (o, env, _dir) = setup().await;
    let analyzed = |table: &'static str| {
        let o = o.clone();
        async move {
            sqlx::query_scalar::<_, i64>("SELECT analyze_count FROM pg_stat_user_tables WHERE relname = $1")
                .bind(table)
                .fetch_one(o.store().pool())
                .await
                .unwrap()
        }
    };
    let v = put(&o, env, vec![file("/a", "1", &[])], &[]).await;
    for _ in 0..5 {
        let batch: Vec<_> = (0..1000).map(|_| deployed(v, "/a", Change::NoChange)).collect();
        o.record_actions(env, &batch).await.unwrap();
        // Let an ANALYZE that a batch asked for run before the next batch.
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    for _ in 0..100 {
        if analyzed("resource_action").await > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(analyzed("resource_action").await, 1, "5 000 results in 5 batches: analyzed once, at 1 000");
    assert_eq!(analyzed("resource_action_resource").await, 1);
}

/// `filter.agent` and `filter.resource_type` contain the text case-insensitively, as Inmanta's
/// partial filters do, although they are now answered from the index (the matching agents and
/// types first, then `IN`): several matches, none, several texts, and `%`/`_` taken literally,
/// with the right totals.
#[tokio::test]
async fn agent_and_type_filters_match_parts_of_names_with_totals() {
    let (o, env, _dir) = setup().await;
    let resource = |ty: &str, agent: &str, name: &str| {
        json!({"id": format!("{ty}[{agent},name={name}],v=0"), "name": name, "agentname": agent,
               "purged": false, "send_event": false, "requires": []})
        .as_object()
        .cloned()
        .unwrap()
    };
    let mut resources = vec![];
    for (agent, n) in [("Web1", 3), ("web2", 2), ("db", 4), ("a_b", 1), ("axb", 1)] {
        for i in 0..n {
            resources.push(resource("std::testing::NullResource", agent, &format!("{agent}-{i}")));
        }
    }
    resources.push(resource("exp::Test", "db", "t"));
    put(&o, env, resources, &[]).await;
    let count = |filters: &'static [(&'static str, &'static str)]| {
        let o = o.clone();
        async move {
            let mut pairs = vec![("limit", "2")];
            pairs.extend_from_slice(filters);
            let (list, _) = o.released_resources(env, &page(&pairs), false).await.unwrap();
            let total = list.metadata.total;
            // The first page holds at most 2; every row it holds matches.
            (total, list.items.len() as u64, list.items.into_iter().map(|r| r.id_details.agent).collect::<Vec<_>>())
        }
    };
    let (total, shown, agents) = count(&[("filter.agent", "WEB")]).await;
    assert_eq!((total, shown), (5, 2), "Web1 and web2 both contain web, whatever the case");
    assert!(agents.iter().all(|a| a.to_lowercase().contains("web")), "{agents:?}");
    assert_eq!(count(&[("filter.agent", "nothing")]).await.0, 0);
    assert_eq!(count(&[("filter.agent", "web2"), ("filter.agent", "db")]).await.0, 7, "texts are ORed");
    assert_eq!(count(&[("filter.agent", "a_b")]).await.0, 1, "_ is itself, not any character");
    assert_eq!(count(&[("filter.agent", "%")]).await.0, 0, "% is itself, not a wildcard");
    assert_eq!(count(&[("filter.resource_type", "exp::")]).await.0, 1);
    assert_eq!(count(&[("filter.resource_type", "nullres"), ("filter.agent", "db")]).await.0, 4, "filters are ANDed");
    let (total, _, _) = count(&[("filter.agent", "db"), ("filter.status", "available")]).await;
    assert_eq!(total, 5, "with the status filter (every resource is available before a deploy)");
}

/// The reasons of a page of resources, asked for all at once, are those of each one alone: the
/// states of what it requires (as its details list them) and its newest error line (as its log
/// page, filtered on errors, starts).
#[tokio::test]
async fn the_reasons_of_many_resources_are_those_of_each_alone() {
    let (o, env, _dir) = setup().await;
    let (a, b, c, d) = (rid("/a"), rid("/b"), rid("/c"), rid("/d"));
    let v = put(
        &o,
        env,
        vec![file("/a", "1", &[]), file("/b", "1", &[&a]), file("/c", "1", &[&a, &b]), file("/d", "1", &[])],
        &[],
    )
    .await;
    let failed = |messages: Vec<LogLine>| ActionOutcome {
        status: HandlerStatus::Failed,
        messages,
        changes: None,
        change: None,
        send_event: Some(false),
    };
    let id = |r: &str| ResourceId::parse(r).unwrap();
    o.record_actions(
        env,
        &[finished_action(v, id(&a), failed(vec![line("error", "first"), line("info", "later info")]))],
    )
    .await
    .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    o.record_actions(
        env,
        &[
            finished_action(v, id(&a), failed(vec![line("error", "older"), line("critical", "newest")])),
            deployed(v, "/d", Change::NoChange),
        ],
    )
    .await
    .unwrap();

    let all = [a.as_str(), b.as_str(), c.as_str(), d.as_str()];
    let errors = o.last_errors(env, &all).await.unwrap();
    for r in all {
        let alone = PageRequest {
            limit: Some(1),
            filters: vec![("minimal_log_level".into(), "ERROR".into())],
            ..Default::default()
        };
        let newest = o.resource_logs(env, r, &alone).await.unwrap().items.into_iter().next().map(|l| l.msg);
        assert_eq!(errors.get(r), newest.as_ref(), "{r}");
    }
    assert_eq!(errors.get(&a).map(String::as_str), Some("newest"));

    let requires = o.requires_states(env, &all).await.unwrap();
    for r in all {
        let details = o.released_resource(env, r).await.unwrap();
        let by_text: std::collections::BTreeMap<String, ResourceState> =
            details.requires_status.iter().map(|(id, state)| (id.to_string(), *state)).collect();
        assert_eq!(requires.get(r), Some(&by_text), "{r}");
    }
    assert_eq!(
        requires[&c].iter().map(|(r, s)| (r.as_str(), *s)).collect::<Vec<_>>(),
        [(a.as_str(), ResourceState::Failed), (b.as_str(), ResourceState::Available)]
    );
    assert!(o.requires_states(env, &[]).await.unwrap().is_empty());
    assert!(o.last_errors(env, &["fs::File[host1,path=/unknown]"]).await.unwrap().is_empty());
}
