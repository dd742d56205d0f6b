//! Compliance of report-only resources (Inmanta 20.1's `get_compliance_report` and the
//! compliance its scheduler keeps) against a real database (SQLite, or PostgreSQL when
//! `INMANTA_TEST_POSTGRES` holds an admin URL). The expected answers follow inmanta-core 20.1's
//! `ResourcePersistentState.get_compliance_report` and `deploy.state.get_compliance_status`.

use std::collections::BTreeMap;

use api::ResourceId;
use api::compliance::{AttributeStateChange, ResourceComplianceDiff};
use api::state::{ActionKind, Change, Compliance, HandlerRun, HandlerStatus, ResourceState};
use api::version::PutVersion;
use orchestrator::resources::FinishedAction;
use orchestrator::{ActionOutcome, Error, Orchestrator};
use serde_json::json;
use uuid::Uuid;

use crate::common::setup;

fn rid(name: &str) -> String {
    format!("std::testing::NullResource[internal,name={name}]")
}

/// A NullResource; `value` changes its hash between versions.
fn null(name: &str, value: &str, report_only: bool) -> serde_json::Map<String, serde_json::Value> {
    json!({
        "id": api::resource::versioned_id(&rid(name), 0), "name": name, "agentname": "internal",
        "value": value, "purged": false, "report_only": report_only, "send_event": false, "requires": [],
    })
    .as_object()
    .cloned()
    .unwrap()
}

/// Stores and releases (auto_deploy) a version of these resources.
async fn release(o: &Orchestrator, env: Uuid, resources: Vec<serde_json::Map<String, serde_json::Value>>) -> i64 {
    let version = o.reserve_version(env).await.unwrap();
    o.put_version(env, PutVersion { version, resources, ..Default::default() }).await.unwrap();
    version
}

fn run(version: i64, name: &str, status: HandlerStatus, changes: serde_json::Value) -> FinishedAction {
    let id = ResourceId::parse(&rid(name)).unwrap();
    let changes =
        changes.as_object().filter(|c| !c.is_empty()).map(|c| json!({ id.versioned(version as u64).to_string(): c }));
    FinishedAction {
        action_id: Uuid::new_v4(),
        version,
        action: ActionKind::Deploy,
        started: api::Timestamp::now(),
        resource_ids: vec![id],
        outcome: ActionOutcome {
            status,
            messages: vec![],
            changes,
            change: Some(Change::NoChange),
            send_event: Some(false),
        },
    }
}

async fn report(o: &Orchestrator, env: Uuid, names: &[&str]) -> BTreeMap<String, ResourceComplianceDiff> {
    let ids: Vec<String> = names.iter().map(|n| rid(n)).collect();
    o.compliance_report(env, &ids).await.unwrap()
}

fn purged_diff() -> BTreeMap<String, AttributeStateChange> {
    BTreeMap::from([("purged".to_string(), AttributeStateChange { current: json!(false), desired: json!(true) })])
}

