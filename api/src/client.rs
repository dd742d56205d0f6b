//! Typed HTTP client of the REST API, for the CLI and for tests.

use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

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
}

#[derive(Clone)]
pub struct Client {
    base: String,
    http: reqwest::Client,
    token: Option<String>,
}

impl Client {
    /// `base` is like `http://127.0.0.1:8888`.
    pub fn new(base: impl Into<String>) -> Client {
        Client { base: base.into().trim_end_matches('/').to_string(), http: reqwest::Client::new(), token: None }
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
