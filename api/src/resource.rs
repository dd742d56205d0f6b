//! Resource ids, as Inmanta writes them: `<type>[<agent>,<attribute>=<value>]`, optionally
//! followed by `,v=<version>` (a resource version id).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::state::{ActionKind, Change, HandlerStatus, ResourceState};

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceId {
    pub entity_type: String,
    pub agent: String,
    pub attribute: String,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid resource id {id:?}: {reason}; expected <namespace>::<Type>[<agent>,<attribute>=<value>] with an optional ,v=<version>"
)]
pub struct InvalidResourceId {
    pub id: String,
    pub reason: &'static str,
}

/// What separates a resource id from the version in a resource version id.
const VERSION_SEPARATOR: &str = ",v=";

/// `<resource id>,v=<version>`: the resource version id of a resource id that is already text
/// (requires lists, rows), without parsing it again.
pub fn versioned_id(plain: &str, version: u64) -> String {
    format!("{plain}{VERSION_SEPARATOR}{version}")
}

/// The resource id of a resource version id (`...],v=<number>`); any other text as it is.
pub fn unversioned(text: &str) -> &str {
    match text.rsplit_once(VERSION_SEPARATOR) {
        Some((head, v)) if head.ends_with(']') && !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => text,
    }
}

impl ResourceId {
    /// Parses a resource id or resource version id; returns the id and the version (0 if absent).
    pub fn parse_versioned(text: &str) -> Result<(ResourceId, u64), InvalidResourceId> {
        let bad = |reason| InvalidResourceId { id: text.to_string(), reason };
        let (id_part, version) = match text.rsplit_once(VERSION_SEPARATOR) {
            Some((head, v)) if head.ends_with(']') => {
                (head, v.parse::<u64>().map_err(|_| bad("the version after ,v= is not a number"))?)
            }
            _ => (text, 0),
        };
        let open = id_part.find('[').ok_or_else(|| bad("no '['"))?;
        if !id_part.ends_with(']') {
            return Err(bad("it does not end with ']'"));
        }
        let entity_type = &id_part[..open];
        let segments: Vec<&str> = entity_type.split("::").collect();
        if segments.len() < 2
            || segments.iter().any(|s| s.is_empty() || !s.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-'))
        {
            return Err(bad("the type must be a full entity name like ns::Type"));
        }
        let inner = &id_part[open + 1..id_part.len() - 1];
        let (agent, rest) = inner.split_once(',').ok_or_else(|| bad("no ',' between agent and attribute"))?;
        let (attribute, value) = rest.split_once('=').ok_or_else(|| bad("no '=' between attribute and value"))?;
        if agent.is_empty() || attribute.is_empty() || value.is_empty() || value.contains(']') {
            return Err(bad("agent, attribute and value must be non-empty"));
        }
        Ok((
            ResourceId {
                entity_type: entity_type.to_string(),
                agent: agent.to_string(),
                attribute: attribute.to_string(),
                value: value.to_string(),
            },
            version,
        ))
    }

    pub fn parse(text: &str) -> Result<ResourceId, InvalidResourceId> {
        Self::parse_versioned(text).map(|(id, _)| id)
    }

    /// The id with `,v=<version>`.
    pub fn versioned(&self, version: u64) -> String {
        versioned_id(&self.to_string(), version)
    }
}

impl fmt::Display for ResourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{},{}={}]", self.entity_type, self.agent, self.attribute, self.value)
    }
}

/// `ResourceIdDetails` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceIdDetails {
    pub resource_type: String,
    pub agent: String,
    pub attribute: String,
    pub resource_id_value: String,
}

