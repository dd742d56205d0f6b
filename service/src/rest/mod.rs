//! The REST API: Inmanta's paths and shapes (docs/api.md). Each area module owns its
//! routes and declares, next to each one, who may call it ([`Rule`]); this file composes them
//! and adds what every route shares: the authorization guard, JSON errors, body limit, gzip,
//! the `X-Inmanta-tid` echo.
//!
//! The router is built only from [`Routes`], so the rule table and the router cannot drift
//! apart: the guard denies a route it has no rule for, and the route-walking test in
//! server/tests/server/auth.rs walks the same table.

mod agents;
mod auth;
mod compiles;
mod compliance;
mod deploy;
mod describe;
mod discovered;
mod docs;
mod dryrun;
pub mod encoding;
mod environment_metrics;
mod environments;
pub mod error;
pub mod extract;
pub mod files;
pub mod in_process_api;
#[cfg(test)]
mod inmanta_endpoint_data;
#[cfg(test)]
mod inmanta_routes;
pub mod lenient;
pub mod limits;
mod notifications;
mod parameters;
mod policy_parameters;
mod projects;
mod resources;
#[cfg(test)]
mod route_walk;
mod settings;
pub mod shared_reads;
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
use self::limits::{BodyLimit, Limits};
use crate::security::Security;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub orchestrator: orchestrator::Orchestrator,
    pub schedulers: std::sync::Arc<orchestrator::scheduler::Schedulers>,
    pub security: Arc<Security>,
    /// Identical reads in flight, answered once (shared_reads.rs).
    pub reads: Arc<shared_reads::SharedReads>,
}

/// Who may call one route: its [`Access`] and, for environment actions whose environment is in
/// the path rather than in the `X-Inmanta-tid` header, the name of that path parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub access: Access,
    pub environment_in_path: Option<&'static str>,
    /// Set where Inmanta calls an endpoint read-only although its label is no read label
    /// (the endpoint data's `read_only`); `None`: what the label says.
    read_only: Option<bool>,
    /// The body's field that names the environment a server-wide call creates: the endpoint
    /// data's `environment_param`, as Inmanta's; the legacy rules judge the call server-wide.
    environment_in_body: Option<&'static str>,
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

    /// The environment the call creates is the body's field `name` (for an access policy).
    pub const fn environment_in_body(self, name: &'static str) -> Rule {
        Rule { environment_in_body: Some(name), ..self }
    }

    /// Only reads, whatever its label (Inmanta's `read_only=True` on a `token` endpoint).
    pub const fn reads(self) -> Rule {
        Rule { read_only: Some(true), ..self }
    }

    /// Whether the route only reads, as the endpoint data says.
    pub fn read_only(self) -> bool {
        self.read_only.unwrap_or_else(|| self.access.is_read())
    }
}

/// No credentials needed.
pub const fn public() -> Rule {
    Rule { access: Access::Public, environment_in_path: None, read_only: None, environment_in_body: None }
}

/// Any logged-in user or token; `label` is Inmanta's for the endpoint (one of
/// [`orchestrator::auth::OPEN_GLOBAL_LABELS`], so that the built-in policy lets everyone in too).
pub const fn authenticated(label: &'static str) -> Rule {
    Rule {
        access: Access::Authenticated(label, Clients::API),
        environment_in_path: None,
        read_only: None,
        environment_in_body: None,
    }
}

/// An action in the environment of the `X-Inmanta-tid` header, allowed by `label`.
pub const fn env(label: &'static str) -> Rule {
    Rule {
        access: Access::Environment(label, Clients::API),
        environment_in_path: None,
        read_only: None,
        environment_in_body: None,
    }
}

/// A server-wide action allowed by `label`.
pub const fn global(label: &'static str) -> Rule {
    Rule {
        access: Access::Global(label, Clients::API),
        environment_in_path: None,
        read_only: None,
        environment_in_body: None,
    }
}

