//! The server's connections, plain HTTP and HTTPS alike, from one accept loop: what a client may
//! hold open and for how long, so that connections that never finish their request cannot take
//! the server offline (issue 36).
//!
//! - The open-file soft limit is raised to the hard limit at start ([`raise_open_file_limit`]).
//! - A client address holds at most `[server] max-connections-per-client` connections at once;
//!   one more is answered 429 and closed. Trusted proxies (`[server] trusted-proxies`) carry
//!   many clients and are not capped.
//! - A request head must arrive within `[server] header-timeout` (of the connection's start or
//!   of the previous answer): a partial head then gets 408, an idle connection is closed.
//! - A request body may pause at most `[server] body-timeout` between two pieces (408).
//! - A kept-alive connection idle for `[server] keep-alive-timeout` (75 s) is closed.
//! - Accept errors (out of file descriptors) back off instead of spinning, and close the
//!   connections that have been idle longest to make room for new clients (issue 47).
//! - The errors hyper answers by itself before a request reaches the router (431, 414, 400)
//!   leave as JSON like every other error ([`guarded`]).

mod body;
mod guarded;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::StatusCode;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

pub use body::body_timed_out;
use guarded::{Guarded, Phase};

/// `[server] header-timeout` when not set.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// `[server] body-timeout` when not set.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// `[server] keep-alive-timeout` when not set (nginx's `keepalive_timeout`).
pub const DEFAULT_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(75);
/// `[server] max-connections-per-client` when not set.
pub const DEFAULT_MAX_CONNECTIONS_PER_CLIENT: usize = 256;
/// How long open requests may go on after a shutdown signal (an open console keeps its event
/// stream forever).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// What a client may hold open, and for how long.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub keep_alive_timeout: Duration,
    /// 0: no cap.
    pub max_per_client: usize,
    /// Not capped: each carries many clients.
    pub trusted_proxies: Vec<IpAddr>,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            keep_alive_timeout: DEFAULT_KEEP_ALIVE_TIMEOUT,
            max_per_client: DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
            trusted_proxies: Vec::new(),
        }
    }
}

/// Raises the soft limit of open files to the hard limit (the usual soft limit of 1 024 is far
/// below what a server with many clients and agents needs) and logs it; the limit in force.
pub fn raise_open_file_limit() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let soft = limit.current;
    // No hard limit: a generous ceiling that still fits every kernel's table.
    let target = limit.maximum.unwrap_or(1 << 20);
    if soft.is_some_and(|s| s >= target) {
        tracing::info!(open_files = target, "open-file limit");
        return Some(target);
    }
    let raised = rustix::process::Rlimit { current: Some(target), maximum: limit.maximum };
    match setrlimit(Resource::Nofile, raised) {
        Ok(()) => {
            tracing::info!(open_files = target, was = ?soft, "open-file limit raised to the hard limit");
            Some(target)
        }
        Err(e) => {
            tracing::warn!(open_files = ?soft, error = %e, "cannot raise the open-file limit");
            soft
        }
    }
}

/// Connections open per client address.
#[derive(Default)]
struct PerClient(Mutex<HashMap<IpAddr, usize>>);

/// One counted connection; uncounted when dropped.
struct Slot {
    clients: Arc<PerClient>,
    address: IpAddr,
}

impl PerClient {
    fn take(self: &Arc<Self>, address: IpAddr, max: usize) -> Option<Slot> {
        let mut open = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(address).or_default();
        if max != 0 && *count >= max {
            return None;
        }
        *count += 1;
        Some(Slot { clients: self.clone(), address })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.clients.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.address);
            }
        }
    }
}

/// The open connections, by number, so that the idle ones can be closed when the server runs
/// out of file descriptors.
#[derive(Default)]
struct Open {
    next: std::sync::atomic::AtomicU64,
    phases: Mutex<HashMap<u64, Phase>>,
}

/// One registered connection; removed when dropped.
struct Registered {
    open: Arc<Open>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.open.phases.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
    }
}

impl Open {
    fn register(self: &Arc<Self>, phase: Phase) -> Registered {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.phases.lock().unwrap_or_else(|e| e.into_inner()).insert(id, phase);
        Registered { open: self.clone(), id }
    }

    /// Closes a tenth (at least one) of the idle connections, those idle longest; how many.
    fn shed_oldest_idle(&self) -> usize {
        let phases = self.phases.lock().unwrap_or_else(|e| e.into_inner());
        let mut idle: Vec<(Instant, &Phase)> =
            phases.values().filter_map(|p| p.idle_since().map(|since| (since, p))).collect();
        idle.sort_by_key(|(since, _)| *since);
        let count = idle.len().div_ceil(10);
        for (_, phase) in idle.iter().take(count) {
            phase.shed();
        }
        count
    }
}