impl From<&ResourceId> for ResourceIdDetails {
    fn from(id: &ResourceId) -> Self {
        ResourceIdDetails {
            resource_type: id.entity_type.clone(),
            agent: id.agent.clone(),
            attribute: id.attribute.clone(),
            resource_id_value: id.value.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_both_forms() {
        let (id, v) = ResourceId::parse_versioned("fs::File[web-1,path=/etc/a,b=c],v=12").unwrap();
        assert_eq!(v, 12);
        assert_eq!(id.entity_type, "fs::File");
        assert_eq!(id.agent, "web-1");
        assert_eq!(id.attribute, "path");
        assert_eq!(id.value, "/etc/a,b=c");
        assert_eq!(id.to_string(), "fs::File[web-1,path=/etc/a,b=c]");
        assert_eq!(id.versioned(3), "fs::File[web-1,path=/etc/a,b=c],v=3");
        assert_eq!(ResourceId::parse_versioned("std::testing::NullResource[a,name=x]").unwrap().1, 0);
    }

    #[test]
    fn rejects_malformed_ids() {
        for bad in [
            "File[a,b=c]",
            "fs::File[a]",
            "fs::File[a,b]",
            "fs::File[,b=c]",
            "fs::File[a,b=c",
            "fs::File[a,b=c],v=x",
            "::File[a,b=c]",
        ] {
            assert!(ResourceId::parse(bad).is_err(), "{bad}");
        }
    }
}

/// A resource of the latest released version (or an orphan) with its current status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatestReleasedResource {
    pub resource_id: String,
    pub resource_version_id: String,
    pub id_details: ResourceIdDetails,
    pub requires: Vec<String>,
    /// A resource state or `orphaned`.
    pub status: ResourceState,
}

/// `GET /api/v2/resource/<rid>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleasedResourceDetails {
    pub resource_id: String,
    pub resource_type: String,
    pub agent: String,
    pub id_attribute: String,
    pub id_attribute_value: String,
    pub attributes: serde_json::Map<String, serde_json::Value>,
    pub last_deploy: Option<crate::Timestamp>,
    pub first_generated_time: crate::Timestamp,
    pub status: ResourceState,
    pub requires_status: std::collections::BTreeMap<String, ResourceState>,
}

/// One distinct desired state a resource has had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceHistory {
    pub resource_id: String,
    pub date: crate::Timestamp,
    pub attributes: serde_json::Map<String, serde_json::Value>,
    pub attribute_hash: String,
    pub requires: Vec<String>,
}

/// One log line of a resource action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceLog {
    pub level: String,
    pub msg: String,
    #[serde(default)]
    pub args: Vec<serde_json::Value>,
    #[serde(default)]
    pub kwargs: serde_json::Map<String, serde_json::Value>,
    pub timestamp: crate::Timestamp,
    pub action_id: uuid::Uuid,
    pub action: String,
}

/// A log line as an action reports it (`messages` of a resource action).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogLine {
    pub level: String,
    pub msg: String,
    #[serde(default)]
    pub args: Vec<serde_json::Value>,
    #[serde(default)]
    pub kwargs: serde_json::Map<String, serde_json::Value>,
    pub timestamp: crate::Timestamp,
}

/// A handler run, dry run, fact collection or other action on resources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceAction {
    pub environment: uuid::Uuid,
    pub version: i64,
    pub resource_version_ids: Vec<String>,
    pub action_id: uuid::Uuid,
    pub action: ActionKind,
    pub started: crate::Timestamp,
    pub finished: Option<crate::Timestamp>,
    pub messages: Option<Vec<LogLine>>,
    pub status: Option<HandlerStatus>,
    pub changes: Option<serde_json::Value>,
    pub change: Option<Change>,
    pub send_event: Option<bool>,
}

/// `metadata.deploy_summary` of the resource list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceDeploySummary {
    pub total: u64,
    pub by_state: std::collections::BTreeMap<ResourceState, u64>,
}

/// Log levels from least to most severe, with the numbers used to compare them.
pub const LOG_LEVELS: &[(&str, i64)] =
    &[("TRACE", 5), ("DEBUG", 10), ("INFO", 20), ("WARNING", 30), ("ERROR", 40), ("CRITICAL", 50)];

/// The number of a log level name (case-insensitive), if it is one.
pub fn log_level_number(name: &str) -> Option<i64> {
    LOG_LEVELS.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| *v)
}

/// A resource a discovery handler found (`DiscoveredResourceOutput` on the wire).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiscoveredResource {
    pub discovered_resource_id: String,
    pub values: serde_json::Map<String, serde_json::Value>,
    /// `/api/v2/resource/<id>` when the orchestrator manages a resource with this id.
    pub managed_resource_uri: Option<String>,
    /// The discovery resource whose handler reported it.
    pub discovery_resource_id: String,
    pub resource_type: String,
    pub agent: String,
    pub resource_id_value: String,
    /// `/api/v2/resource/<discovery_resource_id>`.
    pub discovery_resource_uri: Option<String>,
}

/// A discovered resource as an agent reports it (`DiscoveredResourceInput` on the wire). The
/// output-only keys (`managed_resource_uri`, `discovery_resource_uri`) may come along; they are
/// ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiscoveredResourceInput {
    pub discovered_resource_id: String,
    /// A JSON object (checked by the server, which names the resource when it is not).
    pub values: serde_json::Value,
    pub discovery_resource_id: String,
}
