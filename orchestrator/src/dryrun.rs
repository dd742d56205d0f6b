//! Dry runs (routes: docs/api.md): what the handlers would change for every
//! resource of a version, without changing anything. The server fills in what it knows itself
//! (undefined, skipped for undefined, paused agents); the scheduler has the handlers report the
//! rest through [`Orchestrator::dryrun_update`].

use std::collections::{BTreeMap, HashSet};

use api::ResourceId;
use api::state::{HandlerStatus, ResourceState};
use api::version::{DryRun, DryRunReport, ResourceDiff, ResourceDiffStatus};
use sqlx::Row;
use uuid::Uuid;

use crate::desired_state::attribute_diff;
use crate::statistics::Written;
use crate::store::{now, parse_uuid};
use crate::{Error, Orchestrator, Result};

/// What a handler said about one resource in a dry run.
#[derive(Debug, Clone)]
pub struct DryRunResult {
    pub resource_id: ResourceId,
    pub status: ResourceDiffStatus,
    pub changes: serde_json::Map<String, serde_json::Value>,
}

/// A resource a dry run must ask its handler about.
#[derive(Debug, Clone)]
pub struct DryRunTarget {
    pub id: ResourceId,
    pub attributes: serde_json::Map<String, serde_json::Value>,
    pub requires: Vec<String>,
}

/// Which resources of the version a dry run covers, and what it was asked with: all of them,
/// or those a ResourceFilter selected (`POST /api/v2/dryrun_filtered`), whose filter and
/// context are stored with it.
#[derive(Debug, Clone, Default)]
pub struct DryRunScope {
    /// The resource ids (without version) to dry-run; `None`: every resource of the version.
    pub only: Option<HashSet<String>>,
    pub resource_filter: Option<serde_json::Value>,
    pub context: Option<serde_json::Value>,
}

fn diff_status(text: &str) -> Result<ResourceDiffStatus> {
    ResourceDiffStatus::parse(text).ok_or_else(|| Error::Corrupt(format!("bad dry-run status {text:?}")))
}

impl Orchestrator {
    /// Creates the report of a dry run of `version`; returns it with the resources that still
    /// need their handler.
    pub async fn create_dryrun(&self, env: Uuid, version: i64) -> Result<(DryRun, Vec<DryRunTarget>)> {
        self.create_dryrun_of(env, version, &DryRunScope::default()).await
    }

