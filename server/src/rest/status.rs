//! Health and server status.

use api::status::StatusResponse;
use axum::Router;
use axum::extract::State;
use axum::routing::get;

use super::error::ApiResult;
use super::{AppState, data};

pub fn router() -> Router<AppState> {
    Router::new().route("/api/v2/health", get(health)).route("/api/v1/serverstatus", get(server_status))
}

/// 200 when the database answers, 500 otherwise: what a load balancer needs.
async fn health(State(state): State<AppState>) -> ApiResult<axum::Json<api::Envelope<()>>> {
    state.orchestrator.store().server_version().await?;
    Ok(super::done())
}

/// Composed by the orchestrator, so the console's status page says the same.
async fn server_status(State(state): State<AppState>) -> ApiResult<axum::Json<api::Envelope<StatusResponse>>> {
    Ok(data(state.orchestrator.server_status(Some(&state.schedulers)).await))
}
