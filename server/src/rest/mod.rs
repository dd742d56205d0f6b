//! The REST API: Inmanta's paths and shapes (reference/api.md). Each area module owns its
//! routes and declares, next to each one, who may call it ([`Rule`]); this file composes them
//! and adds what every route shares: the authorization guard, JSON errors, body limit, gzip,
//! the `X-Inmanta-tid` echo.
//!
//! The router is built only from [`Routes`], so the rule table and the router cannot drift
//! apart: the guard denies a route it has no rule for, and the route-walking test in
//! server/tests/auth.rs walks the same table.

mod agents;
mod auth;
mod compiles;
mod deploy;
mod dryrun;
mod environments;
pub mod error;
pub mod extract;
mod files;
pub mod lenient;
mod notifications;
mod parameters;
mod projects;
mod resources;
#[cfg(test)]
mod route_walk;
mod settings;
mod status;
mod versions;

use std::collections::HashMap;
use std::sync::Arc;

use axum::RequestExt;
use axum::extract::{DefaultBodyLimit, FromRequestParts, MatchedPath, Request, State};
use axum::handler::Handler;
use axum::http::{HeaderValue, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodFilter;
use axum::{Json, Router};
use orchestrator::auth::{Access, Clients, Principal};
use serde::Serialize;
use tower_http::decompression::RequestDecompressionLayer;
use uuid::Uuid;

use self::error::ApiError;
use crate::security::Security;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub orchestrator: orchestrator::Orchestrator,
    pub schedulers: std::sync::Arc<orchestrator::scheduler::Schedulers>,
    pub security: Arc<Security>,
}

/// Who may call one route: its [`Access`] and, for environment actions whose environment is in
/// the path rather than in the `X-Inmanta-tid` header, the name of that path parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub access: Access,
    pub environment_in_path: Option<&'static str>,
}

impl Rule {
    /// Let other client types call it too (agents, the compiler).
    pub const fn clients(self, clients: Clients) -> Rule {
        Rule { access: self.access.with_clients(clients), ..self }
    }

    /// The environment is the path parameter `name`.
    pub const fn environment_in_path(self, name: &'static str) -> Rule {
        Rule { environment_in_path: Some(name), ..self }
    }
}

/// No credentials needed.
pub const fn public() -> Rule {
    Rule { access: Access::Public, environment_in_path: None }
}

/// Any logged-in user or token.
pub const fn authenticated() -> Rule {
    Rule { access: Access::Authenticated(Clients::API), environment_in_path: None }
}

/// An action in the environment of the `X-Inmanta-tid` header, allowed by `label`.
pub const fn env(label: &'static str) -> Rule {
    Rule { access: Access::Environment(label, Clients::API), environment_in_path: None }
}

/// A server-wide action allowed by `label`.
pub const fn global(label: &'static str) -> Rule {
    Rule { access: Access::Global(label, Clients::API), environment_in_path: None }
}

/// One row of the rule table.
#[derive(Debug, Clone)]
pub struct RouteRule {
    pub method: Method,
    pub path: &'static str,
    pub rule: Rule,
}

/// A router that records the rule of every route it gets.
pub struct Routes {
    router: Router<AppState>,
    table: Vec<RouteRule>,
}

impl Routes {
    pub fn new() -> Routes {
        Routes { router: Router::new(), table: Vec::new() }
    }

    pub fn route<H, T>(mut self, method: Method, path: &'static str, rule: Rule, handler: H) -> Routes
    where
        H: Handler<T, AppState>,
        T: 'static,
    {
        let filter = MethodFilter::try_from(method.clone()).expect("a standard HTTP method");
        self.router = self.router.route(path, axum::routing::on(filter, handler));
        self.table.push(RouteRule { method, path, rule });
        self
    }

    pub fn get<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, rule: Rule, handler: H) -> Routes {
        self.route(Method::GET, path, rule, handler)
    }

