//! Reads of versions: one version's model, the v1 and v2 listings, a version's resources in the
//! v1 form, and what a version ships (handlers, module code).

use std::collections::BTreeMap;

use api::version::{ConfigurationModel, DesiredStateVersion, Label, VersionStatus};
use api::{ResourceId, ResourceState};
use sqlx::Row;
use uuid::Uuid;

use super::version_not_found;
use crate::environments::environment_not_found;
use crate::paging::{Column, ColumnKind, Filter, FilterKind, Order, Page, PageRequest, Source, View, fetch_page};
use crate::store::Transaction;
use crate::{Error, Orchestrator, Result};

/// The status of a version, computed in SQL from the latest released one.
pub(super) const STATUS_SQL: &str = "CASE \
    WHEN v.released = 1 AND v.version = (SELECT MAX(x.version) FROM version x WHERE x.environment = v.environment AND x.released = 1) THEN 'active' \
    WHEN v.released = 1 THEN 'retired' \
    WHEN v.version > COALESCE((SELECT MAX(x.version) FROM version x WHERE x.environment = v.environment AND x.released = 1), 0) THEN 'candidate' \
    ELSE 'skipped_candidate' END";

pub(super) const VERSION_COLUMNS: &str = "v.version, v.date, v.released, v.total, v.version_info, v.undeployable, \
     v.skipped_for_undeployable, v.partial_base, v.pip_config, v.project_constraints";

/// `GET /api/v2/desiredstate`: its sorts and filters in docs/api.md.
pub const DESIRED_STATE_VIEW: View = View {
    sort_columns: &[Column { name: "version", sql: "v.version", kind: ColumnKind::Int }],
    default_sort: ("version", Order::Desc),
    filters: &[
        Filter { name: "version", sql: "v.version", kind: FilterKind::Range(ColumnKind::Int) },
        Filter { name: "date", sql: "v.date", kind: FilterKind::Range(ColumnKind::Date) },
        Filter {
            name: "status",
            sql: STATUS_SQL,
            kind: FilterKind::Choice {
                negatable: false,
                values: &["active", "retired", "candidate", "skipped_candidate"],
            },
        },
        Filter { name: "released", sql: "v.released", kind: FilterKind::Bool },
    ],
    id_sql: "v.version",
    id_kind: ColumnKind::Int,
};

#[derive(sqlx::FromRow)]
pub(super) struct VersionRow {
    version: i64,
    date: String,
    released: i64,
    total: i64,
    version_info: Option<String>,
    undeployable: String,
    skipped_for_undeployable: String,
    partial_base: Option<i64>,
    pip_config: Option<String>,
    project_constraints: Option<String>,
    status: String,
}

fn json_or_null(text: Option<&str>) -> Option<serde_json::Value> {
    text.and_then(|t| serde_json::from_str(t).ok())
}

fn status_of(text: &str) -> Result<VersionStatus> {
    serde_json::from_value(serde_json::Value::String(text.to_string()))
        .map_err(|_| Error::Corrupt(format!("bad version status {text:?}")))
}

impl VersionRow {
    fn labels(&self) -> Vec<Label> {
        let metadata = json_or_null(self.version_info.as_deref());
        let export = metadata.as_ref().and_then(|m| m.get("export_metadata"));
        match export {
            Some(export) => {
                let text = |key: &str| export.get(key).and_then(|v| v.as_str()).unwrap_or_default().to_string();
                vec![Label { name: text("type"), message: text("message") }]
            }
            None => vec![],
        }
    }

    pub(super) fn into_model(self, environment: Uuid) -> Result<ConfigurationModel> {
        Ok(ConfigurationModel {
            version: self.version,
            environment,
            status: Some(status_of(&self.status)?),
            version_info: json_or_null(self.version_info.as_deref()),
            undeployable: serde_json::from_str(&self.undeployable).unwrap_or_default(),
            skipped_for_undeployable: serde_json::from_str(&self.skipped_for_undeployable).unwrap_or_default(),
            is_suitable_for_partial_compiles: true,
            pip_config: json_or_null(self.pip_config.as_deref()),
            date: crate::store::parse_timestamp(&self.date)?,
            released: self.released != 0,
            total: self.total,
            partial_base: self.partial_base,
            project_constraints: self.project_constraints,
        })
    }

