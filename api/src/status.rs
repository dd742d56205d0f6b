//! Server status (`GET /api/v1/serverstatus`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusResponse {
    pub product: String,
    pub edition: String,
    pub version: String,
    pub license: String,
    pub extensions: Vec<Extension>,
    pub slices: Vec<Slice>,
    pub features: Vec<Feature>,
    pub status: ReportedStatus,
    pub python_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub postgresql_version: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Extension {
    pub name: String,
    pub version: String,
    pub package: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slice {
    pub name: String,
    pub status: serde_json::Value,
    pub reported_status: ReportedStatus,
    pub message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Feature {
    pub slice: String,
    pub name: String,
    pub value: serde_json::Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReportedStatus {
    #[serde(rename = "OK")]
    Ok,
    Warning,
    Error,
}

/// `GET /api/v2/health`, beside Inmanta's envelope (`data`, always null): whether this server
/// can do its job (`status`, `Error` with HTTP 503) and why, one check per dependency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Health {
    pub status: ReportedStatus,
    pub checks: Vec<HealthCheck>,
}

/// One dependency of the server as the health check last saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealthCheck {
    pub name: HealthCheckName,
    pub status: ReportedStatus,
    /// What was seen, and for a failing check what to look at.
    pub message: String,
    /// When the check took this status (UTC, RFC 3339).
    pub since: String,
}

/// What a health check is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthCheckName {
    /// The database answers a query within a second.
    Database,
    /// The database stores what the server writes (the scheduler's results included).
    DatabaseWritable,
    /// The filesystem of the state directory has room.
    DiskSpace,
    /// The schedulers of this server run and could load their state.
    Scheduler,
    /// The scheduler leases this server holds are renewed (several servers on PostgreSQL).
    SchedulerLease,
}

impl HealthCheckName {
    pub const ALL: [HealthCheckName; 5] = [
        HealthCheckName::Database,
        HealthCheckName::DatabaseWritable,
        HealthCheckName::DiskSpace,
        HealthCheckName::Scheduler,
        HealthCheckName::SchedulerLease,
    ];

    /// The wire name (also the `check` label of the health metrics).
    pub fn as_str(self) -> &'static str {
        match self {
            HealthCheckName::Database => "database",
            HealthCheckName::DatabaseWritable => "database_writable",
            HealthCheckName::DiskSpace => "disk_space",
            HealthCheckName::Scheduler => "scheduler",
            HealthCheckName::SchedulerLease => "scheduler_lease",
        }
    }
}

impl ReportedStatus {
    /// Worse statuses are greater: OK < warning < error.
    pub fn severity(self) -> u8 {
        match self {
            ReportedStatus::Ok => 0,
            ReportedStatus::Warning => 1,
            ReportedStatus::Error => 2,
        }
    }
}
