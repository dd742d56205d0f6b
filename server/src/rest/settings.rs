//! Environment settings, v1 and v2 (reference/api.md §5.3). The environment comes from the
//! `X-Inmanta-tid` header; the path names the setting.

use api::settings::{ProtectedSettingsSet, SettingSet};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use orchestrator::Orchestrator;
use serde_json::json;

use super::error::ApiResult;
use super::extract::{self, Path, Tid};
use super::{AppState, data, done, empty};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/environment_settings", get(v1_list))
        .route("/api/v1/environment_settings/{name}", get(v1_get).post(v1_set).delete(v1_delete))
        .route("/api/v2/environment_settings", get(v2_list))
        .route("/api/v2/environment_settings/{name}", get(v2_get).post(v2_set).delete(v2_delete))
        .route("/api/v2/protected_environment_settings", post(set_protected))
}

async fn v1_list(State(o): State<Orchestrator>, Tid(env): Tid) -> ApiResult<Response> {
    let all = o.environment_settings(env).await?;
    Ok(Json(json!({"settings": all.settings, "metadata": all.definition})).into_response())
}

async fn v1_get(State(o): State<Orchestrator>, Tid(env): Tid, Path(name): Path<String>) -> ApiResult<Response> {
    let one = o.environment_setting(env, &name).await?;
    Ok(Json(json!({"value": one.settings.get(&name), "metadata": one.definition})).into_response())
}

async fn v1_set(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(name): Path<String>,
    extract::Json(req): extract::Json<SettingSet>,
) -> ApiResult<Response> {
    o.set_environment_setting(env, &name, &req.value).await?;
    Ok(empty())
}

async fn v1_delete(State(o): State<Orchestrator>, Tid(env): Tid, Path(name): Path<String>) -> ApiResult<Response> {
    o.delete_environment_setting(env, &name).await?;
    Ok(empty())
}

async fn v2_list(State(o): State<Orchestrator>, Tid(env): Tid) -> ApiResult<Response> {
    Ok(data(o.environment_settings(env).await?).into_response())
}

async fn v2_get(State(o): State<Orchestrator>, Tid(env): Tid, Path(name): Path<String>) -> ApiResult<Response> {
    Ok(data(o.environment_setting(env, &name).await?).into_response())
}

async fn v2_set(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Path(name): Path<String>,
    extract::Json(req): extract::Json<SettingSet>,
) -> ApiResult<Response> {
    o.set_environment_setting(env, &name, &req.value).await?;
    Ok(done().into_response())
}

async fn v2_delete(State(o): State<Orchestrator>, Tid(env): Tid, Path(name): Path<String>) -> ApiResult<Response> {
    o.delete_environment_setting(env, &name).await?;
    Ok(done().into_response())
}

async fn set_protected(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    extract::Json(req): extract::Json<ProtectedSettingsSet>,
) -> ApiResult<Response> {
    o.set_protected_settings(env, &req.settings, &req.protected_by).await?;
    Ok(done().into_response())
}
