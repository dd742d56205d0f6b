//! `POST /api/v2/compliance_report`: the compliance of report-only (and other) resources of the
//! latest released version, as inmanta-core 20.1 answers it (orchestrator::compliance).

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use orchestrator::Orchestrator;
use serde::Deserialize;

use super::error::ApiResult;
use super::extract::{self, Tid};
use super::{Routes, data, env};

pub fn router() -> Routes {
    // Inmanta reads it under `report.read`; its compliance_reporting feature is on unless a
    // feature file turns it off, and we have no feature file.
    Routes::new().post("/api/v2/compliance_report", env("report.read"), report)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReportBody {
    resource_ids: Vec<String>,
}

async fn report(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    extract::Json(body): extract::Json<ReportBody>,
) -> ApiResult<Response> {
    Ok(data(o.compliance_report(env, &body.resource_ids).await?).into_response())
}
