//! Versions of the desired state: reserve, store (`put_version`), release, list, delete.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use api::operations::NotificationSeverity;
use api::version::{ConfigurationModel, DesiredStateVersion, Label, PutPartial, PutVersion, VersionStatus};
use api::{ResourceId, ResourceState};
use sqlx::Row;
use uuid::Uuid;

use crate::environments::environment_not_found;
use crate::files::sha1_hex;
use crate::notifications::{NewNotification, insert_notification};
use crate::paging::{Column, ColumnKind, Filter, FilterKind, Order, Page, PageRequest, Source, View, fetch_page};
use crate::statistics::Written;
use crate::store::{Transaction, json_list, json_rows, now};
use crate::{DbKind, Error, Orchestrator, Result};

/// The status of a version, computed in SQL from the latest released one.
const STATUS_SQL: &str = "CASE \
    WHEN v.released = 1 AND v.version = (SELECT MAX(x.version) FROM version x WHERE x.environment = v.environment AND x.released = 1) THEN 'active' \
    WHEN v.released = 1 THEN 'retired' \
    WHEN v.version > COALESCE((SELECT MAX(x.version) FROM version x WHERE x.environment = v.environment AND x.released = 1), 0) THEN 'candidate' \
    ELSE 'skipped_candidate' END";

const VERSION_COLUMNS: &str = "v.version, v.date, v.released, v.total, v.version_info, v.undeployable, \
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
struct VersionRow {
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

    fn into_model(self, environment: Uuid) -> Result<ConfigurationModel> {
        Ok(ConfigurationModel {
            version: self.version,
            environment,
            status: Some(status_of(&self.status)?),
            version_info: json_or_null(self.version_info.as_deref()),
            undeployable: serde_json::from_str(&self.undeployable).unwrap_or_default(),
            skipped_for_undeployable: serde_json::from_str(&self.skipped_for_undeployable).unwrap_or_default(),
            is_suitable_for_partial_compiles: true,
            pip_config: json_or_null(self.pip_config.as_deref()),
            date: self.date,
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
            date: self.date,
            total: self.total,
            released: self.released != 0,
        })
    }
}

/// A resource as validated for storage.
struct StoredResource {
    id: ResourceId,
    attributes: String,
    attribute_hash: String,
    requires: Vec<String>,
    resource_set: Option<String>,
    /// available, undefined or skipped_for_undefined.
    state: ResourceState,
}

/// What `put_version` did.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredVersion {
    pub version: i64,
    pub released: bool,
}

/// Takes the environment's next version number inside `tx` (which locks the environment's row
/// until `tx` ends).
async fn next_version(tx: &mut Transaction, env: Uuid) -> Result<i64> {
    let done = sqlx::query("UPDATE environment SET last_version = last_version + 1 WHERE id = $1")
        .bind(env.to_string())
        .execute(&mut **tx)
        .await?;
    if done.rows_affected() == 0 {
        return Err(environment_not_found(env));
    }
    Ok(sqlx::query_scalar("SELECT last_version FROM environment WHERE id = $1")
        .bind(env.to_string())
        .fetch_one(&mut **tx)
        .await?)
}

impl Orchestrator {
    /// Hands out the next version number of the environment.
    pub async fn reserve_version(&self, env: Uuid) -> Result<i64> {
        let mut tx = self.store.begin_write().await?;
        let version = next_version(&mut tx, env).await?;
        tx.commit().await?;
        Ok(version)
    }

