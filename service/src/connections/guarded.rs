//! The socket as hyper sees it, with two duties hyper does not do the way this server answers:
//!
//! - the header timeout: a request head that has not fully arrived `header-timeout` after the
//!   connection opened (or after the previous answer) ends the connection, with a JSON 408 when
//!   part of a head came (an idle connection is just closed: a client that sent nothing is
//!   waiting for nothing, and an unasked 408 could be read as the answer to its next request);
//! - JSON errors: hyper answers a head it cannot parse itself (431 too large, 414 URI too long,
//!   400 malformed, e.g. a NUL in a header or a bad Content-Length) with an empty body. Such an
//!   answer is recognised as it is written (a 4xx head with `content-length: 0`, written alone,
//!   which the router never produces: its errors carry a JSON body) and replaced by the same
//!   status with a JSON message.

use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker, ready};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::response::Response;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// Where a connection is between its requests, shared by the service (which sees requests
/// start and answers end) and the socket wrapper (which runs the header timer).
#[derive(Clone)]
pub struct Phase(Arc<PhaseState>);

struct PhaseState {
    /// `WAITING`, `ANSWERING` or `UPGRADED`.
    now: AtomicU8,
    /// Requests started so far: a new one re-arms the header timer.
    requests: AtomicU64,
    /// The task reading the socket: woken when the answer is out (so the idle timer is armed
    /// even when hyper was already waiting for the next head) and when the connection is shed.
    reader: Mutex<Option<Waker>>,
    /// Since when the connection waits for a head.
    idle_since: Mutex<Instant>,
    /// Closed for want of file descriptors, as soon as it is idle ([`Phase::shed`]).
    shed: AtomicBool,
}

const WAITING: u8 = 0;
const ANSWERING: u8 = 1;
const UPGRADED: u8 = 2;

impl Phase {
    pub fn new() -> Phase {
        Phase(Arc::new(PhaseState {
            now: AtomicU8::new(WAITING),
            requests: AtomicU64::new(0),
            reader: Mutex::new(None),
            idle_since: Mutex::new(Instant::now()),
            shed: AtomicBool::new(false),
        }))
    }

    /// Since when the connection has been waiting for a request head; `None` while it answers
    /// one (or was upgraded).
    /// A connection just accepted whose first head is on its way is not idle yet.
    pub fn idle_since(&self) -> Option<Instant> {
        if self.0.now.load(Ordering::SeqCst) != WAITING {
            return None;
        }
        let since = *lock(&self.0.idle_since);
        let new = self.0.requests.load(Ordering::SeqCst) == 0 && since.elapsed() < Duration::from_secs(1);
        (!new).then_some(since)
    }

    /// Closes the connection if it is idle (now or once it becomes so): the server is out of
    /// file descriptors and idle connections are the ones that lose nothing by closing.
    pub fn shed(&self) {
        self.0.shed.store(true, Ordering::SeqCst);
        self.wake_reader();
    }

    fn wake_reader(&self) {
        if let Some(waker) = lock(&self.0.reader).take() {
            waker.wake();
        }
    }

