//! Versions of the desired state (routes: docs/api.md).

use api::ResourceId;
use api::version::{PutPartial, PutVersion};
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use orchestrator::{ActionQuery, Orchestrator};
use serde::Deserialize;
use serde_json::json;

use super::error::{ApiError, ApiResult};
use super::extract::{self, Paging, Path, Query, Tid};
use super::limits::BodyLimit;
use super::{Routes, data, done, empty, env, paged};
use orchestrator::auth::Clients;

pub fn router() -> Routes {
    let read = env("desired-state.read");
    let write = env("desired-state.write");
    Routes::new()
        .post("/api/v2/reserve_version", write.clients(Clients::API_COMPILER), reserve)
        .put("/api/v1/version", write.clients(Clients::API_COMPILER), put_version)
        .body(BodyLimit::Large)
        .get("/api/v1/version", read, v1_list)
        .put("/api/v2/version/partial", write.clients(Clients::API_COMPILER), put_partial)
        .body(BodyLimit::Large)
        .post("/api/v1/version/{id}", write.clients(Clients::API_COMPILER), release)
        .get("/api/v1/version/{id}", read, v1_get)
        .get("/api/v2/pip/config/{version}", env("pip-config.read").clients(Clients::API_AGENT), pip_config)
        .delete("/api/v1/version/{id}", write, v1_delete)
        .get("/api/v2/desiredstate", read, v2_list)
        .post("/api/v2/desiredstate/{version}/promote", write, promote)
        .get("/api/v2/desiredstate/{version}", env("resource.read"), version_resources)
        .get("/api/v2/desiredstate/{version}/resource/{rid}", env("resource.read"), version_resource)
        .get("/api/v2/desiredstate/diff/{from_version}/{to_version}", read, diff)
}

async fn reserve(State(o): State<Orchestrator>, Tid(env): Tid) -> ApiResult<Response> {
    Ok(data(o.reserve_version(env).await?).into_response())
}

async fn put_version(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    extract::Json(req): extract::Json<PutVersion>,
) -> ApiResult<Response> {
    let stored = o.put_version(env, req).await?;
    tracing::info!(%env, version = stored.version, released = stored.released, "version stored");
    Ok(empty())
}

async fn put_partial(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    extract::Json(req): extract::Json<PutPartial>,
) -> ApiResult<Response> {
    let stored = o.put_partial(env, req).await?;
    tracing::info!(%env, version = stored.version, released = stored.released, "partial version stored");
    Ok(data(stored.version).into_response())
}

/// Inmanta's client sends `id`, `push` and `agent_trigger_method`; only the path counts.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "accepted from Inmanta's client, never read")]
struct Release {
    #[serde(default)]
    id: Option<i64>,
    #[serde(default)]
    push: Option<bool>,
    #[serde(default)]
    agent_trigger_method: Option<String>,
}

async fn release(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(version): Path<i64>,
    extract::Json(_req): extract::Json<Release>,
) -> ApiResult<Response> {
    Ok(Json(json!({"model": o.release_version(env, version).await?})).into_response())
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
#[allow(dead_code, reason = "accepted from Inmanta's client, never read")]
struct Promote {
    #[serde(default)]
    trigger_method: Option<String>,
}

/// `GET /api/v2/pip/config/<version>`: the pip configuration the version was exported with
/// (`null` when it has none), as Inmanta's agents read it before installing the version's code.
async fn pip_config(State(o): State<Orchestrator>, Tid(env): Tid, Path(version): Path<i64>) -> ApiResult<Response> {
    Ok(data(o.get_version_model(env, version).await?.pip_config).into_response())
}

async fn promote(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(version): Path<i64>,
    extract::Json(_req): extract::Json<Promote>,
) -> ApiResult<Response> {
    o.release_version(env, version).await?;
    Ok(done().into_response())
}

#[derive(Deserialize)]
struct V1List {
    start: Option<i64>,
    limit: Option<i64>,
}

async fn v1_list(State(o): State<Orchestrator>, Tid(env): Tid, Query(q): Query<V1List>) -> ApiResult<Response> {
    let (start, limit) = match (q.start, q.limit) {
        (Some(start), Some(limit)) if start >= 0 && limit > 0 => (start, limit),
        (None, None) => (0, 1000),
        _ => return Err(ApiError::bad_request("give both start and limit (start >= 0, limit > 0), or neither")),
    };
    let (versions, count) = o.list_versions(env, start, limit).await?;
    Ok(Json(json!({"versions": versions, "start": start, "limit": limit, "count": count})).into_response())
}

/// `include_logs` adds to every resource its `actions`: those of the version (`log_filter`: of
/// one kind), newest first, at most `limit` over the version (0 or absent: all), as Inmanta does.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct V1Get {
    include_logs: Option<bool>,
    log_filter: Option<String>,
    limit: Option<u64>,
}

