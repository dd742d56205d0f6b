//! How much a request may make the server hold, and for how long: a body limit per route sized
//! to what the route needs (a few KiB for the public and login routes, so nobody can make the
//! server buffer megabytes without credentials), a byte budget shared by every body being read
//! at once, and a time limit per request.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, StatusCode, header};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::ApiError;

/// The body a route accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BodyLimit {
    /// Public and credential routes (login, logout, password changes): [`SMALL_BODY`].
    Small,
    /// Ordinary calls (settings, projects, parameters, actions): [`NORMAL_BODY`].
    #[default]
    Normal,
    /// Bulk uploads (versions, files, facts, dry-run results): `[server] max-request-body-size`.
    Large,
}

/// A login is a user name and a password.
pub const SMALL_BODY: usize = 4 * 1024;
/// Room for a large setting or parameter value.
pub const NORMAL_BODY: usize = 1024 * 1024;

/// `[server] request-timeout` when not set.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// The body limit of the route a request is for, for the extractors' 413 message.
#[derive(Debug, Clone, Copy)]
pub struct BodyCap {
    pub bytes: usize,
    pub limit: BodyLimit,
}

/// The limits one server applies.
#[derive(Clone)]
pub struct Limits {
    /// The largest body of a [`BodyLimit::Large`] route.
    pub max_body: usize,
    /// The longest a request may take, body upload included.
    pub request_timeout: Duration,
    /// Bytes of request bodies being read at once, in KiB permits.
    budget: Arc<Semaphore>,
}

impl Limits {
    /// Bodies in memory at once are bounded by twice the largest body (at least 64 MiB): two
    /// maximal uploads, or many ordinary calls, at a time; more wait their turn.
    pub fn new(max_body: usize, request_timeout: Duration) -> Limits {
        let budget_kib = (max_body.saturating_mul(2).max(64 * 1024 * 1024) / 1024).min(Semaphore::MAX_PERMITS);
        Limits { max_body, request_timeout, budget: Arc::new(Semaphore::new(budget_kib)) }
    }

    pub fn bytes(&self, limit: BodyLimit) -> usize {
        match limit {
            BodyLimit::Small => SMALL_BODY.min(self.max_body),
            BodyLimit::Normal => NORMAL_BODY.min(self.max_body),
            BodyLimit::Large => self.max_body,
        }
    }

    /// Refuses a body announced larger than the route allows and caps the one that is streamed,
    /// so reading it stops at the limit whatever the client claims.
    pub fn cap_body(&self, request: Request, limit: BodyLimit) -> Result<(Request, usize), ApiError> {
        let bytes = self.bytes(limit);
        if let Some(length) = content_length(&request)
            && length > bytes as u64
        {
            return Err(too_large(bytes, limit));
        }
        let request = request.map(|body| Body::new(http_body_util::Limited::new(body, bytes)));
        Ok((request, bytes))
    }

    /// The bytes of body this request may make the server hold: its announced length, or the
    /// route's cap for a streamed body; 0 without a body.
    pub fn expected_body(request: &Request, cap: usize) -> usize {
        match content_length(request) {
            Some(length) => (length as usize).min(cap),
            None if matches!(*request.method(), Method::GET | Method::HEAD | Method::DELETE | Method::OPTIONS)
                && !request.headers().contains_key(header::TRANSFER_ENCODING) =>
            {
                0
            }
            None => cap,
        }
    }

    /// Waits for room in the byte budget for `expected` bytes of body (see
    /// [`Limits::expected_body`]); the permit is held until the answer is ready.
    pub async fn reserve(&self, expected: usize) -> Result<Option<OwnedSemaphorePermit>, ApiError> {
        if expected == 0 {
            return Ok(None);
        }
        let kib = u32::try_from(expected.div_ceil(1024).max(1)).unwrap_or(u32::MAX);
        let wait = self.budget.clone().acquire_many_owned(kib);
        match tokio::time::timeout(self.request_timeout, wait).await {
            Ok(Ok(permit)) => Ok(Some(permit)),
            _ => Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is reading too many request bodies at once; retry later",
            )),
        }
    }

    pub fn timed_out(&self) -> ApiError {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request took longer than {} s ([server] request-timeout); send it faster or raise the limit",
                self.request_timeout.as_secs()
            ),
        )
    }
}

fn content_length(request: &Request) -> Option<u64> {
    request.headers().get(header::CONTENT_LENGTH)?.to_str().ok()?.trim().parse().ok()
}

/// The 413 answer, naming what can be done about it.
pub fn too_large(bytes: usize, limit: BodyLimit) -> ApiError {
    let nominal = match limit {
        BodyLimit::Small => SMALL_BODY,
        BodyLimit::Normal => NORMAL_BODY,
        BodyLimit::Large => usize::MAX,
    };
    // Bulk routes, and any route whose own limit is cut by the server-wide one, grow with it.
    let advice = if bytes < nominal {
        "raise [server] max-request-body-size to allow it"
    } else {
        "this call does not take bodies that large"
    };
    ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, format!("request body too large: at most {bytes} bytes; {advice}"))
}
