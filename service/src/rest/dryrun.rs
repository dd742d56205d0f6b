//! Dry runs, v1 and v2 (routes: docs/api.md).

use std::sync::Arc;

use api::version::ResourceDiffStatus;
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use orchestrator::Orchestrator;
use orchestrator::scheduler::Schedulers;
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::error::{ApiError, ApiResult};
use super::extract::{self, Path, Query, Tid};
use super::limits::BodyLimit;
use super::{Routes, data, empty, env};
use orchestrator::auth::Clients;

pub fn router() -> Routes {
    Routes::new()
        .post("/api/v2/dryrun/{version}", env("dryrun.write"), trigger)
        .post("/api/v2/dryrun_filtered", env("dryrun.write"), trigger_filtered)
        .get("/api/v2/dryrun/{version}", env("dryrun.read"), list)
        .get("/api/v2/dryrun/{version}/{report_id}", env("dryrun.read"), report)
        .get("/api/v1/dryrun", env("dryrun.read"), v1_list)
        .post("/api/v1/dryrun/{id}", env("dryrun.write"), v1_request)
        .get("/api/v1/dryrun/{id}", env("dryrun.read"), v1_report)
        .put("/api/v1/dryrun/{id}", env("dryrun.write").clients(Clients::AGENT), v1_update)
        .body(BodyLimit::Large)
}

