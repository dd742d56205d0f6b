//! Parameters and facts, v1 and v2 (routes: docs/api.md).

use api::operations::SetParameter;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

use orchestrator::Orchestrator;
use orchestrator::parameters::{NewParameter, ParamLookup};
use orchestrator::scheduler::Schedulers;
use serde::Deserialize;
use serde_json::json;

use super::error::{ApiError, ApiResult};
use super::extract::{self, Paging, Path, Query, Tid};
use super::limits::BodyLimit;
use super::{Routes, data, empty, env, paged};
use orchestrator::auth::Clients;

pub fn router() -> Routes {
    let everyone = |label| env(label).clients(Clients::ALL);
    Routes::new()
        .get("/api/v1/parameter/{id}", everyone("parameter.read"), v1_get)
        .put("/api/v1/parameter/{id}", everyone("parameter.write"), v1_set)
        .delete("/api/v1/parameter/{id}", everyone("parameter.write"), v1_delete)
        .post("/api/v1/parameter", env("parameter.read").clients(Clients::API_COMPILER), v1_list)
        .put("/api/v1/parameters", everyone("parameter.write"), v1_set_many)
        .body(BodyLimit::Large)
        .get("/api/v2/parameters", env("parameter.read"), v2_parameters)
        .put("/api/v2/parameters/{name}", everyone("parameter.write"), v2_set_parameter)
        .get("/api/v2/facts", env("fact.read"), v2_facts)
        .put("/api/v2/facts/{name}", everyone("fact.write"), v2_set_fact)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceParam {
    resource_id: Option<String>,
}

async fn v1_get(
    State(o): State<Orchestrator>,
    State(schedulers): State<Arc<Schedulers>>,
    Tid(env): Tid,
    Path(name): Path<String>,
    Query(q): Query<ResourceParam>,
) -> ApiResult<Response> {
    match o.get_param(env, &name, q.resource_id.as_deref()).await? {
        ParamLookup::Found(parameter) => Ok(Json(json!({"parameter": parameter})).into_response()),
        // Inmanta's answer: the agent is asked for the resource's facts, and the caller retries
        // once it reported them.
        ParamLookup::AskAgents => {
            if let Some(rid) = q.resource_id.as_deref().and_then(|r| api::ResourceId::parse_versioned(r).ok()) {
                schedulers.request_facts(env, &rid.0).await?;
            }
            Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "Agents queried for resource parameter."))
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct V1Set {
    source: String,
    value: serde_json::Value,
    #[serde(default)]
    resource_id: Option<String>,
    #[serde(default)]
    metadata: Option<serde_json::Value>,
    #[serde(default)]
    recompile: bool,
    #[serde(default)]
    expires: Option<bool>,
}

async fn v1_set(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(name): Path<String>,
    extract::Json(body): extract::Json<V1Set>,
) -> ApiResult<Response> {
    let new = NewParameter {
        name,
        source: body.source,
        value: body.value,
        resource_id: body.resource_id,
        metadata: body.metadata,
        expires: body.expires,
        recompile: body.recompile,
    };
    let fact = o.set_parameter(env, new).await?;
    Ok(Json(json!({"parameter": fact})).into_response())
}

async fn v1_delete(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(name): Path<String>,
    Query(q): Query<ResourceParam>,
) -> ApiResult<Response> {
    let warnings = o.delete_param(env, &name, q.resource_id.as_deref()).await?;
    if warnings.is_empty() {
        return Ok(empty());
    }
    Ok(Json(json!({"metadata": {"warnings": warnings}})).into_response())
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct V1List {
    #[serde(default)]
    query: serde_json::Map<String, serde_json::Value>,
}

async fn v1_list(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    extract::Json(body): extract::Json<V1List>,
) -> ApiResult<Response> {
    let parameters = o.list_params(env, &body.query).await?;
    Ok(Json(json!({
        "parameters": parameters,
        "expire": orchestrator::parameters::FACT_EXPIRE_SECONDS,
        "now": orchestrator::store::now(),
    }))
    .into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct V1Many {
    parameters: Vec<V1ManyItem>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct V1ManyItem {
    id: String,
    source: String,
    value: serde_json::Value,
    #[serde(default)]
    resource_id: Option<String>,
    #[serde(default)]
    expires: Option<bool>,
    #[serde(default)]
    metadata: Option<serde_json::Value>,
}

async fn v1_set_many(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    extract::Json(body): extract::Json<V1Many>,
) -> ApiResult<Response> {
    for item in body.parameters {
        let new = NewParameter {
            name: item.id,
            source: item.source,
            value: item.value,
            resource_id: item.resource_id,
            metadata: item.metadata,
            expires: item.expires,
            recompile: false,
        };
        o.set_parameter(env, new).await?;
    }
    Ok(empty())
}

async fn v2_parameters(State(o): State<Orchestrator>, Tid(env): Tid, Paging(req): Paging) -> ApiResult<Response> {
    Ok(paged(o.parameters(env, &req).await?).into_response())
}

async fn v2_facts(State(o): State<Orchestrator>, Tid(env): Tid, Paging(req): Paging) -> ApiResult<Response> {
    Ok(paged(o.facts(env, &req).await?).into_response())
}

async fn v2_set_parameter(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(name): Path<String>,
    extract::Json(body): extract::Json<SetParameter>,
) -> ApiResult<Response> {
    if body.resource_id.is_some() {
        return Err(ApiError::bad_request("a parameter has no resource_id; use PUT /api/v2/facts/<name> for facts"));
    }
    let new = NewParameter {
        name,
        source: body.source,
        value: body.value,
        resource_id: None,
        metadata: body.metadata,
        expires: None,
        recompile: body.recompile,
    };
    let fact = o.set_parameter(env, new).await?;
    let parameter = api::operations::Parameter {
        id: fact.id,
        name: fact.name,
        value: fact.value,
        environment: fact.environment,
        source: fact.source,
        updated: fact.updated,
        metadata: fact.metadata,
    };
    Ok(data(parameter).into_response())
}

async fn v2_set_fact(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(name): Path<String>,
    extract::Json(body): extract::Json<SetParameter>,
) -> ApiResult<Response> {
    let Some(resource_id) = body.resource_id.filter(|r| !r.is_empty()) else {
        return Err(ApiError::bad_request("a fact needs the resource_id of the resource it describes"));
    };
    let new = NewParameter {
        name,
        source: body.source,
        value: body.value,
        resource_id: Some(resource_id),
        metadata: body.metadata,
        expires: Some(body.expires.unwrap_or(true)),
        recompile: body.recompile,
    };
    Ok(data(o.set_parameter(env, new).await?).into_response())
}
