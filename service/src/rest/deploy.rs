//! Deploy and repair triggers, and what the scheduler holds (routes: docs/api.md).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use orchestrator::Orchestrator;
use orchestrator::scheduler::{Schedulers, Scope};
use serde::Deserialize;
use serde_json::{Value, json};

use super::error::{ApiError, ApiResult};
use super::extract::{self, Tid};
use super::{Routes, data, env};

pub fn router() -> Routes {
    Routes::new()
        .post("/api/v1/deploy", env("deploy"), deploy)
        .post("/api/v2/deploy_filtered", env("deploy"), deploy_filtered)
        .get("/api/v2/scheduler_status", env("status.read"), status)
}

/// `push_incremental_deploy` deploys what is dirty; `push_full_deploy` (the default) repairs.
fn is_repair(method: Option<&str>) -> ApiResult<bool> {
    match method.unwrap_or("push_full_deploy") {
        "push_full_deploy" => Ok(true),
        "push_incremental_deploy" => Ok(false),
        other => Err(ApiError::bad_request(format!(
            "agent_trigger_method must be push_full_deploy or push_incremental_deploy, got {other:?}"
        ))),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeployBody {
    #[serde(default)]
    agent_trigger_method: Option<String>,
    #[serde(default)]
    agents: Option<Vec<String>>,
}

async fn deploy(
    State(o): State<Orchestrator>,
    State(schedulers): State<Arc<Schedulers>>,
    Tid(env): Tid,
    extract::Json(body): extract::Json<DeployBody>,
) -> ApiResult<Response> {
    let repair = is_repair(body.agent_trigger_method.as_deref())?;
    let known: Vec<String> =
        o.agents(env, &Default::default()).await?.items.into_iter().map(|a| a.agent.name).collect();
    if known.is_empty() {
        return Err(ApiError::new(
            axum::http::StatusCode::NOT_FOUND,
            "this environment has no released version with agents to deploy",
        ));
    }
    let (agents, unknown): (Vec<String>, Vec<String>) = match body.agents {
        Some(asked) => asked.into_iter().partition(|a| known.contains(a)),
        None => (known.clone(), vec![]),
    };
    if agents.is_empty() {
        return Err(ApiError::new(
            axum::http::StatusCode::NOT_FOUND,
            format!("none of the agents {unknown:?} exists in this environment"),
        ));
    }
    schedulers.deploy(env, repair, Scope { agents: Some(agents.clone()), resources: None }).await?;
    let mut answer = json!({"agents": agents});
    if !unknown.is_empty() {
        answer["metadata"] = json!({"warnings": [format!("unknown agents ignored: {}", unknown.join(", "))]});
    }
    Ok(Json(answer).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FilteredBody {
    #[serde(default)]
    filter: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    agent_trigger_method: Option<String>,
}

/// A string filter `{eq, neq, contains, notContains}` against one value.
fn string_matches(filter: &Value, value: &str, field: &str) -> ApiResult<bool> {
    let object = filter
        .as_object()
        .ok_or_else(|| ApiError::bad_request(format!("filter {field} must be an object like {{\"eq\": \"...\"}}")))?;
    let mut ok = true;
    for (op, operand) in object {
        let operand =
            operand.as_str().ok_or_else(|| ApiError::bad_request(format!("filter {field}.{op} must be a string")))?;
        ok &= match op.as_str() {
            "eq" => value == operand,
            "neq" => value != operand,
            "contains" => value.contains(operand),
            "notContains" => !value.contains(operand),
            other => return Err(ApiError::bad_request(format!("filter {field}: unknown operator {other:?}"))),
        };
    }
    Ok(ok)
}

async fn deploy_filtered(
    State(o): State<Orchestrator>,
    State(schedulers): State<Arc<Schedulers>>,
    Tid(env): Tid,
    extract::Json(body): extract::Json<FilteredBody>,
) -> ApiResult<Response> {
    let repair = is_repair(body.agent_trigger_method.as_deref())?;
    let filter = body.filter.unwrap_or_default();
    for key in filter.keys() {
        match key.as_str() {
            "resourceType" | "resourceIdValue" | "agent" | "purged" => {}
            "modelVersion" | "isOrphan" => {
                return Err(ApiError::bad_request(format!(
                    "{key} cannot be used to deploy: only released resources deploy"
                )));
            }
            other => {
                return Err(ApiError::bad_request(format!(
                    "unsupported filter {other:?}; deploy_filtered filters on resourceType, resourceIdValue, agent and purged"
                )));
            }
        }
    }
    let mut chosen = Vec::new();
    for intent in o.released_intents(env).await? {
        let id = &intent.id;
        let mut keep = true;
        for (key, value) in &filter {
            keep &= match key.as_str() {
                "resourceType" => string_matches(value, &id.entity_type, key)?,
                "resourceIdValue" => string_matches(value, &id.value, key)?,
                "agent" => string_matches(value, &id.agent, key)?,
                "purged" => {
                    intent.attributes.get("purged").and_then(Value::as_bool).unwrap_or(false)
                        == value.as_bool().unwrap_or(false)
                }
                _ => true,
            };
        }
        if keep {
            chosen.push(id.to_string());
        }
    }
    let scheduled = schedulers.deploy(env, repair, Scope { agents: None, resources: Some(chosen) }).await?;
    Ok(data(scheduled).into_response())
}

async fn status(State(schedulers): State<Arc<Schedulers>>, Tid(env): Tid) -> ApiResult<Response> {
    Ok(data(schedulers.status(env).await?).into_response())
}
