//! Versions of the desired state (routes: docs/api.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::resource::{ResourceId, ResourceVersionId};

/// Body of `PUT /api/v1/version`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutVersion {
    pub version: i64,
    pub resources: Vec<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    pub resource_state: BTreeMap<String, String>,
    #[serde(default)]
    pub unknowns: Vec<serde_json::Value>,
    #[serde(default)]
    pub version_info: Option<serde_json::Value>,
    #[serde(default)]
    pub resource_sets: BTreeMap<String, Option<String>>,
    #[serde(default)]
    pub module_version_info: Option<serde_json::Value>,
    #[serde(default)]
    pub pip_config: Option<serde_json::Value>,
    #[serde(default)]
    pub project_constraints: Option<String>,
    /// Sent by older clients; ignored.
    #[serde(default, skip_serializing)]
    pub compiler_version: Option<String>,
    /// This project's extension (docs/handlers.md): resource type -> sha1 of the handler
    /// executable a module ships for it (`handlers/<namespace>__<Type>`), uploaded to the file
    /// store first. Absent means none, so Inmanta's clients are unaffected.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub handlers: BTreeMap<String, String>,
}

/// Body of `PUT /api/v2/version/partial`: resources with `,v=0` ids, the sets they replace and
/// the sets to drop.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutPartial {
    pub resources: Vec<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    pub resource_state: BTreeMap<String, String>,
    #[serde(default)]
    pub unknowns: Vec<serde_json::Value>,
    #[serde(default)]
    pub version_info: Option<serde_json::Value>,
    #[serde(default)]
    pub resource_sets: BTreeMap<String, Option<String>>,
    #[serde(default)]
    pub removed_resource_sets: Vec<String>,
    #[serde(default)]
    pub module_version_info: Option<serde_json::Value>,
    #[serde(default)]
    pub pip_config: Option<serde_json::Value>,
    #[serde(default)]
    pub project_constraints: Option<String>,
    #[serde(default)]
    pub allow_handler_code_update: bool,
    /// This project's extension (docs/handlers.md): resource type -> sha1 of the handler
    /// executable a module ships for it (`handlers/<namespace>__<Type>`), uploaded to the file
    /// store first. Merged over the base version's mapping. Absent means none, so Inmanta's clients are unaffected.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub handlers: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VersionStatus {
    Active,
    Candidate,
    Retired,
    SkippedCandidate,
}

impl VersionStatus {
    /// The wire name (its serde name).
    pub const fn as_str(self) -> &'static str {
        match self {
            VersionStatus::Active => "active",
            VersionStatus::Candidate => "candidate",
            VersionStatus::Retired => "retired",
            VersionStatus::SkippedCandidate => "skipped_candidate",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Label {
    pub name: String,
    pub message: String,
}

/// `DesiredStateVersion` (v2 list).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesiredStateVersion {
    pub version: i64,
    pub date: crate::Timestamp,
    pub total: i64,
    pub labels: Vec<Label>,
    pub status: VersionStatus,
    pub released: bool,
}

/// `ConfigurationModel`: a version in the v1 calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigurationModel {
    pub version: i64,
    pub environment: uuid::Uuid,
    pub date: crate::Timestamp,
    pub released: bool,
    pub version_info: Option<serde_json::Value>,
    pub total: i64,
    pub undeployable: Vec<ResourceId>,
    pub skipped_for_undeployable: Vec<ResourceId>,
    /// Known to the server, not on the wire: Inmanta's v1 `ConfigurationModel` has no status
    /// (the v2 `DesiredStateVersion` has).
    #[serde(skip)]
    pub status: Option<VersionStatus>,
    pub is_suitable_for_partial_compiles: bool,
    pub partial_base: Option<i64>,
    pub pip_config: Option<serde_json::Value>,
    pub project_constraints: Option<String>,
}

/// `VersionedResource`: one resource of a version in the v2 listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionedResource {
    pub resource_id: ResourceId,
    pub resource_version_id: ResourceVersionId,
    pub id_details: crate::resource::ResourceIdDetails,
    pub requires: Vec<ResourceVersionId>,
}

/// `VersionedResourceDetails`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionedResourceDetails {
    pub resource_id: ResourceId,
    pub resource_type: String,
    pub agent: String,
    pub id_attribute: String,
    pub id_attribute_value: String,
    pub attributes: serde_json::Map<String, serde_json::Value>,
    pub resource_version_id: ResourceVersionId,
    pub version: i64,
}

pub use crate::state::ResourceDiffStatus;

/// A dry run of a version (`/api/v2/dryrun/<v>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DryRun {
    pub id: uuid::Uuid,
    pub environment: uuid::Uuid,
    pub model: i64,
    pub date: Option<crate::Timestamp>,
    pub total: i64,
    pub todo: i64,
    /// The ResourceFilter and the caller's context of a filtered dry run (`POST
    /// /api/v2/dryrun_filtered`), as sent; null for a dry run of a whole version.
    #[serde(default)]
    pub resource_filter: Option<serde_json::Value>,
    #[serde(default)]
    pub context: Option<serde_json::Value>,
}

/// `GET /api/v2/dryrun/<version>/<id>`: every resource once, sorted by id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DryRunReport {
    pub summary: DryRun,
    pub diff: Vec<ResourceDiff>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttributeDiff {
    pub from_value: Option<serde_json::Value>,
    pub to_value: Option<serde_json::Value>,
    pub from_value_compare: String,
    pub to_value_compare: String,
}

/// `ResourceDiff`: how one resource differs between two versions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceDiff {
    pub resource_id: ResourceId,
    pub status: ResourceDiffStatus,
    pub attributes: BTreeMap<String, AttributeDiff>,
}

/// `GET /api/v1/version/<v>`: the model and its resources in Inmanta's v1 form (each resource a
/// JSON object with its attributes and, with `include_logs`, its `actions`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionWithResources {
    pub model: ConfigurationModel,
    pub resources: Vec<serde_json::Map<String, serde_json::Value>>,
    #[serde(default)]
    pub unknowns: Vec<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_status_names_are_their_serde_names() {
        for status in
            [VersionStatus::Active, VersionStatus::Candidate, VersionStatus::Retired, VersionStatus::SkippedCandidate]
        {
            assert_eq!(serde_json::to_value(status).unwrap(), status.as_str());
        }
    }
}
