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
            Database(_) | Corrupt(_) => return ApiError::internal(&e),
        };
        ApiError::new(status, e.to_string())
    }
}

impl ApiError {
    /// A failure on the server's side (database, I/O): the client gets a fixed message and an
    /// id to quote; the detail, which may hold the database's own text, goes only to the log.
    pub fn internal(detail: &dyn std::fmt::Display) -> ApiError {
        let id = uuid::Uuid::new_v4();
        tracing::error!(error_id = %id, error = %detail, "request failed on the server side");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal server error (error id {id}); the server log has the details"),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(api::ErrorBody { message: self.message, error_details: None })).into_response()
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
