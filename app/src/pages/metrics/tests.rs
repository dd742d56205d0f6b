//! The dashboard's metrics charts.

use axum::http::StatusCode;

use super::*;
use crate::test_support::*;

#[test]
fn a_series_is_a_line_broken_where_nothing_was_recorded() {
    assert_eq!(path(&[None, None], 1.0), "");
    // 4 windows over 300 units: x = 0, 100, 200, 300; y from 80 (0) to 0 (top).
    assert_eq!(path(&[Some(0.0), Some(2.0), None, Some(1.0)], 2.0), "M0.0 80.0 L100.0 0.0 M300.0 40.0 l0 0");
    assert_eq!(path(&[Some(1.0)], 1.0), "M150.0 0.0 l0 0");
}

#[tokio::test]
async fn the_dashboard_charts_what_the_server_recorded() {
    let (_dir, o) = orchestrator_with(&[]).await;
    let env = environment_with_versions(&o, 3).await;
    let router = router(Some(o.clone()));

    let (status, html) = get(router.clone(), &format!("/console/dashboard?env={env}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains(r#"id="metrics""#), "{html}");
    assert!(html.contains("Nothing recorded in the last hour"), "{html}");

    o.collect_environment_metrics(chrono::Utc::now()).await.unwrap();
    let (_, html) = get(router.clone(), &format!("/console/dashboard?env={env}")).await;
    assert!(!html.contains(r#"id="metrics-empty""#), "{html}");
    assert!(html.contains(r#"data-metric="resource.resource_count" data-recorded="1""#), "{html}");
    // Three released resources, none deployed yet: one line, of the state they are in.
    let summary = o.released_resources(env, &Default::default(), true).await.unwrap().1.unwrap();
    let (state, n) = summary.by_state.iter().find(|(_, n)| **n > 0).unwrap();
    assert_eq!(*n, 3);
    assert!(html.contains(&format!(r#"data-category="{}""#, state.as_str())), "{html}");
    assert!(html.contains(&format!("{} 3", state.as_str().replace('_', " "))), "{html}");
    // No compile in the hour: their charts say so.
    assert!(html.contains(r#"data-metric="orchestrator.compile_time" data-recorded="0""#), "{html}");
    assert!(html.contains(r#"data-metric="orchestrator.compile_rate" data-recorded="0""#), "{html}");

    let (_, html) = get(router.clone(), &format!("/console/dashboard?env={env}&metrics=week")).await;
    assert!(html.contains(r#"data-span="week""#) && html.contains(r#"class="metric-charts""#), "{html}");
    assert!(html.contains(r#"aria-current="true""#), "{html}");
}