    /// [`Orchestrator::create_dryrun`] of the resources `scope` names.
    pub async fn create_dryrun_of(
        &self,
        env: Uuid,
        version: i64,
        scope: &DryRunScope,
    ) -> Result<(DryRun, Vec<DryRunTarget>)> {
        let environment = self.get_environment(env, Default::default()).await?;
        if environment.halted {
            return Err(Error::Conflict(format!("environment {env} is halted: resume it to run a dry run")));
        }
        self.get_version_model(env, version).await?;
        let paused: HashSet<String> = self.paused_agents(env).await?.into_iter().collect();
        let rows = sqlx::query(
            "SELECT resource_id, agent, attributes, requires, state FROM resource \
             WHERE environment = $1 AND version = $2 ORDER BY resource_id",
        )
        .bind(env.to_string())
        .bind(version)
        .fetch_all(self.store.pool())
        .await?;
        let id = Uuid::new_v4();
        let mut targets = Vec::new();
        let mut prefilled: Vec<(String, Option<ResourceDiffStatus>)> = Vec::with_capacity(rows.len());
        for row in &rows {
            let rid: String = row.try_get("resource_id")?;
            if scope.only.as_ref().is_some_and(|only| !only.contains(&rid)) {
                continue;
            }
            let state: String = row.try_get("state")?;
            let agent: String = row.try_get("agent")?;
            let status = match ResourceState::parse(&state) {
                Some(ResourceState::Undefined) => Some(ResourceDiffStatus::Undefined),
                Some(ResourceState::SkippedForUndefined) => Some(ResourceDiffStatus::SkippedForUndefined),
                _ if paused.contains(&agent) => Some(ResourceDiffStatus::AgentDown),
                _ => None,
            };
            if status.is_none() {
                targets.push(DryRunTarget {
                    id: crate::stored_id(&rid)?,
                    attributes: serde_json::from_str(&row.try_get::<String, _>("attributes")?)
                        .map_err(|e| Error::Corrupt(e.to_string()))?,
                    requires: serde_json::from_str(&row.try_get::<String, _>("requires")?)
                        .map_err(|e| Error::Corrupt(e.to_string()))?,
                });
            }
            prefilled.push((rid, status));
        }
        let mut tx = self.store.begin_write().await?;
        let json = |v: &Option<serde_json::Value>| v.as_ref().map(serde_json::Value::to_string);
        sqlx::query(
            "INSERT INTO dryrun (id, environment, version, date, total, resource_filter, context) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(id.to_string())
        .bind(env.to_string())
        .bind(version)
        .bind(now())
        .bind(prefilled.len() as i64)
        .bind(json(&scope.resource_filter))
        .bind(json(&scope.context))
        .execute(&mut *tx)
        .await?;
        // Rows travel as JSON, a chunk per statement: one statement per resource made creating a
        // dry run of 100 000 resources 100 000 round trips.
        let sql = format!(
            "INSERT INTO dryrun_resource (environment, dryrun, resource_id, diff_status) \
             SELECT $1, $2, x.resource_id, x.diff_status FROM {}",
            crate::store::json_rows(self.store.kind(), 3, &["resource_id", "diff_status"])
        );
        for chunk in prefilled.chunks(5000) {
            let rows: Vec<serde_json::Value> = chunk
                .iter()
                .map(|(rid, status)| serde_json::json!({"resource_id": rid, "diff_status": status}))
                .collect();
            sqlx::query(&sql)
                .bind(env.to_string())
                .bind(id.to_string())
                .bind(serde_json::Value::Array(rows).to_string())
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        self.store.wrote_rows("dryrun_resource", prefilled.len() as u64, Written::Bulk);
        self.publish(crate::Event::DryRunChanged { env });
        Ok((self.dryrun(env, id).await?, targets))
    }

    /// Records what the handler found for one resource (`dryrun_update`).
    pub async fn dryrun_update(
        &self,
        env: Uuid,
        id: Uuid,
        rid: &str,
        status: ResourceDiffStatus,
        changes: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<()> {
        let (rid, _) = ResourceId::parse_versioned(rid).map_err(|e| Error::BadRequest(e.to_string()))?;
        let mut tx = self.store.begin_write().await?;
        let done = sqlx::query(
            "UPDATE dryrun_resource SET diff_status = $1, changes = $2 \
             WHERE environment = $3 AND dryrun = $4 AND resource_id = $5",
        )
        .bind(status.as_str())
        .bind(serde_json::Value::Object(changes.clone()).to_string())
        .bind(env.to_string())
        .bind(id.to_string())
        .bind(rid.to_string())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        if done.rows_affected() == 0 {
            return Err(Error::NotFound(format!("dry run {id} has no resource {rid}")));
        }
        self.publish(crate::Event::DryRunChanged { env });
        Ok(())
    }

    /// Stores many handler results of one dry run in one transaction: what the scheduler does,
    /// since a commit per resource (an fsync each) made a 100 000-resource dry run take minutes.
    /// Results for resources the dry run does not have are skipped (and logged).
    pub async fn dryrun_update_many(&self, env: Uuid, id: Uuid, results: &[DryRunResult]) -> Result<()> {
        if results.is_empty() {
            return Ok(());
        }
        // One statement per distinct (status, changes), on the ids as a JSON list: most results
        // of a big dry run are alike (unmodified, no changes), and one statement per resource
        // cost a round trip each on PostgreSQL.
        let mut groups: BTreeMap<(ResourceDiffStatus, String), Vec<String>> = BTreeMap::new();
        for result in results {
            let key = (result.status, serde_json::Value::Object(result.changes.clone()).to_string());
            groups.entry(key).or_default().push(result.resource_id.to_string());
        }
        let sql = format!(
            "UPDATE dryrun_resource SET diff_status = $1, changes = $2 \
             WHERE environment = $3 AND dryrun = $4 AND resource_id IN {}",
            crate::store::json_list(self.store.kind(), 5)
        );
        let mut tx = self.store.begin_write().await?;
        let mut updated = 0;
        for ((status, changes), rids) in groups {
            for chunk in rids.chunks(5000) {
                let done = sqlx::query(&sql)
                    .bind(status.as_str())
                    .bind(changes.clone())
                    .bind(env.to_string())
                    .bind(id.to_string())
                    .bind(serde_json::json!(chunk).to_string())
                    .execute(&mut *tx)
                    .await?;
                updated += done.rows_affected();
            }
        }
        tx.commit().await?;
        if updated < results.len() as u64 {
            tracing::warn!(%env, dryrun = %id, missing = results.len() as u64 - updated, "dry-run results for resources it does not have");
        }
        self.publish(crate::Event::DryRunChanged { env });
        Ok(())
    }

    pub async fn dryrun(&self, env: Uuid, id: Uuid) -> Result<DryRun> {
        let row = sqlx::query(
            "SELECT d.version, d.date, d.total, d.resource_filter, d.context, (SELECT COUNT(*) FROM dryrun_resource r \
             WHERE r.dryrun = d.id AND r.diff_status IS NULL) AS todo FROM dryrun d WHERE d.environment = $1 AND d.id = $2",
        )
        .bind(env.to_string())
        .bind(id.to_string())
        .fetch_optional(self.store.pool())
        .await?
        .ok_or_else(|| Error::NotFound(format!("dry run {id} does not exist in environment {env}")))?;
        dryrun_of_row(env, id, &row)
    }

    /// The dry runs of a version (or of all versions), newest first.
    pub async fn dryruns(&self, env: Uuid, version: Option<i64>) -> Result<Vec<DryRun>> {
        self.ensure_environment(env).await?;
        let rows = sqlx::query(
            "SELECT d.id, d.version, d.date, d.total, d.resource_filter, d.context, (SELECT COUNT(*) FROM dryrun_resource r \
             WHERE r.dryrun = d.id AND r.diff_status IS NULL) AS todo FROM dryrun d WHERE d.environment = $1 \
             AND ($2 < 0 OR d.version = $2) ORDER BY d.date DESC, d.id",
        )
        .bind(env.to_string())
        .bind(version.unwrap_or(-1))
        .fetch_all(self.store.pool())
        .await?;
        rows.into_iter().map(|row| dryrun_of_row(env, parse_uuid(&row.try_get::<String, _>("id")?)?, &row)).collect()
    }

    /// The report: every resource once, sorted by id; those not reported yet are left out.
    pub async fn dryrun_report(&self, env: Uuid, id: Uuid) -> Result<DryRunReport> {
        let (summary, reported) = self.dryrun_changes(env, id).await?;
        let diff = reported
            .into_iter()
            .map(|r| ResourceDiff {
                attributes: dryrun_attributes(r.status, &r.changes),
                resource_id: r.resource_id,
                status: r.status,
            })
            .collect();
        Ok(DryRunReport { summary, diff })
    }

    /// A dry run's summary and what its handlers reported, as they reported it, sorted by id.
    pub async fn dryrun_changes(&self, env: Uuid, id: Uuid) -> Result<(DryRun, Vec<ReportedChanges>)> {
        let summary = self.dryrun(env, id).await?;
        let rows = sqlx::query(
            "SELECT resource_id, diff_status, changes FROM dryrun_resource \
             WHERE dryrun = $1 AND diff_status IS NOT NULL ORDER BY resource_id",
        )
        .bind(id.to_string())
        .fetch_all(self.store.pool())
        .await?;
        let mut reported = Vec::with_capacity(rows.len());
        for row in rows {
            reported.push(ReportedChanges {
                resource_id: crate::stored_id(&row.try_get::<String, _>("resource_id")?)?,
                status: diff_status(&row.try_get::<String, _>("diff_status")?)?,
                changes: serde_json::from_str(&row.try_get::<String, _>("changes")?)
                    .map_err(|e| Error::Corrupt(e.to_string()))?,
            });
        }
        Ok((summary, reported))
    }
}

/// What a handler reported for one resource of a dry run: `{attribute: {current, desired}}`.
pub struct ReportedChanges {
    pub resource_id: ResourceId,
    pub status: ResourceDiffStatus,
    pub changes: serde_json::Map<String, serde_json::Value>,
}

/// The attributes a handler's dry-run changes amount to, read as Inmanta reads them: a resource
/// to create shows only its desired values, one to delete only its current ones, a modified one
/// the values whose text forms differ; `requires` is not compared, and a resource the handler
/// could not judge (failed, skipped, undefined) shows none.
fn dryrun_attributes(
    status: ResourceDiffStatus,
    changes: &serde_json::Map<String, serde_json::Value>,
) -> BTreeMap<String, api::version::AttributeDiff> {
    let compared = changes.iter().filter(|(name, _)| name.as_str() != "requires");
    match status {
        ResourceDiffStatus::Added => {
            compared.map(|(name, change)| (name.clone(), attribute_diff(None, change.get("desired")))).collect()
        }
        ResourceDiffStatus::Deleted => {
            compared.map(|(name, change)| (name.clone(), attribute_diff(change.get("current"), None))).collect()
        }
        ResourceDiffStatus::Modified | ResourceDiffStatus::Unmodified => compared
            .map(|(name, change)| (name.clone(), attribute_diff(change.get("current"), change.get("desired"))))
            .filter(|(_, diff)| diff.from_value_compare != diff.to_value_compare)
            .collect(),
        _ => BTreeMap::new(),
    }
}

/// A handler that failed (or could not be loaded) in dry-run mode reports, as Inmanta 20.1's
/// executor does, one changed attribute `handler` from `FAILED` to why; the resource then reads
/// as modified, the only form Inmanta's console shows (its dry-run statuses have no "failed").
/// The error itself is in the dry run's log lines.
pub fn mark_handler_failure(outcome_status: HandlerStatus, changes: &mut serde_json::Map<String, serde_json::Value>) {
    let why = match outcome_status {
        HandlerStatus::Failed => "Handler failed",
        HandlerStatus::Unavailable => "Unable to find a handler",
        _ => return,
    };
    changes.insert("handler".into(), serde_json::json!({"current": "FAILED", "desired": why}));
}

/// The report status of what a handler said in dry-run mode.
pub fn status_of_outcome(
    outcome_status: HandlerStatus,
    changes: &serde_json::Map<String, serde_json::Value>,
) -> ResourceDiffStatus {
    let purged = changes.get("purged");
    let flag = |key: &str| purged.and_then(|p| p.get(key)).and_then(|v| v.as_bool());
    match outcome_status {
        HandlerStatus::Failed | HandlerStatus::Unavailable => ResourceDiffStatus::Modified,
        HandlerStatus::SkippedForDependency => ResourceDiffStatus::SkippedForDependency,
        _ if flag("current") == Some(true) && flag("desired") == Some(false) => ResourceDiffStatus::Added,
        _ if flag("current") == Some(false) && flag("desired") == Some(true) => ResourceDiffStatus::Deleted,
        _ if changes.is_empty() => ResourceDiffStatus::Unmodified,
        _ => ResourceDiffStatus::Modified,
    }
}

/// A dry run's summary from a row of the two queries above (version, date, total, todo, the
/// filter and context).
fn dryrun_of_row(env: Uuid, id: Uuid, row: &sqlx::any::AnyRow) -> Result<DryRun> {
    let json = |column: &str| -> Result<Option<serde_json::Value>> {
        row.try_get::<Option<String>, _>(column)?
            .map(|text| serde_json::from_str(&text).map_err(|e| Error::Corrupt(format!("dry run {column}: {e}"))))
            .transpose()
    };
    Ok(DryRun {
        id,
        environment: env,
        model: row.try_get("version")?,
        date: crate::store::opt_time_column(row, "date")?,
        total: row.try_get("total")?,
        todo: row.try_get("todo")?,
        resource_filter: json("resource_filter")?,
        context: json("context")?,
    })
}
