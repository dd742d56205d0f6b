//! Health and server status.

use api::status::StatusResponse;
use axum::extract::State;

use super::error::ApiResult;
use super::{AppState, Routes, data, global, public};

pub fn router() -> Routes {
    Routes::new()
        .get("/api/v2/health", public(), health)
        .get("/api/v1/serverstatus", global("status.read"), server_status)
        .get("/api/v2/serverstatus", global("status.read"), server_status)
}

/// 200 when the database answers, 500 otherwise: what a load balancer needs. The probe has a
/// database connection of its own, so it answers at once however busy readers and writers are.
async fn health(State(state): State<AppState>) -> ApiResult<axum::Json<api::Envelope<()>>> {
    state.orchestrator.store().probe().await?;
    Ok(super::done())
}

/// Composed by the orchestrator, so the console's status page says the same.
async fn server_status(State(state): State<AppState>) -> ApiResult<axum::Json<api::Envelope<StatusResponse>>> {
    Ok(data(state.orchestrator.server_status(Some(&state.schedulers)).await))
}