async fn v1_get(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(version): Path<i64>,
    Query(q): Query<V1Get>,
) -> ApiResult<Response> {
    if q.include_logs != Some(true) {
        return v1_get_streamed(o, env, version).await;
    }
    let model = o.get_version_model(env, version).await?;
    let mut resources = Vec::new();
    loop {
        let after = resources.last().and_then(|r: &serde_json::Value| r["resource_id"].as_str()).map(str::to_string);
        let page = o.version_resources_page(env, version, after.as_deref(), STREAM_PAGE).await?;
        let last_page = (page.len() as i64) < STREAM_PAGE;
        resources.extend(page);
        if last_page {
            break;
        }
    }
    if q.limit.is_some_and(|l| l > api::paging::MAX_LIMIT) {
        return Err(ApiError::bad_request(format!(
            "limit parameter can not exceed {}, got {}. To retrieve more entries, use /api/v2/resource_actions",
            api::paging::MAX_LIMIT,
            q.limit.unwrap_or_default()
        )));
    }
    let mut actions = o.resource_actions(env, &ActionQuery::default()).await?;
    actions.retain(|a| q.log_filter.as_ref().is_none_or(|kind| a.action.as_str() == kind) && a.version == version);
    if let Some(limit) = q.limit.filter(|l| *l > 0) {
        actions.truncate(limit as usize);
    }
    for resource in &mut resources {
        let rvid = ResourceId::parse(resource["resource_id"].as_str().unwrap_or_default())
            .map(|id| id.versioned(version as u64))
            .ok();
        resource["actions"] = super::resources::v1_actions(
            actions.iter().filter(|a| rvid.as_ref().is_some_and(|rvid| a.resource_version_ids.contains(rvid))),
        );
    }
    Ok(Json(json!({"model": model, "resources": resources, "unknowns": []})).into_response())
}

/// Resources per page of the streamed `GET /api/v1/version/<v>`.
const STREAM_PAGE: i64 = 1000;

/// `GET /api/v1/version/<v>`: the model and every resource of the version, streamed a page of
/// resources at a time, so a 200 000-resource version is never held whole (in memory or in one
/// long database read). An error after the first byte ends the body early (logged).
async fn v1_get_streamed(o: Orchestrator, env: uuid::Uuid, version: i64) -> ApiResult<Response> {
    let model = o.get_version_model(env, version).await?;
    let head = format!("{{\"model\":{},\"resources\":[", serde_json::to_string(&model).unwrap_or_default());
    struct Cursor {
        after: Option<String>,
        first: bool,
        done: bool,
    }
    let pages = futures_util::stream::unfold(Cursor { after: None, first: true, done: false }, move |mut cursor| {
        let o = o.clone();
        async move {
            if cursor.done {
                return None;
            }
            let page = match o.version_resources_page(env, version, cursor.after.as_deref(), STREAM_PAGE).await {
                Ok(page) => page,
                Err(e) => {
                    tracing::error!(%env, version, error = %e, "streaming a version failed");
                    cursor.done = true;
                    return Some((Err(std::io::Error::other(e.to_string())), cursor));
                }
            };
            cursor.done = (page.len() as i64) < STREAM_PAGE;
            cursor.after = page.last().and_then(|r| r["resource_id"].as_str()).map(str::to_string);
            let mut chunk = String::new();
            for resource in &page {
                if !cursor.first {
                    chunk.push(',');
                }
                cursor.first = false;
                chunk.push_str(&resource.to_string());
            }
            if cursor.done {
                chunk.push_str("],\"unknowns\":[]}");
            }
            Some((Ok(axum::body::Bytes::from(chunk)), cursor))
        }
    });
    let body = futures_util::stream::once(async move { Ok(axum::body::Bytes::from(head)) }).chain(pages);
    Ok(([(axum::http::header::CONTENT_TYPE, "application/json")], axum::body::Body::from_stream(body)).into_response())
}

async fn v1_delete(State(o): State<Orchestrator>, Tid(env): Tid, Path(version): Path<i64>) -> ApiResult<Response> {
    o.delete_version(env, version).await?;
    Ok(empty())
}

async fn v2_list(State(o): State<Orchestrator>, Tid(env): Tid, Paging(req): Paging) -> ApiResult<Response> {
    Ok(paged(o.desired_state_versions(env, &req).await?).into_response())
}

async fn version_resources(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(version): Path<i64>,
    Paging(req): Paging,
) -> ApiResult<Response> {
    Ok(paged(o.versioned_resources(env, version, &req).await?).into_response())
}

async fn version_resource(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path((version, rid)): Path<(i64, String)>,
) -> ApiResult<Response> {
    Ok(data(o.versioned_resource(env, version, &rid).await?).into_response())
}

async fn diff(State(o): State<Orchestrator>, Tid(env): Tid, Path((from, to)): Path<(i64, i64)>) -> ApiResult<Response> {
    Ok(data(o.diff_versions(env, from, to).await?).into_response())
}
