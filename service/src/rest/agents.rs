//! Agents: list, pause and unpause (routes: docs/api.md).

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use orchestrator::Orchestrator;
use orchestrator::agents::AgentAction;
use orchestrator::paging::PageRequest;
use serde_json::json;

use super::error::ApiResult;
use super::extract::{Paging, Path, Tid};
use super::{Routes, done, env, paged};

pub fn router() -> Routes {
    Routes::new()
        .get("/api/v2/agents", env("agent.read"), list)
        .post("/api/v2/agent/{name}/{action}", env("agent.pause-resume"), one)
        .post("/api/v2/agents/{action}", env("environment.halt-resume"), all)
        .get("/api/v1/agent", env("agent.read"), v1_list)
}

async fn list(State(o): State<Orchestrator>, Tid(env): Tid, Paging(req): Paging) -> ApiResult<Response> {
    Ok(paged(o.agents(env, &req).await?.map(|listed| listed.agent)).into_response())
}

async fn one(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path((name, action)): Path<(String, String)>,
) -> ApiResult<Response> {
    o.agent_action(env, Some(&name), AgentAction::parse(&action)?).await?;
    Ok(done().into_response())
}

async fn all(State(o): State<Orchestrator>, Tid(env): Tid, Path(action): Path<String>) -> ApiResult<Response> {
    if action == "remove_all_agent_venvs" {
        // Handlers are built into the server: there are no executor environments to remove.
        tracing::info!(%env, "remove_all_agent_venvs: nothing to remove");
        return Ok(done().into_response());
    }
    o.agent_action(env, None, AgentAction::parse(&action)?).await?;
    Ok(done().into_response())
}

async fn v1_list(State(o): State<Orchestrator>, Tid(env): Tid) -> ApiResult<Response> {
    let page = o.agents(env, &PageRequest::default()).await?;
    // Inmanta's v1 form: each agent's status once more as `state`, and the server's clock.
    let agents: Vec<serde_json::Value> = page
        .items
        .into_iter()
        .map(|listed| {
            let mut value = json!(listed.agent);
            value["state"] = value["status"].clone();
            value
        })
        .collect();
    Ok(Json(json!({"agents": agents, "servertime": orchestrator::store::now()})).into_response())
}
