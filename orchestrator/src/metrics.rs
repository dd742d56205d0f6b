//! The server's Prometheus metrics: every name in one place (docs/operations.md lists them,
//! the Grafana dashboard in docs/ queries them), recorded through the `metrics` facade. Without
//! an installed recorder (the CLI, tests of this crate) every call is a no-op.
//!
//! Counters and histograms are recorded where things happen (the scheduler, the compile runner,
//! the REST layer); gauges of what the database holds are read when Prometheus scrapes
//! ([`Orchestrator::metric_counts`]).

use std::collections::BTreeMap;
use std::time::Duration;

use api::state::{AgentStatus, ResourceState};
use sqlx::Row;
use uuid::Uuid;

use crate::resources::STATUS_SQL;
use crate::{Orchestrator, Result};

/// Gauge: released resources by state, labels `environment`, `state`.
pub const RESOURCES: &str = "inmanta_resources";
/// Counter: finished resource deploys, labels `environment`, `result` (the resource state).
pub const RESOURCE_DEPLOYS: &str = "inmanta_resource_deploys_total";
/// Histogram: seconds one resource deploy took (handler run), label `environment`.
pub const RESOURCE_DEPLOY_SECONDS: &str = "inmanta_resource_deploy_duration_seconds";
/// Counter: finished server compiles, labels `environment`, `result` (`success` or `failure`).
pub const COMPILES: &str = "inmanta_compiles_total";
/// Histogram: seconds a server compile took, all stages, label `environment`.
pub const COMPILE_SECONDS: &str = "inmanta_compile_duration_seconds";
/// Gauge: compiles requested and not finished, label `environment`.
pub const COMPILE_QUEUE: &str = "inmanta_compile_queue_length";
/// Gauge: deploy tasks queued in the scheduler, labels `environment`, `agent`.
pub const SCHEDULER_QUEUE: &str = "inmanta_scheduler_queue_depth";
/// Gauge: agents by state, labels `environment`, `state` (`up`, `down`, `paused`).
pub const AGENTS: &str = "inmanta_agents";
/// Histogram: seconds an API request took, labels `method`, `route`, `status`.
pub const API_REQUEST_SECONDS: &str = "inmanta_api_request_duration_seconds";
/// Histogram: seconds spent waiting for a database connection and write lock before a write.
pub const DATABASE_WAIT_SECONDS: &str = "inmanta_database_pool_wait_seconds";
/// Gauge: database pool connections, label `state` (`idle`, `in_use`).
pub const DATABASE_CONNECTIONS: &str = "inmanta_database_pool_connections";
/// Gauge, always 1: labels `version` and `database` of this server.
pub const BUILD_INFO: &str = "inmanta_build_info";
/// Gauge, always 1: labels `environment` (id), `name`, `project` (id), for joins by name.
pub const ENVIRONMENT_INFO: &str = "inmanta_environment_info";

/// Gauge: each health check of this server, label `check` (`database`, `database_writable`,
/// `disk_space`, `scheduler`, `scheduler_lease`): 0 OK, 1 warning, 2 error.
pub const HEALTH_CHECK: &str = "inmanta_health_check_status";
/// Gauge: 1 while `GET /api/v2/health` answers 200 (every check OK or warning), else 0.
pub const HEALTHY: &str = "inmanta_healthy";

/// Every metric the server exports (histograms as their base name).
pub const ALL: &[&str] = &[
    HEALTH_CHECK,
    HEALTHY,
    RESOURCES,
    RESOURCE_DEPLOYS,
    RESOURCE_DEPLOY_SECONDS,
    COMPILES,
    COMPILE_SECONDS,
    COMPILE_QUEUE,
    SCHEDULER_QUEUE,
    AGENTS,
    API_REQUEST_SECONDS,
    DATABASE_WAIT_SECONDS,
    DATABASE_CONNECTIONS,
    BUILD_INFO,
    ENVIRONMENT_INFO,
];

/// A resource deploy finished with this state after `took`.
pub fn resource_deployed(environment: Uuid, state: ResourceState, took: Duration) {
    let env = environment.to_string();
    metrics::counter!(RESOURCE_DEPLOYS, "environment" => env.clone(), "result" => state.as_str()).increment(1);
    metrics::histogram!(RESOURCE_DEPLOY_SECONDS, "environment" => env).record(took);
}

