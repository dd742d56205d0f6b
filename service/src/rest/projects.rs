//! Projects, v1 and v2 (routes: docs/api.md).

use api::environment::{ProjectCreate, ProjectModify};
use api::{Project, ProjectV1};
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use orchestrator::Orchestrator;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use super::error::ApiResult;
use super::extract::{self, Path, Query};
use super::{Caller, Routes, data, done, empty, global};
use orchestrator::auth::Principal;

pub fn router() -> Routes {
    Routes::new()
        .put("/api/v1/project", global("project.create"), v1_create)
        .get("/api/v1/project", global("project.read"), v1_list)
        .get("/api/v1/project/{id}", global("project.read"), v1_get)
        .post("/api/v1/project/{id}", global("project.modify"), v1_modify)
        .delete("/api/v1/project/{id}", global("project.delete"), v1_delete)
        .put("/api/v2/project", global("project.create"), v2_create)
        .get("/api/v2/project", global("project.read"), v2_list)
        .get("/api/v2/project/{id}", global("project.read"), v2_get)
        .post("/api/v2/project/{id}", global("project.modify"), v2_modify)
        .delete("/api/v2/project/{id}", global("project.delete"), v2_delete)
}

/// `environment_details` is accepted for compatibility; Inmanta 20.1 answers with full
/// environments either way (seen on scripts/inmanta-reference-server.sh's server), and so do we.
#[derive(Deserialize)]
#[allow(dead_code, reason = "accepted for compatibility, never read")]
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

/// Projects are listed with only the environments the caller may see.
fn visible(caller: &Principal, mut project: Project) -> Project {
    project.environments.retain(|e| caller.can_see(e.id));
    project
}

async fn v1_list(State(o): State<Orchestrator>, Caller(caller): Caller) -> ApiResult<Response> {
    let projects: Vec<ProjectV1> =
        o.list_projects().await?.into_iter().map(|p| ProjectV1::from(&visible(&caller, p))).collect();
    Ok(Json(json!({"projects": projects})).into_response())
}

async fn v1_get(State(o): State<Orchestrator>, Caller(caller): Caller, Path(id): Path<Uuid>) -> ApiResult<Response> {
    let project = visible(&caller, o.get_project(id).await?);
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

async fn v2_list(
    State(o): State<Orchestrator>,
    Caller(caller): Caller,
    Query(q): Query<Details>,
) -> ApiResult<Response> {
    let _ = q;
    let projects: Vec<Project> = o.list_projects().await?.into_iter().map(|p| visible(&caller, p)).collect();
    Ok(data(projects).into_response())
}

async fn v2_get(
    State(o): State<Orchestrator>,
    Caller(caller): Caller,
    Path(id): Path<Uuid>,
    Query(q): Query<Details>,
) -> ApiResult<Response> {
    let _ = q;
    Ok(data(visible(&caller, o.get_project(id).await?)).into_response())
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