    fn register_reader(&self, waker: &Waker) {
        let mut reader = lock(&self.0.reader);
        if !reader.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *reader = Some(waker.clone());
        }
    }

    pub fn request_started(&self) {
        self.0.requests.fetch_add(1, Ordering::SeqCst);
        self.0.now.store(ANSWERING, Ordering::SeqCst);
    }

    /// The answer's body tells when it is done (the next head is then awaited); a 101 hands
    /// the connection to another protocol, which the header timer leaves alone.
    pub fn watch_response(&self, response: Response) -> Response {
        if response.status() == StatusCode::SWITCHING_PROTOCOLS {
            self.0.now.store(UPGRADED, Ordering::SeqCst);
            return response;
        }
        let phase = self.clone();
        response.map(|body| axum::body::Body::new(AnswerBody { inner: body, phase: Some(phase) }))
    }

    fn answered(&self) {
        *lock(&self.0.idle_since) = Instant::now();
        if self.0.now.compare_exchange(ANSWERING, WAITING, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            // hyper may be waiting on the socket already, from while it answered: without a
            // wake-up the idle timer would never be armed and an idle connection stay forever.
            self.wake_reader();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A response body that marks the connection as waiting for its next head once sent (or dropped).
struct AnswerBody {
    inner: axum::body::Body,
    phase: Option<Phase>,
}

impl axum::body::HttpBody for AnswerBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let frame = ready!(Pin::new(&mut self.inner).poll_frame(cx));
        if frame.is_none()
            && let Some(phase) = self.phase.take()
        {
            phase.answered();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for AnswerBody {
    fn drop(&mut self) {
        if let Some(phase) = self.phase.take() {
            phase.answered();
        }
    }
}

/// The header timer of the head being awaited.
struct HeadTimer {
    sleep: Pin<Box<Sleep>>,
    /// `Phase::requests` when it was armed.
    after_request: u64,
    /// Bytes of this head received so far.
    received: usize,
}

/// A response being written in place of what hyper asked to write.
struct Replacement {
    bytes: Vec<u8>,
    written: usize,
    /// What hyper is told was written once it is all out.
    claimed: usize,
    /// Then the connection ends (the header timeout): reads see the end.
    then_eof: bool,
}

pub struct Guarded<S> {
    inner: S,
    phase: Phase,
    header_timeout: Duration,
    /// How long a kept-alive connection may sit idle between an answer and the first byte of
    /// the next head (`[server] keep-alive-timeout`, like nginx's `keepalive_timeout`); its head
    /// then has `header-timeout`.
    keep_alive: Duration,
    timer: Option<HeadTimer>,
    replacement: Option<Replacement>,
    closed: bool,
}

impl<S> Guarded<S> {
    pub fn new(inner: S, phase: Phase, header_timeout: Duration, keep_alive: Duration) -> Guarded<S> {
        Guarded { inner, phase, header_timeout, keep_alive, timer: None, replacement: None, closed: false }
    }
}

impl<S: AsyncWrite + Unpin> Guarded<S> {
    /// Writes the replacement out; ready with the bytes to claim when all is written.
    fn poll_replacement(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let Some(r) = self.replacement.as_mut() else { return Poll::Ready(Ok(0)) };
        while r.written < r.bytes.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &r.bytes[r.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            r.written += n;
        }
        ready!(Pin::new(&mut self.inner).poll_flush(cx))?;
        let claimed = r.claimed;
        if r.then_eof {
            self.closed = true;
        }
        self.replacement = None;
        Poll::Ready(Ok(claimed))
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.replacement.as_ref().is_some_and(|r| r.then_eof) {
            ready!(this.poll_replacement(cx))?;
        }
        if this.closed {
            return Poll::Ready(Ok(()));
        }
        this.phase.register_reader(cx.waker());
        let waiting = this.phase.0.now.load(Ordering::SeqCst) == WAITING;
        if waiting && this.phase.0.shed.load(Ordering::SeqCst) && this.timer.as_ref().is_none_or(|t| t.received == 0) {
            tracing::debug!("idle connection closed: out of file descriptors");
            this.closed = true;
            return Poll::Ready(Ok(()));
        }
        if !waiting {
            this.timer = None;
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        }
        let requests = this.phase.0.requests.load(Ordering::SeqCst);
        if this.timer.as_ref().is_none_or(|t| t.after_request != requests) {
            // The first head counts from the connection's start; later ones from their first byte.
            let wait = if requests == 0 { this.header_timeout } else { this.keep_alive };
            this.timer =
                Some(HeadTimer { sleep: Box::pin(tokio::time::sleep(wait)), after_request: requests, received: 0 });
        }
        let before = buf.filled().len();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(result) => {
                let read = buf.filled().len() - before;
                if let Some(timer) = this.timer.as_mut() {
                    if timer.received == 0 && read > 0 && requests > 0 {
                        timer.sleep.as_mut().reset(tokio::time::Instant::now() + this.header_timeout);
                    }
                    timer.received += read;
                }
                Poll::Ready(result)
            }
            Poll::Pending => {
                let Some(timer) = this.timer.as_mut() else { return Poll::Pending };
                ready!(timer.sleep.as_mut().poll(cx));
                let partial = timer.received > 0;
                tracing::debug!(partial, "request head not received within the header timeout");
                if !partial {
                    this.closed = true;
                    return Poll::Ready(Ok(()));
                }
                let message = format!(
                    "the request head did not arrive within {} s ([server] header-timeout); send it at once",
                    this.header_timeout.as_secs_f64()
                );
                let bytes = json_response(StatusCode::REQUEST_TIMEOUT, &message);
                this.replacement = Some(Replacement { bytes, written: 0, claimed: 0, then_eof: true });
                ready!(this.poll_replacement(cx))?;
                Poll::Ready(Ok(()))
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.replacement.is_none() {
            let total: usize = bufs.iter().map(|b| b.len()).sum();
            let first = bufs.iter().find(|b| !b.is_empty());
            if let Some(first) = first
                && first.len() == total
                && let Some(status) = hyper_error_status(first)
            {
                let bytes = json_response(status, &hyper_error_message(status));
                this.replacement = Some(Replacement { bytes, written: 0, claimed: total, then_eof: false });
            }
        }
        if this.replacement.is_some() {
            return this.poll_replacement(cx);
        }
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// The status of an answer hyper wrote by itself: a 4xx head with an empty body.
fn hyper_error_status(head: &[u8]) -> Option<StatusCode> {
    let text = std::str::from_utf8(head).ok()?;
    if !text.ends_with("\r\n\r\n") {
        return None;
    }
    let status_line = text.strip_prefix("HTTP/1.1 ").or_else(|| text.strip_prefix("HTTP/1.0 "))?;
    let status = StatusCode::from_bytes(status_line.get(..3)?.as_bytes()).ok()?;
    let empty = text.to_ascii_lowercase().contains("\r\ncontent-length: 0\r\n");
    (status.is_client_error() && empty).then_some(status)
}

fn hyper_error_message(status: StatusCode) -> String {
    match status {
        StatusCode::BAD_REQUEST => "malformed request: the request line or a header is invalid (a NUL or another \
                                    control character in a header, a Content-Length that is not one number, ...); \
                                    fix the client"
            .to_string(),
        StatusCode::URI_TOO_LONG => {
            "the URI is too long (at most 65534 bytes); send large arguments in the request body".to_string()
        }
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => {
            "the request head is too large (at most about 400 KiB and 100 headers); send fewer or smaller headers"
                .to_string()
        }
        other => format!("the request was refused before it reached a route ({other})"),
    }
}

/// A whole HTTP/1.1 answer with a JSON `{"message": ...}` body, after which the connection closes.
pub fn json_response(status: StatusCode, message: &str) -> Vec<u8> {
    let body = serde_json::to_vec(&api::ErrorBody { message: message.to_string(), error_details: None })
        .unwrap_or_else(|_| b"{}".to_vec());
    let reason = status.canonical_reason().unwrap_or("");
    let mut bytes = format!(
        "HTTP/1.1 {} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        status.as_u16(),
        body.len()
    )
    .into_bytes();
    bytes.extend_from_slice(&body);
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_empty_client_error_heads_are_hyper_s() {
        let hyper = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert_eq!(hyper_error_status(hyper), Some(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE));
        let ours = b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 20\r\n\r\n";
        assert_eq!(hyper_error_status(ours), None);
        assert_eq!(hyper_error_status(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"), None);
        assert_eq!(hyper_error_status(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n"), None, "not a whole head");
        let answer = String::from_utf8(json_response(StatusCode::URI_TOO_LONG, "too \"long\"")).unwrap();
        assert!(answer.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{answer}");
        let body = answer.split("\r\n\r\n").nth(1).unwrap();
        assert_eq!(serde_json::from_str::<serde_json::Value>(body).unwrap()["message"], "too \"long\"");
        assert!(answer.contains(&format!("content-length: {}\r\n", body.len())), "{answer}");
    }
}
