//! Typed HTTP client of the REST API, for the CLI and for tests: the typed endpoint methods are
//! in [`endpoints`], the query strings of list endpoints in [`query`].

use std::path::Path;

use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

mod endpoints;
pub mod query;

pub use query::{ActionQuery, ListQuery};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with an error status and a message.
    #[error("{message} (HTTP {status})")]
    Api { status: StatusCode, message: String },
    /// The server could not be reached or answered something that is not our API.
    #[error("cannot talk to the server at {url}: {source}")]
    Transport { url: String, source: reqwest::Error },
    #[error("unexpected answer from {url}: {message}")]
    Decode { url: String, message: String },
    /// The CA certificates to check an `https://` server against cannot be used.
    #[error("{0}")]
    Tls(String),
}

#[derive(Clone)]
pub struct Client {
    base: String,
    http: reqwest::Client,
    token: Option<String>,
}

impl Client {
    /// `base` is like `http://127.0.0.1:8888`. An `https://` server is checked against the
    /// system's CA bundle; [`Client::with_ca_file`] names other CA certificates.
    pub fn new(base: impl Into<String>) -> Client {
        let base = base.into().trim_end_matches('/').to_string();
        let http = if base.starts_with("https://") {
            // Without a usable system bundle, https calls fail with an unknown issuer, which
            // says what is missing.
            http_client(None).unwrap_or_default()
        } else {
            reqwest::Client::new()
        };
        Client { base, http, token: None }
    }

    /// Checks an `https://` server against the CA certificates of this PEM file (Inmanta's
    /// `[..._rest_transport] ssl_ca_cert_file`) instead of the system's bundle.
    pub fn with_ca_file(mut self, ca_file: Option<&Path>) -> Result<Client, ClientError> {
        if ca_file.is_some() && self.base.starts_with("https://") {
            self.http = http_client(ca_file).map_err(ClientError::Tls)?;
        }
        Ok(self)
    }

    pub fn with_token(mut self, token: Option<String>) -> Client {
        self.token = token;
        self
    }

    /// The bearer token calls are sent with.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// Sends a call and returns the JSON answer (`null` for an empty body).
    pub async fn call<B: Serialize + ?Sized>(
        &self,
        method: Method,
        path: &str,
        environment: Option<Uuid>,
        body: Option<&B>,
    ) -> Result<serde_json::Value, ClientError> {
        let url = format!("{}{}", self.base, path);
        let mut request = self.http.request(method, &url);
        if let Some(env) = environment {
            request = request.header(crate::TID_HEADER, env.to_string());
        }
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|source| ClientError::Transport { url: url.clone(), source })?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|source| ClientError::Transport { url: url.clone(), source })?;
        let value: serde_json::Value = if bytes.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .map_err(|e| ClientError::Decode { url: url.clone(), message: e.to_string() })?
        };
        if !status.is_success() {
            let message = value
                .get("message")
                .and_then(|m| m.as_str())
                .map(str::to_string)
                .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
            return Err(ClientError::Api { status, message });
        }
        Ok(value)
    }

    /// Sends a request as given and returns the status and the JSON answer whatever the status
    /// (an answer that is not JSON as `{"message": text}`); only a failed exchange is an error.
    /// The bearer token is this client's; `headers` must not carry credentials.
    pub async fn exchange(
        &self,
        method: Method,
        path_and_query: &str,
        headers: &[(String, String)],
        body: Option<&serde_json::Value>,
    ) -> Result<(StatusCode, serde_json::Value), ClientError> {
        let url = format!("{}{}", self.base, path_and_query);
        let mut request = self.http.request(method, &url);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|source| ClientError::Transport { url: url.clone(), source })?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|source| ClientError::Transport { url: url.clone(), source })?;
        let value = if bytes.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| serde_json::json!({"message": String::from_utf8_lossy(&bytes).into_owned()}))
        };
        Ok((status, value))
    }

    /// A typed (v2) call: unwraps `{"data": ...}` into `T`.
    pub async fn data<T: DeserializeOwned, B: Serialize + ?Sized>(
        &self,
        method: Method,
        path: &str,
        environment: Option<Uuid>,
        body: Option<&B>,
    ) -> Result<T, ClientError> {
        let value = self.call(method, path, environment, body).await?;
        let data = match value {
            serde_json::Value::Object(mut map) => map.remove("data").unwrap_or(serde_json::Value::Null),
            other => other,
        };
        serde_json::from_value(data)
            .map_err(|e| ClientError::Decode { url: format!("{}{}", self.base, path), message: e.to_string() })
    }
}

/// An HTTP client that trusts the certificates of [`ca_bundle`].
fn http_client(ca_file: Option<&Path>) -> Result<reqwest::Client, String> {
    let pem = ca_bundle(ca_file)?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| format!("{}: {e}", describe(ca_file)))?;
    if certs.is_empty() {
        return Err(format!("{} holds no PEM certificate", describe(ca_file)));
    }
    let builder = certs.into_iter().fold(reqwest::Client::builder(), |b, cert| b.add_root_certificate(cert));
    builder.build().map_err(|e| format!("cannot set up HTTPS with {}: {e}", describe(ca_file)))
}

/// The PEM CA certificates a client checks servers against: `ca_file`, else the system's bundle
/// (`SSL_CERT_FILE`, or the usual places of Debian, Red Hat and Alpine).
pub fn ca_bundle(ca_file: Option<&Path>) -> Result<Vec<u8>, String> {
    if let Some(file) = ca_file {
        return std::fs::read(file).map_err(|e| format!("ssl_ca_cert_file {}: {e}", file.display()));
    }
    let mut system = std::env::var_os("SSL_CERT_FILE").map(std::path::PathBuf::from).into_iter().chain(
        ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"]
            .map(std::path::PathBuf::from),
    );
    system
        .find_map(|path| std::fs::read(path).ok())
        .ok_or_else(|| "no system CA bundle found: set ssl_ca_cert_file (or SSL_CERT_FILE)".to_string())
}

fn describe(ca_file: Option<&Path>) -> String {
    ca_file.map_or_else(|| "the system CA bundle".to_string(), |f| format!("ssl_ca_cert_file {}", f.display()))
}
