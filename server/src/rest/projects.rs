//! Projects, v1 and v2 (reference/api.md §5.1).

use api::ProjectV1;
use api::environment::{ProjectCreate, ProjectModify};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use orchestrator::Orchestrator;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use super::error::ApiResult;
use super::extract::{self, Path, Query};
use super::{AppState, data, done, empty};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/project", put(v1_create).get(v1_list))
        .route("/api/v1/project/{id}", get(v1_get).post(v1_modify).delete(v1_delete))
        .route("/api/v2/project", put(v2_create).get(v2_list))
        .route("/api/v2/project/{id}", get(v2_get).post(v2_modify).delete(v2_delete))
}

/// `environment_details` is accepted for compatibility; Inmanta 20.1 answers with full
/// environments either way (see reference/inmanta-api-exchanges.jsonl), and so do we.
#[derive(Deserialize)]
#[allow(dead_code)]
struct Details {
    #[serde(default)]
    environment_details: bool,
}

async fn v1_create(
    State(o): State<Orchestrator>,
    extract::Json(req): extract::Json<ProjectCreate>,
) -> ApiResult<Response> {
    let project = o.create_project(&req.name, req.project_id).await?;
    Ok(Json(json!({"project": ProjectV1::from(&project)})).into_response())
}

async fn v1_list(State(o): State<Orchestrator>) -> ApiResult<Response> {
    let projects: Vec<ProjectV1> = o.list_projects().await?.iter().map(ProjectV1::from).collect();
    Ok(Json(json!({"projects": projects})).into_response())
}

async fn v1_get(State(o): State<Orchestrator>, Path(id): Path<Uuid>) -> ApiResult<Response> {
    let project = o.get_project(id).await?;
    Ok(Json(json!({"project": ProjectV1::from(&project)})).into_response())
}

async fn v1_modify(
    State(o): State<Orchestrator>,
    Path(id): Path<Uuid>,
    extract::Json(req): extract::Json<ProjectModify>,
) -> ApiResult<Response> {
    let project = o.modify_project(id, &req.name).await?;
    Ok(Json(json!({"project": ProjectV1::from(&project)})).into_response())
}

async fn v1_delete(State(o): State<Orchestrator>, Path(id): Path<Uuid>) -> ApiResult<Response> {
    o.delete_project(id).await?;
    Ok(empty())
}

async fn v2_create(
    State(o): State<Orchestrator>,
    extract::Json(req): extract::Json<ProjectCreate>,
) -> ApiResult<Response> {
    Ok(data(o.create_project(&req.name, req.project_id).await?).into_response())
}

async fn v2_list(State(o): State<Orchestrator>, Query(q): Query<Details>) -> ApiResult<Response> {
    let _ = q;
    Ok(data(o.list_projects().await?).into_response())
}

async fn v2_get(State(o): State<Orchestrator>, Path(id): Path<Uuid>, Query(q): Query<Details>) -> ApiResult<Response> {
    let _ = q;
    Ok(data(o.get_project(id).await?).into_response())
}

async fn v2_modify(
    State(o): State<Orchestrator>,
    Path(id): Path<Uuid>,
    extract::Json(req): extract::Json<ProjectModify>,
) -> ApiResult<Response> {
    Ok(data(o.modify_project(id, &req.name).await?).into_response())
}

async fn v2_delete(State(o): State<Orchestrator>, Path(id): Path<Uuid>) -> ApiResult<Response> {
    o.delete_project(id).await?;
    Ok(done().into_response())
}
