//! Versions of the desired state: reserve, store (`put_version`, `put_partial`), release, list,
//! delete.
//!
//! - `reads`: versions and their resources as the API lists them;
//! - `writes`: reserving numbers, storing, releasing, retention and deletion;
//! - `partial`: a partial export merged onto the latest version;
//! - `validate`: the pure checks and encodings a version goes through before it is stored.

use api::{ResourceId, ResourceState};
use uuid::Uuid;

use crate::Error;

mod partial;
mod reads;
mod validate;
mod writes;

pub use reads::DESIRED_STATE_VIEW;
pub(crate) use reads::handlers_of;

/// A resource as validated for storage.
pub(super) struct StoredResource {
    pub(super) id: ResourceId,
    pub(super) attributes: String,
    pub(super) attribute_hash: String,
    pub(super) requires: Vec<String>,
    pub(super) resource_set: Option<String>,
    /// available, undefined or skipped_for_undefined.
    pub(super) state: ResourceState,
}

/// What `put_version` did.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredVersion {
    pub version: i64,
    pub released: bool,
}

pub(super) fn version_not_found(env: Uuid, version: i64) -> Error {
    Error::NotFound(format!("version {version} does not exist in environment {env}"))
}
