//! Whether this server can do its job, per dependency (`GET /api/v2/health`, the console's status
//! page, the health metrics).
//!
//! A request must never wait for the database to find out that the database is gone: a probe
//! during an outage blocked for the pool's connect timeout and then answered 200. So the checks
//! that need the database run in a background loop ([`Orchestrator::start_health_monitor`],
//! every half second, each probe cut off after [`PROBE_TIMEOUT`]) and keep their last result
//! here; a request reads them and the in-memory state of the schedulers, and answers at once.
//! A probe that has not come back after a second counts as failed.
//!
//! Faults that other parts see first are reported here too: a scheduler whose writes the
//! database refuses ([`Monitor::write_fault`]) and one that cannot load its state
//! ([`Monitor::scheduler_fault`]). Each check logs one line when it starts failing and one when
//! it is well again, with how long the fault lasted.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use api::status::{Health, HealthCheck, HealthCheckName, ReportedStatus};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::{DbKind, Orchestrator};

/// How long a database probe may take before it counts as failed: the health answer must stay
/// under a second, and a database that needs longer for `SELECT 1` cannot serve the server.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(800);

/// How often the background loop probes.
const PROBE_EVERY: Duration = Duration::from_millis(500);

/// Below this much free space the state directory's filesystem counts as full: SQLite and the
/// compiles cannot be trusted to write anything any more.
const DISK_FULL_BYTES: u64 = 1024 * 1024;

/// Below this share of free space, a warning (the server still works).
const DISK_LOW_PERCENT: u64 = 5;

/// A check's status and since when it has it.
#[derive(Debug, Clone)]
struct Observed {
    status: ReportedStatus,
    message: String,
    since: DateTime<Utc>,
    since_instant: Instant,
}

/// What the health checks saw last; one per server process, shared by every clone of the
/// orchestrator.
#[derive(Default)]
pub struct Monitor {
    observed: Mutex<HashMap<HealthCheckName, Observed>>,
    /// When the background loop last finished a round; `None` before it started.
    probed: Mutex<Option<Instant>>,
    /// Schedulers (by environment) whose writes the database refuses now, with the error.
    write_faults: Mutex<HashMap<Uuid, String>>,
    /// Schedulers (by environment) that cannot load their state now, with the error.
    scheduler_faults: Mutex<HashMap<Uuid, String>>,
    started: std::sync::OnceLock<PathBuf>,
    /// This process's schedulers, once started.
    schedulers: std::sync::OnceLock<std::sync::Weak<dyn SchedulerView>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Monitor {
    /// Records what a check saw; logs when a fault starts and when it ends (one line each).
    fn observe(&self, name: HealthCheckName, status: ReportedStatus, message: String) {
        let mut observed = lock(&self.observed);
        let now = Instant::now();
        match observed.get_mut(&name) {
            Some(seen) if seen.status == status => seen.message = message,
            previous => {
                let lasted = previous.as_ref().map(|p| now.duration_since(p.since_instant));
                let was = previous.as_ref().map(|p| p.status);
                match status {
                    ReportedStatus::Ok if was.is_some_and(|w| w != ReportedStatus::Ok) => tracing::info!(
                        check = name.as_str(), lasted = ?lasted.unwrap_or_default(), "health: {} is well again: {message}", name.as_str()
                    ),
                    ReportedStatus::Ok => {}
                    ReportedStatus::Warning => {
                        tracing::warn!(check = name.as_str(), "health: {} needs attention: {message}", name.as_str())
                    }
                    ReportedStatus::Error => {
                        tracing::error!(check = name.as_str(), "health: {} fails: {message}", name.as_str())
                    }
                }
                observed.insert(name, Observed { status, message, since: Utc::now(), since_instant: now });
            }
        }
    }

    /// A scheduler's write failed (`Some(error)`) or was stored again (`None`).
    pub(crate) fn write_fault(&self, env: Uuid, error: Option<String>) {
        let mut faults = lock(&self.write_faults);
        match error {
            Some(error) => faults.insert(env, error),
            None => faults.remove(&env),
        };
    }

    /// The schedulers whose writes fail now, with what the health check says about each.
    #[cfg(test)]
    pub(crate) fn write_faults(&self) -> HashMap<Uuid, String> {
        lock(&self.write_faults).clone()
    }

    /// A scheduler could not load its state (`Some(error)`) or did (`None`).
    pub(crate) fn scheduler_fault(&self, env: Uuid, error: Option<String>) {
        let mut faults = lock(&self.scheduler_faults);
        match error {
            Some(error) => faults.insert(env, error),
            None => faults.remove(&env),
        };
    }

    /// The schedulers of this process, for the scheduler and lease checks.
    pub(crate) fn set_schedulers(&self, schedulers: std::sync::Weak<dyn SchedulerView>) {
        let _ = self.schedulers.set(schedulers);
    }

    fn check(&self, name: HealthCheckName) -> Option<Observed> {
        lock(&self.observed).get(&name).cloned()
    }
}

impl Orchestrator {
    pub(crate) fn health_monitor(&self) -> &Monitor {
        &self.health
    }

