//! Extractors that turn every malformed request into a JSON error saying what to fix, instead
//! of axum's plain-text rejections. Bodies and queries that the strict reading refuses get a
//! second, lenient reading with Inmanta's coercions ([`super::lenient`]) before they are refused.

use axum::RequestExt;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use orchestrator::paging::{PageRequest, page_request};
use serde::de::DeserializeOwned;
use uuid::Uuid;

use super::error::ApiError;
use super::lenient;

/// A JSON body. An empty body counts as `{}` because Inmanta clients send no body for calls
/// whose arguments are all optional.
pub struct Json<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(mut req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let path_arguments = path_arguments(&mut req).await;
        let bytes = body_bytes(req, state).await?;
        let bytes = if bytes.iter().all(u8::is_ascii_whitespace) { &b"{}"[..] } else { &bytes[..] };
        refuse_nul(bytes)?;
        serde_json::from_slice(bytes).map(Json).or_else(|strict| {
            serde_json::from_slice::<serde_json::Value>(bytes)
                .ok()
                .and_then(|value| lenient::from_body(value, &path_arguments).ok())
                .map(Json)
                .ok_or_else(|| {
                    ApiError::bad_request(format!("Invalid request: the body is not valid for this call: {strict}"))
                })
        })
    }
}

/// The whole body of `req`, within the route's cap ([`super::limits::BodyCap`]).
pub async fn body_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<axum::body::Bytes, ApiError> {
    let cap = req.extensions().get::<super::limits::BodyCap>().copied();
    axum::body::Bytes::from_request(req, state).await.map_err(|e| {
        let status = e.status();
        if let Some(stalled) = crate::connections::body_timed_out(&e) {
            ApiError::new(StatusCode::REQUEST_TIMEOUT, format!("{stalled}; send the body without pauses"))
        } else if status == StatusCode::PAYLOAD_TOO_LARGE {
            match cap {
                Some(cap) => super::limits::too_large(cap.bytes, cap.limit),
                None => {
                    ApiError::new(status, "request body too large: raise [server] max-request-body-size to allow it")
                }
            }
        } else {
            ApiError::new(status, format!("could not read the request body: {e}"))
        }
    })
}

/// No string of a body, key or value, holds a NUL (`\u0000`): PostgreSQL refuses them in text
/// and JSON, SQLite keeps them, so they are refused here for every call and both give one answer.
/// The byte scan is cheap; only a body that shows the escape is parsed again to look closer,
/// because `\\u0000` (an escaped backslash) is not a NUL.
fn refuse_nul(bytes: &[u8]) -> Result<(), ApiError> {
    const ESCAPE: &[u8] = b"\\u0000";
    if !bytes.windows(ESCAPE.len()).any(|w| w == ESCAPE) {
        return Ok(());
    }
    fn holds_nul(value: &serde_json::Value) -> bool {
        match value {
            serde_json::Value::String(s) => s.contains('\0'),
            serde_json::Value::Array(items) => items.iter().any(holds_nul),
            serde_json::Value::Object(map) => map.iter().any(|(k, v)| k.contains('\0') || holds_nul(v)),
            _ => false,
        }
    }
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(value) if holds_nul(&value) => {
            Err(ApiError::bad_request("Invalid request: the body may not contain NUL characters (\\u0000)"))
        }
        _ => Ok(()),
    }
}

/// Names an Inmanta client may repeat in the body of a call with path parameters: Inmanta's
/// own names of path parameters (its client sends every argument of a POST, PUT or PATCH in the
/// body too), and ours. Empty for a route without path parameters.
async fn path_arguments(req: &mut Request) -> Vec<String> {
    const INMANTA_PATH_ARGUMENTS: &[&str] = &[
        "action",
        "discovered_resource_id",
        "from_version",
        "id",
        "jti",
        "name",
        "notification_id",
        "report_id",
        "rid",
        "rvid",
        "to_version",
        "username",
        "version",
    ];
    let Ok(params) = req.extract_parts::<axum::extract::RawPathParams>().await else { return Vec::new() };
    let ours: Vec<String> = params.iter().map(|(name, _)| name.to_string()).collect();
    if ours.is_empty() {
        return ours;
    }
    INMANTA_PATH_ARGUMENTS.iter().map(|name| name.to_string()).chain(ours).collect()
}

impl From<JsonRejection> for ApiError {
    fn from(e: JsonRejection) -> Self {
        ApiError::new(e.status(), format!("Invalid request: {}", e.body_text()))
    }
}

/// Path parameters, with a JSON error naming the bad value.
pub struct Path<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| Path(p.0))
            .map_err(|e: PathRejection| ApiError::bad_request(format!("Invalid request: {}", e.body_text())))
    }
}

/// Query parameters, with a JSON error naming the bad parameter.
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(q) => Ok(Query(q.0)),
            Err(strict) => lenient::from_value(query_value(&parts.uri)).map(Query).map_err(|_: serde_json::Error| {
                let strict: QueryRejection = strict;
                ApiError::bad_request(format!("Invalid request: {}", strict.body_text()))
            }),
        }
    }
}

/// The paging, sorting and filtering of a v2 list (`limit`, `sort`, `start`/`end`,
/// `first_id`/`last_id`, `filter.<name>`), read from the query string and checked.
pub struct Paging(pub PageRequest);

impl<S: Send + Sync> FromRequestParts<S> for Paging {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Query(pairs) = Query::<Vec<(String, String)>>::from_request_parts(parts, state).await?;
        Ok(Paging(page_request(&pairs)?))
    }
}

/// A query string as a JSON object of strings; a repeated key holds the list of its values.
fn query_value(uri: &axum::http::Uri) -> serde_json::Value {
    let pairs = axum::extract::Query::<Vec<(String, String)>>::try_from_uri(uri).map(|q| q.0).unwrap_or_default();
    let mut map = serde_json::Map::new();
    for (key, value) in pairs {
        let value = serde_json::Value::String(value);
        match map.get_mut(&key) {
            Some(serde_json::Value::Array(values)) => values.push(value),
            Some(first) => *first = serde_json::Value::Array(vec![first.take(), value]),
            None => {
                map.insert(key, value);
            }
        }
    }
    serde_json::Value::Object(map)
}

/// The environment of an environment-scoped call, from the `X-Inmanta-tid` header.
pub struct Tid(pub Uuid);

impl<S: Send + Sync> FromRequestParts<S> for Tid {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let value = parts.headers.get(api::TID_HEADER).ok_or_else(|| {
            ApiError::bad_request(format!("this call needs the environment id in the {} header", api::TID_HEADER))
        })?;
        let text = value.to_str().unwrap_or_default();
        Uuid::parse_str(text.trim()).map(Tid).map_err(|_| {
            ApiError::bad_request(format!(
                "the {} header must be an environment id (a UUID), got {text:?}",
                api::TID_HEADER
            ))
        })
    }
}

/// The client's address, when the server knows it (behind `into_make_service_with_connect_info`).
pub struct PeerAddress(pub Option<std::net::SocketAddr>);

impl<S: Send + Sync> FromRequestParts<S> for PeerAddress {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let peer = parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>().map(|c| c.0);
        Ok(PeerAddress(peer))
    }
}