/// Serves `app` on `listener` (over TLS with `tls`) until `shutdown` completes; open requests
/// then get [`SHUTDOWN_GRACE`] to finish.
pub async fn serve(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    tokio::pin!(shutdown);
    let limits = Arc::new(limits);
    let clients = Arc::new(PerClient::default());
    let open = Arc::new(Open::default());
    let (stop, stopping) = watch::channel(false);
    let mut last_accept_warning: Option<Instant> = None;
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors (EMFILE) and the like: accepting again at once
                    // fails again at once. Wait for connections to close; warn now and then.
                    // Out of file descriptors: the connections idle longest make room.
                    let shed = open.shed_oldest_idle();
                    if last_accept_warning.is_none_or(|at| at.elapsed() > Duration::from_secs(5)) {
                        tracing::warn!(error = %e, closed_idle = shed, "could not accept a connection; backing off and closing the connections idle longest");
                        last_accept_warning = Some(Instant::now());
                    }
                    tokio::time::sleep(Duration::from_millis(if shed > 0 { 10 } else { 100 })).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        // Small answers and event-stream messages leave at once rather than after the peer's
        // delayed acknowledgement.
        let _ = tcp.set_nodelay(true);
        let capped = !limits.trusted_proxies.contains(&peer.ip());
        let max = if capped { limits.max_per_client } else { 0 };
        let Some(slot) = clients.take(peer.ip(), max) else {
            refuse_over_cap(tcp, limits.max_per_client);
            continue;
        };
        let (tls, app, limits, stopping) = (tls.clone(), app.clone(), limits.clone(), stopping.clone());
        let phase = Phase::new();
        let registered = open.register(phase.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let _registered = registered;
            match tls {
                None => connection(tcp, peer, app, &limits, stopping, phase).await,
                Some(acceptor) => {
                    // A client that never finishes the handshake does not hold the task forever.
                    match tokio::time::timeout(limits.header_timeout, acceptor.accept(tcp)).await {
                        Ok(Ok(stream)) => connection(stream, peer, app, &limits, stopping, phase).await,
                        Ok(Err(e)) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                }
            }
        });
    }
    drop(listener);
    let _ = stop.send(true);
    // Every connection task holds a receiver: when all are gone, all connections are.
    let all_closed = async {
        while stop.receiver_count() > 1 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    if tokio::time::timeout(SHUTDOWN_GRACE, all_closed).await.is_err() {
        tracing::info!("requests still open {} s after the shutdown signal are cut", SHUTDOWN_GRACE.as_secs());
    }
    Ok(())
}

/// One connection too many from an address: a 429 if the socket takes it at once, then closed.
fn refuse_over_cap(tcp: TcpStream, max: usize) {
    let message = format!(
        "too many connections from your address (at most {max} at once, [server] max-connections-per-client); \
         close some or reuse them"
    );
    tracing::debug!(peer = ?tcp.peer_addr().ok(), "connection refused: too many from this address");
    // Written from a task of its own, bounded in time: a socket just accepted may not be known
    // writable yet (try_write then writes nothing), and the accept loop must not wait on a peer.
    tokio::spawn(async move {
        let mut tcp = tcp;
        let answer = guarded::json_response(StatusCode::TOO_MANY_REQUESTS, &message);
        let _ = tokio::time::timeout(Duration::from_secs(1), tcp.write_all(&answer)).await;
    });
}

/// Serves one connection (plain or TLS) with hyper, HTTP/1.1 with upgrades (the remote agents'
/// WebSocket).
async fn connection<S>(
    stream: S,
    peer: SocketAddr,
    app: Router,
    limits: &ConnectionLimits,
    mut stopping: watch::Receiver<bool>,
    phase: Phase,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let io = Guarded::new(stream, phase.clone(), limits.header_timeout, limits.keep_alive_timeout);
    let body_timeout = limits.body_timeout;
    let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
        request.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
        phase.request_started();
        let request = request.map(|incoming| Body::new(body::Timed::new(incoming, body_timeout)));
        let phase = phase.clone();
        let answer = app.clone().oneshot(request);
        async move {
            let response = answer.await?;
            Ok::<_, std::convert::Infallible>(phase.watch_response(response))
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        // [`Guarded`] runs the header timer: hyper's would also cut idle kept-alive connections.
        .header_read_timeout(None)
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    tokio::pin!(connection);
    let outcome = tokio::select! {
        outcome = connection.as_mut() => outcome,
        _ = async { stopping.wait_for(|stop| *stop).await.map(|_| ()) } => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(e) = outcome {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}
