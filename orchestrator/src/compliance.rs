//! Compliance of the resources of an environment (Inmanta 20.1's compliance reporting): the
//! report `POST /api/v2/compliance_report` answers and the counts the console's dashboard shows.
//!
//! The state vector holds what Inmanta keeps for it: `last_handler_run_compliant` (written with
//! each deploy result, resources.rs) and the diff of the last `non_compliant` run.

use std::collections::{BTreeMap, BTreeSet};

use api::compliance::{AttributeStateChange, ComplianceSummary, ResourceComplianceDiff};
use api::state::{Compliance, HandlerRun};
use sqlx::Row;
use uuid::Uuid;

use crate::{Error, Orchestrator, Result};

impl Orchestrator {
    /// The compliance of each of `resource_ids` (plain ids) in the latest released version.
    /// Inmanta's answer when one is not there: 404 naming the missing ones.
    pub async fn compliance_report(
        &self,
        env: Uuid,
        resource_ids: &[String],
    ) -> Result<BTreeMap<String, ResourceComplianceDiff>> {
        let wanted: BTreeSet<&str> = resource_ids.iter().map(String::as_str).collect();
        let ids = crate::store::json_list(self.store.kind(), 2);
        let rows = sqlx::query(&format!(
            "SELECT s.resource_id, s.is_undefined, s.last_deployed_attribute_hash, \
             s.current_intent_attribute_hash, s.last_handler_run_compliant, s.last_handler_run, \
             s.last_handler_run_at, s.non_compliant_diff, r.attributes \
             FROM resource_persistent_state s JOIN resource r ON r.environment = s.environment \
             AND r.version = s.current_intent_version AND r.resource_id = s.resource_id \
             WHERE s.environment = $1 AND s.is_orphan = 0 AND s.resource_id IN {ids}"
        ))
        .bind(env.to_string())
        .bind(serde_json::json!(wanted).to_string())
        .fetch_all(self.store.pool())
        .await?;
        let mut report = BTreeMap::new();
        for row in rows {
            let (rid, diff) = report_of_row(&row)?;
            report.insert(rid, diff);
        }
        let missing: Vec<&str> = wanted.into_iter().filter(|rid| !report.contains_key(*rid)).collect();
        if !missing.is_empty() {
            return Err(Error::NotFound(format!(
                "Unable to find the following resource ids in the active version: {}",
                python_set(&missing)
            )));
        }
        Ok(report)
    }

    /// How many resources of the latest released version are in each compliance.
    pub async fn compliance_summary(&self, env: Uuid) -> Result<ComplianceSummary> {
        let report_only = match self.store.kind() {
            crate::store::DbKind::Sqlite => "r.attributes ->> 'report_only' = 1",
            crate::store::DbKind::Postgres => "CAST(r.attributes AS json) ->> 'report_only' = 'true'",
        };
        let rows = sqlx::query(&format!(
            "SELECT {} AS compliance, COUNT(*) AS n, SUM(CASE WHEN {report_only} THEN 1 ELSE 0 END) AS report_only \
             FROM resource_persistent_state s JOIN resource r ON r.environment = s.environment \
             AND r.version = s.current_intent_version AND r.resource_id = s.resource_id \
             WHERE s.environment = $1 AND s.is_orphan = 0 GROUP BY 1",
            Compliance::sql("s")
        ))
        .bind(env.to_string())
        .fetch_all(self.store.pool())
        .await?;
        let mut summary = ComplianceSummary::default();
        for row in rows {
            let compliance: Compliance = crate::resources::stored_name(&row, "compliance")?;
            let n = row.try_get::<i64, _>("n")? as u64;
            summary.total += n;
            summary.report_only += row.try_get::<Option<i64>, _>("report_only")?.unwrap_or(0) as u64;
            *summary.by_compliance.entry(compliance).or_default() += n;
        }
        Ok(summary)
    }
}

fn report_of_row(row: &sqlx::any::AnyRow) -> Result<(String, ResourceComplianceDiff)> {
    let corrupt = |what: &'static str| move |e: serde_json::Error| Error::Corrupt(format!("{what}: {e}"));
    let attributes: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&row.try_get::<String, _>("attributes")?).map_err(corrupt("resource attributes"))?;
    let last_deployed_hash: Option<String> = row.try_get("last_deployed_attribute_hash")?;
    let current_hash: String = row.try_get("current_intent_attribute_hash")?;
    let compliance = Compliance::of(
        row.try_get::<i64, _>("is_undefined")? != 0,
        last_deployed_hash.as_deref(),
        &current_hash,
        row.try_get::<Option<i64>, _>("last_handler_run_compliant")?.map(|c| c != 0),
    );
    let attribute_diff = match row.try_get::<Option<String>, _>("non_compliant_diff")? {
        Some(text) if compliance == Compliance::NonCompliant => Some(
            serde_json::from_str::<BTreeMap<String, AttributeStateChange>>(&text)
                .map_err(corrupt("non-compliant diff"))?,
        ),
        _ => None,
    };
    let diff = ResourceComplianceDiff {
        report_only: attributes.get("report_only").and_then(|v| v.as_bool()).unwrap_or(false),
        compliance,
        last_handler_run: crate::resources::stored_name::<HandlerRun>(row, "last_handler_run")?,
        last_handler_run_at: crate::store::opt_time_column(row, "last_handler_run_at")?,
        attribute_diff,
    };
    Ok((row.try_get("resource_id")?, diff))
}

/// Ids as Python prints a set of strings (Inmanta's message quotes its set).
fn python_set(ids: &[&str]) -> String {
    let quoted: Vec<String> =
        ids.iter().map(|id| format!("'{}'", id.replace('\\', "\\\\").replace('\'', "\\'"))).collect();
    format!("{{{}}}", quoted.join(", "))
}