async fn trigger(
    State(schedulers): State<Arc<Schedulers>>,
    Tid(env): Tid,
    Path(version): Path<i64>,
) -> ApiResult<Response> {
    Ok(data(schedulers.dry_run(env, version).await?).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilteredBody {
    filter: Option<Value>,
    context: Option<serde_json::Map<String, Value>>,
}

/// Resources read per page while the filter's matches are collected.
const FILTER_PAGE: u64 = 10_000;

/// Inmanta 20.1's `dryrun_filtered`: a dry run of the resources the GraphQL `resources` query
/// selects with `filter` (every resource without one), which must all be of one version; the
/// filter and `context` are stored with it. Answers the dry run's id and version.
async fn trigger_filtered(
    State(o): State<Orchestrator>,
    State(schedulers): State<Arc<Schedulers>>,
    Tid(env): Tid,
    extract::Json(body): extract::Json<FilteredBody>,
) -> ApiResult<Response> {
    let environment = o.get_environment(env, Default::default()).await?;
    if environment.halted {
        return Err(ApiError::new(
            axum::http::StatusCode::CONFLICT,
            format!("The environment {} ({env}) is halted", environment.name),
        ));
    }
    let filter = crate::graphql::filter_from_json(env, body.filter.clone()).map_err(ApiError::bad_request)?;
    let mut request = orchestrator::resource_pages::KeysetRequest { limit: FILTER_PAGE, ..Default::default() };
    let mut only = std::collections::HashSet::new();
    let mut versions = std::collections::BTreeSet::new();
    loop {
        let page = o.resource_state_page(&filter, &request).await?;
        for row in &page.rows {
            only.insert(row.resource.resource_id.clone());
            versions.insert(row.resource.model_version);
        }
        match (page.excess, page.rows.last()) {
            (Some(_), Some(last)) => request.after = Some(last.keys.clone()),
            _ => break,
        }
    }
    let version = match versions.len() {
        0 => {
            return Err(ApiError::new(
                axum::http::StatusCode::NOT_FOUND,
                "No resource matched the filter, while a dryrun needs at least one resource.",
            ));
        }
        1 => *versions.first().expect("one version"),
        _ => {
            let listed: Vec<String> = versions.iter().map(i64::to_string).collect();
            return Err(ApiError::bad_request(format!(
                "the resources the filter matches belong to versions {}: a dry run runs on one version; \
                 narrow the filter (modelVersion, or isOrphan: false)",
                listed.join(", ")
            )));
        }
    };
    let scope = orchestrator::dryrun::DryRunScope {
        only: Some(only),
        resource_filter: body.filter.filter(|f| !f.is_null()),
        context: body.context.map(Value::Object),
    };
    let id = schedulers.dry_run_of(env, version, &scope).await?;
    Ok(data(json!({"id": id, "model": version})).into_response())
}

async fn list(State(o): State<Orchestrator>, Tid(env): Tid, Path(version): Path<i64>) -> ApiResult<Response> {
    o.get_version_model(env, version).await?;
    Ok(data(o.dryruns(env, Some(version)).await?).into_response())
}

async fn report(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path((version, id)): Path<(i64, Uuid)>,
) -> ApiResult<Response> {
    let report = o.dryrun_report(env, id).await?;
    if report.summary.model != version {
        return Err(ApiError::new(
            axum::http::StatusCode::NOT_FOUND,
            format!("dry run {id} is of version {}, not {version}", report.summary.model),
        ));
    }
    Ok(data(report).into_response())
}

/// The v1 form of a report: resources keyed by resource version id.
async fn v1_form(o: &Orchestrator, env: Uuid, id: Uuid) -> ApiResult<Value> {
    let (summary, reported) = o.dryrun_changes(env, id).await?;
    let version = summary.model;
    let mut resources = serde_json::Map::new();
    for diff in reported {
        let rid = diff.resource_id;
        let changes = diff.changes;
        let rvid = rid.versioned(version as u64);
        // Inmanta's v1 shape: what an agent reported has the id fields with the version and no
        // diff status; what the server decided alone (agent down, undefined) has the status.
        let mut id_fields = json!({"entity_type": rid.entity_type, "agent_name": rid.agent,
                                   "attribute": rid.attribute, "attribute_value": rid.value});
        let mut entry = json!({"changes": changes, "id": rvid});
        match diff.status {
            ResourceDiffStatus::Added
            | ResourceDiffStatus::Modified
            | ResourceDiffStatus::Deleted
            | ResourceDiffStatus::Unmodified => id_fields["version"] = json!(version),
            status => entry["diff_status"] = json!(status),
        }
        entry["id_fields"] = id_fields;
        resources.insert(rvid.to_string(), entry);
    }
    let mut dryrun = serde_json::to_value(&summary).unwrap_or_default();
    dryrun["resources"] = Value::Object(resources);
    Ok(dryrun)
}

async fn v1_request(
    State(o): State<Orchestrator>,
    State(schedulers): State<Arc<Schedulers>>,
    Tid(env): Tid,
    Path(version): Path<i64>,
) -> ApiResult<Response> {
    let id = schedulers.dry_run(env, version).await?;
    // Inmanta answers with the dry run as it was created: what the server decided alone (agent
    // down, undefined) and every other resource still to do. The in-process agents may have
    // reported some already; those are left to the report, as on Inmanta.
    let mut dryrun = v1_form(&o, env, id).await?;
    let mut reported = 0;
    if let Some(resources) = dryrun["resources"].as_object_mut() {
        resources.retain(|_, entry| {
            let decided_by_the_server = entry.get("diff_status").is_some();
            reported += usize::from(!decided_by_the_server);
            decided_by_the_server
        });
    }
    if let Some(todo) = dryrun["todo"].as_u64() {
        dryrun["todo"] = json!(todo + reported as u64);
    }
    Ok(Json(json!({"dryrun": dryrun})).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct V1ListQuery {
    version: Option<i64>,
}

async fn v1_list(State(o): State<Orchestrator>, Tid(env): Tid, Query(q): Query<V1ListQuery>) -> ApiResult<Response> {
    let runs = o.dryruns(env, q.version).await?;
    let runs: Vec<Value> = runs
        .into_iter()
        .map(|d| json!({"id": d.id, "version": d.model, "date": d.date, "total": d.total, "todo": d.todo}))
        .collect();
    Ok(Json(json!({"dryruns": runs})).into_response())
}

async fn v1_report(State(o): State<Orchestrator>, Tid(env): Tid, Path(id): Path<Uuid>) -> ApiResult<Response> {
    Ok(Json(json!({"dryrun": v1_form(&o, env, id).await?})).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct V1Update {
    resource: String,
    changes: serde_json::Map<String, Value>,
}

/// An executor reports one resource of a dry run.
async fn v1_update(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(id): Path<Uuid>,
    extract::Json(body): extract::Json<V1Update>,
) -> ApiResult<Response> {
    let status = orchestrator::dryrun::status_of_outcome(api::HandlerStatus::Dry, &body.changes);
    o.dryrun_update(env, id, &body.resource, status, &body.changes).await?;
    Ok(empty())
}
