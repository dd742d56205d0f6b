//! The server functions of the desired-state pages: versions, their resources, comparisons and
//! compliance checks (dry runs).

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;

#[cfg(feature = "ssr")]
use crate::fns::{attributes, authorized_for, env_id, fail, json_text, page_request, paged, version_row};
use crate::model::{Attribute, ComplianceView, Paged, ResourceChange, TableQuery, VersionRow, VersionedResourceRow};
#[cfg(feature = "ssr")]
use crate::model::{AttributeChange, DryRunRow};

#[server(prefix = "/console/fn", endpoint = "versions", input = Json)]
pub async fn versions(query: TableQuery) -> Result<Paged<VersionRow>, ConsoleError> {
    let s = authorized_for("desired-state.read", &query.env)?;
    let page = s.orchestrator.desired_state_versions(env_id(&query.env)?, &page_request(&query)).await.map_err(fail)?;
    Ok(paged(page, version_row))
}

/// Promotes (`delete == false`) or deletes a version. Also posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "version_action")]
pub async fn version_action(env: String, version: i64, delete: bool) -> Result<(), ConsoleError> {
    let s = authorized_for("desired-state.write", &env)?;
    let id = env_id(&env)?;
    if delete {
        s.orchestrator.delete_version(id, version).await.map_err(fail)
    } else {
        s.orchestrator.release_version(id, version).await.map(|_| ()).map_err(fail)
    }
}

/// One version for the header of its page: status, date, size and the export's message.
#[server(prefix = "/console/fn", endpoint = "version_summary", input = Json)]
pub async fn version_summary(env: String, version: i64) -> Result<VersionRow, ConsoleError> {
    let s = authorized_for("desired-state.read", &env)?;
    let m = s.orchestrator.get_version_model(env_id(&env)?, version).await.map_err(fail)?;
    let message = m
        .version_info
        .as_ref()
        .and_then(|i| i.get("export_metadata"))
        .and_then(|e| e.get("message"))
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string();
    Ok(VersionRow {
        version: m.version,
        date: m.date.to_string(),
        status: m
            .status
            .ok_or_else(|| fail(orchestrator::Error::Corrupt(format!("version {version} has no status"))))?,
        total: m.total,
        released: m.released,
        message,
    })
}

#[server(prefix = "/console/fn", endpoint = "version_resources", input = Json)]
pub async fn version_resources(query: TableQuery, version: i64) -> Result<Paged<VersionedResourceRow>, ConsoleError> {
    let s = authorized_for("desired-state.read", &query.env)?;
    let page =
        s.orchestrator.versioned_resources(env_id(&query.env)?, version, &page_request(&query)).await.map_err(fail)?;
    Ok(paged(page, |r| VersionedResourceRow {
        id: r.resource_id,
        resource_type: r.id_details.resource_type,
        agent: r.id_details.agent,
        value: r.id_details.resource_id_value,
        requires: r.requires.len(),
    }))
}

#[server(prefix = "/console/fn", endpoint = "version_resource", input = Json)]
pub async fn version_resource(env: String, version: i64, rid: api::ResourceId) -> Result<Vec<Attribute>, ConsoleError> {
    let s = authorized_for("desired-state.read", &env)?;
    let r = s.orchestrator.versioned_resource(env_id(&env)?, version, &rid.to_string()).await.map_err(fail)?;
    Ok(attributes(&r.attributes))
}

/// The resources that differ between two versions, with unified diffs of changed file contents.
#[server(prefix = "/console/fn", endpoint = "compare_versions", input = Json)]
pub async fn compare_versions(env: String, from: i64, to: i64) -> Result<Vec<ResourceChange>, ConsoleError> {
    let s = authorized_for("desired-state.read", &env)?;
    let diff = s.orchestrator.diff_versions(env_id(&env)?, from, to).await.map_err(fail)?;
    let mut out = Vec::with_capacity(diff.len());
    for r in diff {
        let mut changes = Vec::new();
        for (name, a) in r.attributes {
            let hash = |v: &Option<serde_json::Value>| v.as_ref().and_then(|v| v.as_str()).unwrap_or("").to_string();
            let file_diff = if name == "hash" {
                s.orchestrator.diff_files(&hash(&a.from_value), &hash(&a.to_value)).await.ok()
            } else {
                None
            };
            changes.push(AttributeChange {
                name,
                from: a.from_value.as_ref().map(json_text).unwrap_or_default(),
                to: a.to_value.as_ref().map(json_text).unwrap_or_default(),
                file_diff,
            });
        }
        out.push(ResourceChange { id: r.resource_id, status: r.status, attributes: changes });
    }
    Ok(out)
}

/// The dry runs of a version (newest first) and the report of `report` (default: the newest).
#[server(prefix = "/console/fn", endpoint = "compliance", input = Json)]
pub async fn compliance(env: String, version: i64, report: String) -> Result<ComplianceView, ConsoleError> {
    let s = authorized_for("dryrun.read", &env)?;
    let id = env_id(&env)?;
    let o = &s.orchestrator;
    let environment = o.get_environment(id, Default::default()).await.map_err(fail)?;
    o.get_version_model(id, version).await.map_err(fail)?;
    let runs = o.dryruns(id, Some(version)).await.map_err(fail)?;
    let row = |d: &api::version::DryRun| DryRunRow {
        id: d.id.to_string(),
        date: d.date.map(|t| t.to_string()).unwrap_or_default(),
        total: d.total,
        todo: d.todo,
    };
    let reports: Vec<DryRunRow> = runs.iter().map(row).collect();
    let selected = if report.is_empty() {
        runs.first()
    } else {
        let wanted = runs.iter().find(|d| d.id.to_string() == report);
        Some(wanted.ok_or_else(|| ConsoleError::refused(format!("version {version} has no dry run {report}")))?)
    };
    let mut changes = Vec::new();
    if let Some(selected) = selected {
        let report = o.dryrun_report(id, selected.id).await.map_err(fail)?;
        for r in report.diff {
            let attributes = r
                .attributes
                .into_iter()
                .map(|(name, a)| {
                    // File contents: a unified diff reads better than two long strings.
                    let file_diff = (name == "content").then(|| {
                        orchestrator::unified_diff(&a.from_value_compare, &a.to_value_compare, "current", "desired")
                    });
                    AttributeChange {
                        from: a.from_value.as_ref().map(json_text).unwrap_or_default(),
                        to: a.to_value.as_ref().map(json_text).unwrap_or_default(),
                        name,
                        file_diff,
                    }
                })
                .collect();
            changes.push(ResourceChange { id: r.resource_id, status: r.status, attributes });
        }
    }
    Ok(ComplianceView { selected: selected.map(row), reports, changes, halted: environment.halted })
}

/// Starts a dry run of `version`; returns its id. Also posted as a plain form (no wasm): the
/// compliance check of the version with the new dry run is shown next.
#[server(prefix = "/console/fn", endpoint = "dry_run")]
pub async fn dry_run(env: String, version: i64) -> Result<String, ConsoleError> {
    let s = authorized_for("dryrun.write", &env)?;
    let id = env_id(&env)?;
    let schedulers = s
        .schedulers
        .ok_or_else(|| ConsoleError::Unavailable("this server runs no scheduler: dry runs are not available".into()))?;
    let report = schedulers.dry_run(id, version).await.map(|id| id.to_string()).map_err(fail)?;
    let next = format!("{}/desiredstate/{version}/compliancecheck?env={id}&report={report}", crate::BASE);
    crate::components::show_next(&next);
    Ok(report)
}
