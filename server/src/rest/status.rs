//! Health and server status.

use api::status::{Extension, ReportedStatus, Slice, StatusResponse};
use axum::extract::State;
use serde_json::json;

use super::error::ApiResult;
use super::{AppState, Routes, data, global, public};

pub fn router() -> Routes {
    Routes::new().get("/api/v2/health", public(), health).get(
        "/api/v1/serverstatus",
        global("status.read"),
        server_status,
    )
}

/// 200 when the database answers, 500 otherwise: what a load balancer needs.
async fn health(State(state): State<AppState>) -> ApiResult<axum::Json<api::Envelope<()>>> {
    state.orchestrator.store().server_version().await?;
    Ok(super::done())
}

async fn server_status(State(state): State<AppState>) -> ApiResult<axum::Json<api::Envelope<StatusResponse>>> {
    let store = state.orchestrator.store();
    let database = store.server_version().await;
    let (db_status, db_message) = match &database {
        Ok(_) => (ReportedStatus::Ok, None),
        Err(e) => (ReportedStatus::Error, Some(e.to_string())),
    };
    let version = env!("CARGO_PKG_VERSION").to_string();
    Ok(data(StatusResponse {
        product: "Inmanta Service Orchestrator".into(),
        edition: "Rust Edition".into(),
        version: version.clone(),
        license: "Apache Software License 2".into(),
        extensions: vec![Extension { name: "core".into(), version, package: "core".into() }],
        slices: vec![
            Slice {
                name: "core.server".into(),
                status: json!({"uptime": state.started.elapsed().as_secs()}),
                reported_status: ReportedStatus::Ok,
                message: None,
            },
            Slice {
                name: "core.database".into(),
                status: json!({
                    "connected": database.is_ok(),
                    "database": format!("{:?}", store.kind()).to_lowercase(),
                    "version": database.as_ref().ok(),
                }),
                reported_status: db_status,
                message: db_message,
            },
        ],
        features: vec![],
        status: db_status,
        python_version: String::new(),
        postgresql_version: match store.kind() {
            orchestrator::DbKind::Postgres => database.ok(),
            orchestrator::DbKind::Sqlite => None,
        },
    }))
}