    /// Makes `version` a reserved number of the environment, as if `reserve_version` had been
    /// called up to it: a version moved from another server keeps its number (`inmanta migrate`).
    /// Numbers reserved already stay as they are.
    pub async fn reserve_version_number(&self, env: Uuid, version: i64) -> Result<()> {
        if version < 1 {
            return Err(Error::BadRequest(format!("version numbers start at 1, not {version}")));
        }
        let mut tx = self.store.begin_write().await?;
        let done = sqlx::query("UPDATE environment SET last_version = $2 WHERE id = $1 AND last_version < $2")
            .bind(env.to_string())
            .bind(version)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            let exists: Option<String> = sqlx::query_scalar("SELECT id FROM environment WHERE id = $1")
                .bind(env.to_string())
                .fetch_optional(&mut *tx)
                .await?;
            exists.ok_or_else(|| environment_not_found(env))?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Validates and stores a full version; releases it when `auto_deploy` is on.
    pub async fn put_version(&self, env: Uuid, req: PutVersion) -> Result<StoredVersion> {
        let version = req.version;
        // Validation and encoding are CPU work (about a second for 200 000 resources): off the
        // async workers, so health checks and other requests keep being answered meanwhile.
        let (req, prepared) = tokio::task::spawn_blocking(move || {
            let prepared = prepare_version(&req);
            (req, prepared)
        })
        .await
        .map_err(|e| Error::Corrupt(format!("validating the version failed: {e}")))?;
        let prepared = prepared?;
        // A deadlock with the scheduler's writes or a connection cut by a failover is no
        // reason to refuse a compile's export: the transaction is tried again, a few times.
        let mut pause = std::time::Duration::from_millis(50);
        for attempt in 1.. {
            match self.store_new_version(env, &req, &prepared).await {
                Err(e) if e.is_transient() && attempt < 4 => {
                    tracing::warn!(%env, version, error = %e, "storing the version failed; retrying");
                    tokio::time::sleep(pause).await;
                    pause *= 4;
                }
                stored => {
                    stored?;
                    break;
                }
            }
        }
        self.store.wrote_rows("resource", prepared.resources.len() as u64, Written::Bulk);
        self.after_store(env, version).await
    }

    /// The transaction of [`Orchestrator::put_version`]: checks the version was reserved and is
    /// new, then stores it.
    async fn store_new_version(&self, env: Uuid, req: &PutVersion, prepared: &PreparedVersion) -> Result<()> {
        let version = req.version;
        let mut tx = self.store.begin_write().await?;
        let last: Option<i64> = sqlx::query_scalar("SELECT last_version FROM environment WHERE id = $1")
            .bind(env.to_string())
            .fetch_optional(&mut *tx)
            .await?;
        let last = last.ok_or_else(|| environment_not_found(env))?;
        if version < 1 || version > last {
            return Err(Error::BadRequest(format!(
                "version {version} was not reserved in this environment: call reserve_version first (last reserved: {last})"
            )));
        }
        let exists: Option<i64> =
            sqlx::query_scalar("SELECT version FROM version WHERE environment = $1 AND version = $2")
                .bind(env.to_string())
                .bind(version)
                .fetch_optional(&mut *tx)
                .await?;
        if exists.is_some() {
            return Err(Error::Conflict(format!("version {version} already exists in this environment")));
        }
        store_version(&mut tx, self.store.kind(), env, req, prepared, None).await?;
        tx.commit().await?;
        Ok(())
    }

    /// `PUT /api/v2/version/partial`: a new version made of the latest one with the resource
    /// sets of `req` replaced and its removed sets dropped. Returns the new version number.
    pub async fn put_partial(&self, env: Uuid, req: PutPartial) -> Result<StoredVersion> {
        for resource in &req.resources {
            let raw = resource.get("id").and_then(|v| v.as_str()).unwrap_or_default();
            if let Ok((_, v)) = ResourceId::parse_versioned(raw)
                && v != 0
            {
                return Err(Error::BadRequest(format!(
                    "resource {raw} of a partial export must carry version 0 (,v=0): the server picks the version"
                )));
            }
        }
        let partial_sets: BTreeSet<String> = req.resource_sets.values().flatten().cloned().collect();
        if let Some(both) = req.removed_resource_sets.iter().find(|s| partial_sets.contains(*s)) {
            return Err(Error::BadRequest(format!("resource set {both} is both updated and removed")));
        }
        // Taking the next version number first locks the environment row, so partial exports
        // of one environment are applied one after the other.
        let mut tx = self.store.begin_write().await?;
        let version = next_version(&mut tx, env).await?;
        let base: Option<(i64, Option<String>)> = sqlx::query_as(
            "SELECT version, module_version_info FROM version WHERE environment = $1 ORDER BY version DESC LIMIT 1",
        )
        .bind(env.to_string())
        .fetch_optional(&mut *tx)
        .await?;
        let Some((base, base_modules)) = base else {
            return Err(Error::BadRequest(
                "a partial export needs an existing version to build on: export the full model first".into(),
            ));
        };
        let base_handlers = handlers_of(&mut tx, env, base).await?;
        if !req.allow_handler_code_update {
            check_handler_code(base_modules.as_deref(), req.module_version_info.as_ref())?;
            check_shipped_handlers(&base_handlers, &req.handlers)?;
        }
        let rows = sqlx::query(
            "SELECT resource_id, attributes, requires, resource_set, state FROM resource \
             WHERE environment = $1 AND version = $2",
        )
        .bind(env.to_string())
        .bind(base)
        .fetch_all(&mut *tx)
        .await?;
        let mut merged = PutVersion {
            version,
            resources: Vec::with_capacity(rows.len() + req.resources.len()),
            resource_state: req.resource_state.clone(),
            unknowns: req.unknowns.clone(),
            version_info: req.version_info.clone(),
            resource_sets: BTreeMap::new(),
            module_version_info: merge_modules(base_modules.as_deref(), req.module_version_info.as_ref()),
            pip_config: req.pip_config.clone(),
            project_constraints: req.project_constraints.clone(),
            compiler_version: None,
            // The base's shipped handlers stay; the partial's win for the types it names.
            handlers: base_handlers.into_iter().chain(req.handlers.clone()).collect(),
        };
        let incoming: HashMap<String, &serde_json::Map<String, serde_json::Value>> = req
            .resources
            .iter()
            .filter_map(|r| {
                let raw = r.get("id")?.as_str()?;
                Some((ResourceId::parse_versioned(raw).ok()?.0.to_string(), r))
            })
            .collect();
        for row in rows {
            let rid: String = row.try_get("resource_id")?;
            let set: Option<String> = row.try_get("resource_set")?;
            let state: String = row.try_get("state")?;
            let replaced =
                set.as_ref().is_some_and(|s| partial_sets.contains(s) || req.removed_resource_sets.contains(s));
            if replaced {
                continue;
            }
            let mut resource: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&row.try_get::<String, _>("attributes")?)
                    .map_err(|e| Error::Corrupt(e.to_string()))?;
            let requires: Vec<String> = serde_json::from_str(&row.try_get::<String, _>("requires")?)
                .map_err(|e| Error::Corrupt(e.to_string()))?;
            if let Some(new) = incoming.get(&rid) {
                let new_set = req.resource_sets.get(&rid).cloned().flatten();
                match (&set, &new_set) {
                    (Some(old), _) => {
                        return Err(Error::BadRequest(format!(
                            "resource {rid} belongs to resource set {old}, which this partial export does not replace; \
                             a resource cannot move between sets"
                        )));
                    }
                    (None, Some(new_set)) => {
                        return Err(Error::BadRequest(format!(
                            "resource {rid} is shared (in no resource set) in version {base} and cannot move into set {new_set}"
                        )));
                    }
                    (None, None) => {
                        let mut theirs = (*new).clone();
                        theirs.remove("id");
                        let their_requires = plain_requires(theirs.remove("requires"));
                        if theirs != resource || their_requires != requires {
                            return Err(Error::BadRequest(format!(
                                "shared resource {rid} differs from the one in version {base}: \
                                 shared resources must be identical in every partial export"
                            )));
                        }
                        // Identical: the partial's copy is stored below.
                        continue;
                    }
                }
            }
            resource.insert("id".into(), api::resource::versioned_id(&rid, 0).into());
            resource.insert("requires".into(), serde_json::json!(requires));
            if state == ResourceState::Undefined.as_str() && !merged.resource_state.contains_key(&rid) {
                merged.resource_state.insert(rid.clone(), ResourceState::Undefined.to_string());
            }
            merged.resource_sets.insert(rid, set);
            merged.resources.push(resource);
        }
        merged.resources.extend(req.resources.iter().cloned());
        for (rid, set) in &req.resource_sets {
            merged.resource_sets.insert(rid.clone(), set.clone());
        }
        let prepared = prepare_version(&merged)?;
        store_version(&mut tx, self.store.kind(), env, &merged, &prepared, Some(base)).await?;
        tx.commit().await?;
        self.store.wrote_rows("resource", prepared.resources.len() as u64, Written::Bulk);
        tracing::info!(%env, version, base, sets = ?partial_sets, removed = ?req.removed_resource_sets, "partial version stored");
        self.after_store(env, version).await
    }