    fn into_desired_state(self) -> Result<DesiredStateVersion> {
        Ok(DesiredStateVersion {
            labels: self.labels(),
            status: status_of(&self.status)?,
            version: self.version,
            date: crate::store::parse_timestamp(&self.date)?,
            total: self.total,
            released: self.released != 0,
        })
    }
}

impl Orchestrator {
    pub async fn get_version_model(&self, env: Uuid, version: i64) -> Result<ConfigurationModel> {
        let row: Option<VersionRow> = sqlx::query_as(&format!(
            "SELECT {VERSION_COLUMNS}, {STATUS_SQL} AS status FROM version v WHERE v.environment = $1 AND v.version = $2"
        ))
        .bind(env.to_string())
        .bind(version)
        .fetch_optional(self.store.pool())
        .await?;
        row.ok_or_else(|| version_not_found(env, version))?.into_model(env)
    }

    /// v1 listing, newest first: `start` skips that many, `limit` caps the count.
    pub async fn list_versions(&self, env: Uuid, start: i64, limit: i64) -> Result<(Vec<ConfigurationModel>, i64)> {
        self.ensure_environment(env).await?;
        let rows: Vec<VersionRow> = sqlx::query_as(&format!(
            "SELECT {VERSION_COLUMNS}, {STATUS_SQL} AS status FROM version v WHERE v.environment = $1 \
             ORDER BY v.version DESC LIMIT {limit} OFFSET {start}"
        ))
        .bind(env.to_string())
        .fetch_all(self.store.pool())
        .await?;
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM version WHERE environment = $1")
            .bind(env.to_string())
            .fetch_one(self.store.pool())
            .await?;
        let models = rows.into_iter().map(|r| r.into_model(env)).collect::<Result<_>>()?;
        Ok((models, count))
    }

    /// `GET /api/v2/desiredstate`.
    pub async fn desired_state_versions(&self, env: Uuid, req: &PageRequest) -> Result<Page<DesiredStateVersion>> {
        self.ensure_environment(env).await?;
        let select = format!("{VERSION_COLUMNS}, {STATUS_SQL} AS status");
        let binds = [env.to_string()];
        let page: Page<VersionRow> = fetch_page(
            &self.store,
            &DESIRED_STATE_VIEW,
            req,
            Source {
                select: &select,
                from: "version v",
                scope: "v.environment = $1",
                scope_binds: &binds,
                base_path: "/api/v2/desiredstate",
            },
        )
        .await?;
        page.try_map(VersionRow::into_desired_state)
    }

