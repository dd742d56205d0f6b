//! The compile pages rendered with a failed and a queued compile.

use crate::test_support::*;
use axum::http::StatusCode;

#[tokio::test]
async fn compile_pages_show_reports_stages_and_errors() {
    let (_dir, o) = orchestrator_with(&[]).await;
    let env = environment_with_versions(&o, 2).await;
    let (failed, queued) = compiles(&o, env).await;
    let router = router(Some(o.clone()));

    let (status, html) = get(router.clone(), &format!("/console/compilereports?env={env}")).await;
    assert_eq!(status, StatusCode::OK);
    for needle in [
        "<title>Compile Reports · Inmanta</title>",
        &format!(r#"data-id="{failed}" data-status="failed""#),
        &format!(r#"data-id="{queued}" data-status="queued""#),
        "first try",
        "second try",
        "Show details",
        r#"id="recompile-menu""#,
        &format!("/console/compilereports/{failed}?env={env}"),
        "Compile Reports</a>",
    ] {
        assert!(html.contains(needle), "{needle} missing in {html}");
    }
    assert!(!html.contains("Server compiles are off"), "{html}");
    // Newest first.
    assert!(html.find(&queued.to_string()).unwrap() < html.find(&failed.to_string()).unwrap(), "{html}");

    let (_, html) = get(router.clone(), &format!("/console/compilereports?env={env}&filter.status=failed")).await;
    assert!(html.contains(&failed.to_string()) && !html.contains(&queued.to_string()), "{html}");
    let (_, html) = get(router.clone(), &format!("/console/compilereports?env={env}&filter.status=success")).await;
    assert!(html.contains("No compile reports match the filter") && html.contains("Clear the filter"), "{html}");

    let (status, html) = get(router.clone(), &format!("/console/compilereports/{failed}?env={env}")).await;
    assert_eq!(status, StatusCode::OK);
    for needle in [
        "Requested",
        "Started",
        "Completed",
        r#"data-stage="Init""#,
        "git clone /nowhere/repo project",
        "fatal: repository",
        "✕ 128",
        "inmanta.parser.ParserException",
        "unexpected token",
        "main.cf:3",
        "DEBUG",
        "none produced",
    ] {
        assert!(html.contains(needle), "{needle} missing in {html}");
    }
    // The failed stage is open, the one that passed is folded.
    assert!(html.contains(r#"data-stage="Cloning repository" open"#), "{html}");
    assert!(!html.contains(r#"data-stage="Init" open"#), "{html}");

    let (_, html) = get(router.clone(), &format!("/console/compilereports/{queued}?env={env}")).await;
    assert!(html.contains("waiting in the queue"), "{html}");
    let (_, html) = get(router.clone(), &format!("/console/compilereports/{}?env={env}", uuid::Uuid::new_v4())).await;
    assert!(html.contains("The compile could not be loaded") && html.contains("does not exist"), "{html}");

    let (_, html) = get(router.clone(), &format!("/console/dashboard?env={env}")).await;
    assert!(html.contains("Latest compile reports") && html.contains("second try"), "{html}");
    assert!(html.contains(r#"data-status="queued""#) && html.contains(r#"data-status="failed""#), "{html}");

    // The failure's notification opens the details in this environment.
    let (_, html) = get(router.clone(), &format!("/console/notificationcenter?env={env}")).await;
    assert!(html.contains(&format!(r#"href="/console/compilereports/{failed}?env={env}""#)), "{html}");

    o.set_environment_setting(env, "server_compile", &serde_json::json!(false)).await.unwrap();
    let (_, html) = get(router.clone(), &format!("/console/compilereports?env={env}")).await;
    assert!(
        html.contains("Server compiles are off") && html.contains(r#"aria-describedby="recompile-hint""#),
        "{html}"
    );
}
