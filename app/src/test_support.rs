//! What the console's tests share: the console mounted as the server mounts it, an orchestrator on
//! a fresh SQLite database with environments, versions and compiles in it, and a page fetch.

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use leptos::prelude::*;
use tower::ServiceExt;

use crate::{Assets, shell};

/// The console's page and server-function routes, as the server mounts them.
pub(crate) fn router(orchestrator: Option<orchestrator::Orchestrator>) -> Router {
    let _ = any_spawner::Executor::init_tokio();
    let context = move || {
        if let Some(o) = orchestrator.clone() {
            provide_context(o);
        }
        provide_context(orchestrator::auth::Principal::Unrestricted);
    };
    let page = leptos_axum::render_app_async_with_context(context.clone(), move || shell(Some(test_assets())));
    let page = axum::routing::get(move |req: Request<Body>| page(req));
    Router::new().route("/console", page.clone()).route("/console/{*path}", page).route(
        "/console/fn/{*name}",
        axum::routing::post(move |req: Request<Body>| async move {
            use axum::response::IntoResponse;
            leptos_axum::handle_server_fns_with_context(context, req).await.into_response()
        }),
    )
}

pub(crate) fn test_assets() -> Assets {
    Assets {
        js: "/console/pkg/console.0123.js".into(),
        wasm: "/console/pkg/console.0123.wasm".into(),
        css: "/console/pkg/console.0123.css".into(),
    }
}

pub(crate) async fn orchestrator_with(envs: &[(&str, &str)]) -> (tempfile::TempDir, orchestrator::Orchestrator) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("inmanta.db").display());
    let o = orchestrator::Orchestrator::open(&url).await.unwrap();
    for (project, env) in envs {
        let project = match o.list_projects().await.unwrap().into_iter().find(|p| p.name == *project) {
            Some(p) => p,
            None => o.create_project(project, None).await.unwrap(),
        };
        o.create_environment(api::environment::EnvironmentCreate {
            project_id: project.id,
            name: env.to_string(),
            ..Default::default()
        })
        .await
        .unwrap();
    }
    (dir, o)
}

/// An environment with `n` NullResources in version 1 (released) and a changed copy in
/// version 2 (not released: auto_deploy is off).
pub(crate) async fn environment_with_versions(o: &orchestrator::Orchestrator, n: usize) -> uuid::Uuid {
    let project = o.create_project("infra", None).await.unwrap();
    let env = o
        .create_environment(api::environment::EnvironmentCreate {
            project_id: project.id,
            name: "production".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .id;
    o.set_environment_setting(env, "auto_deploy", &serde_json::json!(false)).await.unwrap();
    for (version, value) in [(1, "old"), (2, "new")] {
        let v = o.reserve_version(env).await.unwrap();
        assert_eq!(v, version);
        let resources = (0..n)
            .map(|i| {
                let value = if i == 0 { value } else { "" };
                let requires: Vec<String> =
                    if i > 0 { vec![format!("std::testing::NullResource[agent1,name=n0],v={v}")] } else { vec![] };
                serde_json::json!({
                    "id": format!("std::testing::NullResource[agent1,name=n{i}],v={v}"),
                    "name": format!("n{i}"), "agentname": "agent1", "fail": false, "value": value,
                    "int_value": 0, "purged": false, "send_event": true, "receive_events": true,
                    "requires": requires,
                })
                .as_object()
                .unwrap()
                .clone()
            })
            .collect();
        o.put_version(env, api::version::PutVersion { version: v, resources, ..Default::default() }).await.unwrap();
    }
    o.release_version(env, 1).await.unwrap();
    env
}

pub(crate) async fn get(router: Router, path: &str) -> (StatusCode, String) {
    let response = router.oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

/// A failed compile (Init passed, the clone failed, one compile error) and a queued one.
pub(crate) async fn compiles(o: &orchestrator::Orchestrator, env: uuid::Uuid) -> (uuid::Uuid, uuid::Uuid) {
    use orchestrator::compiles::{CompileOutcome, CompileRequest, StageResult};
    let request = |message: &str, vars: &[(&str, &str)]| CompileRequest {
        metadata: serde_json::json!({"type": "api", "message": message}),
        requested_environment_variables: vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    };
    let failed = o.request_compile(env, request("first try", &[("DEBUG", "1")])).await.unwrap().id.unwrap();
    assert!(o.start_compile(failed, std::time::Duration::from_secs(30)).await.unwrap());
    let init = o.begin_compile_stage(env, failed, "Init", "").await.unwrap();
    let result =
        StageResult { outstream: "Compile of environment".into(), errstream: String::new(), returncode: Some(0) };
    o.finish_compile_stage(init, &result).await.unwrap();
    let clone =
        o.begin_compile_stage(env, failed, "Cloning repository", "git clone /nowhere/repo project").await.unwrap();
    let result = StageResult {
        outstream: String::new(),
        errstream: "fatal: repository '/nowhere/repo' does not exist".into(),
        returncode: Some(128),
    };
    o.finish_compile_stage(clone, &result).await.unwrap();
    let data = serde_json::from_value(serde_json::json!({"errors": [{"category": "parse_error",
        "type": "inmanta.parser.ParserException", "message": "unexpected token",
        "location": {"uri": "main.cf", "range": {"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 5}}}}]}))
    .expect("compile data");
    let outcome = CompileOutcome {
        success: false,
        version: None,
        compile_data: Some(data),
        message: "stage Cloning repository failed".into(),
    };
    o.finish_compile(env, failed, &outcome).await.unwrap();
    let queued = o.request_compile(env, request("second try", &[])).await.unwrap().id.unwrap();
    (failed, queued)
}
