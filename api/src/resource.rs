//! Resource ids, as Inmanta writes them: `<type>[<agent>,<attribute>=<value>]`, optionally
//! followed by `,v=<version>` (a resource version id). Both are types here ([`ResourceId`],
//! [`ResourceVersionId`]) that travel as their text, so the wire stays Inmanta's strings while
//! every answer and console row that carries one holds a checked id.

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

/// A resource id with the version of the model it belongs to: `<resource id>,v=<version>` on the
/// wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceVersionId {
    pub id: ResourceId,
    pub version: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid resource id {id:?}: {reason}; expected {expected}")]
pub struct InvalidResourceId {
    pub id: String,
    pub reason: &'static str,
    /// The form that was asked for (one of the `*_FORM` texts of this module).
    pub expected: &'static str,
}

/// What [`ResourceId::parse`] and [`ResourceId::parse_versioned`] accept.
pub const ANY_ID_FORM: &str = "<namespace>::<Type>[<agent>,<attribute>=<value>] with an optional ,v=<version>";
/// What a [`ResourceId`] reads from JSON.
pub const RESOURCE_ID_FORM: &str = "<namespace>::<Type>[<agent>,<attribute>=<value>] without a ,v=<version>";
/// What a [`ResourceVersionId`] reads from text and JSON.
pub const RESOURCE_VERSION_ID_FORM: &str = "<namespace>::<Type>[<agent>,<attribute>=<value>],v=<version>";

/// What separates a resource id from the version in a resource version id.
const VERSION_SEPARATOR: &str = ",v=";

/// `<resource id>,v=<version>`: the resource version id of a resource id that is already text
/// (the resource dicts of `put_version`/`put_partial` and the version migration keep ids as the
/// text they read; parsing each of them there to build a [`ResourceVersionId`] would add work per
/// resource to those bulk paths).
pub fn versioned_id(plain: &str, version: u64) -> String {
    format!("{plain}{VERSION_SEPARATOR}{version}")
}

/// The resource id of a resource version id (`...],v=<number>`); any other text as it is. For
/// text from outside that may or may not carry a version and is not refused when it is no
/// resource id at all (the ids of Inmanta's own export in the compiler's conformance check).
pub fn unversioned(text: &str) -> &str {
    match text.rsplit_once(VERSION_SEPARATOR) {
        Some((head, v)) if head.ends_with(']') && !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => text,
    }
}

/// Splits `text` into its resource id part and its version, if it has one.
fn split_version<'t>(text: &'t str, expected: &'static str) -> Result<(&'t str, Option<u64>), InvalidResourceId> {
    match text.rsplit_once(VERSION_SEPARATOR) {
        Some((head, v)) if head.ends_with(']') => match v.parse::<u64>() {
            Ok(version) => Ok((head, Some(version))),
            Err(_) => Err(InvalidResourceId {
                id: text.to_string(),
                reason: "the version after ,v= is not a number",
                expected,
            }),
        },
        _ => Ok((text, None)),
    }
}

impl ResourceId {
    /// Parses a resource id or resource version id; returns the id and the version (0 if absent).
    pub fn parse_versioned(text: &str) -> Result<(ResourceId, u64), InvalidResourceId> {
        let (id_part, version) = split_version(text, ANY_ID_FORM)?;
        Ok((Self::parse_plain(text, id_part, ANY_ID_FORM)?, version.unwrap_or(0)))
    }

    /// Parses a resource id; a resource version id gives its resource id (the version is
    /// dropped).
    pub fn parse(text: &str) -> Result<ResourceId, InvalidResourceId> {
        Self::parse_versioned(text).map(|(id, _)| id)
    }