/// One row of the rule table.
#[derive(Debug, Clone)]
pub struct RouteRule {
    pub method: Method,
    pub path: &'static str,
    pub rule: Rule,
    /// Public routes take [`BodyLimit::Small`] bodies whatever this says.
    pub body: BodyLimit,
    /// The query parameters and body its handler reads, for the OpenAPI document.
    pub takes: describe::Takes,
}

/// A router that records the rule of every route it gets.
pub struct Routes {
    router: Router<AppState>,
    table: Vec<RouteRule>,
}

impl Default for Routes {
    fn default() -> Self {
        Routes::new()
    }
}

impl Routes {
    pub fn new() -> Routes {
        Routes { router: Router::new(), table: Vec::new() }
    }

    pub fn route<H, T>(mut self, method: Method, path: &'static str, rule: Rule, handler: H) -> Routes
    where
        H: Handler<T, AppState>,
        T: describe::DescribeArgs + 'static,
    {
        let filter = MethodFilter::try_from(method.clone()).expect("a standard HTTP method");
        self.router = self.router.route(path, axum::routing::on(filter, handler));
        let body = if rule.access == Access::Public { BodyLimit::Small } else { BodyLimit::default() };
        self.table.push(RouteRule { method, path, rule, body, takes: T::takes() });
        self
    }

    /// The route added last takes bodies of `limit` (credential routes: small; bulk uploads:
    /// large).
    pub fn body(mut self, limit: BodyLimit) -> Routes {
        if let Some(last) = self.table.last_mut()
            && last.rule.access != Access::Public
        {
            last.body = limit;
        }
        self
    }

    pub fn get<H: Handler<T, AppState>, T: describe::DescribeArgs + 'static>(
        self,
        path: &'static str,
        rule: Rule,
        handler: H,
    ) -> Routes {
        self.route(Method::GET, path, rule, handler)
    }

    pub fn post<H: Handler<T, AppState>, T: describe::DescribeArgs + 'static>(
        self,
        path: &'static str,
        rule: Rule,
        handler: H,
    ) -> Routes {
        self.route(Method::POST, path, rule, handler)
    }

    pub fn put<H: Handler<T, AppState>, T: describe::DescribeArgs + 'static>(
        self,
        path: &'static str,
        rule: Rule,
        handler: H,
    ) -> Routes {
        self.route(Method::PUT, path, rule, handler)
    }

    pub fn patch<H: Handler<T, AppState>, T: describe::DescribeArgs + 'static>(
        self,
        path: &'static str,
        rule: Rule,
        handler: H,
    ) -> Routes {
        self.route(Method::PATCH, path, rule, handler)
    }

    pub fn delete<H: Handler<T, AppState>, T: describe::DescribeArgs + 'static>(
        self,
        path: &'static str,
        rule: Rule,
        handler: H,
    ) -> Routes {
        self.route(Method::DELETE, path, rule, handler)
    }

    pub fn head<H: Handler<T, AppState>, T: describe::DescribeArgs + 'static>(
        self,
        path: &'static str,
        rule: Rule,
        handler: H,
    ) -> Routes {
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
        .merge(environment_metrics::router())
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
        .merge(compliance::router())
        .merge(deploy::router())
        .merge(dryrun::router())
        .merge(discovered::router())
        .merge(docs::router())
        .merge(crate::graphql::router())
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

impl axum::extract::FromRef<AppState> for Arc<shared_reads::SharedReads> {
    fn from_ref(state: &AppState) -> Self {
        state.reads.clone()
    }
}

impl axum::extract::FromRef<AppState> for orchestrator::Orchestrator {
    fn from_ref(state: &AppState) -> Self {
        state.orchestrator.clone()
    }
}

/// The whole REST API under `/api`, with the default request timeout and file-store quota
/// (the route walk's; the server itself passes its configured limits to [`router_with`]).
#[cfg(test)]
pub fn router(state: AppState, max_body_bytes: usize) -> Router {
    router_with(
        state,
        Limits::new(max_body_bytes, limits::DEFAULT_REQUEST_TIMEOUT),
        files::FileStoreQuota(files::DEFAULT_FILE_STORE_QUOTA),
    )
}

/// The whole REST API under `/api`, within `limits`.
pub fn router_with(state: AppState, limits: Limits, quota: files::FileStoreQuota) -> Router {
    let Routes { router, table } = all_routes();
    let max_body_bytes = limits.max_body;
    let api_docs = docs::ApiDocs(Arc::new(docs::openapi(&table, &limits)));
    let rules: Rules = Arc::new(
        table
            .into_iter()
            .map(|r| {
                let query = Arc::new(policy_parameters::typed_query(&r.takes));
                let guarded = Guarded { rule: r.rule, body: r.body, query };
                ((r.method, r.path), guarded)
            })
            .collect(),
    );
    let sessions = crate::sessions::layer(
        state.orchestrator.clone(),
        state.security.authenticator.login_expire,
        state.security.secure_cookies,
    );
    router
        .route_layer(middleware::from_fn_with_state((state.clone(), rules, limits), guard))
        .layer(sessions)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body_bytes))
        .layer(axum::Extension(quota))
        .layer(axum::Extension(api_docs))
        .layer(RequestDecompressionLayer::new())
        .layer(middleware::from_fn(echo_tid))
        .layer(middleware::from_fn(close_after_refused_body))
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

