//! Environments, v1 and v2, with clear (decommission) and halt/resume (routes: docs/api.md).

use api::EnvironmentV1;
use api::environment::{EnvironmentCreate, EnvironmentModify};
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use orchestrator::{EnvironmentQuery, Orchestrator};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use super::error::ApiResult;
use super::extract::{self, Path, Query, Tid};
use super::{Caller, Routes, data, done, empty, env, global};

pub fn router() -> Routes {
    let in_path = |label| env(label).environment_in_path("id");
    Routes::new()
        .put("/api/v1/environment", global("environment.create").environment_in_body("environment_id"), v1_create)
        .get("/api/v1/environment", global("environment.read"), v1_list)
        .get("/api/v1/environment/{id}", in_path("environment.read"), v1_get)
        .post("/api/v1/environment/{id}", in_path("environment.modify"), v1_modify)
        .delete("/api/v1/environment/{id}", in_path("environment.delete"), v1_delete)
        .delete("/api/v1/decommission/{id}", in_path("environment.clear"), v1_clear)
        .put("/api/v2/environment", global("environment.create"), v2_create)
        .get("/api/v2/environment", global("environment.read"), v2_list)
        .get("/api/v2/environment/{id}", in_path("environment.read"), v2_get)
        .post("/api/v2/environment/{id}", in_path("environment.modify"), v2_modify)
        .delete("/api/v2/environment/{id}", in_path("environment.delete"), v2_delete)
        .delete("/api/v2/decommission/{id}", in_path("environment.clear"), v2_clear)
        .post("/api/v2/actions/environment/halt", env("environment.halt-resume"), halt)
        .post("/api/v2/actions/environment/resume", env("environment.halt-resume"), resume)
}

#[derive(Deserialize, Default)]
struct Details {
    #[serde(default)]
    details: bool,
}

fn v1(env: api::Environment) -> Json<serde_json::Value> {
    Json(json!({"environment": EnvironmentV1::from(env)}))
}

async fn v1_create(
    State(o): State<Orchestrator>,
    extract::Json(req): extract::Json<EnvironmentCreate>,
) -> ApiResult<Response> {
    Ok(v1(o.create_environment(req).await?).into_response())
}

/// Lists show only the environments the caller may see.
async fn v1_list(State(o): State<Orchestrator>, Caller(caller): Caller) -> ApiResult<Response> {
    let envs: Vec<EnvironmentV1> =
        o.list_environments().await?.into_iter().filter(|e| caller.can_see(e.id)).map(EnvironmentV1::from).collect();
    Ok(Json(json!({"environments": envs})).into_response())
}

async fn v1_get(State(o): State<Orchestrator>, Path(id): Path<Uuid>) -> ApiResult<Response> {
    Ok(v1(o.get_environment(id, EnvironmentQuery { details: true }).await?).into_response())
}

async fn v1_modify(
    State(o): State<Orchestrator>,
    Path(id): Path<Uuid>,
    extract::Json(req): extract::Json<EnvironmentModify>,
) -> ApiResult<Response> {
    Ok(v1(o.modify_environment(id, req).await?).into_response())
}

async fn v1_delete(State(o): State<Orchestrator>, Path(id): Path<Uuid>) -> ApiResult<Response> {
    o.delete_environment(id).await?;
    Ok(empty())
}

async fn v1_clear(State(o): State<Orchestrator>, Path(id): Path<Uuid>) -> ApiResult<Response> {
    o.clear_environment(id).await?;
    Ok(empty())
}

async fn v2_create(
    State(o): State<Orchestrator>,
    extract::Json(req): extract::Json<EnvironmentCreate>,
) -> ApiResult<Response> {
    Ok(data(o.create_environment(req).await?).into_response())
}

async fn v2_list(
    State(o): State<Orchestrator>,
    Caller(caller): Caller,
    Query(q): Query<Details>,
) -> ApiResult<Response> {
    let envs: Vec<_> = o
        .list_environments()
        .await?
        .into_iter()
        .filter(|e| caller.can_see(e.id))
        .map(|e| if q.details { e } else { e.without_details() })
        .collect();
    Ok(data(envs).into_response())
}

async fn v2_get(State(o): State<Orchestrator>, Path(id): Path<Uuid>, Query(q): Query<Details>) -> ApiResult<Response> {
    Ok(data(o.get_environment(id, EnvironmentQuery { details: q.details }).await?).into_response())
}

async fn v2_modify(
    State(o): State<Orchestrator>,
    Path(id): Path<Uuid>,
    extract::Json(req): extract::Json<EnvironmentModify>,
) -> ApiResult<Response> {
    Ok(data(o.modify_environment(id, req).await?).into_response())
}

async fn v2_delete(State(o): State<Orchestrator>, Path(id): Path<Uuid>) -> ApiResult<Response> {
    o.delete_environment(id).await?;
    Ok(done().into_response())
}

async fn v2_clear(State(o): State<Orchestrator>, Path(id): Path<Uuid>) -> ApiResult<Response> {
    o.clear_environment(id).await?;
    Ok(done().into_response())
}

async fn halt(State(o): State<Orchestrator>, Tid(env): Tid) -> ApiResult<Response> {
    o.set_halted(env, true).await?;
    Ok(done().into_response())
}

async fn resume(State(o): State<Orchestrator>, Tid(env): Tid) -> ApiResult<Response> {
    o.set_halted(env, false).await?;
    Ok(done().into_response())
}