    /// Parses a resource id that carries no version: the text [`ResourceId`]'s `Display` writes
    /// and its JSON form.
    pub fn parse_exact(text: &str) -> Result<ResourceId, InvalidResourceId> {
        match split_version(text, RESOURCE_ID_FORM)? {
            (_, Some(_)) => Err(InvalidResourceId {
                id: text.to_string(),
                reason: "it carries a version where only a resource id belongs",
                expected: RESOURCE_ID_FORM,
            }),
            (id_part, None) => Self::parse_plain(text, id_part, RESOURCE_ID_FORM),
        }
    }

    /// Parses `id_part` (the id of `text` without its version) as `<type>[<agent>,<attribute>=<value>]`.
    fn parse_plain(text: &str, id_part: &str, expected: &'static str) -> Result<ResourceId, InvalidResourceId> {
        let bad = |reason| InvalidResourceId { id: text.to_string(), reason, expected };
        let open = id_part.find('[').ok_or_else(|| bad("no '['"))?;
        if !id_part.ends_with(']') {
            return Err(bad("it does not end with ']'"));
        }
        let entity_type = &id_part[..open];
        let segment_ok = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '-');
        if !entity_type.contains("::") || !entity_type.split("::").all(segment_ok) {
            return Err(bad("the type must be a full entity name like ns::Type"));
        }
        let inner = &id_part[open + 1..id_part.len() - 1];
        let (agent, rest) = inner.split_once(',').ok_or_else(|| bad("no ',' between agent and attribute"))?;
        let (attribute, value) = rest.split_once('=').ok_or_else(|| bad("no '=' between attribute and value"))?;
        if agent.is_empty() || attribute.is_empty() || value.is_empty() || value.contains(']') {
            return Err(bad("agent, attribute and value must be non-empty"));
        }
        Ok(ResourceId {
            entity_type: entity_type.to_string(),
            agent: agent.to_string(),
            attribute: attribute.to_string(),
            value: value.to_string(),
        })
    }

    /// The id with `,v=<version>`.
    pub fn versioned(&self, version: u64) -> ResourceVersionId {
        ResourceVersionId { id: self.clone(), version }
    }

    /// The text of [`Self::versioned`], written at once: for the stored rows and requires lists
    /// of the bulk paths, which keep resource version ids as text.
    pub fn versioned_text(&self, version: u64) -> String {
        format!("{self}{VERSION_SEPARATOR}{version}")
    }
}

impl fmt::Display for ResourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[{},{}={}]", self.entity_type, self.agent, self.attribute, self.value)
    }
}

impl std::str::FromStr for ResourceId {
    type Err = InvalidResourceId;

    /// [`ResourceId::parse_exact`]: the inverse of `Display`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse_exact(text)
    }
}

impl ResourceVersionId {
    /// Parses `<resource id>,v=<version>`; the version is required.
    pub fn parse(text: &str) -> Result<ResourceVersionId, InvalidResourceId> {
        match split_version(text, RESOURCE_VERSION_ID_FORM)? {
            (id_part, Some(version)) => {
                Ok(ResourceVersionId { id: ResourceId::parse_plain(text, id_part, RESOURCE_VERSION_ID_FORM)?, version })
            }
            (_, None) => Err(InvalidResourceId {
                id: text.to_string(),
                reason: "no ,v=<version> after the resource id",
                expected: RESOURCE_VERSION_ID_FORM,
            }),
        }
    }
}

impl fmt::Display for ResourceVersionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{VERSION_SEPARATOR}{}", self.id, self.version)
    }
}

impl std::str::FromStr for ResourceVersionId {
    type Err = InvalidResourceId;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

/// Both ids travel as their text: JSON strings (also as map keys), the way Inmanta writes them.
macro_rules! serde_as_text {
    ($type:ty, $what:literal) => {
        impl Serialize for $type {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Text;
                impl serde::de::Visitor<'_> for Text {
                    type Value = $type;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<$type, E> {
                        text.parse().map_err(E::custom)
                    }
                }
                deserializer.deserialize_str(Text)
            }
        }
    };
}

