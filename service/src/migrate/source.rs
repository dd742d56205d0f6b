//! The Inmanta server being moved from, read through its REST API. Only GET requests exist
//! here: `inmanta migrate` must never change the source (issue 34).
//!
//! Answers are read as JSON values rather than our wire types: the source may be a release of
//! Inmanta whose answers carry fields ours do not know, and a field we do not need must not stop
//! a move.

use api::client::{Client, ClientError};
use base64::Engine;
use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;

/// A read-only view of an Inmanta server.
pub struct Source {
    client: Client,
}

/// A version of an environment as the source holds it.
pub struct SourceVersion {
    pub version: i64,
    /// `model` of `GET /api/v1/version/<v>`: `version_info` and the rest of the version's row.
    pub model: Value,
    /// The rows of its resources: `resource_id`, `attributes`, `is_undefined`, ...
    pub resources: Vec<Value>,
}

impl Source {
    pub fn new(url: &str, token: Option<String>) -> Source {
        Source { client: Client::new(url).with_token(token) }
    }

    pub fn url(&self) -> &str {
        self.client.base()
    }

    async fn get(&self, path: &str, env: Option<Uuid>) -> Result<Value, ClientError> {
        self.client.call::<()>(Method::GET, path, env, None).await
    }

    /// `data` of a v2 answer.
    async fn data(&self, path: &str, env: Option<Uuid>) -> Result<Value, ClientError> {
        Ok(self.get(path, env).await?.get_mut("data").map(Value::take).unwrap_or_default())
    }

    /// Every item of a paged v2 list, following `links.next`.
    async fn all_pages(&self, first: &str, env: Option<Uuid>) -> Result<Vec<Value>, ClientError> {
        let mut items = Vec::new();
        let mut next = Some(first.to_string());
        while let Some(path) = next {
            let mut page = self.get(&path, env).await?;
            if let Some(Value::Array(data)) = page.get_mut("data").map(Value::take) {
                items.extend(data);
            }
            next = page.pointer("/links/next").and_then(Value::as_str).map(str::to_string);
        }
        Ok(items)
    }

    /// The server's version, to say what was moved from.
    pub async fn version(&self) -> Result<String, ClientError> {
        let status = self.data("/api/v1/serverstatus", None).await?;
        Ok(status["version"].as_str().unwrap_or("unknown").to_string())
    }

    pub async fn projects(&self) -> Result<Vec<Value>, ClientError> {
        Ok(as_array(self.data("/api/v2/project", None).await?))
    }

    /// Environments with their description, icon and settings.
    pub async fn environments(&self) -> Result<Vec<Value>, ClientError> {
        Ok(as_array(self.data("/api/v2/environment?details=true", None).await?))
    }

    /// The environment's settings whose value is not the default (Inmanta stores every
    /// setting's default in the environment once it was read, so all of them are listed).
    pub async fn settings(&self, env: Uuid) -> Result<serde_json::Map<String, Value>, ClientError> {
        let data = self.data("/api/v2/environment_settings", Some(env)).await?;
        let mut settings = data.get("settings").and_then(Value::as_object).cloned().unwrap_or_default();
        settings.retain(|name, value| data.pointer(&format!("/definition/{name}/default")) != Some(value));
        Ok(settings)
    }

    /// The parameters (not the facts: handlers report those again).
    pub async fn parameters(&self, env: Uuid) -> Result<Vec<Value>, ClientError> {
        self.all_pages("/api/v2/parameters?limit=1000", Some(env)).await
    }

    /// The number of the environment's latest released version, if any. Not the `active` status:
    /// Inmanta gives it only once its scheduler took the version up, which a halted environment's
    /// never does.
    pub async fn latest_released(&self, env: Uuid) -> Result<Option<i64>, ClientError> {
        let versions = self.all_pages("/api/v2/desiredstate?limit=1000&sort=version.desc", Some(env)).await?;
        Ok(versions
            .iter()
            .filter(|v| v["released"].as_bool() == Some(true))
            .filter_map(|v| v["version"].as_i64())
            .max())
    }

    pub async fn full_version(&self, env: Uuid, version: i64) -> Result<SourceVersion, ClientError> {
        let mut answer = self.get(&format!("/api/v1/version/{version}"), Some(env)).await?;
        let model = answer.get_mut("model").map(Value::take).unwrap_or_default();
        let resources = as_array(answer.get_mut("resources").map(Value::take).unwrap_or_default());
        Ok(SourceVersion { version, model, resources })
    }

    /// The pip configuration the version was exported with.
    pub async fn pip_config(&self, env: Uuid, version: i64) -> Result<Option<Value>, ClientError> {
        let config = self.data(&format!("/api/v2/pip/config/{version}"), Some(env)).await?;
        Ok((!config.is_null()).then_some(config))
    }

    /// A file of the file store, by its sha1.
    pub async fn file(&self, hash: &str) -> Result<Vec<u8>, ClientError> {
        let answer = self.get(&format!("/api/v1/file/{}", api::url::encode(hash)), None).await?;
        let content = answer["content"].as_str().unwrap_or_default();
        base64::engine::general_purpose::STANDARD.decode(content).map_err(|e| ClientError::Decode {
            url: format!("{}/api/v1/file/{hash}", self.url()),
            message: format!("the content is not base64: {e}"),
        })
    }

    /// Users with their roles per environment (`GET /api/v2/user`).
    pub async fn users(&self) -> Result<Vec<Value>, ClientError> {
        Ok(as_array(self.data("/api/v2/user", None).await?))
    }

    /// The names of the roles defined on the source.
    pub async fn roles(&self) -> Result<Vec<String>, ClientError> {
        Ok(as_array(self.data("/api/v2/role", None).await?)
            .into_iter()
            .filter_map(|r| r.as_str().map(str::to_string))
            .collect())
    }
}

fn as_array(value: Value) -> Vec<Value> {
    match value {
        Value::Array(items) => items,
        _ => Vec::new(),
    }
}
