//! Reading what a version wants: its resources (paged), one resource, and the diff of two
//! versions.

use std::collections::BTreeMap;

use api::ResourceId;
use api::resource::ResourceIdDetails;
use api::version::{AttributeDiff, ResourceDiff, ResourceDiffStatus, VersionedResource, VersionedResourceDetails};
use uuid::Uuid;

use crate::paging::{Column, ColumnKind, Filter, FilterKind, Order, Page, PageRequest, Source, View, fetch_page};
use crate::{Error, Orchestrator, Result};

/// `GET /api/v2/desiredstate/<version>` (its sorts and filters: docs/api.md).
pub const VERSION_RESOURCES_VIEW: View = View {
    sort_columns: &[
        Column { name: "resource_type", sql: "r.resource_type", kind: ColumnKind::Text },
        Column { name: "agent", sql: "r.agent", kind: ColumnKind::Text },
        Column { name: "resource_id_value", sql: "r.id_value", kind: ColumnKind::Text },
    ],
    default_sort: ("resource_type", Order::Desc),
    filters: &[
        Filter { name: "resource_type", sql: "r.resource_type", kind: FilterKind::Partial },
        Filter { name: "agent", sql: "r.agent", kind: FilterKind::Partial },
        Filter { name: "resource_id_value", sql: "r.id_value", kind: FilterKind::Partial },
    ],
    id_sql: "r.resource_id",
    id_kind: ColumnKind::Text,
};

#[derive(sqlx::FromRow)]
struct ResourceRow {
    resource_id: String,
    attributes: String,
    requires: String,
}

impl ResourceRow {
    fn id(&self) -> Result<ResourceId> {
        crate::stored_id(&self.resource_id)
    }

    fn attributes(&self) -> Result<serde_json::Map<String, serde_json::Value>> {
        serde_json::from_str(&self.attributes).map_err(|e| Error::Corrupt(format!("resource attributes: {e}")))
    }

    fn requires(&self) -> Result<Vec<String>> {
        serde_json::from_str(&self.requires).map_err(|e| Error::Corrupt(format!("resource requires: {e}")))
    }
}

impl Orchestrator {
    pub async fn versioned_resources(
        &self,
        env: Uuid,
        version: i64,
        req: &PageRequest,
    ) -> Result<Page<VersionedResource>> {
        self.get_version_model(env, version).await?;
        let binds = [env.to_string(), version.to_string()];
        let base_path = format!("/api/v2/desiredstate/{version}");
        let page: Page<ResourceRow> = fetch_page(
            &self.store,
            &VERSION_RESOURCES_VIEW,
            req,
            Source {
                select: "r.resource_id, r.attributes, r.requires",
                from: "resource r",
                scope: "r.environment = $1 AND r.version = CAST($2 AS BIGINT)",
                scope_binds: &binds,
                base_path: &base_path,
            },
        )
        .await?;
        page.try_map(|row| {
            let id = row.id()?;
            Ok(VersionedResource {
                resource_version_id: id.versioned(version as u64),
                id_details: ResourceIdDetails::from(&id),
                requires: row
                    .requires()?
                    .iter()
                    .map(|r| crate::stored_version_id(r, version))
                    .collect::<Result<_>>()?,
                resource_id: id,
            })
        })
    }

    pub async fn versioned_resource(&self, env: Uuid, version: i64, rid: &str) -> Result<VersionedResourceDetails> {
        let (id, carried) = ResourceId::parse_versioned(rid).map_err(|e| Error::BadRequest(e.to_string()))?;
        if carried != 0 {
            // Inmanta 20.1 looks the text up as a resource id, which a version id never is.
            return Err(Error::NotFound(format!(
                "{rid} is a resource version id; the version is in the path, give the resource id {id}"
            )));
        }
        let row: Option<ResourceRow> = sqlx::query_as(
            "SELECT resource_id, attributes, requires FROM resource \
             WHERE environment = $1 AND version = $2 AND resource_id = $3",
        )
        .bind(env.to_string())
        .bind(version)
        .bind(id.to_string())
        .fetch_optional(self.store.pool())
        .await?;
        let row = row.ok_or_else(|| Error::NotFound(format!("resource {id} is not in version {version}")))?;
        let mut attributes = row.attributes()?;
        attributes
            .insert("requires".into(), row.requires()?.iter().map(|r| serde_json::Value::String(r.clone())).collect());
        Ok(VersionedResourceDetails {
            resource_type: id.entity_type.clone(),
            agent: id.agent.clone(),
            id_attribute: id.attribute.clone(),
            id_attribute_value: id.value.clone(),
            attributes,
            resource_version_id: id.versioned(version as u64),
            resource_id: id,
            version,
        })
    }