serde_as_text!(ResourceId, "a resource id as text");
serde_as_text!(ResourceVersionId, "a resource version id as text");

/// Serializes a map keyed by resource id in the order of the ids' text, the order a map keyed by
/// their text had (a [`ResourceId`] compares field by field: `a::B[..]` and `a::BC[..]` sort the
/// other way round as text). For `#[serde(serialize_with)]`.
pub fn serialize_by_id_text<S, V>(
    map: &std::collections::BTreeMap<ResourceId, V>,
    serializer: S,
) -> Result<S::Ok, S::Error>
where
    S: serde::Serializer,
    V: Serialize,
{
    let mut entries: Vec<(String, &V)> = map.iter().map(|(id, v)| (id.to_string(), v)).collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    serializer.collect_map(entries)
}

/// An optional resource id written as `""` when absent, as Inmanta writes the `resource_id` of a
/// parameter that belongs to no resource. For `#[serde(with)]`.
pub mod id_or_empty {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::ResourceId;

    pub fn serialize<S: Serializer>(id: &Option<ResourceId>, serializer: S) -> Result<S::Ok, S::Error> {
        match id {
            Some(id) => serializer.collect_str(id),
            None => serializer.serialize_str(""),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<ResourceId>, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
        if text.is_empty() { Ok(None) } else { text.parse().map(Some).map_err(serde::de::Error::custom) }
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

/// A resource of the latest released version (or an orphan) with its current status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatestReleasedResource {
    pub resource_id: ResourceId,
    pub resource_version_id: ResourceVersionId,
    pub id_details: ResourceIdDetails,
    pub requires: Vec<ResourceVersionId>,
    /// A resource state or `orphaned`.
    pub status: ResourceState,
}

/// `GET /api/v2/resource/<rid>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleasedResourceDetails {
    pub resource_id: ResourceId,
    pub resource_type: String,
    pub agent: String,
    pub id_attribute: String,
    pub id_attribute_value: String,
    pub attributes: serde_json::Map<String, serde_json::Value>,
    pub last_deploy: Option<crate::Timestamp>,
    pub first_generated_time: crate::Timestamp,
    pub status: ResourceState,
    #[serde(serialize_with = "serialize_by_id_text")]
    pub requires_status: std::collections::BTreeMap<ResourceId, ResourceState>,
}

/// One distinct desired state a resource has had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceHistory {
    pub resource_id: ResourceId,
    pub date: crate::Timestamp,
    pub attributes: serde_json::Map<String, serde_json::Value>,
    pub attribute_hash: String,
    pub requires: Vec<ResourceId>,
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
    pub resource_version_ids: Vec<ResourceVersionId>,
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
    pub discovered_resource_id: ResourceId,
    pub values: serde_json::Map<String, serde_json::Value>,
    /// `/api/v2/resource/<id>` when the orchestrator manages a resource with this id.
    pub managed_resource_uri: Option<String>,
    /// The discovery resource whose handler reported it.
    pub discovery_resource_id: ResourceId,
    pub resource_type: String,
    pub agent: String,
    pub resource_id_value: String,
    /// `/api/v2/resource/<discovery_resource_id>`.
    pub discovery_resource_uri: Option<String>,
}