/// A server compile finished.
pub fn compiled(environment: Uuid, success: bool, took: Duration) {
    let env = environment.to_string();
    let result = if success { "success" } else { "failure" };
    metrics::counter!(COMPILES, "environment" => env.clone(), "result" => result).increment(1);
    metrics::histogram!(COMPILE_SECONDS, "environment" => env).record(took);
}

/// The scheduler's queue of one agent.
pub fn scheduler_queue(environment: Uuid, agent: &str, depth: usize) {
    metrics::gauge!(SCHEDULER_QUEUE, "environment" => environment.to_string(), "agent" => agent.to_string())
        .set(depth as f64);
}

/// The health checks as last evaluated (crate::health).
pub fn health(checks: &[api::status::HealthCheck], overall: api::status::ReportedStatus) {
    for check in checks {
        metrics::gauge!(HEALTH_CHECK, "check" => check.name.as_str()).set(f64::from(check.status.severity()));
    }
    let healthy = overall != api::status::ReportedStatus::Error;
    metrics::gauge!(HEALTHY).set(if healthy { 1.0 } else { 0.0 });
}

/// A write waited this long for its connection and lock.
pub fn database_wait(took: Duration) {
    metrics::histogram!(DATABASE_WAIT_SECONDS).record(took);
}

/// What the database holds, read at scrape time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetricCounts {
    /// environment id -> (name, project id)
    pub environments: BTreeMap<Uuid, (String, Uuid)>,
    /// (environment, state) -> released resources
    pub resources: BTreeMap<(Uuid, String), u64>,
    /// (environment, `up` | `down` | `paused`) -> agents
    pub agents: BTreeMap<(Uuid, &'static str), u64>,
    /// environment -> compiles not finished
    pub compile_queue: BTreeMap<Uuid, u64>,
}

impl Orchestrator {
    /// The gauges of every environment in three grouped queries.
    pub async fn metric_counts(&self) -> Result<MetricCounts> {
        let pool = self.store().pool();
        let mut counts = MetricCounts::default();
        for env in self.list_environments().await? {
            counts.environments.insert(env.id, (env.name.clone(), env.project_id));
            counts.compile_queue.insert(env.id, 0);
            for state in ResourceState::RESOURCE_STATES.iter().filter(|s| **s != ResourceState::Dry) {
                counts.resources.insert((env.id, state.to_string()), 0);
            }
            for state in AgentStatus::NAMES {
                counts.agents.insert((env.id, state), 0);
            }
        }
        let known = |text: &str| crate::store::parse_uuid(text).ok().filter(|id| counts.environments.contains_key(id));
        let rows = sqlx::query(&format!(
            "SELECT s.environment AS environment, {STATUS_SQL} AS status, COUNT(*) AS n \
             FROM resource_persistent_state s GROUP BY 1, 2"
        ))
        .fetch_all(pool)
        .await?;
        let mut resources = Vec::new();
        for row in rows {
            let Some(env) = known(&row.try_get::<String, _>("environment")?) else { continue };
            // `orphaned` is exactly is_orphan = 1 (not a released resource): skipped here so the
            // count reads the status index alone.
            if row.try_get::<String, _>("status")? == ResourceState::Orphaned.as_str() {
                continue;
            }
            resources.push(((env, row.try_get::<String, _>("status")?), row.try_get::<i64, _>("n")? as u64));
        }
        counts.resources.extend(resources);
        let rows = sqlx::query(
            "SELECT environment, CASE WHEN paused = 1 THEN 'paused' WHEN up = 1 THEN 'up' ELSE 'down' END AS state, \
             COUNT(*) AS n FROM agent GROUP BY 1, 2",
        )
        .fetch_all(pool)
        .await?;
        let mut agents = Vec::new();
        for row in rows {
            let Some(env) = known(&row.try_get::<String, _>("environment")?) else { continue };
            let state = AgentStatus::parse(&row.try_get::<String, _>("state")?).unwrap_or(AgentStatus::Down).as_str();
            agents.push(((env, state), row.try_get::<i64, _>("n")? as u64));
        }
        counts.agents.extend(agents);
        let rows = sqlx::query("SELECT environment, COUNT(*) AS n FROM compile WHERE completed IS NULL GROUP BY 1")
            .fetch_all(pool)
            .await?;
        let mut queue = Vec::new();
        for row in rows {
            let Some(env) = known(&row.try_get::<String, _>("environment")?) else { continue };
            queue.push((env, row.try_get::<i64, _>("n")? as u64));
        }
        counts.compile_queue.extend(queue);
        Ok(counts)
    }
}
