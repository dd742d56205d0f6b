//! Server-side compiles: requests, reports and their stages (docs/api.md, "Compiles").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A compile request as queued (CompileRun), plus the outcome once it finished (CompileReport).
/// The groups of fields are flattened: the JSON is Inmanta's, one flat object, in its order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompileReport {
    pub id: Uuid,
    #[serde(default)]
    pub remote_id: Option<Uuid>,
    pub environment: Uuid,
    #[serde(flatten)]
    pub times: CompileTimes,
    pub success: Option<bool>,
    pub version: Option<i64>,
    pub do_export: bool,
    pub force_update: bool,
    pub metadata: serde_json::Value,
    #[serde(flatten)]
    pub variables: CompileVariables,
    #[serde(flatten)]
    pub export: ExportScope,
    pub notify_failed_compile: Option<bool>,
    pub failed_compile_message: Option<String>,
    pub links: BTreeMap<String, Vec<String>>,
}

impl CompileReport {
    /// Queued, running, or how it ended.
    pub fn status(&self) -> crate::CompileStatus {
        crate::CompileStatus::of(self.times.started.is_some(), self.times.completed.is_some(), self.success)
    }
}

/// When a compile was requested, started and completed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompileTimes {
    pub requested: Option<crate::Timestamp>,
    pub started: Option<crate::Timestamp>,
    pub completed: Option<crate::Timestamp>,
}

/// The environment variables of a compile: all it ran with, and the two kinds it was asked for
/// (requested ones keep a request apart from others, mergeable ones let it join them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompileVariables {
    pub environment_variables: BTreeMap<String, String>,
    pub requested_environment_variables: BTreeMap<String, String>,
    pub mergeable_environment_variables: BTreeMap<String, String>,
}

/// What a compile's export replaces: everything, or (partial) only some resource sets, and
/// through which exporter plugin.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExportScope {
    pub partial: bool,
    pub removed_resource_sets: Vec<String>,
    pub exporter_plugin: Option<String>,
}

/// One stage of a compile (CompileRunReport).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompileStage {
    pub id: Uuid,
    pub started: crate::Timestamp,
    pub completed: Option<crate::Timestamp>,
    pub command: String,
    pub name: String,
    pub errstream: String,
    pub outstream: String,
    pub returncode: Option<i64>,
}

/// A compile with its structured errors and its stages (CompileDetails).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompileDetails {
    #[serde(flatten)]
    pub report: CompileReport,
    pub compile_data: Option<crate::CompileData>,
    pub reports: Option<Vec<CompileStage>>,
}

/// Arguments of `POST /api/v1/notify/<env>` (and the query of its GET form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyChange {
    /// Pull the repository and update modules before compiling.
    #[serde(default = "yes")]
    pub update: bool,
    #[serde(default)]
    pub metadata: Option<serde_json::Value>,
    /// Accepted for compatibility: there is no compiler virtual environment to rebuild.
    #[serde(default)]
    pub reinstall: bool,
    /// Environment variables for this compile; requests with different ones do not merge.
    #[serde(default)]
    pub env: Option<BTreeMap<String, String>>,
    /// Environment variables that may be merged with those of other queued requests.
    #[serde(default)]
    pub mergeable_env: Option<BTreeMap<String, String>>,
}

fn yes() -> bool {
    true
}

impl Default for NotifyChange {
    fn default() -> Self {
        NotifyChange { update: true, metadata: None, reinstall: false, env: None, mergeable_env: None }
    }
}

/// The answer of `POST /api/v1/notify/<env>` (and of its webhook form): the compile that
/// will run the request (`None` when server compiles are off), whether the request merged into
/// one already queued, and warnings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompileRequested {
    pub compile_id: Option<Uuid>,
    pub merged: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Warnings>,
}

impl CompileRequested {
    /// The warnings of the request, if any.
    pub fn warnings(&self) -> &[String] {
        self.metadata.as_ref().map_or(&[], |m| m.warnings.as_slice())
    }
}

/// `{"warnings": [...]}` in the `metadata` of an answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Warnings {
    #[serde(default)]
    pub warnings: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattened_details_keep_numbers() {
        // the flattened report goes through serde's buffer, where serde_json's
        // arbitrary_precision hands a float over as a map: the JSON values must still read it
        let text = r#"{"id": "00000000-0000-0000-0000-000000000001",
            "environment": "00000000-0000-0000-0000-000000000002", "requested": null, "started": null,
            "completed": null, "success": true, "version": 3, "do_export": true, "force_update": false,
            "metadata": {"ratio": 1.5, "big": 1267650600228229401496703205376, "n": 1e2},
            "environment_variables": {}, "requested_environment_variables": {},
            "mergeable_environment_variables": {}, "partial": false, "removed_resource_sets": [],
            "exporter_plugin": null, "notify_failed_compile": null, "failed_compile_message": null, "links": {},
            "compile_data": {"errors": []}, "reports": null}"#;
        let details: CompileDetails = serde_json::from_str(text).unwrap();
        assert_eq!(details.report.version, Some(3));
        assert_eq!(details.report.metadata["ratio"].as_f64(), Some(1.5));
        assert_eq!(details.report.metadata["n"].as_f64(), Some(100.0));
        assert_eq!(details.report.metadata["big"].to_string(), "1267650600228229401496703205376");
        assert_eq!(details.compile_data, Some(crate::CompileData::default()));
    }

    #[test]
    fn a_report_is_one_flat_object_in_inmantas_order() {
        let text = r#"{"id": "00000000-0000-0000-0000-000000000001", "remote_id": null,
            "environment": "00000000-0000-0000-0000-000000000002", "requested": "2024-01-02T03:04:05.000000",
            "started": null, "completed": null, "success": null, "version": null, "do_export": true,
            "force_update": false, "metadata": {}, "environment_variables": {"A": "1"},
            "requested_environment_variables": {"A": "1"}, "mergeable_environment_variables": {},
            "partial": true, "removed_resource_sets": ["s"], "exporter_plugin": null,
            "notify_failed_compile": null, "failed_compile_message": null, "links": {}}"#;
        let report: CompileReport = serde_json::from_str(text).unwrap();
        assert!(report.export.partial && report.export.removed_resource_sets == ["s"]);
        assert_eq!(report.variables.requested_environment_variables["A"], "1");
        let written = serde_json::to_string(&report).unwrap();
        let keys = [
            "id",
            "remote_id",
            "environment",
            "requested",
            "started",
            "completed",
            "success",
            "version",
            "do_export",
            "force_update",
            "metadata",
            "environment_variables",
            "requested_environment_variables",
            "mergeable_environment_variables",
            "partial",
            "removed_resource_sets",
            "exporter_plugin",
            "notify_failed_compile",
            "failed_compile_message",
            "links",
        ];
        let at: Vec<usize> = keys.iter().map(|k| written.find(&format!("\"{k}\":")).expect(k)).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{written}");
        let reread: CompileReport = serde_json::from_str(&written).unwrap();
        assert_eq!(reread, report);
    }
}