    /// Completes once a request that has run for `grace` finds the database unreachable by the
    /// background probes (issue 47): the request is then answered 503 rather than left waiting
    /// for the database's return (the pool retries a refused connection for its whole acquire
    /// timeout). Never completes while the database answers, however long a request takes,
    /// nor in a process without the background probes. PostgreSQL only: an SQLite file does
    /// not go away, and a probe slowed by load must not cut requests short. One slow probe is
    /// not an outage either: the probes must have failed for half a second.
    pub async fn database_lost(&self, grace: Duration) {
        if self.store.kind() != DbKind::Postgres {
            return std::future::pending().await;
        }
        tokio::time::sleep(grace).await;
        loop {
            let down = self.health.check(HealthCheckName::Database).is_some_and(|o| {
                o.status == ReportedStatus::Error && o.since_instant.elapsed() >= Duration::from_millis(500)
            });
            if down {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Starts the background probes (once per process); `state_dir` is a directory whose
    /// filesystem must have room (compiles, handler caches), as must SQLite's file's.
    /// The first round runs before this returns, so the first answer is already a real one.
    pub async fn start_health_monitor(&self, state_dir: &Path) {
        if self.health.started.set(state_dir.to_path_buf()).is_err() {
            return;
        }
        self.probe_round().await;
        let o = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(PROBE_EVERY).await;
                o.probe_round().await;
            }
        });
    }

    /// One round of the probes that need the database or the filesystem.
    async fn probe_round(&self) {
        let monitor = &self.health;
        let reachable = tokio::time::timeout(PROBE_TIMEOUT, self.store.probe()).await;
        let reachable = match reachable {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(fault_text(&e)),
            Err(_) => Err(format!("the database did not answer within {} ms", PROBE_TIMEOUT.as_millis())),
        };
        let (status, message) = match &reachable {
            Ok(()) => (ReportedStatus::Ok, format!("{} answers", self.store.kind().name())),
            Err(e) => (ReportedStatus::Error, e.clone()),
        };
        monitor.observe(HealthCheckName::Database, status, message);

        let writable = match &reachable {
            Err(_) => Err("the database cannot be reached".to_string()),
            Ok(()) => match tokio::time::timeout(PROBE_TIMEOUT, self.store.probe_write()).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(format!("a write failed: {}", fault_text(&e))),
                Err(_) => Err(format!("a write did not commit within {} ms", PROBE_TIMEOUT.as_millis())),
            },
        };
        let writers: Vec<(Uuid, String)> =
            lock(&monitor.write_faults).iter().map(|(env, e)| (*env, e.clone())).collect();
        let (status, message) = match (writable, writers.first()) {
            (Err(e), _) => (ReportedStatus::Error, e),
            (Ok(()), Some((env, error))) => (
                ReportedStatus::Error,
                format!(
                    "the scheduler of {} environment(s) cannot store its results (environment {env}: {error}); they are \
                     kept and stored once the database takes them",
                    writers.len()
                ),
            ),
            (Ok(()), None) => (ReportedStatus::Ok, "writes are stored".to_string()),
        };
        monitor.observe(HealthCheckName::DatabaseWritable, status, message);

