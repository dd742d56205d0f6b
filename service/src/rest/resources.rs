//! Resources of the latest released version, their history, logs, actions and facts
//! (routes: docs/api.md).

use api::ResourceId;
use axum::Json;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Uri, header};
use axum::response::{IntoResponse, Response};
use orchestrator::paging::page_request;
use orchestrator::{ActionQuery, Orchestrator};
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

use super::error::{ApiError, ApiResult};
use super::extract::{Paging, Path, Query, Tid};
use super::shared_reads::{ReadKey, SharedReads};
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
        .get("/api/v1/resource/{id}", read.clients(Clients::API_AGENT), v1_resource)
}

type Pairs = Vec<(String, String)>;

async fn list(
    State(o): State<Orchestrator>,
    State(reads): State<Arc<SharedReads>>,
    Tid(env): Tid,
    uri: Uri,
    Query(pairs): Query<Pairs>,
) -> Response {
    // Consoles and scripts polling the same page during a deploy share one read (shared_reads.rs).
    let key =
        ReadKey { environment: env, route: "/api/v2/resource", query: uri.query().unwrap_or_default().to_string() };
    let answer = reads.read(key, move || async move { list_json(&o, env, &pairs).await }).await;
    match answer.as_ref() {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body.clone()).into_response(),
        Err(e) => ApiError::new(e.status, e.message.clone()).into_response(),
    }
}

async fn list_json(o: &Orchestrator, env: Uuid, pairs: &Pairs) -> ApiResult<Bytes> {
    let req = page_request(pairs)?;
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
    let body = json!({"data": page.items, "links": page.links, "metadata": metadata});
    serde_json::to_vec(&body).map(Bytes::from).map_err(|e| ApiError::internal(&e))
}

async fn details(State(o): State<Orchestrator>, Tid(env): Tid, Path(rid): Path<String>) -> ApiResult<Response> {
    Ok(data(o.released_resource(env, &rid).await?).into_response())
}

async fn history(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(rid): Path<String>,
    Paging(req): Paging,
) -> ApiResult<Response> {
    Ok(paged(o.resource_history(env, &rid, &req).await?).into_response())
}

async fn logs(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(rid): Path<String>,
    Paging(req): Paging,
) -> ApiResult<Response> {
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
            "first_timestamp" => query.first_timestamp = Some(timestamp_parameter(&key, &value)?),
            "last_timestamp" => query.last_timestamp = Some(timestamp_parameter(&key, &value)?),
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
    let actions = o.resource_actions(env, &query).await?;
    let links = action_page_links(&query, &actions);
    let mut body = json!({ "data": actions });
    if let Some(links) = links {
        body["links"] = links;
    }
    Ok(Json(body).into_response())
}

/// A time given as a query parameter, or the 400 naming it.
fn timestamp_parameter(key: &str, value: &str) -> ApiResult<api::Timestamp> {
    value.parse().map_err(|e| ApiError::bad_request(format!("{key}: {e}")))
}

/// Inmanta's links of a limited page of actions: `next` pages to older actions (before the
/// last one's start), `prev` to newer ones (after the first one's start), with the same filters.
fn action_page_links(query: &ActionQuery, actions: &[api::resource::ResourceAction]) -> Option<serde_json::Value> {
    let limit = query.limit.filter(|l| *l > 0)?;
    let (first, last) = (actions.first()?, actions.last()?);
    let mut common: Vec<(&str, String)> = [
        ("resource_type", &query.resource_type),
        ("agent", &query.agent),
        ("attribute", &query.attribute),
        ("attribute_value", &query.attribute_value),
        ("log_severity", &query.log_severity),
    ]
    .into_iter()
    .filter_map(|(key, value)| value.clone().map(|v| (key, v)))
    .collect();
    common.push(("limit", limit.to_string()));
    let link = |bound: &str, action: &api::resource::ResourceAction| {
        let mut params = common.clone();
        params.push((bound, action.started.to_string()));
        params.push(("action_id", action.action_id.to_string()));
        let query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={}", api::url::encode(v))).collect();
        format!("/api/v2/resource_actions?{}", query.join("&"))
    };
    Some(json!({ "next": link("last_timestamp", last), "prev": link("first_timestamp", first) }))
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
    let resource = o.v1_versioned_resource(env, version as i64, &id).await?;
    let logs = if p.logs.unwrap_or(false) {
        // The actions of this resource in this version, as Inmanta answers.
        let rvid = id.versioned(version);
        let query = ActionQuery { resource_id: Some(id.to_string()), ..Default::default() };
        let mut actions = o.resource_actions(env, &query).await?;
        actions.retain(|a| {
            a.resource_version_ids.contains(&rvid) && p.log_action.as_ref().is_none_or(|kind| a.action.as_str() == kind)
        });
        if let Some(limit) = p.log_limit.filter(|l| *l > 0) {
            actions.truncate(limit as usize);
        }
        actions
    } else {
        vec![]
    };
    Ok(Json(json!({"resource": resource, "logs": v1_actions(logs.iter())})).into_response())
}

/// Resource actions in the v1 form, which has no `send_event` (the v2 form answers it null).
pub(super) fn v1_actions<'a>(actions: impl Iterator<Item = &'a api::resource::ResourceAction>) -> serde_json::Value {
    actions
        .map(|action| {
            let mut value = json!(action);
            if let Some(fields) = value.as_object_mut() {
                fields.remove("send_event");
            }
            value
        })
        .collect()
}
