//! Discovered resources (`/api/v2/discovered`, docs/api.md): agents report what their
//! discovery handlers found; operators list, read and forget them. Reporting is for agents only
//! (as in Inmanta); the batch routes answer with and without the trailing `/` Inmanta's client
//! sends.

use api::resource::DiscoveredResourceInput;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use orchestrator::Orchestrator;
use orchestrator::auth::Clients;
use serde::Deserialize;

use super::error::ApiResult;
use super::extract::{self, Paging, Path, Tid};
use super::limits::BodyLimit;
use super::{Routes, data, done, env, paged};

pub fn router() -> Routes {
    let report = || env("agent.write").clients(Clients::AGENT);
    let read = || env("discovered-resources.read").clients(Clients::API_AGENT);
    let delete = || env("discovered-resources.delete").clients(Clients::API_AGENT);
    Routes::new()
        .post("/api/v2/discovered/{discovered_resource_id}", report(), create)
        .post("/api/v2/discovered", report(), create_batch)
        .body(BodyLimit::Large)
        .post("/api/v2/discovered/", report(), create_batch)
        .body(BodyLimit::Large)
        .get("/api/v2/discovered/{discovered_resource_id}", read(), get_one)
        .get("/api/v2/discovered", read(), list)
        .delete("/api/v2/discovered/{discovered_resource_id}", delete(), delete_one)
        .delete("/api/v2/discovered", delete(), delete_batch)
        .delete("/api/v2/discovered/", delete(), delete_batch)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateOne {
    discovery_resource_id: String,
    values: serde_json::Value,
}

async fn create(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(discovered_resource_id): Path<String>,
    extract::Json(body): extract::Json<CreateOne>,
) -> ApiResult<Response> {
    let item = DiscoveredResourceInput {
        discovered_resource_id,
        values: body.values,
        discovery_resource_id: body.discovery_resource_id,
    };
    o.create_discovered_resources(env, std::slice::from_ref(&item)).await?;
    Ok(done().into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBatch {
    discovered_resources: Vec<DiscoveredResourceInput>,
}

async fn create_batch(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    extract::Json(body): extract::Json<CreateBatch>,
) -> ApiResult<Response> {
    o.create_discovered_resources(env, &body.discovered_resources).await?;
    Ok(done().into_response())
}

async fn get_one(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(discovered_resource_id): Path<String>,
) -> ApiResult<Response> {
    Ok(data(o.discovered_resource(env, &discovered_resource_id).await?).into_response())
}

async fn list(State(o): State<Orchestrator>, Tid(env): Tid, Paging(req): Paging) -> ApiResult<Response> {
    Ok(paged(o.discovered_resources(env, &req).await?).into_response())
}

async fn delete_one(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(discovered_resource_id): Path<String>,
) -> ApiResult<Response> {
    o.delete_discovered_resource(env, &discovered_resource_id).await?;
    Ok(done().into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteBatch {
    discovered_resource_ids: Vec<String>,
}

async fn delete_batch(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    extract::Json(body): extract::Json<DeleteBatch>,
) -> ApiResult<Response> {
    o.delete_discovered_resources(env, &body.discovered_resource_ids).await?;
    Ok(done().into_response())
}