    /// Release (with `auto_deploy`) and retention after a version is stored.
    async fn after_store(&self, env: Uuid, version: i64) -> Result<StoredVersion> {
        let settings = self.environment_settings(env).await?.settings;
        let setting = |name| settings.get(name);
        let auto_deploy =
            setting(api::settings::names::AUTO_DEPLOY).and_then(api::SettingValue::as_bool).unwrap_or(true);
        let mut released = false;
        if auto_deploy {
            match self.release_version(env, version).await {
                Ok(_) => released = true,
                // A newer version was released meanwhile (concurrent exports): this one stays a
                // candidate that will never be active, and storing it still succeeded.
                Err(Error::Conflict(reason)) => {
                    tracing::info!(%env, version, %reason, "stored version not released by auto_deploy")
                }
                Err(e) => return Err(e),
            }
        }
        let keep = setting(api::settings::names::AVAILABLE_VERSIONS_TO_KEEP).and_then(api::SettingValue::as_int);
        self.apply_retention(env, keep.unwrap_or(100)).await?;
        Ok(StoredVersion { version, released })
    }

    /// Keeps the `keep` newest versions besides the active one; older ones are deleted.
    async fn apply_retention(&self, env: Uuid, keep: i64) -> Result<()> {
        let mut tx = self.store.begin_write().await?;
        let active: Option<i64> =
            sqlx::query_scalar("SELECT MAX(version) FROM version WHERE environment = $1 AND released = 1")
                .bind(env.to_string())
                .fetch_one(&mut *tx)
                .await?;
        let others: Vec<i64> = sqlx::query_scalar(
            "SELECT version FROM version WHERE environment = $1 AND version <> $2 ORDER BY version DESC",
        )
        .bind(env.to_string())
        .bind(active.unwrap_or(-1))
        .fetch_all(&mut *tx)
        .await?;
        let doomed: Vec<i64> = others.into_iter().skip(keep.max(0) as usize).collect();
        for version in &doomed {
            delete_version_rows(&mut tx, env, *version).await?;
        }
        tx.commit().await?;
        if !doomed.is_empty() {
            tracing::info!(%env, deleted = ?doomed, "old versions removed (available_versions_to_keep)");
        }
        Ok(())
    }