type Rules = Arc<HashMap<(Method, &'static str), Guarded>>;

/// What the guard knows of a route.
#[derive(Clone)]
struct Guarded {
    rule: Rule,
    body: BodyLimit,
    /// The query parameters its handler reads as booleans or numbers: an access policy sees
    /// them so, as Inmanta passes a call's arguments typed.
    query: Arc<HashMap<String, policy_parameters::QueryKind>>,
}

/// The guard in front of every route: cap the body to the route's limit, authenticate, find
/// the route's rule and the environment it is about, let the orchestrator's provider decide
/// (`Orchestrator::authorize`: the legacy rules or the access policy), and
/// run the handler within the byte budget and the time limit.
async fn guard(
    State((state, rules, limits)): State<(AppState, Rules, Limits)>,
    request: Request,
    next: Next,
) -> Response {
    let Some(path) = request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_string()) else {
        return ApiError::new(StatusCode::NOT_FOUND, "no such endpoint").into_response();
    };
    let method = request.method().clone();
    let rule = match rules.get(&(method.clone(), path.as_str())) {
        Some(found) => Some((method.clone(), found.clone())),
        None if method == Method::HEAD => {
            rules.get(&(Method::GET, path.as_str())).map(|found| (Method::GET, found.clone()))
        }
        None => None,
    };
    // Fail closed: a route without a rule is a programming error, never an open door.
    let Some((rule_method, guarded)) = rule else {
        tracing::error!(%method, %path, "route without an authorization rule");
        return ApiError::new(StatusCode::FORBIDDEN, "this endpoint has no authorization rule").into_response();
    };
    let (rule, body) = (guarded.rule, guarded.body);
    // No name, id or value holds a NUL: refused here for every path and query parameter.
    if request.uri().to_string().to_ascii_lowercase().contains("%00") {
        return ApiError::bad_request("Invalid request: the URL may not contain NUL characters (%00)").into_response();
    }
    let (mut request, cap) = match limits.cap_body(request, body) {
        Ok(capped) => capped,
        Err(error) => return error.into_response(),
    };
    request.extensions_mut().insert(limits::BodyCap { bytes: cap, limit: body });
    let work = async {
        // The room of a body the access policy read is taken already.
        let mut reserved = None;
        if rule.access != Access::Public {
            let endpoint_id = orchestrator::auth::policy::endpoint_id(rule_method.as_str(), &path);
            (request, reserved) = match authorized(&state, request, &guarded, &endpoint_id, &limits).await {
                Ok(authorized) => authorized,
                Err(error) => return error.into_response(),
            };
        }
        let _permit = match reserved {
            Some(permit) => permit,
            None => match limits.reserve(Limits::expected_body(&request, cap)).await {
                Ok(permit) => permit,
                Err(error) => return error.into_response(),
            },
        };
        next.run(request).await
    };
    let orchestrator = state.orchestrator.clone();
    let answer = async {
        tokio::select! {
            response = work => response,
            () = orchestrator.database_lost(OUTAGE_GRACE) => {
                tracing::warn!(%method, %path, "request answered 503: the database cannot be reached");
                ApiError::database_unreachable().into_response()
            }
        }
    };
    match tokio::time::timeout(limits.request_timeout, answer).await {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(%method, %path, "request timed out");
            limits.timed_out().into_response()
        }
    }
}

