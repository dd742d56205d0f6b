//! Pushing a compile result: the files the destination lacks, in batches, then the version
//! (`put_version`, or `put_partial`), then the release when asked.
//!
//! The destination is a server over its API (`inmanta export`) or, for the all-in-one
//! `inmanta deploy`, the embedded server's orchestrator in this same process: the same steps
//! without an HTTP hop, JSON encoding or base64.

use std::collections::BTreeMap;

use api::client::{Client, ClientError};
use api::version::{PutPartial, PutVersion};
use base64::Engine;
use compiler::{CompileOutput, ExportedResource};
use orchestrator::Orchestrator;
use reqwest::{Method, StatusCode};
use serde_json::json;
use uuid::Uuid;

use super::CliError;

/// How to store an export on the server.
#[derive(Debug, Clone, Default)]
pub struct Push {
    pub partial: bool,
    pub removed_resource_sets: Vec<String>,
    pub allow_handler_code_update: bool,
    pub release: bool,
    pub message: String,
    /// The server-side compile this export serves: `export_metadata["inmanta:compile:id"]`.
    pub compile_id: Option<Uuid>,
}

/// Where an export goes.
#[derive(Clone, Copy)]
pub enum Destination<'a> {
    /// A server, over its REST API.
    Api(&'a Client),
    /// The orchestrator of the embedded server in this process.
    InProcess(&'a Orchestrator),
}

/// At most this many bytes of file content per upload batch (one request, one transaction).
const BATCH_BYTES: usize = 8 * 1024 * 1024;
/// At most this many files per batch, so small files do not make one giant statement list.
const BATCH_FILES: usize = 1000;

/// Uploads the files the destination lacks (the handler executables that modules ship among
/// them), stores the version with the resource type -> handler file mapping and releases it
/// when asked; returns the version number.
pub async fn push_export(
    to: Destination<'_>,
    env: Uuid,
    mut output: CompileOutput,
    push: &Push,
) -> Result<i64, CliError> {
    let handlers: BTreeMap<String, String> =
        output.handlers.iter().map(|(resource_type, shipped)| (resource_type.clone(), shipped.hash.clone())).collect();
    for shipped in std::mem::take(&mut output.handlers).into_values() {
        tracing::info!(handler = %shipped.path.display(), hash = %shipped.hash, "shipping handler");
        output.files.insert(shipped.hash, shipped.content);
    }
    // The modules' Python code, for the agents' Python handlers (docs/modules.md).
    let modules = std::mem::take(&mut output.python_modules);
    let module_version_info = (!modules.is_empty()).then(|| compiler::module_version_info(&modules));
    for file in modules.into_values().flat_map(|m| m.files) {
        output.files.insert(file.hash, file.content);
    }
    upload_missing_files(to, &output.files).await?;
    let resource_sets: BTreeMap<String, Option<String>> =
        output.resource_sets.iter().map(|(rid, set)| (rid.clone(), Some(set.clone()))).collect();
    let mut version_info = json!({"export_metadata": {
        "message": push.message, "type": "api", "inmanta:compile:state": api::CompileStatus::Success,
    }});
    if let Some(id) = push.compile_id {
        version_info["export_metadata"]["inmanta:compile:id"] = json!(id.to_string());
    }
    let version = if push.partial {
        // the server picks the version: ids of version 0, plain requires
        let body = PutPartial {
            resources: wire(output.resources, 0),
            resource_state: output.resource_state.into_iter().collect(),
            unknowns: output.unknowns,
            version_info: Some(version_info),
            resource_sets,
            removed_resource_sets: push.removed_resource_sets.clone(),
            module_version_info,
            allow_handler_code_update: push.allow_handler_code_update,
            // Sent only when there are some, so servers without the extension still take the export.
            handlers,
            ..Default::default()
        };
        to.put_partial(env, body).await?
    } else {
        let version = to.reserve_version(env).await?;
        let body = PutVersion {
            version,
            resources: wire(output.resources, version as u64),
            resource_state: output.resource_state.into_iter().collect(),
            unknowns: output.unknowns,
            version_info: Some(version_info),
            resource_sets,
            module_version_info,
            handlers,
            ..Default::default()
        };
        to.put_version(env, body).await?;
        version
    };
    tracing::info!(%env, version, "version stored");
    if push.release {
        to.release(env, version).await?;
    }
    Ok(version)
}

/// The exported resources as the JSON objects version `version` holds.
fn wire(resources: Vec<ExportedResource>, version: u64) -> Vec<serde_json::Map<String, serde_json::Value>> {
    resources.into_iter().map(|r| r.into_wire(version)).collect()
}

/// One batched stat, then the missing files in batches of at most [`BATCH_BYTES`].
async fn upload_missing_files(to: Destination<'_>, files: &BTreeMap<String, Vec<u8>>) -> Result<(), CliError> {
    if files.is_empty() {
        return Ok(());
    }
    let hashes: Vec<String> = files.keys().cloned().collect();
    let missing = to.missing_files(&hashes).await?;
    tracing::info!(total = files.len(), missing = missing.len(), "uploading files");
    let mut batch: Vec<(&str, &[u8])> = Vec::new();
    let mut bytes = 0;
    for hash in &missing {
        let Some(content) = files.get(hash) else { continue };
        if !batch.is_empty() && (bytes + content.len() > BATCH_BYTES || batch.len() >= BATCH_FILES) {
            to.upload_batch(&std::mem::take(&mut batch)).await?;
            bytes = 0;
        }
        bytes += content.len();
        batch.push((hash, content));
    }
    if !batch.is_empty() {
        to.upload_batch(&batch).await?;
    }
    Ok(())
}

impl Destination<'_> {
    async fn missing_files(self, hashes: &[String]) -> Result<Vec<String>, CliError> {
        match self {
            Destination::Api(client) => {
                let answer = client.call(Method::POST, "/api/v1/file", None, Some(&json!({"files": hashes}))).await?;
                Ok(answer["files"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|h| h.as_str().map(str::to_string)).collect())
                    .unwrap_or_default())
            }
            Destination::InProcess(o) => o.missing_files(hashes).await.map_err(embedded),
        }
    }

    async fn upload_batch(self, files: &[(&str, &[u8])]) -> Result<(), CliError> {
        match self {
            Destination::Api(client) => {
                let encoded: BTreeMap<&str, String> = files
                    .iter()
                    .map(|(hash, content)| (*hash, base64::engine::general_purpose::STANDARD.encode(content)))
                    .collect();
                client.call(Method::PUT, "/api/v2/files", None, Some(&json!({"files": encoded}))).await?;
                Ok(())
            }
            Destination::InProcess(o) => {
                let owned: Vec<(String, Vec<u8>)> = files.iter().map(|(h, c)| (h.to_string(), c.to_vec())).collect();
                o.upload_files(&owned).await.map(|_| ()).map_err(embedded)
            }
        }
    }

    async fn reserve_version(self, env: Uuid) -> Result<i64, CliError> {
        match self {
            Destination::Api(client) => {
                Ok(client.data(Method::POST, "/api/v2/reserve_version", Some(env), None::<&()>).await?)
            }
            Destination::InProcess(o) => o.reserve_version(env).await.map_err(embedded),
        }
    }

    async fn put_version(self, env: Uuid, body: PutVersion) -> Result<(), CliError> {
        match self {
            Destination::Api(client) => {
                client.call(Method::PUT, "/api/v1/version", Some(env), Some(&body)).await?;
            }
            Destination::InProcess(o) => {
                o.put_version(env, body).await.map_err(embedded)?;
            }
        }
        Ok(())
    }

    async fn put_partial(self, env: Uuid, body: PutPartial) -> Result<i64, CliError> {
        match self {
            Destination::Api(client) => {
                Ok(client.data(Method::PUT, "/api/v2/version/partial", Some(env), Some(&body)).await?)
            }
            Destination::InProcess(o) => Ok(o.put_partial(env, body).await.map_err(embedded)?.version),
        }
    }

    /// Releases `version`; one that auto_deploy already released is fine.
    async fn release(self, env: Uuid, version: i64) -> Result<(), CliError> {
        let already = match self {
            Destination::Api(client) => {
                let path = format!("/api/v1/version/{version}");
                match client.call(Method::POST, &path, Some(env), Some(&json!({"push": true}))).await {
                    Ok(_) => false,
                    Err(ClientError::Api { status, .. }) if status == StatusCode::CONFLICT => true,
                    Err(e) => return Err(e.into()),
                }
            }
            Destination::InProcess(o) => match o.release_version(env, version).await {
                Ok(_) => false,
                Err(orchestrator::Error::Conflict(_)) => true,
                Err(e) => return Err(embedded(e)),
            },
        };
        if already {
            tracing::info!(version, "version already released by auto_deploy");
        } else {
            tracing::info!(version, "version released");
        }
        Ok(())
    }
}

fn embedded(e: orchestrator::Error) -> CliError {
    CliError::Usage(format!("embedded server: {e}"))
}