        if let Some(state_dir) = monitor.started.get() {
            // The state directory, and SQLite's file wherever it is.
            let mut dirs = vec![state_dir.clone()];
            dirs.extend(self.store.sqlite_dir().filter(|d| d != state_dir));
            let space = tokio::task::spawn_blocking(move || {
                dirs.iter()
                    .map(|d| disk_space(d))
                    .max_by_key(|(status, _)| status.severity())
                    .unwrap_or_else(|| (ReportedStatus::Error, "no directory to measure".into()))
            })
            .await;
            let (status, message) = match space {
                Ok(space) => space,
                Err(e) => (ReportedStatus::Error, format!("cannot measure the free space: {e}")),
            };
            monitor.observe(HealthCheckName::DiskSpace, status, message);
        }
        self.observe_schedulers();
        *lock(&monitor.probed) = Some(Instant::now());
    }

    /// The scheduler and lease checks, from the schedulers' state in memory.
    fn observe_schedulers(&self) {
        let monitor = &self.health;
        let schedulers = monitor.schedulers.get().and_then(std::sync::Weak::upgrade);
        let scheduler = match schedulers.as_deref() {
            // Only tools and tests open an orchestrator without schedulers; a server always has.
            None => (ReportedStatus::Warning, "no scheduler runs in this process: nothing is deployed".to_string()),
            Some(s) => {
                let faults: Vec<(Uuid, String)> =
                    lock(&monitor.scheduler_faults).iter().map(|(env, e)| (*env, e.clone())).collect();
                match faults.first() {
                    Some((env, error)) => (
                        ReportedStatus::Error,
                        format!(
                            "the scheduler of {} environment(s) cannot load its state (environment {env}: {error}); it \
                             tries again every second",
                            faults.len()
                        ),
                    ),
                    None => (ReportedStatus::Ok, format!("{} environment scheduler(s) running", s.environments())),
                }
            }
        };
        monitor.observe(HealthCheckName::Scheduler, scheduler.0, scheduler.1);
        let lease = match (self.node(), schedulers.as_deref()) {
            (None, _) => (ReportedStatus::Ok, "a single server: it runs every environment's scheduler".to_string()),
            (Some(_), None) => (ReportedStatus::Ok, "no scheduler in this process: it holds no lease".to_string()),
            (Some(_), Some(s)) => {
                let (held, lapsed) = s.lease_counts();
                if lapsed > 0 {
                    (
                        ReportedStatus::Error,
                        format!(
                            "{lapsed} of the {held} scheduler lease(s) this server holds could not be renewed in time: \
                             it hands out no work for them until it renews them or another server takes them"
                        ),
                    )
                } else {
                    (ReportedStatus::Ok, format!("holds {held} scheduler lease(s), all renewed"))
                }
            }
        };
        monitor.observe(HealthCheckName::SchedulerLease, lease.0, lease.1);
    }

