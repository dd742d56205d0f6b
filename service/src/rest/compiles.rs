//! Server-side compiles: trigger, queue and reports (docs/api.md, "Compiles").

use api::compile::NotifyChange;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use orchestrator::Orchestrator;
use orchestrator::compiles::CompileRequest;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use super::error::{ApiError, ApiResult};
use super::extract::{self, Paging, Path, Query, Tid};
use super::{Caller, Routes, data, env, paged};
use orchestrator::auth::Principal;

pub fn router() -> Routes {
    let in_path = |label| env(label).environment_in_path("id");
    Routes::new()
        .get("/api/v1/notify/{id}", in_path("compiler.execute"), notify_get)
        .post("/api/v1/notify/{id}", in_path("compiler.execute"), notify_post)
        .head("/api/v1/notify/{id}", in_path("compiler.status.read"), is_compiling)
        .get("/api/v1/compilequeue", env("compiler.status.read"), queue)
        .get("/api/v1/compilereport", env("compile-report.read"), reports_v1)
        .get("/api/v1/compilereport/{id}", env("compile-report.read"), report_v1)
        .get("/api/v2/compilereport", env("compile-report.read"), reports)
        .get("/api/v2/compilereport/{id}", env("compile-report.read"), details)
        .get("/api/v2/compiledata/{id}", env("compile-report.read"), compile_data)
}

async fn request(o: &Orchestrator, env: Uuid, body: NotifyChange) -> ApiResult<Response> {
    let metadata = match body.metadata {
        Some(serde_json::Value::Object(m)) => serde_json::Value::Object(m),
        None | Some(serde_json::Value::Null) => json!({"type": "api", "message": "Recompile trigger through API call"}),
        Some(other) => {
            return Err(super::error::ApiError::bad_request(format!(
                "Invalid request: metadata must be an object, got {other}"
            )));
        }
    };
    let requested = o
        .request_compile(
            env,
            CompileRequest {
                force_update: body.update,
                metadata,
                requested_environment_variables: body.env.unwrap_or_default(),
                mergeable_environment_variables: body.mergeable_env.unwrap_or_default(),
                reinstall: body.reinstall,
                ..Default::default()
            },
        )
        .await?;
    let mut answer = json!({"compile_id": requested.id, "merged": requested.merged});
    if !requested.warnings.is_empty() {
        answer["metadata"] = json!({"warnings": requested.warnings});
    }
    Ok(axum::Json(answer).into_response())
}

async fn notify_post(
    State(o): State<Orchestrator>,
    Caller(caller): Caller,
    Path(env): Path<Uuid>,
    extract::Json(body): extract::Json<NotifyChange>,
) -> ApiResult<Response> {
    may_update(&o, &caller, env, body.update)?;
    request(&o, env, body).await
}

/// Triggering a compile is `compiler.execute`; pulling new code first (`update`) needs more
/// (`noc` may recompile, not update): a second check, which an access policy sees as a call of
/// `POST /api/v1/notify/<id>` with `update` true (Inmanta's argument defaults to true).
fn may_update(o: &Orchestrator, caller: &Principal, env: Uuid, update: bool) -> ApiResult<()> {
    if update {
        let call = orchestrator::auth::policy::Call::compile(env, true);
        o.authorize(caller, &call).map_err(|d| ApiError::new(StatusCode::FORBIDDEN, d.0))?;
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NotifyQuery {
    update: Option<bool>,
    reinstall: Option<bool>,
}

/// The webhook form: `GET /api/v1/notify/<env>?update=true`.
async fn notify_get(
    State(o): State<Orchestrator>,
    Caller(caller): Caller,
    Path(env): Path<Uuid>,
    Query(query): Query<NotifyQuery>,
) -> ApiResult<Response> {
    may_update(&o, &caller, env, query.update.unwrap_or(true))?;
    let body = NotifyChange {
        update: query.update.unwrap_or(true),
        reinstall: query.reinstall.unwrap_or(false),
        metadata: Some(json!({"type": "api", "message": "Recompile trigger through a webhook"})),
        ..Default::default()
    };
    request(&o, env, body).await
}

/// 200 while the environment compiles, 204 otherwise.
async fn is_compiling(State(o): State<Orchestrator>, Path(env): Path<Uuid>) -> ApiResult<Response> {
    Ok(if o.is_compiling(env).await? { StatusCode::OK } else { StatusCode::NO_CONTENT }.into_response())
}

async fn queue(State(o): State<Orchestrator>, Tid(env): Tid) -> ApiResult<Response> {
    Ok(axum::Json(json!({"queue": o.compile_queue(env).await?})).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReportsQuery {
    start: Option<String>,
    end: Option<String>,
    limit: Option<i64>,
}

async fn reports_v1(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Query(q): Query<ReportsQuery>,
) -> ApiResult<Response> {
    let reports = o.compile_reports_v1(env, q.start.as_deref(), q.end.as_deref(), q.limit).await?;
    Ok(axum::Json(json!({"reports": reports})).into_response())
}

async fn report_v1(State(o): State<Orchestrator>, Tid(env): Tid, Path(id): Path<Uuid>) -> ApiResult<Response> {
    Ok(axum::Json(json!({"report": o.compile_details(env, id).await?})).into_response())
}

async fn reports(State(o): State<Orchestrator>, Tid(env): Tid, Paging(req): Paging) -> ApiResult<Response> {
    Ok(paged(o.compile_reports(env, &req).await?).into_response())
}

async fn details(State(o): State<Orchestrator>, Tid(env): Tid, Path(id): Path<Uuid>) -> ApiResult<Response> {
    Ok(data(o.compile_details(env, id).await?).into_response())
}

async fn compile_data(State(o): State<Orchestrator>, Tid(env): Tid, Path(id): Path<Uuid>) -> ApiResult<Response> {
    Ok(data(o.compile_data(env, id).await?).into_response())
}
