//! The file store (routes: docs/api.md). Not environment scoped.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use orchestrator::Orchestrator;
use serde::Deserialize;
use serde_json::json;

use super::error::{ApiError, ApiResult};
use super::extract::{self, Path};
use super::limits::BodyLimit;
use super::{Caller, Routes, authenticated, empty};
use orchestrator::auth::Clients;

pub fn router() -> Routes {
    // The file store is content addressed and shared by all environments: knowing a hash is
    // what grants reading it.
    let read = authenticated("file.read").clients(Clients::ALL);
    let write = authenticated("file.write").clients(Clients::ALL);
    Routes::new()
        .post("/api/v1/file", read, stat_files)
        .body(BodyLimit::Large)
        .put("/api/v1/file/{id}", write, upload)
        .body(BodyLimit::Large)
        .get("/api/v1/file/{id}", read, get_file)
        .head("/api/v1/file/{id}", read, stat_file)
        .put("/api/v2/files", write, upload_batch)
        .post("/api/v1/filediff", authenticated("file.read"), diff)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Upload {
    content: String,
    /// Inmanta's client repeats the id in the body; the path is what counts.
    #[serde(default)]
    #[allow(dead_code, reason = "accepted from Inmanta's client, never read")]
    id: Option<String>,
}

/// `[server] file-store-quota`: the bytes the file store may hold in all.
#[derive(Debug, Clone, Copy)]
pub struct FileStoreQuota(pub u64);

/// When not configured: 10 GiB.
pub const DEFAULT_FILE_STORE_QUOTA: u64 = 10 * 1024 * 1024 * 1024;

async fn upload(
    State(o): State<Orchestrator>,
    Caller(caller): Caller,
    Extension(FileStoreQuota(quota)): Extension<FileStoreQuota>,
    Path(id): Path<String>,
    extract::Json(req): extract::Json<Upload>,
) -> ApiResult<Response> {
    let content = STANDARD
        .decode(req.content.trim())
        .map_err(|e| ApiError::bad_request(format!("content must be base64: {e}")))?;
    o.upload_file_as(&caller, &id, &content, quota).await?;
    Ok(empty())
}

/// Body of `PUT /api/v2/files` (this project's extension, docs/api.md): many files in one
/// request and one transaction, id -> base64 content.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UploadBatch {
    files: std::collections::BTreeMap<String, String>,
}

async fn upload_batch(
    State(o): State<Orchestrator>,
    extract::Json(req): extract::Json<UploadBatch>,
) -> ApiResult<Response> {
    let mut files = Vec::with_capacity(req.files.len());
    for (id, content) in req.files {
        let content = STANDARD
            .decode(content.trim())
            .map_err(|e| ApiError::bad_request(format!("the content of file {id} must be base64: {e}")))?;
        files.push((id, content));
    }
    let stored = o.upload_files(&files).await?;
    Ok(super::data(stored).into_response())
}

async fn stat_file(State(o): State<Orchestrator>, Path(id): Path<String>) -> ApiResult<Response> {
    Ok(if o.file_exists(&id).await? { StatusCode::OK } else { StatusCode::NOT_FOUND }.into_response())
}

async fn get_file(State(o): State<Orchestrator>, Path(id): Path<String>) -> ApiResult<Response> {
    let content = o.get_file(&id).await?;
    Ok(Json(json!({"content": STANDARD.encode(content)})).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StatFiles {
    files: Vec<String>,
}

async fn stat_files(
    State(o): State<Orchestrator>,
    extract::Json(req): extract::Json<StatFiles>,
) -> ApiResult<Response> {
    Ok(Json(json!({"files": o.missing_files(&req.files).await?})).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Diff {
    file_id_1: String,
    file_id_2: String,
}

async fn diff(State(o): State<Orchestrator>, extract::Json(req): extract::Json<Diff>) -> ApiResult<Response> {
    Ok(Json(json!({"diff": o.diff_files(&req.file_id_1, &req.file_id_2).await?})).into_response())
}
