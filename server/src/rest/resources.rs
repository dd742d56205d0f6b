//! Resources of the latest released version, their history, logs, actions and facts
//! (reference/api.md §5.9, §5.13).

use api::ResourceId;
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use orchestrator::paging::PageRequest;
use orchestrator::{ActionQuery, Orchestrator};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use super::error::{ApiError, ApiResult};
use super::extract::{Path, Query, Tid};
use super::{Routes, data, env, paged};
use orchestrator::auth::Clients;

pub fn router() -> Routes {
    let read = env("resource.read");
    Routes::new()
        .get("/api/v2/resource", read, list)
        .get("/api/v2/resource/{rid}", read, details)
        .get("/api/v2/resource/{rid}/history", read, history)
        .get("/api/v2/resource/{rid}/logs", read, logs)
        .get("/api/v2/resource/{rid}/facts", env("fact.read").clients(Clients::API_AGENT), facts)
        .get("/api/v2/resource/{rid}/facts/{id}", env("fact.read").clients(Clients::API_AGENT), fact)
        .get("/api/v2/resource_actions", read, actions)
        .get("/api/v1/resource/{rvid}", read.clients(Clients::API_AGENT), v1_resource)
}

type Pairs = Vec<(String, String)>;

async fn list(State(o): State<Orchestrator>, Tid(env): Tid, Query(pairs): Query<Pairs>) -> ApiResult<Response> {
    let req = PageRequest::from_query(&pairs)?;
    let summary = match pairs.iter().rev().find(|(k, _)| k == "deploy_summary").map(|(_, v)| v.as_str()) {
        None => false,
        Some(text) => super::lenient::parse_bool(text)
            .ok_or_else(|| ApiError::bad_request(format!("deploy_summary must be true or false, got {text:?}")))?,
    };
    let (page, summary) = o.released_resources(env, &req, summary).await?;
    let mut metadata = serde_json::to_value(&page.metadata).unwrap_or_default();
    if let Some(summary) = summary {
        metadata["deploy_summary"] = json!(summary);
    }
    Ok(Json(json!({"data": page.items, "links": page.links, "metadata": metadata})).into_response())
}

async fn details(State(o): State<Orchestrator>, Tid(env): Tid, Path(rid): Path<String>) -> ApiResult<Response> {
    Ok(data(o.released_resource(env, &rid).await?).into_response())
}

async fn history(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(rid): Path<String>,
    Query(pairs): Query<Pairs>,
) -> ApiResult<Response> {
    let req = PageRequest::from_query(&pairs)?;
    Ok(paged(o.resource_history(env, &rid, &req).await?).into_response())
}

async fn logs(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(rid): Path<String>,
    Query(pairs): Query<Pairs>,
) -> ApiResult<Response> {
    let req = PageRequest::from_query(&pairs)?;
    Ok(paged(o.resource_logs(env, &rid, &req).await?).into_response())
}

async fn facts(State(o): State<Orchestrator>, Tid(env): Tid, Path(rid): Path<String>) -> ApiResult<Response> {
    Ok(data(o.resource_facts(env, &rid).await?).into_response())
}

async fn fact(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path((rid, id)): Path<(String, Uuid)>,
) -> ApiResult<Response> {
    Ok(data(o.resource_fact(env, &rid, id).await?).into_response())
}

/// `GET /api/v2/resource_actions`; `exclude_changes` may repeat, so the query is read as pairs.
async fn actions(State(o): State<Orchestrator>, Tid(env): Tid, Query(pairs): Query<Pairs>) -> ApiResult<Response> {
    let mut query = ActionQuery::default();
    for (key, value) in pairs {
        let text = Some(value.clone());
        match key.as_str() {
            "resource_type" => query.resource_type = text,
            "agent" => query.agent = text,
            "attribute" => query.attribute = text,
            "attribute_value" => query.attribute_value = text,
            "log_severity" => query.log_severity = text,
            "first_timestamp" => query.first_timestamp = text,
            "last_timestamp" => query.last_timestamp = text,
            "exclude_changes" => query.exclude_changes.push(value),
            "limit" => {
                query.limit = Some(value.parse().map_err(|_| {
                    ApiError::bad_request(format!("limit must be a non-negative number, got {value:?}"))
                })?)
            }
            "action_id" => {
                query.action_id = Some(
                    Uuid::parse_str(&value)
                        .map_err(|_| ApiError::bad_request(format!("action_id must be a UUID, got {value:?}")))?,
                )
            }
            other => return Err(ApiError::bad_request(format!("unknown parameter {other:?} for resource_actions"))),
        }
    }
    Ok(data(o.resource_actions(env, &query).await?).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct V1ResourceParams {
    logs: Option<bool>,
    log_action: Option<String>,
    log_limit: Option<u64>,
}

/// `GET /api/v1/resource/<rvid>`: one resource of one version, with its actions when asked.
async fn v1_resource(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(rvid): Path<String>,
    Query(p): Query<V1ResourceParams>,
) -> ApiResult<Response> {
    let (id, version) = ResourceId::parse_versioned(&rvid).map_err(|e| ApiError::bad_request(e.to_string()))?;
    if version == 0 {
        return Err(ApiError::bad_request(format!("{rvid} is not a resource version id: add ,v=<version>")));
    }
    let resource = o.versioned_resource(env, version as i64, &id.to_string()).await?;
    let logs = if p.logs.unwrap_or(false) {
        let query = ActionQuery { resource_id: Some(id.to_string()), limit: p.log_limit, ..Default::default() };
        let mut actions = o.resource_actions(env, &query).await?;
        if let Some(kind) = &p.log_action {
            actions.retain(|a| &a.action == kind);
        }
        actions
    } else {
        vec![]
    };
    Ok(Json(json!({"resource": resource, "logs": logs})).into_response())
}