    /// Releases a version: 404 when unknown, 409 when released already or older than the
    /// latest released one.
    pub async fn release_version(&self, env: Uuid, version: i64) -> Result<ConfigurationModel> {
        let mut tx = self.store.begin_write().await?;
        // Releases of one environment must not interleave (on PostgreSQL, read committed would
        // let two see the same "latest released" and both mark orphans): this takes the
        // environment's row lock until commit. SQLite's write transactions are serial anyway.
        sqlx::query("UPDATE environment SET last_version = last_version WHERE id = $1")
            .bind(env.to_string())
            .execute(&mut *tx)
            .await?;
        let row: Option<(i64,)> =
            sqlx::query_as("SELECT released FROM version WHERE environment = $1 AND version = $2")
                .bind(env.to_string())
                .bind(version)
                .fetch_optional(&mut *tx)
                .await?;
        let (released,) = row.ok_or_else(|| version_not_found(env, version))?;
        if released != 0 {
            return Err(Error::Conflict(format!("version {version} on environment {env} is already released")));
        }
        let latest: Option<i64> =
            sqlx::query_scalar("SELECT MAX(version) FROM version WHERE environment = $1 AND released = 1")
                .bind(env.to_string())
                .fetch_one(&mut *tx)
                .await?;
        if let Some(latest) = latest
            && latest > version
        {
            return Err(Error::Conflict(format!(
                "version {version} is older than the released version {latest}; only newer versions can be released"
            )));
        }
        sqlx::query("UPDATE version SET released = 1, released_at = $1 WHERE environment = $2 AND version = $3")
            .bind(now())
            .bind(env.to_string())
            .bind(version)
            .execute(&mut *tx)
            .await?;
        let intents = crate::resources::record_release(&mut tx, env, version).await?;
        crate::agents::register_agents(&mut tx, env, version).await?;
        tx.commit().await?;
        self.store.wrote_rows("resource_persistent_state", intents, Written::Bulk);
        self.publish(crate::Event::VersionReleased { env, version });
        self.get_version_model(env, version).await
    }

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

