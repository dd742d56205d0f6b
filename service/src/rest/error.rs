//! Every failure of the REST API leaves as JSON `{"message": ...}` with a fitting status code.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError { status, message: message.into() }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }
}

impl From<orchestrator::Error> for ApiError {
    fn from(e: orchestrator::Error) -> Self {
        use orchestrator::Error::*;
        let status = match &e {
            BadRequest(_) => StatusCode::BAD_REQUEST,
            NotFound(_) => StatusCode::NOT_FOUND,
            Conflict(_) => StatusCode::CONFLICT,
            Forbidden(_) => StatusCode::FORBIDDEN,
            LeaseLost(_) => StatusCode::SERVICE_UNAVAILABLE,
            Database(_) if e.is_unreachable() => {
                tracing::warn!(error = %e, "request answered 503: the database cannot be reached");
                return ApiError::database_unreachable();
            }
            Database(_) | Corrupt(_) => return ApiError::internal(&e),
        };
        ApiError::new(status, e.to_string())
    }
}

impl ApiError {
    /// The answer to a request that the database's outage (or a lost connection to it) holds
    /// up. What the request would have changed may or may not be stored: the caller asks again
    /// once the database is back.
    pub fn database_unreachable() -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the database cannot be reached: the request was not completed; try again once it is back \
             (GET /api/v2/health says when)",
        )
    }

    /// A failure on the server's side (database, I/O): the client gets an incident's fixed
    /// message and id to quote; the detail, which may hold the database's own text, is logged.
    pub fn internal(detail: &dyn std::fmt::Display) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, orchestrator::Incident::log(detail).to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(api::ErrorBody { message: self.message, error_details: None })).into_response()
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