    /// The resources that differ between two versions, sorted by id; unchanged ones are left out.
    ///
    /// The database picks the candidates: resources in only one of the versions and those whose
    /// attribute hash (attributes and requires) differs, so two big versions that differ in a
    /// few resources cost two index walks and the parsing of those few, not of every resource.
    pub async fn diff_versions(&self, env: Uuid, from: i64, to: i64) -> Result<Vec<ResourceDiff>> {
        self.get_version_model(env, from).await?;
        self.get_version_model(env, to).await?;
        let changed: Vec<DiffRow> = sqlx::query_as(
            "SELECT b.resource_id, b.attributes, b.requires, b.state, \
             a.attributes AS old_attributes, a.requires AS old_requires \
             FROM resource b LEFT JOIN resource a ON a.environment = b.environment AND a.version = $2 \
             AND a.resource_id = b.resource_id \
             WHERE b.environment = $1 AND b.version = $3 \
             AND (a.resource_id IS NULL OR a.attribute_hash <> b.attribute_hash)",
        )
        .bind(env.to_string())
        .bind(from)
        .bind(to)
        .fetch_all(self.store.pool())
        .await?;
        let deleted: Vec<ResourceRow> = sqlx::query_as(
            "SELECT a.resource_id, a.attributes, a.requires FROM resource a \
             WHERE a.environment = $1 AND a.version = $2 AND NOT EXISTS (SELECT 1 FROM resource b \
             WHERE b.environment = a.environment AND b.version = $3 AND b.resource_id = a.resource_id)",
        )
        .bind(env.to_string())
        .bind(from)
        .bind(to)
        .fetch_all(self.store.pool())
        .await?;
        let with_requires = |attributes: &str, requires: &str| -> Result<Attributes> {
            let mut attributes: Attributes =
                serde_json::from_str(attributes).map_err(|e| Error::Corrupt(format!("resource attributes: {e}")))?;
            let requires: Vec<String> =
                serde_json::from_str(requires).map_err(|e| Error::Corrupt(format!("resource requires: {e}")))?;
            attributes.insert("requires".into(), serde_json::json!(requires));
            Ok(attributes)
        };
        let mut diffs = Vec::with_capacity(changed.len() + deleted.len());
        for row in changed {
            let after = with_requires(&row.attributes, &row.requires)?;
            let undefined = row.state == api::ResourceState::Undefined.as_str();
            let (status, attributes) = match (&row.old_attributes, &row.old_requires) {
                (Some(a), Some(r)) => {
                    let changed = attribute_diffs(Some(&with_requires(a, r)?), Some(&after));
                    // Same attributes in another key order hash differently: not a change.
                    if changed.is_empty() {
                        continue;
                    }
                    (if undefined { ResourceDiffStatus::Undefined } else { ResourceDiffStatus::Modified }, changed)
                }
                _ => (
                    if undefined { ResourceDiffStatus::Undefined } else { ResourceDiffStatus::Added },
                    attribute_diffs(None, Some(&after)),
                ),
            };
            diffs.push((row.resource_id, status, attributes));
        }
        for row in deleted {
            let before = with_requires(&row.attributes, &row.requires)?;
            diffs.push((row.resource_id, ResourceDiffStatus::Deleted, attribute_diffs(Some(&before), None)));
        }
        // Sorted by the ids' text, as listed before ids were typed (a ResourceId orders by field).
        diffs.sort_by(|a, b| a.0.cmp(&b.0));
        diffs
            .into_iter()
            .map(|(id, status, attributes)| {
                Ok(ResourceDiff { resource_id: crate::stored_id(&id)?, status, attributes })
            })
            .collect()
    }
}

#[derive(sqlx::FromRow)]
struct DiffRow {
    resource_id: String,
    attributes: String,
    requires: String,
    state: String,
    old_attributes: Option<String>,
    old_requires: Option<String>,
}

type Attributes = serde_json::Map<String, serde_json::Value>;

fn attribute_diffs(from: Option<&Attributes>, to: Option<&Attributes>) -> BTreeMap<String, AttributeDiff> {
    let empty = Attributes::new();
    let (from, to) = (from.unwrap_or(&empty), to.unwrap_or(&empty));
    let mut names: Vec<&String> = from.keys().chain(to.keys()).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        // by value: the same number written differently is no change (api::json::same_json)
        .filter(|name| match (from.get(*name), to.get(*name)) {
            (Some(a), Some(b)) => !api::json::same_json(a, b),
            (a, b) => a != b,
        })
        .map(|name| (name.clone(), attribute_diff(from.get(name), to.get(name))))
        .collect()
}

/// One attribute's change, with the text forms the console diffs.
pub(crate) fn attribute_diff(from: Option<&serde_json::Value>, to: Option<&serde_json::Value>) -> AttributeDiff {
    AttributeDiff {
        from_value: from.cloned(),
        to_value: to.cloned(),
        from_value_compare: compare_text(from),
        to_value_compare: compare_text(to),
    }
}

/// The text form of a value that diffs compare, spelled as Inmanta spells it (Python's `str`,
/// and `json.dumps(indent=4, sort_keys=True)` for lists and objects), since clients show it.
fn compare_text(value: Option<&serde_json::Value>) -> String {
    use serde_json::Value;
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::Bool(true)) => "True".into(),
        Some(Value::Bool(false)) => "False".into(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(other) => {
            let mut out = Vec::new();
            let formatter = serde_json::ser::PrettyFormatter::with_indent(b"    ");
            let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
            // serde_json's maps are sorted by key, as sort_keys=True sorts them.
            if serde::Serialize::serialize(other, &mut serializer).is_err() {
                return String::new();
            }
            ascii_escaped(&String::from_utf8_lossy(&out))
        }
    }
}

/// Non-ASCII characters as `\uXXXX` escapes (UTF-16 units), as Python's `json.dumps` writes them.
fn ascii_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::compare_text;
    use serde_json::json;

    #[test]
    fn compare_text_is_spelled_as_inmanta_spells_it() {
        assert_eq!(compare_text(None), "");
        assert_eq!(compare_text(Some(&json!(null))), "");
        assert_eq!(compare_text(Some(&json!(false))), "False");
        assert_eq!(compare_text(Some(&json!(644))), "644");
        assert_eq!(compare_text(Some(&json!("text"))), "text");
        assert_eq!(
            compare_text(Some(&json!({"b": 1, "a": ["é"]}))),
            "{\n    \"a\": [\n        \"\\u00e9\"\n    ],\n    \"b\": 1\n}"
        );
        assert_eq!(compare_text(Some(&json!([]))), "[]");
    }
}
