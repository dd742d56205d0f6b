//! The tests of the desired state pages.

use crate::test_support::*;
use axum::http::StatusCode;

#[tokio::test]
async fn compliance_check_renders_dry_run_reports_with_progress() {
    let (_dir, o) = orchestrator_with(&[]).await;
    let env = environment_with_versions(&o, 3).await;
    let router = router(Some(o.clone()));

    let (_, html) = get(router.clone(), &format!("/console/desiredstate?env={env}")).await;
    assert!(html.contains(&format!("/console/desiredstate/2/compliancecheck?env={env}")), "{html}");
    assert!(html.contains("Compare with current state"), "{html}");

    let (status, html) = get(router.clone(), &format!("/console/desiredstate/2/compliancecheck?env={env}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("No dry runs of this version yet") && html.contains("Perform dry run"), "{html}");

    let (older, _) = o.create_dryrun(env, 2).await.unwrap();
    let (run, _) = o.create_dryrun(env, 2).await.unwrap();
    let changes = serde_json::json!({
        "value": {"current": "old", "desired": "new"},
        "content": {"current": "line 1\nold line\n", "desired": "line 1\nnew line\n"},
    });
    let rid = |i: usize| format!("std::testing::NullResource[agent1,name=n{i}],v=2");
    o.dryrun_update(env, run.id, &rid(0), api::ResourceDiffStatus::Modified, changes.as_object().unwrap())
        .await
        .unwrap();
    o.dryrun_update(env, run.id, &rid(1), api::ResourceDiffStatus::Unmodified, &serde_json::Map::new()).await.unwrap();

    let (_, html) = get(router.clone(), &format!("/console/desiredstate/2/compliancecheck?env={env}")).await;
    for needle in [
        "<title>Compliance check of version 2 · Inmanta</title>",
        "2 of 3 resources checked",
        "2 resources reported: 1 unmodified, 1 modified",
        r#"data-id="std::testing::NullResource[agent1,name=n0]""#,
        r#"data-attribute="value""#,
        r#"<span class="diff-del">-old line"#,
        r#"<span class="diff-add">+new line"#,
        &format!(r#"data-report="{}""#, older.id),
    ] {
        assert!(html.contains(needle), "{needle} missing in {html}");
    }
    // The newest report is the one shown: its chip is the current one.
    let chip = |id: uuid::Uuid| {
        let end = html.find(&format!(r#"data-report="{id}""#)).expect("chip");
        let start = html[..end].rfind("<a ").unwrap();
        html[start..end].to_string()
    };
    assert!(chip(run.id).contains(r#"aria-current="true""#), "{html}");
    assert!(!chip(older.id).contains("aria-current"), "{html}");

    let (_, html) =
        get(router.clone(), &format!("/console/desiredstate/2/compliancecheck?env={env}&report={}", older.id)).await;
    assert!(html.contains("0 of 3 resources checked") && html.contains("No differences reported so far"), "{html}");
}