    /// The resources of a version in Inmanta's v1 resource-dict shape, sorted by id, `limit` at a
    /// time after the id `after`: how `GET /api/v1/version/<v>` streams a big version without
    /// holding it whole (each page is one short query on the primary key).
    pub async fn version_resources_page(
        &self,
        env: Uuid,
        version: i64,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<serde_json::Value>> {
        let rows = sqlx::query(&format!(
            "SELECT {V1_COLUMNS} FROM resource WHERE environment = $1 AND version = $2 AND resource_id > $3 \
             ORDER BY resource_id LIMIT {limit}"
        ))
        .bind(env.to_string())
        .bind(version)
        .bind(after.unwrap_or(""))
        .fetch_all(self.store.pool())
        .await?;
        rows.iter().map(|row| v1_resource(env, row)).collect()
    }

    /// One resource of one version in the v1 form (`GET /api/v1/resource/<rvid>`).
    pub async fn v1_versioned_resource(&self, env: Uuid, version: i64, rid: &ResourceId) -> Result<serde_json::Value> {
        let row = sqlx::query(&format!(
            "SELECT {V1_COLUMNS} FROM resource WHERE environment = $1 AND version = $2 AND resource_id = $3"
        ))
        .bind(env.to_string())
        .bind(version)
        .bind(rid.to_string())
        .fetch_optional(self.store.pool())
        .await?
        .ok_or_else(|| Error::NotFound(format!("resource {} does not exist", rid.versioned(version as u64))))?;
        v1_resource(env, &row)
    }

    /// The sha1 of the executable that the version ships for one resource type, if any: what an
    /// agent runs for a type without a built-in handler.
    pub async fn shipped_handler(&self, env: Uuid, version: i64, resource_type: &str) -> Result<Option<String>> {
        Ok(sqlx::query_scalar(
            "SELECT file_hash FROM version_handler WHERE environment = $1 AND version = $2 AND resource_type = $3",
        )
        .bind(env.to_string())
        .bind(version)
        .bind(resource_type)
        .fetch_optional(self.store.pool())
        .await?)
    }

    /// The `module_version_info` a version was stored with (its modules and their Python code,
    /// by sha1 in the file store), if it has one.
    pub async fn module_version_info(&self, env: Uuid, version: i64) -> Result<Option<serde_json::Value>> {
        let text: Option<Option<String>> =
            sqlx::query_scalar("SELECT module_version_info FROM version WHERE environment = $1 AND version = $2")
                .bind(env.to_string())
                .bind(version)
                .fetch_optional(self.store.pool())
                .await?;
        Ok(text.flatten().and_then(|t| serde_json::from_str(&t).ok()).filter(|v: &serde_json::Value| !v.is_null()))
    }

    pub(crate) async fn ensure_environment(&self, env: Uuid) -> Result<()> {
        let found: Option<String> = sqlx::query_scalar("SELECT id FROM environment WHERE id = $1")
            .bind(env.to_string())
            .fetch_optional(self.store.pool())
            .await?;
        found.map(|_| ()).ok_or_else(|| environment_not_found(env))
    }
}

/// The columns [`v1_resource`] reads.
const V1_COLUMNS: &str =
    "resource_id, resource_type, agent, id_value, attributes, attribute_hash, requires, resource_set, state";

/// A stored resource as Inmanta's v1 API shows it (its `Resource` object): the exported
/// attributes with plain `requires`, the attribute hash, whether it is undefined, and the id of
/// its resource set (Inmanta gives every set, the shared one included, an id; ours is derived
/// from the environment and the set's name, so it is stable).
fn v1_resource(env: Uuid, row: &sqlx::any::AnyRow) -> Result<serde_json::Value> {
    let mut attributes: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&row.try_get::<String, _>("attributes")?).map_err(|e| Error::Corrupt(e.to_string()))?;
    let requires: Vec<String> =
        serde_json::from_str(&row.try_get::<String, _>("requires")?).map_err(|e| Error::Corrupt(e.to_string()))?;
    attributes.insert("requires".into(), requires.into());
    let set: Option<String> = row.try_get("resource_set")?;
    let set_key = format!("{env}\0{}", set.as_deref().unwrap_or(""));
    let set_id = uuid::Builder::from_sha1_bytes(
        sha1_smol::Sha1::from(set_key.as_bytes()).digest().bytes()[..16].try_into().unwrap_or([0; 16]),
    )
    .into_uuid();
    Ok(serde_json::json!({
        "environment": env,
        "resource_id": row.try_get::<String, _>("resource_id")?,
        "resource_type": row.try_get::<String, _>("resource_type")?,
        "resource_id_value": row.try_get::<String, _>("id_value")?,
        "agent": row.try_get::<String, _>("agent")?,
        "attributes": attributes,
        "attribute_hash": row.try_get::<String, _>("attribute_hash")?,
        "is_undefined": row.try_get::<String, _>("state")? == ResourceState::Undefined.as_str(),
        "resource_set": set_id,
    }))
}

/// Resource type -> file hash of the handlers a stored version ships.
pub(crate) async fn handlers_of(tx: &mut Transaction, env: Uuid, version: i64) -> Result<BTreeMap<String, String>> {
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT resource_type, file_hash FROM version_handler WHERE environment = $1 AND version = $2")
            .bind(env.to_string())
            .bind(version)
            .fetch_all(&mut **tx)
            .await?;
    Ok(rows.into_iter().collect())
}