/// How long a request waits for the database once the health probes find it unreachable
/// before it is answered 503: an outage answers within about [`OUTAGE_GRACE`] plus a probe
/// (docs/performance.md) instead of when the database is back.
const OUTAGE_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// Room in the byte budget for a body ([`Limits::reserve`]).
type Reservation = Option<tokio::sync::OwnedSemaphorePermit>;

/// Authenticates the caller and checks the route's rule; the request carries the [`Caller`].
/// When the access policy reads the body, the body's room in the byte budget comes back too.
async fn authorized(
    state: &AppState,
    mut request: Request,
    guarded: &Guarded,
    endpoint_id: &str,
    limits: &Limits,
) -> Result<(Request, Option<Reservation>), Response> {
    let rule = guarded.rule;
    // A call the server makes of its own API for an in-process agent carries its caller as an
    // extension, which no request from the network can.
    let internal = request.extensions().get::<in_process_api::InternalCaller>().map(|c| c.0.clone());
    let principal = match internal {
        Some(principal) => principal,
        None => match state.security.authenticate(&state.orchestrator, request.headers()).await {
            Ok(principal) => principal,
            Err(error) => return Err(error.into_response()),
        },
    };
    let environment = match environment_of(&mut request, rule).await {
        Ok(environment) => environment,
        Err(error) => return Err(error.into_response()),
    };
    let (parameters, reserved) = match state.orchestrator.authorization().decides_with_policy(&principal) {
        true => {
            let cap = request.extensions().get::<limits::BodyCap>().map_or(0, |cap| cap.bytes);
            let reserved = limits.reserve(Limits::expected_body(&request, cap)).await.map_err(|e| e.into_response())?;
            let parameters = policy_parameters::read(&mut request, rule, &guarded.query, environment).await;
            let parameters = parameters.map_err(|e| e.into_response())?;
            (parameters, Some(reserved))
        }
        false => (serde_json::Map::new(), None),
    };
    let call = orchestrator::auth::policy::Call {
        access: rule.access,
        environment,
        endpoint_id: Some(endpoint_id),
        parameters,
    };
    if let Err(denied) = state.orchestrator.authorize(&principal, &call) {
        return Err(ApiError::new(StatusCode::FORBIDDEN, denied.0).into_response());
    }
    request.extensions_mut().insert(Caller(principal));
    Ok((request, reserved))
}

/// The endpoint data of every route an access policy decides on (`data.endpoints`), with the
/// console's checks: `inmanta policy-engine print-endpoint-data` prints it.
pub fn endpoint_data() -> orchestrator::auth::policy::Endpoints {
    use orchestrator::auth::policy::{EndpointData, endpoint_id, with_console_endpoints};
    let endpoints = all_routes()
        .table
        .into_iter()
        .filter(|route| route.rule.access != Access::Public)
        .map(|route| {
            let environment_param = route.rule.environment_in_path.unwrap_or(api::TID_HEADER);
            let mut data = EndpointData::of(route.rule.access, Some(environment_param));
            data.read_only = route.rule.read_only();
            if let Some(field) = route.rule.environment_in_body {
                data.environment_param = Some(field.to_string());
            }
            (endpoint_id(route.method.as_str(), route.path), data)
        })
        .collect();
    with_console_endpoints(endpoints)
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
/// A body refused before it was read whole leaves the rest of it on the connection: say so with
/// `Connection: close`, so that clients open a new connection instead of reusing a broken one.
async fn close_after_refused_body(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    if response.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
        response.headers_mut().insert(axum::http::header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

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