    pub fn post<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, rule: Rule, handler: H) -> Routes {
        self.route(Method::POST, path, rule, handler)
    }

    pub fn put<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, rule: Rule, handler: H) -> Routes {
        self.route(Method::PUT, path, rule, handler)
    }

    pub fn patch<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, rule: Rule, handler: H) -> Routes {
        self.route(Method::PATCH, path, rule, handler)
    }

    pub fn delete<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, rule: Rule, handler: H) -> Routes {
        self.route(Method::DELETE, path, rule, handler)
    }

    pub fn head<H: Handler<T, AppState>, T: 'static>(self, path: &'static str, rule: Rule, handler: H) -> Routes {
        self.route(Method::HEAD, path, rule, handler)
    }

    pub fn merge(mut self, other: Routes) -> Routes {
        self.router = self.router.merge(other.router);
        self.table.extend(other.table);
        self
    }
}

fn all_routes() -> Routes {
    Routes::new()
        .merge(status::router())
        .merge(auth::router())
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
}

/// Every route of the API with its rule: what the guard enforces.
#[cfg(test)]
pub fn rule_table() -> Vec<RouteRule> {
    all_routes().table
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
    let Routes { router, table } = all_routes();
    let rules: Arc<HashMap<(Method, &'static str), Rule>> =
        Arc::new(table.into_iter().map(|r| ((r.method, r.path), r.rule)).collect());
    let sessions = crate::sessions::layer(state.orchestrator.clone(), state.security.authenticator.login_expire);
    router
        .route_layer(middleware::from_fn_with_state((state.clone(), rules), guard))
        .layer(sessions)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .layer(RequestDecompressionLayer::new())
        .layer(middleware::from_fn(echo_tid))
        .with_state(state)
}

/// The caller of a request, put there by the guard for handlers that filter by it.
#[derive(Clone)]
pub struct Caller(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or_else(|| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "the route has no authorization rule"))
    }
}

type Rules = Arc<HashMap<(Method, &'static str), Rule>>;

/// The authorization guard in front of every route: authenticate, find the route's rule and
/// the environment it is about, and let [`Principal::authorize`] decide.
async fn guard(State((state, rules)): State<(AppState, Rules)>, mut request: Request, next: Next) -> Response {
    let Some(path) = request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_string()) else {
        return ApiError::new(StatusCode::NOT_FOUND, "no such endpoint").into_response();
    };
    let method = request.method().clone();
    let rule = rules
        .get(&(method.clone(), path.as_str()))
        .or_else(|| (method == Method::HEAD).then(|| rules.get(&(Method::GET, path.as_str()))).flatten())
        .copied();
    // Fail closed: a route without a rule is a programming error, never an open door.
    let Some(rule) = rule else {
        tracing::error!(%method, %path, "route without an authorization rule");
        return ApiError::new(StatusCode::FORBIDDEN, "this endpoint has no authorization rule").into_response();
    };
    if rule.access == Access::Public {
        return next.run(request).await;
    }
    let principal = match state.security.authenticate(&state.orchestrator, request.headers()).await {
        Ok(principal) => principal,
        Err(error) => return error.into_response(),
    };
    let environment = match environment_of(&mut request, rule).await {
        Ok(environment) => environment,
        Err(error) => return error.into_response(),
    };
    if let Err(denied) = principal.authorize(rule.access, environment) {
        return ApiError::new(StatusCode::FORBIDDEN, denied.0).into_response();
    }
    request.extensions_mut().insert(Caller(principal));
    next.run(request).await
}

/// The environment an environment action is about: a path parameter or the tid header.
async fn environment_of(request: &mut Request, rule: Rule) -> Result<Option<Uuid>, ApiError> {
    if !matches!(rule.access, Access::Environment(..)) {
        return Ok(None);
    }
    let Some(name) = rule.environment_in_path else {
        return request.extract_parts::<extract::Tid>().await.map(|tid| Some(tid.0));
    };
    let params = request.extract_parts::<axum::extract::RawPathParams>().await.ok();
    let value = params.and_then(|p| p.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string()));
    value
        .map(|v| {
            Uuid::parse_str(&v)
                .map_err(|_| ApiError::bad_request(format!("Invalid request: {v:?} is not an environment id (a UUID)")))
        })
        .transpose()
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
