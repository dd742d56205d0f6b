//! Writes of versions: reserving numbers, storing a full version, releasing, retention and
//! deletion.

use std::collections::{BTreeMap, BTreeSet};

use api::operations::NotificationSeverity;
use api::version::{ConfigurationModel, PutVersion, VersionStatus};
use uuid::Uuid;

use super::validate::{PreparedVersion, check_handler_names, failed_compile_message, ids_json, prepare_version};
use super::{StoredResource, StoredVersion, version_not_found};
use crate::environments::environment_not_found;
use crate::notifications::{NewNotification, insert_notification};
use crate::statistics::Written;
use crate::store::{Transaction, json_list, json_rows, now};
use crate::{DbKind, Error, Orchestrator, Result};

/// Takes the environment's next version number inside `tx` (which locks the environment's row
/// until `tx` ends).
pub(super) async fn next_version(tx: &mut Transaction, env: Uuid) -> Result<i64> {
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

    /// Release (with `auto_deploy`) and retention after a version is stored.
    pub(super) async fn after_store(&self, env: Uuid, version: i64) -> Result<StoredVersion> {
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

/// Writes the version row, its resources and, for an export of a failed compile, a notification.
pub(super) async fn store_version(
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
    let rvids: Vec<String> = resources.iter().map(|r| r.id.versioned_text(version as u64)).collect();
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
    check_handler_names(handlers)?;
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
