//! Environment settings, v1 and v2 (routes: docs/api.md). The environment comes from the
//! `X-Inmanta-tid` header; the path names the setting.

use api::settings::{ProtectedSettingsSet, SettingSet};
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use orchestrator::Orchestrator;
use serde_json::json;

use super::error::ApiResult;
use super::extract::{self, Path, Tid};
use super::{Routes, data, done, empty, env};
use orchestrator::auth::Clients;

pub fn router() -> Routes {
    let read = env("environment.setting.read").clients(Clients::ALL);
    let write = env("environment.setting.write").clients(Clients::ALL);
    let agents_too = |label| env(label).clients(Clients::API_AGENT);
    Routes::new()
        .get("/api/v1/environment_settings", read, v1_list)
        .get("/api/v1/environment_settings/{id}", agents_too("environment.setting.read"), v1_get)
        .post("/api/v1/environment_settings/{id}", write, set::<V1>)
        .delete("/api/v1/environment_settings/{id}", agents_too("environment.setting.write"), delete::<V1>)
        .get("/api/v2/environment_settings", read, v2_list)
        .get("/api/v2/environment_settings/{id}", agents_too("environment.setting.read"), v2_get)
        .post("/api/v2/environment_settings/{id}", write, set::<V2>)
        .delete("/api/v2/environment_settings/{id}", agents_too("environment.setting.write"), delete::<V2>)
        .post(
            "/api/v2/protected_environment_settings",
            env("environment.setting.write").clients(Clients::COMPILER),
            set_protected,
        )
}

async fn v1_list(State(o): State<Orchestrator>, Tid(env): Tid) -> ApiResult<Response> {
    let all = o.environment_settings(env).await?;
    Ok(Json(json!({"settings": all.settings, "metadata": all.definition})).into_response())
}

async fn v1_get(State(o): State<Orchestrator>, Tid(env): Tid, Path(name): Path<String>) -> ApiResult<Response> {
    let one = o.environment_setting(env, &name).await?;
    Ok(Json(json!({"value": one.settings.get(&name), "metadata": one.definition})).into_response())
}

async fn v2_list(State(o): State<Orchestrator>, Tid(env): Tid) -> ApiResult<Response> {
    Ok(data(o.environment_settings(env).await?).into_response())
}

async fn v2_get(State(o): State<Orchestrator>, Tid(env): Tid, Path(name): Path<String>) -> ApiResult<Response> {
    Ok(data(o.environment_setting(env, &name).await?).into_response())
}

/// Which API a setting write answers as: v1 with an empty body, v2 with `{"data": null}`.
const V1: u8 = 1;
const V2: u8 = 2;

fn written<const API: u8>() -> Response {
    if API == V1 { empty() } else { done().into_response() }
}

async fn set<const API: u8>(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(name): Path<String>,
    extract::Json(req): extract::Json<SettingSet>,
) -> ApiResult<Response> {
    o.set_environment_setting(env, &name, &req.value).await?;
    Ok(written::<API>())
}

async fn delete<const API: u8>(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    o.delete_environment_setting(env, &name).await?;
    Ok(written::<API>())
}

async fn set_protected(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    extract::Json(req): extract::Json<ProtectedSettingsSet>,
) -> ApiResult<Response> {
    o.set_protected_settings(env, &req.settings, &req.protected_by).await?;
    Ok(done().into_response())
}