    /// Every check as last seen, with the schedulers' state read now; `Error` when the server
    /// cannot do its job. Never waits for the database.
    pub fn health(&self) -> Health {
        let monitor = &self.health;
        let stale = lock(&monitor.probed).is_none_or(|at| at.elapsed() > Duration::from_secs(2));
        if stale && monitor.started.get().is_some() {
            // The loop is stuck in a probe that should have timed out: say so rather than
            // repeat an old answer.
            monitor.observe(
                HealthCheckName::Database,
                ReportedStatus::Error,
                "the database probes have not come back for more than 2 s".into(),
            );
        }
        self.observe_schedulers();
        let checks: Vec<HealthCheck> = HealthCheckName::ALL
            .iter()
            .filter_map(|name| {
                let seen = monitor.check(*name).or_else(|| {
                    // Before the first round of probes.
                    monitor.started.get().is_none().then(|| Observed {
                        status: ReportedStatus::Warning,
                        message: "not checked: the health monitor is not running in this process".into(),
                        since: Utc::now(),
                        since_instant: Instant::now(),
                    })
                })?;
                Some(HealthCheck {
                    name: *name,
                    status: seen.status,
                    message: seen.message,
                    since: seen.since.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                })
            })
            .collect();
        let status = checks.iter().map(|c| c.status).max_by_key(|s| s.severity()).unwrap_or(ReportedStatus::Ok);
        crate::metrics::health(&checks, status);
        Health { status, checks }
    }
}

/// What the scheduler and lease checks read of this process's schedulers. A trait so that the
/// scheduler, which reports its faults here, is not also imported by this module: the
/// dependency runs one way, scheduler -> health.
pub(crate) trait SchedulerView: Send + Sync {
    /// How many environment schedulers run.
    fn environments(&self) -> usize;
    /// The scheduler leases this server holds, and how many of them lapsed.
    fn lease_counts(&self) -> (usize, usize);
}

/// A database failure as an operator reads it and acts on, without the database's own text
/// (the server log has that).
pub(crate) fn fault_text(e: &crate::Error) -> String {
    use sqlx::Error as E;
    let crate::Error::Database(e) = e else {
        return match e {
            crate::Error::LeaseLost(_) => "the scheduler lease is held by another server".into(),
            _ => "an unexpected failure; see the server log".into(),
        };
    };
    let code = match e {
        E::Database(db) => db.code().map(|c| c.to_string()).unwrap_or_default(),
        _ => String::new(),
    };
    let sqlite = code.parse::<i64>().ok().map(|n| n & 0xff);
    match e {
        E::Io(_) | E::Tls(_) | E::Protocol(_) => "the database cannot be reached (connection refused or cut)".into(),
        E::PoolTimedOut => "no database connection could be opened in time".into(),
        E::Database(_) if sqlite == Some(13) || code == "53100" => "the database's disk is full: free space".into(),
        E::Database(_) if sqlite == Some(10) || code == "58030" => "the database's disk fails (I/O error)".into(),
        E::Database(_) if sqlite == Some(5) || sqlite == Some(6) => "the database is locked by another writer".into(),
        E::Database(_) if code.starts_with("57P") => "the database is shutting down or starting up".into(),
        E::Database(_) if code.starts_with("08") => "the database connection failed".into(),
        E::Database(_) if code == "25006" => "the database is read-only (a standby?)".into(),
        E::Database(_) => format!("the database refused it (code {code}); see the server log"),
        _ => "the database failed; see the server log".into(),
    }
}

/// Free space of the filesystem that holds `dir`.
fn disk_space(dir: &Path) -> (ReportedStatus, String) {
    let stat = match rustix::fs::statvfs(dir) {
        Ok(stat) => stat,
        Err(e) => return (ReportedStatus::Error, format!("cannot read the filesystem of {}: {e}", dir.display())),
    };
    let free = stat.f_bavail.saturating_mul(stat.f_frsize);
    let total = stat.f_blocks.saturating_mul(stat.f_frsize).max(1);
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let text = format!("{:.1} MiB free of {:.1} MiB in {}", mib(free), mib(total), dir.display());
    if free < DISK_FULL_BYTES {
        (ReportedStatus::Error, format!("the disk is full: {text}; free space there"))
    } else if free * 100 < total * DISK_LOW_PERCENT {
        (ReportedStatus::Warning, format!("the disk is almost full: {text}"))
    } else {
        (ReportedStatus::Ok, text)
    }
}

impl DbKind {
    /// The database's product name.
    pub fn name(self) -> &'static str {
        match self {
            DbKind::Sqlite => "SQLite",
            DbKind::Postgres => "PostgreSQL",
        }
    }
}
