//! `GET /metrics` in the Prometheus text format (docs/operations.md): the `metrics` facade with
//! its Prometheus recorder, a middleware timing every API request, and the gauges of what the
//! database holds, read at each scrape. The names live in `orchestrator::metrics`.
//!
//! The route needs a token with the `metrics` client type (or `--no-auth`); with
//! `[server] metrics-bind-port` it is also served without credentials on that separate address,
//! meant for a network only Prometheus reaches.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use orchestrator::Orchestrator;
use orchestrator::auth::{Access, Clients};
use orchestrator::metrics as names;

use crate::rest::error::ApiError;
use crate::security::Security;

/// The access rule of `/metrics`: only tokens made for scraping.
pub const ACCESS: Access = Access::Global("metrics.read", Clients::METRICS);

/// The process-wide recorder; the first call installs it.
pub fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let buckets = |name: &str, bounds: &[f64]| (Matcher::Full(name.to_string()), bounds.to_vec());
        let builder = [
            buckets(names::API_REQUEST_SECONDS, &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0]),
            buckets(names::RESOURCE_DEPLOY_SECONDS, &[0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0]),
            buckets(names::COMPILE_SECONDS, &[0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 1200.0]),
            buckets(names::DATABASE_WAIT_SECONDS, &[0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0]),
        ]
        .into_iter()
        .fold(PrometheusBuilder::new(), |builder, (matcher, bounds)| {
            builder.set_buckets_for_metric(matcher, &bounds).expect("bucket bounds are not empty")
        })
        // Gauges of deleted environments and agents disappear instead of lingering.
        .idle_timeout(metrics_util::MetricKindMask::GAUGE, Some(Duration::from_secs(600)));
        builder.install_recorder().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "another metrics recorder is installed; /metrics shows only the gauges");
            PrometheusBuilder::new().build_recorder().handle()
        })
    })
}

/// Times API requests by route (the pattern, not the path: ids stay out of the labels) and status.
pub async fn track(request: Request, next: Next) -> Response {
    if !request.uri().path().starts_with("/api/") {
        return next.run(request).await;
    }
    let started = Instant::now();
    let method = request.method().to_string();
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched", |p| p.as_str()).to_string();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    metrics::histogram!(names::API_REQUEST_SECONDS, "method" => method, "route" => route, "status" => status)
        .record(started.elapsed());
    response
}

#[derive(Clone)]
struct Scrape {
    orchestrator: Orchestrator,
    /// `None` on the separate metrics address, where no credentials are asked.
    security: Option<Arc<Security>>,
}

/// `GET /metrics` behind the metrics access rule; also keeps the recorder's histograms drained
/// between scrapes.
pub fn router(orchestrator: Orchestrator, security: Arc<Security>) -> Router {
    handle();
    tokio::spawn(async {
        let mut every = tokio::time::interval(Duration::from_secs(5));
        loop {
            every.tick().await;
            handle().run_upkeep();
        }
    });
    Router::new()
        .route("/metrics", axum::routing::get(scrape))
        .with_state(Scrape { orchestrator, security: Some(security) })
}

/// `GET /metrics` without credentials, for `[server] metrics-bind-port`.
pub fn open_router(orchestrator: Orchestrator) -> Router {
    handle();
    Router::new().route("/metrics", axum::routing::get(scrape)).with_state(Scrape { orchestrator, security: None })
}

async fn scrape(State(scrape): State<Scrape>, headers: HeaderMap) -> Result<Response, ApiError> {
    if let Some(security) = &scrape.security {
        let caller = security.authenticate(&scrape.orchestrator, &headers).await?;
        let call = orchestrator::auth::policy::Call::new(ACCESS, None);
        scrape.orchestrator.authorize(&caller, &call).map_err(|denied| {
            ApiError::new(
                StatusCode::FORBIDDEN,
                format!("{denied}; scrape with a token of client type `metrics` (docs/operations.md)"),
            )
        })?;
    }
    // The health gauges come from memory; the counts need the database, which may be the
    // very thing that fails: then the scrape still answers, with the health gauges saying why.
    scrape.orchestrator.health();
    match tokio::time::timeout(orchestrator::health::PROBE_TIMEOUT, record_gauges(&scrape.orchestrator)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(error = %e, "metrics: the database counts cannot be read"),
        Err(_) => tracing::debug!("metrics: the database counts did not come within the probe timeout"),
    }
    let handle = handle();
    handle.run_upkeep();
    let mut response = handle.render().into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    Ok(response)
}

/// Sets the gauges that describe what the database holds now.
async fn record_gauges(orchestrator: &Orchestrator) -> orchestrator::Result<()> {
    let counts = orchestrator.metric_counts().await?;
    for (id, (name, project)) in &counts.environments {
        let (environment, name, project) = (id.to_string(), name.clone(), project.to_string());
        metrics::gauge!(names::ENVIRONMENT_INFO, "environment" => environment, "name" => name, "project" => project)
            .set(1.0);
    }
    for ((env, state), n) in counts.resources {
        metrics::gauge!(names::RESOURCES, "environment" => env.to_string(), "state" => state).set(n as f64);
    }
    for ((env, state), n) in counts.agents {
        metrics::gauge!(names::AGENTS, "environment" => env.to_string(), "state" => state).set(n as f64);
    }
    for (env, n) in counts.compile_queue {
        metrics::gauge!(names::COMPILE_QUEUE, "environment" => env.to_string()).set(n as f64);
    }
    let pool = orchestrator.store().pool();
    let idle = pool.num_idle() as f64;
    metrics::gauge!(names::DATABASE_CONNECTIONS, "state" => "idle").set(idle);
    metrics::gauge!(names::DATABASE_CONNECTIONS, "state" => "in_use").set(f64::from(pool.size()) - idle);
    let database = format!("{:?}", orchestrator.store().kind()).to_lowercase();
    metrics::gauge!(names::BUILD_INFO, "version" => api::VERSION, "database" => database).set(1.0);
    Ok(())
}
