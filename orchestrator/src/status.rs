//! The server's status (`GET /api/v1/serverstatus`, the console's status page): product and
//! version, and one slice per component with how it is doing.

use api::status::{Extension, Feature, ReportedStatus, Slice, StatusResponse};
use serde_json::json;

use crate::scheduler::Schedulers;
use crate::{DbKind, Orchestrator, Result};

/// The slices Inmanta 20.1 reports in its order (`GET /api/v1/serverstatus` of the real server)
/// that hold nothing here beyond being present: Inmanta's hold nothing either.
const EMPTY_SLICES: [&str; 11] = [
    "core.project",
    "core.environment",
    "core.file",
    "core.code",
    "core.metrics",
    "core.parameters",
    "core.resource",
    "core.orchestration",
    "core.dryrun",
    "core.notification",
    "core.user",
];

/// Inmanta's last three slices, after `core.user`.
const LAST_SLICES: [&str; 3] = ["core.environment-metrics", "core.graphql", "core.feature"];

impl Orchestrator {
    /// The status of this server, in Inmanta 20.1's shape: its twenty slices in its order, with
    /// the keys it reports where this server has the figure (`core.scheduler_manager`'s
    /// sessions are the schedulers running here; `core.database`'s pool; `core.compiler`'s
    /// queue, with `running` saying whether a compile runs now), and ours beside them: the uptime,
    /// the database kind and version, with several servers on one database `core.cluster`
    /// (every server, alive or not, with the environments whose scheduler it runs), and one
    /// `health.<check>` slice per health check (`GET /api/v2/health`). The features are those
    /// of Inmanta's open source edition. The overall status is the worst of the slices. Each
    /// database read gives up after [`crate::health::PROBE_TIMEOUT`], so the page answers
    /// during an outage.
    pub async fn server_status(&self, schedulers: Option<&Schedulers>) -> StatusResponse {
        let database = within(self.store.server_version()).await;
        let kind = self.store.kind();
        let version = api::VERSION.to_string();
        let mut slices = vec![
            slice("core.transport", json!({"running": true})),
            slice("core.server", json!({"uptime": self.uptime().as_secs()})),
        ];
        slices.push(match schedulers {
            Some(s) => slice(
                "core.scheduler_manager",
                json!({"resource_facts": 0, "sessions": s.environments(), "running": true,
                       "active_environments": s.environments()}),
            ),
            None => Slice {
                name: "core.scheduler_manager".into(),
                status: json!({"resource_facts": 0, "sessions": 0, "running": false}),
                reported_status: ReportedStatus::Warning,
                message: Some("no scheduler runs in this process: deploys and dry runs are not available".into()),
            },
        });
        // Agents run inside this process: no agent process is started.
        slices.push(slice("core.autostarted_agent_manager", json!({"processes": 0})));
        slices.push(self.database_slice(&database));
        slices.push(match within(self.compile_queue_counts()).await {
            Ok((queued, running)) => slice(
                "core.compiler",
                serde_json::to_value(CompilerSlice { task_queue: queued + running, running: running > 0, queued })
                    .unwrap_or_default(),
            ),
            Err(e) => Slice {
                name: "core.compiler".into(),
                status: json!({}),
                reported_status: ReportedStatus::Error,
                message: Some(format!("the compile queue cannot be read: {e}")),
            },
        });
        slices.extend(EMPTY_SLICES.iter().chain(&LAST_SLICES).map(|name| slice(name, json!({}))));
        if let Some(node) = self.node() {
            slices.push(match within(self.cluster_members()).await {
                Ok(members) => slice(
                    "core.cluster",
                    json!({"this_server": node.id, "lease_seconds": node.lease.as_secs_f64(), "servers": members}),
                ),
                Err(e) => Slice {
                    name: "core.cluster".into(),
                    status: json!({"this_server": node.id}),
                    reported_status: ReportedStatus::Error,
                    message: Some(format!("the other servers cannot be read: {e}")),
                },
            });
        }
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
        let feature = |name: &str| Feature { slice: "core.resource".into(), name: name.into(), value: json!(true) };
        StatusResponse {
            product: "Inmanta Service Orchestrator".into(),
            edition: "Rust Edition".into(),
            version: version.clone(),
            license: "Apache Software License 2".into(),
            extensions: vec![Extension { name: "core".into(), version, package: "core".into() }],
            slices,
            features: vec![feature("resource_discovery"), feature("compliance_reporting")],
            status,
            python_version: python_version().await,
            postgresql_version: match kind {
                DbKind::Postgres => within(self.store.short_server_version()).await.ok(),
                DbKind::Sqlite => None,
            },
        }
    }

    /// `core.database`: Inmanta's keys (the database's name and host, the pool) and ours (its
    /// kind and version).
    fn database_slice(&self, database: &Result<String>) -> Slice {
        let pool = self.store.pool_report();
        let (name, host) = self.store.name_and_host();
        Slice {
            name: "core.database".into(),
            status: json!({
                "connected": database.is_ok(),
                "database": name,
                "host": host,
                "max_pool": pool.max,
                "free_pool": pool.max.saturating_sub(pool.open.saturating_sub(pool.idle)),
                "open_connections": pool.open,
                "free_connections": pool.idle,
                "kind": format!("{:?}", self.store.kind()).to_lowercase(),
                "version": database.as_ref().ok(),
            }),
            reported_status: if database.is_ok() { ReportedStatus::Ok } else { ReportedStatus::Error },
            message: database.as_ref().err().map(|e| e.to_string()),
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

/// A slice that is doing fine.
fn slice(name: &str, status: serde_json::Value) -> Slice {
    Slice { name: name.into(), status, reported_status: ReportedStatus::Ok, message: None }
}

/// The version of the Python that runs modules' code (`platform.python_version()` of
/// `INMANTA_COMPILER_PYTHON`, else of `python3` on the PATH), found once; `unavailable` without
/// one.
async fn python_version() -> String {
    static FOUND: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    FOUND
        .get_or_init(|| async {
            tokio::task::spawn_blocking(|| {
                let python = std::env::var_os("INMANTA_COMPILER_PYTHON")
                    .filter(|p| !p.is_empty())
                    .unwrap_or_else(|| "python3".into());
                let out = std::process::Command::new(python)
                    .args(["-c", "import platform; print(platform.python_version())"])
                    .stdin(std::process::Stdio::null())
                    .output()
                    .ok()?;
                let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
                (out.status.success() && !text.is_empty()).then_some(text)
            })
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| "not found".to_string())
        })
        .await
        .clone()
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

/// The `core.compiler` slice: Inmanta's `task_queue` (queued and running compiles), and whether
/// one runs and how many wait.
#[derive(serde::Serialize)]
struct CompilerSlice {
    task_queue: i64,
    running: bool,
    queued: i64,
}
