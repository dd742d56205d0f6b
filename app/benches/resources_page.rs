//! Server render of the resources page of an environment with 10 000 released resources.
//!
//!   cargo bench -p app --features ssr --bench resources_page            # release (bench profile)
//!   cargo bench -p app --features ssr --bench resources_page --profile dev
//!   RESOURCES=100000 cargo bench -p app --features ssr --bench resources_page   # another size
//!
//! With `INMANTA_TEST_POSTGRES` set it runs on a fresh PostgreSQL database instead of SQLite.
//!
//! Prints the median, p90 and max of `RUNS` full page renders (HTTP request through the console
//! router to the finished HTML: server functions against SQLite, deploy summary, 20-row page,
//! shell and hydration data), for the default view and a filtered, sorted 100-row view.

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use leptos::prelude::provide_context;
use tower::ServiceExt;

const RUNS: usize = 30;

fn router(orchestrator: orchestrator::Orchestrator) -> Router {
    let context = move || {
        provide_context(orchestrator.clone());
        provide_context(orchestrator::auth::Principal::Unrestricted);
    };
    let page = leptos_axum::render_app_async_with_context(context, move || app::shell(None));
    Router::new().route("/console/{*path}", axum::routing::get(move |req: Request<Body>| page(req)))
}

async fn render(router: &Router, path: &str) -> (Duration, usize) {
    let start = Instant::now();
    let response = router.clone().oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
    assert!(response.status().is_success(), "{path}: {}", response.status());
    let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (start.elapsed(), body.len())
}

fn report(name: &str, mut times: Vec<Duration>, bytes: usize) -> Duration {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = times[times.len() / 2];
    println!(
        "{name}: median {:.1} ms, p90 {:.1} ms, max {:.1} ms over {} renders ({} KB of HTML)",
        ms(median),
        ms(times[times.len() * 9 / 10]),
        ms(*times.last().unwrap()),
        times.len(),
        bytes / 1024
    );
    median
}

#[tokio::main]
async fn main() {
    let _ = any_spawner::Executor::init_tokio();
    let resources_count: usize = std::env::var("RESOURCES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    let url = orchestrator::testing::fresh_database_url(dir.path()).await.unwrap();
    let o = orchestrator::Orchestrator::open(&url).await.unwrap();
    let project = o.create_project("bench", None).await.unwrap();
    let env = o
        .create_environment(api::environment::EnvironmentCreate {
            project_id: project.id,
            name: "bench".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .id;
    o.set_environment_setting(env, "auto_deploy", &serde_json::json!(false)).await.unwrap();
    let version = o.reserve_version(env).await.unwrap();
    let resources = (0..resources_count)
        .map(|i| {
            let agent = format!("agent{}", i / 1000);
            serde_json::json!({
                "id": format!("std::testing::NullResource[{agent},name=r{i:05}],v={version}"),
                "name": format!("r{i:05}"), "agentname": agent, "fail": false, "value": format!("value {i}"),
                "int_value": i, "purged": false, "send_event": true, "receive_events": true,
                "requires": if i % 1000 > 0 {
                    vec![format!("std::testing::NullResource[{agent},name=r{:05}],v={version}", i - 1)]
                } else {
                    vec![]
                },
            })
            .as_object()
            .unwrap()
            .clone()
        })
        .collect();
    let setup = Instant::now();
    o.put_version(env, api::version::PutVersion { version, resources, ..Default::default() }).await.unwrap();
    o.release_version(env, version).await.unwrap();
    println!("setup: {resources_count} resources stored and released in {:.1} s", setup.elapsed().as_secs_f64());

    let router = router(o);
    let views = [
        ("resources page (default, 20 rows)", format!("/console/resources?env={env}")),
        (
            "resources page (filter agent3, sort value desc, 100 rows)",
            format!("/console/resources?env={env}&filter.agent=agent3&sort=resource_id_value.desc&limit=100"),
        ),
        ("dashboard", format!("/console/dashboard?env={env}")),
        // The graph draws at most 5 000 nodes (it says so above the picture) of all resources.
        ("dependency graph (5 000 resources drawn)", format!("/console/resources/graph?env={env}")),
    ];
    let mut medians = Vec::new();
    for (name, path) in &views {
        render(&router, path).await; // warm the statement cache
        let mut times = Vec::with_capacity(RUNS);
        let mut bytes = 0;
        for _ in 0..RUNS {
            let (t, b) = render(&router, path).await;
            times.push(t);
            bytes = b;
        }
        medians.push(report(name, times, bytes));
    }
    let worst = medians[..2].iter().max().unwrap();
    println!("target (resources page): median < 50 ms -> {}", if worst.as_millis() < 50 { "met" } else { "NOT met" });
}
