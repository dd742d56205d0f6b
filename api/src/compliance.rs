//! The compliance report of `POST /api/v2/compliance_report` (Inmanta's `ResourceComplianceDiff`):
//! per requested resource, whether it is report-only, its compliance and its last handler run,
//! and what a non-compliant one differs in.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::state::{Compliance, HandlerRun};

/// One attribute a handler run found different.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttributeStateChange {
    pub current: serde_json::Value,
    pub desired: serde_json::Value,
}

/// The compliance of one resource of the latest released version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceComplianceDiff {
    pub report_only: bool,
    pub compliance: Compliance,
    pub last_handler_run: HandlerRun,
    pub last_handler_run_at: Option<crate::Timestamp>,
    /// Only while the resource is [`Compliance::NonCompliant`] and its last run found a diff.
    pub attribute_diff: Option<BTreeMap<String, AttributeStateChange>>,
}

/// How many resources of an environment are in each compliance (the dashboard's counts).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComplianceSummary {
    pub total: u64,
    pub by_compliance: BTreeMap<Compliance, u64>,
    /// Of those, how many are report-only.
    pub report_only: u64,
}
