//! The REST API: Inmanta's paths and shapes (reference/api.md). Each area module owns its
//! routes; this file composes them and adds what every route shares (JSON errors, body limit,
//! gzip, the `X-Inmanta-tid` echo).

mod agents;
mod compiles;
mod deploy;
mod dryrun;
mod environments;
pub mod error;
mod extract;
mod files;
mod notifications;
mod parameters;
mod projects;
mod resources;
mod settings;
mod status;
mod versions;

use axum::extract::{DefaultBodyLimit, Request};
use axum::http::{HeaderValue, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde::Serialize;
use tower_http::decompression::RequestDecompressionLayer;

use self::error::ApiError;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub orchestrator: orchestrator::Orchestrator,
    pub schedulers: std::sync::Arc<orchestrator::scheduler::Schedulers>,
}

impl axum::extract::FromRef<AppState> for std::sync::Arc<orchestrator::scheduler::Schedulers> {
    fn from_ref(state: &AppState) -> Self {
        state.schedulers.clone()
    }
}

impl axum::extract::FromRef<AppState> for orchestrator::Orchestrator {
    fn from_ref(state: &AppState) -> Self {
        state.orchestrator.clone()
    }
}

/// The whole REST API under `/api`.
pub fn router(state: AppState, max_body_bytes: usize) -> Router {
    Router::new()
        .merge(status::router())
        .merge(projects::router())
        .merge(environments::router())
        .merge(settings::router())
        .merge(files::router())
        .merge(versions::router())
        .merge(resources::router())
        .merge(parameters::router())
        .merge(notifications::router())
        .merge(agents::router())
        .merge(compiles::router())
        .merge(deploy::router())
        .merge(dryrun::router())
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .layer(RequestDecompressionLayer::new())
        .layer(middleware::from_fn(echo_tid))
        .with_state(state)
}

/// Answer for any path no route knows, so clients always get JSON.
pub async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, format!("no such endpoint: {method} {}", uri.path()))
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, format!("{method} is not allowed on {}", uri.path()))
}

/// Inmanta echoes the environment header in the response.
async fn echo_tid(request: Request, next: Next) -> Response {
    let tid: Option<HeaderValue> = request.headers().get(api::TID_HEADER).cloned();
    let mut response = next.run(request).await;
    if let Some(tid) = tid {
        response.headers_mut().insert(api::TID_HEADER, tid);
    }
    response
}

/// A typed (v2) answer: `{"data": ...}`.
pub fn data<T: Serialize>(value: T) -> Json<api::Envelope<T>> {
    Json(api::Envelope::new(value))
}

/// A typed answer without result: `{"data": null}`.
pub fn done() -> Json<api::Envelope<()>> {
    Json(api::Envelope::new(()))
}

/// A paged v2 answer: `{"data": [...], "links": {...}, "metadata": {...}}`.
pub fn paged<T: Serialize>(page: orchestrator::paging::Page<T>) -> Json<api::Envelope<Vec<T>>> {
    Json(api::Envelope {
        data: page.items,
        links: Some(page.links),
        metadata: serde_json::to_value(page.metadata).ok(),
    })
}

/// A v1 call that returns nothing: 200 with an empty body.
pub fn empty() -> Response {
    StatusCode::OK.into_response()
}
