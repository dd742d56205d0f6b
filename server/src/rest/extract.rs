//! Extractors that turn every malformed request into a JSON error saying what to fix, instead
//! of axum's plain-text rejections.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use super::error::ApiError;

/// A JSON body. An empty body counts as `{}` because Inmanta clients send no body for calls
/// whose arguments are all optional.
pub struct Json<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let cap = req.extensions().get::<super::limits::BodyCap>().copied();
        let bytes = axum::body::Bytes::from_request(req, state).await.map_err(|e| {
            let status = e.status();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                match cap {
                    Some(cap) => super::limits::too_large(cap.bytes, cap.limit),
                    None => ApiError::new(
                        status,
                        "request body too large: raise [server] max-request-body-size to allow it",
                    ),
                }
            } else {
                ApiError::new(status, format!("could not read the request body: {e}"))
            }
        })?;
        let bytes = if bytes.iter().all(u8::is_ascii_whitespace) { &b"{}"[..] } else { &bytes[..] };
        serde_json::from_slice(bytes)
            .map(Json)
            .map_err(|e| ApiError::bad_request(format!("Invalid request: the body is not valid for this call: {e}")))
    }
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
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Query(q.0))
            .map_err(|e: QueryRejection| ApiError::bad_request(format!("Invalid request: {}", e.body_text())))
    }
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
