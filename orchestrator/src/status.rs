//! The server's status (`GET /api/v1/serverstatus`, the console's status page): product and
//! version, and one slice per component with how it is doing.

use api::status::{Extension, ReportedStatus, Slice, StatusResponse};
use serde_json::json;

use crate::scheduler::Schedulers;
use crate::{DbKind, Orchestrator, Result};

impl Orchestrator {
    /// The status of this server: `core.server` (uptime), `core.database` (kind, connection,
    /// version), `core.scheduler` (when `schedulers` run in this process) and `core.compiler`
    /// (the compile queue over all environments), and with several servers on one database
    /// `core.cluster` (every server, alive or not, with the environments whose scheduler it
    /// runs), and one `health.<check>` slice per health check (`GET /api/v2/health`). The overall
    /// status is the worst of the slices. Each database read gives up after
    /// [`crate::health::PROBE_TIMEOUT`], so the page answers during an outage.
    pub async fn server_status(&self, schedulers: Option<&Schedulers>) -> StatusResponse {
        let database = within(self.store.server_version()).await;
        let kind = self.store.kind();
        let (db_status, db_message) = match &database {
            Ok(_) => (ReportedStatus::Ok, None),
            Err(e) => (ReportedStatus::Error, Some(e.to_string())),
        };
        let version = api::VERSION.to_string();
        let mut slices = vec![
            Slice {
                name: "core.server".into(),
                status: json!({"uptime": self.uptime().as_secs()}),
                reported_status: ReportedStatus::Ok,
                message: None,
            },
            Slice {
                name: "core.database".into(),
                status: json!({
                    "connected": database.is_ok(),
                    "database": format!("{kind:?}").to_lowercase(),
                    "version": database.as_ref().ok(),
                }),
                reported_status: db_status,
                message: db_message,
            },
        ];
        slices.push(match schedulers {
            Some(s) => Slice {
                name: "core.scheduler".into(),
                status: json!({"running": true, "active_environments": s.environments()}),
                reported_status: ReportedStatus::Ok,
                message: None,
            },
            None => Slice {
                name: "core.scheduler".into(),
                status: json!({"running": false}),
                reported_status: ReportedStatus::Warning,
                message: Some("no scheduler runs in this process: deploys and dry runs are not available".into()),
            },
        });
        if let Some(node) = self.node() {
            slices.push(match within(self.cluster_members()).await {
                Ok(members) => Slice {
                    name: "core.cluster".into(),
                    status: json!({"this_server": node.id, "lease_seconds": node.lease.as_secs_f64(), "servers": members}),
                    reported_status: ReportedStatus::Ok,
                    message: None,
                },
                Err(e) => Slice {
                    name: "core.cluster".into(),
                    status: json!({"this_server": node.id}),
                    reported_status: ReportedStatus::Error,
                    message: Some(format!("the other servers cannot be read: {e}")),
                },
            });
        }
        slices.push(match within(self.compile_queue_counts()).await {
            Ok((queued, running)) => Slice {
                name: "core.compiler".into(),
                status: json!({
                    api::CompileStatus::Queued.as_str(): queued,
                    api::CompileStatus::Running.as_str(): running,
                }),
                reported_status: ReportedStatus::Ok,
                message: None,
            },
            Err(e) => Slice {
                name: "core.compiler".into(),
                status: json!({}),
                reported_status: ReportedStatus::Error,
                message: Some(format!("the compile queue cannot be read: {e}")),
            },
        });
        for check in self.health().checks {
            slices.push(Slice {
                name: format!("health.{}", check.name.as_str()),
                status: json!({"since": check.since}),
                reported_status: check.status,
                message: Some(check.message),
            });
        }
        let status =
            slices.iter().map(|s| s.reported_status).max_by_key(|s| severity(*s)).unwrap_or(ReportedStatus::Ok);
        StatusResponse {
            product: "Inmanta Service Orchestrator".into(),
            edition: "Rust Edition".into(),
            version: version.clone(),
            license: "Apache Software License 2".into(),
            extensions: vec![Extension { name: "core".into(), version, package: "core".into() }],
            slices,
            features: vec![],
            status,
            python_version: String::new(),
            postgresql_version: match kind {
                DbKind::Postgres => database.ok(),
                DbKind::Sqlite => None,
            },
        }
    }

    /// Compiles waiting and running over all environments.
    async fn compile_queue_counts(&self) -> Result<(i64, i64)> {
        let (queued, running): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(CASE WHEN started IS NULL THEN 1 END), COUNT(CASE WHEN started IS NOT NULL THEN 1 END) \
             FROM compile WHERE completed IS NULL",
        )
        .fetch_one(self.store.pool())
        .await?;
        Ok((queued, running))
    }
}

fn severity(status: ReportedStatus) -> u8 {
    status.severity()
}

/// `read`, or an error once it took longer than a health probe may.
async fn within<T>(read: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    match tokio::time::timeout(crate::health::PROBE_TIMEOUT, read).await {
        Ok(result) => result,
        Err(_) => Err(crate::Error::Database(sqlx::Error::PoolTimedOut)),
    }
}
