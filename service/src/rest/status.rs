//! Health and server status.

use api::status::{ReportedStatus, StatusResponse};
use axum::extract::State;
use axum::http::StatusCode;

use super::error::ApiResult;
use super::{AppState, Routes, data, global, public};

pub fn router() -> Routes {
    Routes::new()
        .get("/api/v2/health", public(), health)
        .get("/api/v1/serverstatus", global("status.read"), server_status)
        .get("/api/v2/serverstatus", global("status.read"), server_status)
}

/// Inmanta's answer (`data`: null; 200 when the server can do its job) with our checks beside
/// it: `status` and one entry per dependency in `checks`; 503 with a `message` naming what
/// fails otherwise. It reads what the health monitor saw last and never waits for the database
/// (orchestrator::health), so it answers at once during an outage.
async fn health(State(state): State<AppState>) -> axum::response::Response {
    use axum::response::IntoResponse;
    let health = state.orchestrator.health();
    let failing: Vec<String> = health
        .checks
        .iter()
        .filter(|c| c.status == ReportedStatus::Error)
        .map(|c| format!("{}: {}", c.name.as_str(), c.message))
        .collect();
    let (code, message) = if failing.is_empty() {
        (StatusCode::OK, None)
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, Some(format!("this server cannot do its job: {}", failing.join("; "))))
    };
    let body = HealthAnswer { data: (), message, health };
    (code, axum::Json(body)).into_response()
}

/// The body of `GET /api/v2/health`.
#[derive(serde::Serialize)]
struct HealthAnswer {
    /// Inmanta's field: always null.
    data: (),
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(flatten)]
    health: api::status::Health,
}

/// Composed by the orchestrator, so the console's status page says the same.
async fn server_status(State(state): State<AppState>) -> ApiResult<axum::Json<api::Envelope<StatusResponse>>> {
    Ok(data(state.orchestrator.server_status(Some(&state.schedulers)).await))
}