    /// Deletes a version that is not the active one.
    pub async fn delete_version(&self, env: Uuid, version: i64) -> Result<()> {
        let model = self.get_version_model(env, version).await?;
        if model.status == Some(VersionStatus::Active) {
            return Err(Error::BadRequest(format!(
                "version {version} is the active version and cannot be deleted; release a newer one first"
            )));
        }
        let mut tx = self.store.begin_write().await?;
        delete_version_rows(&mut tx, env, version).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Resource type -> sha1 of the executable that the version ships for it (docs/handlers.md).
    pub async fn version_handlers(&self, env: Uuid, version: i64) -> Result<BTreeMap<String, String>> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT resource_type, file_hash FROM version_handler WHERE environment = $1 AND version = $2",
        )
        .bind(env.to_string())
        .bind(version)
        .fetch_all(self.store.pool())
        .await?;
        Ok(rows.into_iter().collect())
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

async fn delete_version_rows(tx: &mut Transaction, env: Uuid, version: i64) -> Result<()> {
    for table in ["resource", "version_handler", "version"] {
        sqlx::query(&format!("DELETE FROM {table} WHERE environment = $1 AND version = $2"))
            .bind(env.to_string())
            .bind(version)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// A validated version ready to store: its resources and which of them cannot be deployed,
/// and the resource rows already encoded for [`insert_resources`], so that the write
/// transaction holds the database's write lock only while the database works.
struct PreparedVersion {
    resources: Vec<StoredResource>,
    undefined: BTreeSet<String>,
    skipped: BTreeSet<String>,
    payloads: Vec<String>,
}

fn prepare_version(req: &PutVersion) -> Result<PreparedVersion> {
    let mut resources = validate_resources(req)?;
    let undefined: BTreeSet<String> =
        resources.iter().filter(|r| r.state == ResourceState::Undefined).map(|r| r.id.to_string()).collect();
    let skipped = dependents_of(&resources, &undefined);
    for r in resources.iter_mut().filter(|r| skipped.contains(&r.id.to_string())) {
        r.state = ResourceState::SkippedForUndefined;
    }
    let payloads = resource_payloads(&resources);
    Ok(PreparedVersion { resources, undefined, skipped, payloads })
}

/// Writes the version row, its resources and, for an export of a failed compile, a notification.
async fn store_version(
    tx: &mut Transaction,
    kind: DbKind,
    env: Uuid,
    req: &PutVersion,
    prepared: &PreparedVersion,
    partial_base: Option<i64>,
) -> Result<()> {
    let version = req.version;
    sqlx::query(
        "INSERT INTO version (environment, version, date, total, version_info, unknowns, module_version_info, \
         pip_config, project_constraints, undeployable, skipped_for_undeployable, partial_base) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(env.to_string())
    .bind(version)
    .bind(now())
    .bind(prepared.resources.len() as i64)
    .bind(req.version_info.as_ref().map(|v| v.to_string()))
    .bind(serde_json::Value::Array(req.unknowns.clone()).to_string())
    .bind(req.module_version_info.as_ref().map(|v| v.to_string()))
    .bind(req.pip_config.as_ref().map(|v| v.to_string()))
    .bind(req.project_constraints.clone())
    .bind(ids_json(&prepared.undefined))
    .bind(ids_json(&prepared.skipped))
    .bind(partial_base)
    .execute(&mut **tx)
    .await?;
    insert_resources(tx, kind, env, version, &prepared.payloads).await?;
    record_store_action(tx, env, version, &prepared.resources).await?;
    insert_handlers(tx, kind, env, version, &req.handlers).await?;
    if let Some(message) = failed_compile_message(req.version_info.as_ref()) {
        let new = NewNotification {
            title: "Compilation failed".into(),
            message: format!("version {version} was exported from a failed compile: {message}"),
            severity: NotificationSeverity::Error,
            uri: Some(format!("/console/desiredstate/{version}")),
            compile_id: None,
        };
        insert_notification(tx, env, &new).await?;
    }
    Ok(())
}

/// The `store` resource action Inmanta records for every new version: one action naming all of
/// its resources, with one line saying the version was stored (so each resource's history starts
/// with the version that introduced its intent, and `inmanta-cli version report` counts it).
async fn record_store_action(
    tx: &mut Transaction,
    env: Uuid,
    version: i64,
    resources: &[StoredResource],
) -> Result<()> {
    let action_id = crate::resources::new_action_id().to_string();
    let stored = now();
    let rvids: Vec<String> = resources.iter().map(|r| r.id.versioned(version as u64)).collect();
    crate::resources::insert_bare_action(tx, env, &action_id, version, "store", &stored, &rvids).await?;
    sqlx::query(
        "INSERT INTO resource_action_resource (environment, action_id, resource_id) \
         SELECT environment, $2, resource_id FROM resource WHERE environment = $1 AND version = $3",
    )
    .bind(env.to_string())
    .bind(action_id.clone())
    .bind(version)
    .execute(&mut **tx)
    .await?;
    sqlx::query(
        "INSERT INTO resource_log (environment, action_id, seq, level_no, level, msg, args, kwargs, timestamp) \
         VALUES ($1, $2, 0, 20, 'INFO', $3, '[]', $4, $5)",
    )
    .bind(env.to_string())
    .bind(action_id)
    .bind(format!("Successfully stored version {version}"))
    .bind(serde_json::json!({ "version": version }).to_string())
    .bind(stored)
    .execute(&mut **tx)
    .await?;
    Ok(())
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

/// Records which stored executable handles each resource type in this version; every file must
/// be in the store already, so an agent can always fetch what the version names.
async fn insert_handlers(
    tx: &mut Transaction,
    kind: DbKind,
    env: Uuid,
    version: i64,
    handlers: &BTreeMap<String, String>,
) -> Result<()> {
    if handlers.is_empty() {
        return Ok(());
    }
    for (resource_type, hash) in handlers {
        let parts: Vec<&str> = resource_type.split("::").collect();
        if parts.len() < 2 || parts.iter().any(|p| p.is_empty()) {
            return Err(Error::BadRequest(format!(
                "handlers: {resource_type:?} is not a resource type (expected <namespace>::<Type>)"
            )));
        }
        if hash.len() != 40 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::BadRequest(format!(
                "handlers: the handler of {resource_type} must be the 40-character sha1 hex of an uploaded file, got {hash:?}"
            )));
        }
    }
    let hashes: BTreeSet<String> = handlers.values().map(|h| h.to_ascii_lowercase()).collect();
    let present: BTreeSet<String> =
        sqlx::query_scalar(&format!("SELECT hash FROM file WHERE hash IN {}", json_list(kind, 1)))
            .bind(serde_json::json!(hashes).to_string())
            .fetch_all(&mut **tx)
            .await?
            .into_iter()
            .collect();
    if let Some((resource_type, hash)) = handlers.iter().find(|(_, h)| !present.contains(&h.to_ascii_lowercase())) {
        return Err(Error::BadRequest(format!(
            "handlers: the handler of {resource_type} is file {hash}, which is not in the file store; upload it first"
        )));
    }
    let rows: Vec<serde_json::Value> = handlers
        .iter()
        .map(|(t, h)| serde_json::json!({"resource_type": t, "file_hash": h.to_ascii_lowercase()}))
        .collect();
    sqlx::query(&format!(
        "INSERT INTO version_handler (environment, version, resource_type, file_hash) \
         SELECT $1, CAST($2 AS BIGINT), x.resource_type, x.file_hash FROM {}",
        json_rows(kind, 3, &["resource_type", "file_hash"])
    ))
    .bind(env.to_string())
    .bind(version)
    .bind(serde_json::Value::Array(rows).to_string())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Resource type -> file hash of the handlers a stored version ships.
async fn handlers_of(tx: &mut Transaction, env: Uuid, version: i64) -> Result<BTreeMap<String, String>> {
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT resource_type, file_hash FROM version_handler WHERE environment = $1 AND version = $2")
            .bind(env.to_string())
            .bind(version)
            .fetch_all(&mut **tx)
            .await?;
    Ok(rows.into_iter().collect())
}

/// A partial export may add handlers for new types, but replacing the code that handles a type of
/// the base version needs `allow_handler_code_update`, like module code does.
fn check_shipped_handlers(base: &BTreeMap<String, String>, partial: &BTreeMap<String, String>) -> Result<()> {
    for (resource_type, hash) in partial {
        if let Some(old) = base.get(resource_type)
            && !old.eq_ignore_ascii_case(hash)
        {
            return Err(Error::BadRequest(format!(
                "the shipped handler of {resource_type} differs from the base version's; \
                 set allow_handler_code_update to replace it"
            )));
        }
    }
    Ok(())
}

/// Requires as plain resource ids, whatever versions they carry.
fn plain_requires(value: Option<serde_json::Value>) -> Vec<String> {
    let mut out: Vec<String> = value
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|r| r.as_str().and_then(|t| ResourceId::parse_versioned(t).ok()).map(|(id, _)| id.to_string()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Handler code of modules in both the base and the partial must be the same.
fn check_handler_code(base: Option<&str>, partial: Option<&serde_json::Value>) -> Result<()> {
    let base: serde_json::Value = base.and_then(|b| serde_json::from_str(b).ok()).unwrap_or_default();
    let (Some(base), Some(partial)) = (base.as_object(), partial.and_then(|p| p.as_object())) else {
        return Ok(());
    };
    for (module, code) in partial {
        if let Some(old) = base.get(module)
            && old != code
        {
            return Err(Error::BadRequest(format!(
                "the handler code of module {module} differs from the base version; \
                 set allow_handler_code_update to replace it"
            )));
        }
    }
    Ok(())
}

fn merge_modules(base: Option<&str>, partial: Option<&serde_json::Value>) -> Option<serde_json::Value> {
    let mut merged = base.and_then(|b| serde_json::from_str::<serde_json::Value>(b).ok());
    match (merged.as_mut().and_then(|m| m.as_object_mut()), partial.and_then(|p| p.as_object())) {
        (Some(m), Some(p)) => {
            for (k, v) in p {
                m.insert(k.clone(), v.clone());
            }
        }
        (None, Some(_)) => merged = partial.cloned(),
        _ => {}
    }
    merged
}

/// The message of `version_info.export_metadata` when the export says its compile failed.
fn failed_compile_message(version_info: Option<&serde_json::Value>) -> Option<String> {
    let export = version_info?.get("export_metadata")?;
    (export.get("inmanta:compile:state")?.as_str()? == api::CompileStatus::Failed.as_str())
        .then(|| export.get("message").and_then(|m| m.as_str()).unwrap_or("no message").to_string())
}

fn ids_json(ids: &BTreeSet<String>) -> String {
    serde_json::json!(ids).to_string()
}

fn version_not_found(env: Uuid, version: i64) -> Error {
    Error::NotFound(format!("version {version} does not exist in environment {env}"))
}

/// Checks ids, versions, requires and the dependency graph; returns resources ready to store.
fn validate_resources(req: &PutVersion) -> Result<Vec<StoredResource>> {
    let version = req.version;
    let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
    let mut resources = Vec::with_capacity(req.resources.len());
    let mut states: HashMap<String, ResourceState> = HashMap::new();
    for (rid, state) in &req.resource_state {
        crate::validate::id("a resource id", rid)?;
        let id = ResourceId::parse(rid).map_err(|e| Error::BadRequest(format!("resource_state: {e}")))?;
        let state = match ResourceState::parse(state) {
            Some(ResourceState::Available | ResourceState::Deployed) => ResourceState::Available,
            Some(ResourceState::Undefined) => ResourceState::Undefined,
            _ => {
                let other = state;
                return Err(Error::BadRequest(format!(
                    "resource_state of {rid}: {other:?} is not a state an export can set (available or undefined)"
                )));
            }
        };
        states.insert(id.to_string(), state);
    }
    for (index, resource) in req.resources.iter().enumerate() {
        let raw_id = resource
            .get("id")
            .and_then(|v| v.as_str())
            .ok_or_else(|| Error::BadRequest(format!("resource {index} has no \"id\" string")))?;
        crate::validate::id("a resource id", raw_id)?;
        let (id, id_version) = ResourceId::parse_versioned(raw_id).map_err(|e| Error::BadRequest(e.to_string()))?;
        crate::validate::name("an agent name", &id.agent)?;
        if id_version != 0 && id_version as i64 != version {
            return Err(Error::BadRequest(format!("resource {raw_id} carries version {id_version}, not {version}")));
        }
        let key = id.to_string();
        if by_id.insert(key.clone(), index).is_some() {
            return Err(Error::BadRequest(format!("resource {key} appears twice in version {version}")));
        }
        let requires = match resource.get("requires") {
            None | Some(serde_json::Value::Null) => vec![],
            Some(serde_json::Value::Array(items)) => {
                let mut out = BTreeSet::new();
                for item in items {
                    let text = item
                        .as_str()
                        .ok_or_else(|| Error::BadRequest(format!("requires of {key} must be resource ids")))?;
                    let (req_id, _) = ResourceId::parse_versioned(text)
                        .map_err(|e| Error::BadRequest(format!("requires of {key}: {e}")))?;
                    out.insert(req_id.to_string());
                }
                out.into_iter().collect()
            }
            Some(_) => return Err(Error::BadRequest(format!("requires of {key} must be a list"))),
        };
        let mut attributes = resource.clone();
        attributes.remove("id");
        attributes.remove("requires");
        let mut attributes = serde_json::Value::Object(attributes);
        // floats in one spelling, ints exact (serde_json's `arbitrary_precision` keeps the text)
        api::json::canonical_numbers(&mut attributes);
        let attributes = attributes.to_string();
        let attribute_hash = sha1_hex(format!("{attributes}{}", serde_json::json!(requires)).as_bytes());
        let resource_set = req.resource_sets.get(&key).cloned().flatten();
        let state = states.remove(&key).unwrap_or(ResourceState::Available);
        resources.push(StoredResource { id, attributes, attribute_hash, requires, resource_set, state });
    }
    if let Some(stray) = states.keys().next() {
        return Err(Error::BadRequest(format!("resource_state names {stray}, which is not in the version")));
    }
    for r in &resources {
        if let Some(missing) = r.requires.iter().find(|req| !by_id.contains_key(*req)) {
            return Err(Error::BadRequest(format!(
                "resource {} requires {missing}, which is not in version {version}",
                r.id
            )));
        }
    }
    if let Some(cycle) = find_cycle(&resources, &by_id) {
        return Err(Error::BadRequest(format!("the requires relation has a cycle: {}", cycle.join(" -> "))));
    }
    Ok(resources)
}

/// A cycle in the requires graph, as the ids along it, if there is one.
fn find_cycle(resources: &[StoredResource], by_id: &BTreeMap<String, usize>) -> Option<Vec<String>> {
    // Iterative depth-first search: 0 unvisited, 1 on the stack, 2 done.
    let mut mark = vec![0u8; resources.len()];
    for start in 0..resources.len() {
        if mark[start] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        mark[start] = 1;
        while let Some((node, next)) = stack.last_mut() {
            let node = *node;
            if let Some(dep) = resources[node].requires.get(*next) {
                *next += 1;
                let dep = by_id[dep];
                match mark[dep] {
                    0 => {
                        mark[dep] = 1;
                        stack.push((dep, 0));
                    }
                    1 => {
                        let from = stack.iter().position(|(n, _)| *n == dep).unwrap_or(0);
                        let mut cycle: Vec<String> =
                            stack[from..].iter().map(|(n, _)| resources[*n].id.to_string()).collect();
                        cycle.push(resources[dep].id.to_string());
                        return Some(cycle);
                    }
                    _ => {}
                }
            } else {
                mark[node] = 2;
                stack.pop();
            }
        }
    }
    None
}

/// Resources that require, directly or not, one of `roots` (and are not roots themselves).
fn dependents_of(resources: &[StoredResource], roots: &BTreeSet<String>) -> BTreeSet<String> {
    let mut dependents: HashMap<&str, Vec<String>> = HashMap::new();
    for r in resources {
        for req in &r.requires {
            dependents.entry(req.as_str()).or_default().push(r.id.to_string());
        }
    }
    let mut found = BTreeSet::new();
    let mut todo: Vec<String> = roots.iter().cloned().collect();
    while let Some(id) = todo.pop() {
        for dependent in dependents.get(id.as_str()).into_iter().flatten() {
            if !roots.contains(dependent) && found.insert(dependent.clone()) {
                todo.push(dependent.clone());
            }
        }
    }
    found
}

/// Resource rows per statement of [`insert_resources`].
const RESOURCES_PER_STATEMENT: usize = 2000;

/// The resource rows of a version as JSON arrays of [`RESOURCES_PER_STATEMENT`] rows.
fn resource_payloads(resources: &[StoredResource]) -> Vec<String> {
    resources
        .chunks(RESOURCES_PER_STATEMENT)
        .map(|chunk| {
            let rows: Vec<serde_json::Value> = chunk
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "resource_id": r.id.to_string(),
                        "resource_type": r.id.entity_type,
                        "agent": r.id.agent,
                        "id_attribute": r.id.attribute,
                        "id_value": r.id.value,
                        "attributes": r.attributes,
                        "attribute_hash": r.attribute_hash,
                        "requires": serde_json::json!(r.requires).to_string(),
                        "resource_set": r.resource_set,
                        "state": r.state,
                    })
                })
                .collect();
            serde_json::Value::Array(rows).to_string()
        })
        .collect()
}

/// Inserts the resources of a version. The rows travel as one JSON parameter per chunk that the
/// database unpacks itself: binding twelve values per row costs about 80 µs per resource through
/// the driver, unpacking JSON in SQL a few µs, which is what keeps a 10 000-resource export well
/// under a second.
async fn insert_resources(
    tx: &mut Transaction,
    kind: DbKind,
    env: Uuid,
    version: i64,
    payloads: &[String],
) -> Result<()> {
    const FIELDS: &[&str] = &[
        "resource_id",
        "resource_type",
        "agent",
        "id_attribute",
        "id_value",
        "attributes",
        "attribute_hash",
        "requires",
        "resource_set",
        "state",
    ];
    let columns = FIELDS.join(", ");
    let values = FIELDS.iter().map(|f| format!("x.{f}")).collect::<Vec<_>>().join(", ");
    let sql = format!(
        "INSERT INTO resource (environment, version, {columns}) SELECT $1, CAST($2 AS BIGINT), {values} FROM {}",
        crate::store::json_rows(kind, 3, FIELDS)
    );
    for payload in payloads {
        sqlx::query(&sql).bind(env.to_string()).bind(version).bind(payload.as_str()).execute(&mut **tx).await?;
    }
    Ok(())
}
