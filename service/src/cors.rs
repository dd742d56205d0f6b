//! Cross-origin reads as Inmanta 20.1 allows them (`protocol/rest/server.py`): with
//! `[server] access-control-allow-origin` set, every answer carries
//! `Access-Control-Allow-Origin` with that value (never set otherwise: `null` can be abused);
//! a preflight `OPTIONS` of an API path answers 200 with the methods and headers a client may use.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// What the answers say.
#[derive(Debug, Clone, Default)]
pub struct Cors {
    /// `[server] access-control-allow-origin`.
    pub allow_origin: Option<HeaderValue>,
    /// Authentication is on: `Authorization` is among the allowed headers.
    pub auth: bool,
}

/// The middleware in front of every route (serve.rs).
pub async fn cross_origin(State(cors): State<std::sync::Arc<Cors>>, request: Request, next: Next) -> Response {
    let preflight = request.method() == Method::OPTIONS && request.uri().path().starts_with("/api/");
    let mut response = if preflight {
        let mut headers = String::from("Origin, Accept, Content-Type, X-Requested-With, X-CSRF-Token, X-Inmanta-tid");
        if cors.auth {
            headers.push_str(", Authorization");
        }
        let mut response = StatusCode::OK.into_response();
        let h = response.headers_mut();
        h.insert(
            header::ACCESS_CONTROL_ALLOW_METHODS,
            HeaderValue::from_static("HEAD, GET, POST, PUT, OPTIONS, DELETE, PATCH"),
        );
        h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_str(&headers).expect("ASCII"));
        response
    } else {
        next.run(request).await
    };
    if let Some(origin) = &cors.allow_origin {
        response.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    }
    response
}
