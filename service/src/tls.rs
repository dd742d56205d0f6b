//! HTTPS for `inmanta server` when `[server] ssl-cert-file` and `ssl-key-file` are set
//! (Inmanta's options): the rustls acceptor (ring provider) the accept loop of connections.rs
//! hands each connection to.

use std::sync::Arc;

use anyhow::Context;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

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
