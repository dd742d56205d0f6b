//! HTTPS for `inmanta server` when `[server] ssl-cert-file` and `ssl-key-file` are set
//! (Inmanta's options): rustls with the ring provider, HTTP/1.1 with upgrades (the remote
//! agents' WebSocket), each connection's peer address handed to the router like plain HTTP does.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use crate::config::TlsFiles;

/// A TLS acceptor from PEM files, with a message naming the file that is wrong.
pub fn acceptor(files: &TlsFiles) -> anyhow::Result<TlsAcceptor> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .with_context(|| format!("[server] ssl-cert-file: cannot read {}", files.cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("[server] ssl-cert-file: {} is not a PEM certificate chain", files.cert.display()))?;
    if certs.is_empty() {
        anyhow::bail!("[server] ssl-cert-file: {} holds no certificate", files.cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .with_context(|| format!("[server] ssl-key-file: {} is not a PEM private key", files.key.display()))?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("[server] ssl-cert-file and ssl-key-file do not form a usable certificate and key")?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Serves `app` over TLS until `shutdown` completes; connections open then finish on their own.
pub async fn serve(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    app: Router,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    tokio::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "could not accept a connection");
                    continue;
                }
            },
            _ = &mut shutdown => return Ok(()),
        };
        let acceptor = acceptor.clone();
        let app = app.clone();
        tokio::spawn(async move {
            // A client that never finishes the handshake does not hold the task forever.
            let handshake = tokio::time::timeout(std::time::Duration::from_secs(10), acceptor.accept(tcp)).await;
            let stream = match handshake {
                Ok(Ok(stream)) => stream,
                Ok(Err(e)) => return tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                Err(_) => return tracing::debug!(%peer, "TLS handshake timed out"),
            };
            let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
                app.clone().oneshot(request.map(Body::new))
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(std::time::Duration::from_secs(30))
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            if let Err(e) = connection.await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
}
