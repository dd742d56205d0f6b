//! `GET /api/v2/metrics`: the environment metrics the server records once a minute
//! (orchestrator::environment_metrics), as Inmanta 20.1 serves them.

use api::environment_metrics::MetricName;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveDateTime, Utc};
use orchestrator::Orchestrator;
use orchestrator::environment_metrics::MetricsQuery;

use super::error::{ApiError, ApiResult};
use super::extract::{Query, Tid};
use super::{Routes, data, env};

pub fn router() -> Routes {
    Routes::new().get("/api/v2/metrics", env("metrics.read"), metrics)
}

/// `metrics` may repeat (Inmanta's client sends a list that way).
async fn metrics(
    State(o): State<Orchestrator>,
    Tid(env): Tid,
    Query(pairs): Query<Vec<(String, String)>>,
) -> ApiResult<Response> {
    let mut metrics = Vec::new();
    let (mut start, mut end, mut datapoints, mut round) = (None, None, None, false);
    for (key, value) in pairs {
        match key.as_str() {
            "metrics" => metrics.push(MetricName::parse(&value).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "The following metrics given in the metrics parameter are unknown: [{value:?}]; known: {}",
                    MetricName::NAMES.join(", ")
                ))
            })?),
            "start_interval" => start = Some(timestamp("start_interval", &value)?),
            "end_interval" => end = Some(timestamp("end_interval", &value)?),
            "nb_datapoints" => {
                datapoints = Some(value.parse::<u32>().map_err(|_| {
                    ApiError::bad_request(format!("nb_datapoints must be a whole number larger than 0, got {value:?}"))
                })?)
            }
            "round_timestamps" => {
                round = match value.to_ascii_lowercase().as_str() {
                    "true" | "1" | "yes" | "on" => true,
                    "false" | "0" | "no" | "off" => false,
                    _ => {
                        return Err(ApiError::bad_request(format!(
                            "round_timestamps must be true or false, got {value:?}"
                        )));
                    }
                }
            }
            other => return Err(ApiError::bad_request(format!("unknown parameter {other:?} for metrics"))),
        }
    }
    let missing = |name: &str| ApiError::bad_request(format!("the query parameter {name} is required"));
    let query = MetricsQuery {
        metrics,
        start: start.ok_or_else(|| missing("start_interval"))?,
        end: end.ok_or_else(|| missing("end_interval"))?,
        datapoints: datapoints.ok_or_else(|| missing("nb_datapoints"))?,
        round_timestamps: round,
    };
    Ok(data(o.environment_metrics(env, &query).await?).into_response())
}

/// An ISO-8601 timestamp, with an offset or without (then UTC, as Inmanta reads naive ones).
fn timestamp(name: &str, value: &str) -> ApiResult<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(value) {
        return Ok(t.with_timezone(&Utc));
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d %H:%M:%S"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(value, f).ok())
        .map(|t| t.and_utc())
        .ok_or_else(|| ApiError::bad_request(format!("{name} must be an ISO-8601 timestamp, got {value:?}")))
}
