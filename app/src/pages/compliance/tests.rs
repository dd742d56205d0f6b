//! The console's compliance views, rendered on the server: the dashboard's and the resources
//! page's counts, and a report-only resource's compliance with what differs.

use api::state::{ActionKind, Change, HandlerStatus};
use axum::http::StatusCode;
use serde_json::json;

use crate::test_support::*;

fn null(name: &str, report_only: bool, purged: bool) -> serde_json::Map<String, serde_json::Value> {
    let rid = format!("std::testing::NullResource[internal,name={name}]");
    json!({
        "id": api::resource::versioned_id(&rid, 0), "name": name, "agentname": "internal", "value": "v",
        "purged": purged, "report_only": report_only, "send_event": false, "requires": [],
    })
    .as_object()
    .cloned()
    .unwrap()
}

fn run(
    version: i64,
    name: &str,
    status: HandlerStatus,
    changes: serde_json::Value,
) -> orchestrator::resources::FinishedAction {
    let id = api::ResourceId::parse(&format!("std::testing::NullResource[internal,name={name}]")).unwrap();
    let changes =
        changes.as_object().filter(|c| !c.is_empty()).map(|c| json!({ id.versioned(version as u64).to_string(): c }));
    orchestrator::resources::FinishedAction {
        action_id: orchestrator::resources::new_action_id(),
        version,
        action: ActionKind::Deploy,
        started: "2026-01-01T00:00:00.000000Z".parse().unwrap(),
        resource_ids: vec![id],
        outcome: orchestrator::ActionOutcome {
            status,
            messages: vec![],
            changes,
            change: Some(Change::NoChange),
            send_event: Some(false),
        },
    }
}

#[tokio::test]
async fn dashboard_resources_and_details_show_compliance() {
    let (_dir, o) = orchestrator_with(&[("infra", "production")]).await;
    let env = o.list_environments().await.unwrap()[0].id;
    let router = router(Some(o.clone()));

    // Before anything is released there is nothing to count: no card.
    let (status, html) = get(router.clone(), &format!("/console/dashboard?env={env}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!html.contains("id=\"compliance\""), "{html}");

    let version = o.reserve_version(env).await.unwrap();
    let resources = vec![null("ok", true, false), null("drift", true, true), null("plain", false, false)];
    o.put_version(env, api::version::PutVersion { version, resources, ..Default::default() }).await.unwrap();
    o.record_actions(
        env,
        &[
            run(version, "ok", HandlerStatus::Deployed, json!({})),
            run(version, "drift", HandlerStatus::NonCompliant, json!({"purged": {"current": false, "desired": true}})),
        ],
    )
    .await
    .unwrap();

    for page in ["dashboard", "resources"] {
        let (_, html) = get(router.clone(), &format!("/console/{page}?env={env}")).await;
        assert!(html.contains("id=\"compliance\" data-total=\"3\" data-non-compliant=\"1\""), "{page}: {html}");
        assert!(
            html.contains("1 compliant") && html.contains("1 non-compliant") && html.contains("1 has update"),
            "{html}"
        );
        assert!(html.contains("2 of 3 resources are report-only"), "{html}");
        assert!(html.contains("filter.status=non_compliant"), "{html}");
    }
    // The resources page's status filter finds the report-only resource found different.
    let (_, html) = get(router.clone(), &format!("/console/resources?env={env}&filter.status=non_compliant")).await;
    assert!(html.contains("data-status=\"non_compliant\"") && !html.contains("name=ok]"), "{html}");

    let details = |name: &str| {
        format!(
            "/console/resources/details?env={env}&rid={}",
            crate::components::encode(&format!("std::testing::NullResource[internal,name={name}]"))
        )
    };
    let (_, html) = get(router.clone(), &details("drift")).await;
    assert!(html.contains("id=\"resource-compliance\" data-compliance=\"non_compliant\""), "{html}");
    assert!(html.contains("<tr data-attribute=\"purged\">"), "{html}");
    assert!(html.contains("yes: checked, never changed"), "{html}");
    let (_, html) = get(router.clone(), &details("ok")).await;
    assert!(html.contains("data-compliance=\"compliant\"") && !html.contains("id=\"compliance-diff\""), "{html}");
    let (_, html) = get(router.clone(), &details("plain")).await;
    assert!(html.contains("data-compliance=\"has_update\""), "{html}");
}