/// A discovered resource as an agent reports it (`DiscoveredResourceInput` on the wire). The
/// output-only keys (`managed_resource_uri`, `discovery_resource_uri`) may come along; they are
/// ignored. The ids are text: the server checks them and names the field of a malformed one
/// (`discovered_resource_id: invalid resource id ...`), which a failed body reading would not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiscoveredResourceInput {
    pub discovered_resource_id: String,
    /// A JSON object (checked by the server, which names the resource when it is not).
    pub values: serde_json::Value,
    pub discovery_resource_id: String,
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
        assert_eq!(id.versioned(3).to_string(), "fs::File[web-1,path=/etc/a,b=c],v=3");
        assert_eq!(id.versioned_text(3), "fs::File[web-1,path=/etc/a,b=c],v=3");
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

    #[test]
    fn ids_travel_as_their_text() {
        let text = "fs::File[web-1,path=/etc/a,b=c]";
        let id = ResourceId::parse(text).unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), format!("\"{text}\""));
        assert_eq!(serde_json::from_str::<ResourceId>(&format!("\"{text}\"")).unwrap(), id);
        let rvid = id.versioned(12);
        assert_eq!(serde_json::to_value(&rvid).unwrap(), format!("{text},v=12"));
        assert_eq!(serde_json::from_value::<ResourceVersionId>(format!("{text},v=12").into()).unwrap(), rvid);
        assert_eq!(ResourceVersionId::parse(&rvid.to_string()).unwrap(), rvid);
        // Quotes and backslashes in a value are escaped as in any JSON string.
        let odd = ResourceId::parse(r#"fs::File[h,path=C:\a "b"]"#).unwrap();
        assert_eq!(serde_json::from_str::<ResourceId>(&serde_json::to_string(&odd).unwrap()).unwrap(), odd);
    }

    #[test]
    fn a_map_keyed_by_id_writes_its_keys_as_text_in_text_order() {
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct Holder {
            #[serde(serialize_with = "serialize_by_id_text")]
            map: std::collections::BTreeMap<ResourceId, u8>,
        }
        let map: std::collections::BTreeMap<ResourceId, u8> =
            [("a::B[x,n=1]", 1), ("a::BC[x,n=2]", 2)].map(|(t, v)| (ResourceId::parse(t).unwrap(), v)).into();
        let json = serde_json::to_string(&Holder { map: map.clone() }).unwrap();
        assert_eq!(json, r#"{"map":{"a::BC[x,n=2]":2,"a::B[x,n=1]":1}}"#);
        assert_eq!(serde_json::from_str::<Holder>(&json).unwrap(), Holder { map });
    }

    #[test]
    fn an_absent_id_is_written_empty() {
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct Holder {
            #[serde(with = "id_or_empty")]
            resource_id: Option<ResourceId>,
        }
        for (holder, json) in [
            (Holder { resource_id: None }, r#"{"resource_id":""}"#),
            (Holder { resource_id: ResourceId::parse("a::B[x,n=1]").ok() }, r#"{"resource_id":"a::B[x,n=1]"}"#),
        ] {
            assert_eq!(serde_json::to_string(&holder).unwrap(), json);
            assert_eq!(serde_json::from_str::<Holder>(json).unwrap(), holder);
        }
        assert!(serde_json::from_str::<Holder>(r#"{"resource_id":"a::B"}"#).is_err());
    }

    #[test]
    fn reading_a_malformed_id_from_json_fails_with_the_parse_message() {
        let error = serde_json::from_str::<ResourceId>(r#""File[a,b=c]""#).unwrap_err().to_string();
        assert!(error.contains(&ResourceId::parse_exact("File[a,b=c]").unwrap_err().to_string()), "{error}");
        let error = serde_json::from_str::<ResourceId>(r#""fs::File[a,b=c],v=3""#).unwrap_err().to_string();
        assert!(error.contains("carries a version") && error.contains(RESOURCE_ID_FORM), "{error}");
        let error = serde_json::from_str::<ResourceVersionId>(r#""fs::File[a,b=c]""#).unwrap_err().to_string();
        assert!(error.contains("no ,v=<version>") && error.contains(RESOURCE_VERSION_ID_FORM), "{error}");
        let error = serde_json::from_str::<ResourceVersionId>(r#""fs::File[a,b=c],v=x""#).unwrap_err().to_string();
        assert!(error.contains("not a number"), "{error}");
        assert!(serde_json::from_str::<ResourceId>("12").is_err());
        assert!(serde_json::from_str::<ResourceVersionId>(r#""fs::File[a],v=1""#).is_err());
    }
}