#[tokio::test]
async fn report_only_runs_set_compliance_and_keep_the_diff_of_a_non_compliant_one() {
    let (o, env, _dir) = setup().await;
    let v1 = release(
        &o,
        env,
        vec![null("ok", "1", true), null("drift", "1", true), null("fail", "1", true), null("enforced", "1", false)],
    )
    .await;

    // Before any run: has_update, last run `new`, no time, no diff.
    let before = report(&o, env, &["ok", "enforced"]).await;
    for diff in before.values() {
        assert_eq!(
            (diff.compliance, diff.last_handler_run, diff.last_handler_run_at.map(|t| t.to_string()).as_deref()),
            (Compliance::HasUpdate, HandlerRun::New, None)
        );
        assert_eq!(diff.attribute_diff, None);
    }
    assert!(before[&rid("ok")].report_only && !before[&rid("enforced")].report_only);

    let drift = json!({"purged": {"current": false, "desired": true}});
    o.record_actions(
        env,
        &[
            run(v1, "ok", HandlerStatus::Deployed, json!({})),
            run(v1, "drift", HandlerStatus::NonCompliant, drift),
            run(v1, "fail", HandlerStatus::Failed, json!({})),
            run(v1, "enforced", HandlerStatus::Deployed, json!({})),
        ],
    )
    .await
    .unwrap();
    let after = report(&o, env, &["ok", "drift", "fail", "enforced"]).await;
    let summary = |name: &str| {
        let d = &after[&rid(name)];
        (d.compliance, d.last_handler_run, d.last_handler_run_at.is_some())
    };
    assert_eq!(summary("ok"), (Compliance::Compliant, HandlerRun::Successful, true));
    // A report-only run that found a difference is a successful run of a non-compliant resource.
    assert_eq!(summary("drift"), (Compliance::NonCompliant, HandlerRun::Successful, true));
    assert_eq!(summary("fail"), (Compliance::NonCompliant, HandlerRun::Failed, true));
    assert_eq!(summary("enforced"), (Compliance::Compliant, HandlerRun::Successful, true));
    assert_eq!(after[&rid("drift")].attribute_diff, Some(purged_diff()));
    assert_eq!(after[&rid("fail")].attribute_diff, None, "only a non_compliant run leaves a diff");
    assert_eq!(o.released_resource(env, &rid("drift")).await.unwrap().status, ResourceState::NonCompliant);

    let counts = o.compliance_summary(env).await.unwrap();
    assert_eq!(counts.total, 4);
    assert_eq!(counts.report_only, 3);
    assert_eq!(counts.by_compliance.get(&Compliance::Compliant), Some(&2));
    assert_eq!(counts.by_compliance.get(&Compliance::NonCompliant), Some(&2));
    assert_eq!(counts.by_compliance.get(&Compliance::HasUpdate), None);

    // A new intent for drift: it has an update, and its old diff is not shown.
    let v2 = release(
        &o,
        env,
        vec![null("ok", "1", true), null("drift", "2", true), null("fail", "1", true), null("enforced", "1", false)],
    )
    .await;
    let pending = report(&o, env, &["ok", "drift"]).await;
    assert_eq!(pending[&rid("ok")].compliance, Compliance::Compliant, "an unchanged intent stays compliant");
    assert_eq!(pending[&rid("drift")].compliance, Compliance::HasUpdate);
    assert_eq!(pending[&rid("drift")].attribute_diff, None);

    // A late run for the old intent does not decide the new one's compliance.
    o.record_actions(env, &[run(v1, "drift", HandlerStatus::Deployed, json!({}))]).await.unwrap();
    assert_eq!(report(&o, env, &["drift"]).await[&rid("drift")].compliance, Compliance::HasUpdate);

    // The run for the new intent finds it as desired: compliant, the diff gone.
    o.record_actions(
        env,
        &[run(v2, "drift", HandlerStatus::NonCompliant, json!({"value": {"current": "1", "desired": "2"}}))],
    )
    .await
    .unwrap();
    let found = report(&o, env, &["drift"]).await;
    let diff = found[&rid("drift")].attribute_diff.clone().unwrap();
    assert_eq!(diff["value"], AttributeStateChange { current: json!("1"), desired: json!("2") });
    o.record_actions(env, &[run(v2, "drift", HandlerStatus::Deployed, json!({}))]).await.unwrap();
    let fixed = report(&o, env, &["drift"]).await;
    assert_eq!(
        (fixed[&rid("drift")].compliance, fixed[&rid("drift")].attribute_diff.clone()),
        (Compliance::Compliant, None)
    );
}

#[tokio::test]
async fn the_report_names_ids_not_in_the_released_version() {
    let (o, env, _dir) = setup().await;
    release(&o, env, vec![null("ok", "1", true), null("gone", "1", true)]).await;
    release(&o, env, vec![null("ok", "1", true)]).await;
    assert!(o.compliance_report(env, &[]).await.unwrap().is_empty());
    // "gone" is an orphan now: not in the active version, as Inmanta reports it.
    match o.compliance_report(env, &[rid("ok"), rid("gone")]).await {
        Err(Error::NotFound(message)) => assert_eq!(
            message,
            format!("Unable to find the following resource ids in the active version: {{'{}'}}", rid("gone"))
        ),
        other => panic!("expected NotFound, got {other:?}"),
    }
    let counts = o.compliance_summary(env).await.unwrap();
    assert_eq!((counts.total, counts.report_only), (1, 1), "orphans are not counted");
}
