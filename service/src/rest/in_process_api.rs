//! The REST API as the server's in-process agents call it: the API calls of Python handlers
//! (`self.get_client()`, docs/modules.md) go through the server's own router, with the caller an
//! agent token of the agent's environment would be. They pass the same guard, rules and limits as
//! a call from the network; only the authentication is skipped, as the caller is known.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent::{ApiRequest, ServerApi};
use axum::Router;
use axum::body::Body;
use axum::http::Request;
use orchestrator::auth::{Clients, Principal};
use serde_json::{Value, json};
use tower::ServiceExt;
use uuid::Uuid;

/// The caller of a request the server makes of its own API for an in-process agent: a request
/// extension, which no request from the network carries. The guard takes it instead of
/// authenticating.
#[derive(Clone)]
pub struct InternalCaller(pub Principal);

/// How long a handler's API call waits for its answer (inmanta-core's client's default).
const PATIENCE: Duration = Duration::from_secs(120);

/// The largest answer a handler gets (the router's own answers are paged and far smaller).
const MAX_ANSWER_BYTES: usize = 256 * 1024 * 1024;

/// The server's router for the API calls of in-process agents' Python handlers; set once the
/// router is built (calls before that are answered 503).
pub struct RouterApi {
    router: OnceLock<Router>,
    runtime: tokio::runtime::Handle,
}

impl RouterApi {
    /// Must be called on the runtime that serves the calls.
    pub fn new() -> Arc<RouterApi> {
        Arc::new(RouterApi { router: OnceLock::new(), runtime: tokio::runtime::Handle::current() })
    }

    /// The REST router the calls go through (the first one given stays).
    pub fn set_router(&self, router: Router) {
        let _ = self.router.set(router);
    }
}

impl ServerApi for RouterApi {
    fn call(&self, environment: &str, request: &ApiRequest) -> (u16, Value) {
        let message = |code: u16, message: String| (code, json!({"message": message}));
        let Ok(environment) = Uuid::parse_str(environment) else {
            return message(400, format!("{environment:?} is not an environment id"));
        };
        let Some(router) = self.router.get() else {
            return message(503, "the server's API is not serving yet; retry".into());
        };
        let mut builder = Request::builder().method(request.method.as_str()).uri(&request.path_and_query);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        let body = match &request.body {
            Some(body) => {
                builder = builder.header("content-type", "application/json");
                Body::from(body.to_string())
            }
            None => Body::empty(),
        };
        let mut http_request = match builder.body(body) {
            Ok(http_request) => http_request,
            Err(e) => return message(400, format!("{} {}: {e}", request.method, request.path_and_query)),
        };
        // What an agent token of this environment may do, nothing more.
        let caller = Principal::Token { environment, clients: Clients::AGENT, jti: None };
        http_request.extensions_mut().insert(InternalCaller(caller));
        let exchange = async {
            let response = router.clone().oneshot(http_request).await.unwrap_or_else(|never| match never {});
            let status = response.status().as_u16();
            let bytes = axum::body::to_bytes(response.into_body(), MAX_ANSWER_BYTES).await;
            (status, bytes)
        };
        match self.runtime.block_on(tokio::time::timeout(PATIENCE, exchange)) {
            Ok((status, Ok(bytes))) if bytes.is_empty() => (status, Value::Null),
            Ok((status, Ok(bytes))) => (
                status,
                serde_json::from_slice(&bytes)
                    .unwrap_or_else(|_| json!({"message": String::from_utf8_lossy(&bytes).into_owned()})),
            ),
            Ok((_, Err(e))) => message(500, format!("the answer to {} could not be read: {e}", request.path_and_query)),
            Err(_) => message(
                504,
                format!(
                    "the server did not answer {} {} within {} s",
                    request.method,
                    request.path_and_query,
                    PATIENCE.as_secs()
                ),
            ),
        }
    }
}
