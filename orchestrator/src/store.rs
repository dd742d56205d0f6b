//! The database: one sqlx pool over SQLite (embedded default) or PostgreSQL.
//!
//! Queries are written once in the SQL both databases understand and run through sqlx's `Any`
//! driver. Portable column types keep that possible: ids are TEXT (UUIDs), timestamps are TEXT
//! in a fixed-width UTC ISO-8601 form (so they sort as text), booleans are BIGINT 0/1 and JSON
//! documents are TEXT.

use std::path::Path;
use std::time::Duration;

use api::Timestamp;
use chrono::{DateTime, Utc};
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{AnyPool, Executor, Row};

use crate::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbKind {
    Sqlite,
    Postgres,
}

/// The database behind three pools, so that no kind of work waits behind another: readers
/// (`pool`, most connections), writers (`writer`: what [`Store::begin_write`] uses; on SQLite one
/// connection, as SQLite has one writer anyway, so writers queue here instead of behind 50
/// readers) and the health probe (`probe`, one connection of its own).
#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
    writer: AnyPool,
    probe: AnyPool,
    /// Bounds the list queries that run at once (see [`Store::list_permit`]).
    lists: std::sync::Arc<tokio::sync::Semaphore>,
    /// The list statements that identical requests in flight share.
    shared: std::sync::Arc<crate::list_sql::SharedStatements>,
    kind: DbKind,
    url: String,
}

pub type Transaction = sqlx::Transaction<'static, sqlx::Any>;

/// The connections of a pool (`core.database` of the server status).
#[derive(Debug, Clone, Copy)]
pub struct PoolReport {
    pub max: u32,
    pub open: u32,
    pub idle: u32,
}

impl Store {
    /// Opens the database and brings its schema up to date (migrations.rs).
    pub async fn connect(url: &str) -> Result<Store> {
        let store = Store::open(url).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Opens the database as it is, without migrating it (`inmanta server --check`, backups).
    pub async fn open(url: &str) -> Result<Store> {
        install_default_drivers();
        let kind = if url.starts_with("sqlite:") {
            DbKind::Sqlite
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            DbKind::Postgres
        } else {
            return Err(Error::BadRequest(format!(
                "unsupported database url {url:?}: use sqlite://PATH or postgres://USER@HOST/NAME"
            )));
        };
        let url = match kind {
            DbKind::Sqlite => {
                if let Some(parent) = sqlite_path(url).and_then(|p| Path::new(p).parent().map(Path::to_path_buf))
                    && !parent.as_os_str().is_empty()
                {
                    std::fs::create_dir_all(&parent).map_err(|e| {
                        Error::BadRequest(format!("cannot create database directory {}: {e}", parent.display()))
                    })?;
                }
                if url.contains("mode=") {
                    url.to_string()
                } else if url.contains('?') {
                    format!("{url}&mode=rwc")
                } else {
                    format!("{url}?mode=rwc")
                }
            }
            DbKind::Postgres => url.to_string(),
        };
        let (readers, writers) = match kind {
            DbKind::Sqlite => (8, 1),
            DbKind::Postgres => (16, WRITE_CONNECTIONS),
        };
        // The writer pool connects first: on a new SQLite file it is the one that creates it.
        let writer = open_pool(kind, &url, writers).await?;
        let store = Store {
            pool: open_pool(kind, &url, readers).await?,
            writer,
            probe: open_pool(kind, &url, 1).await?,
            lists: std::sync::Arc::new(tokio::sync::Semaphore::new(concurrent_lists())),
            shared: Default::default(),
            kind,
            url: url.clone(),
        };
        Ok(store)
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    pub fn kind(&self) -> DbKind {
        self.kind
    }

    /// A transaction that will write. On SQLite it takes the write lock up front: a deferred
    /// transaction that reads first cannot upgrade once another connection committed.
    ///
    /// When SQLite ends a transaction itself (a full disk, an I/O error), sqlx's rollback of it
    /// fails and the connection stays marked as inside a transaction: every later write on it
    /// would fail with "non-zero transaction depth", long after the disk has room again. Such a
    /// connection is closed here and a new one opened.
    pub async fn begin_write(&self) -> Result<Transaction> {
        let waiting = std::time::Instant::now();
        let mut replaced = 0;
        let tx = loop {
            let begun = match self.kind {
                DbKind::Sqlite => self.writer.begin_with("BEGIN IMMEDIATE").await,
                DbKind::Postgres => self.writer.begin().await,
            };
            match begun {
                Err(sqlx::Error::InvalidSavePointStatement) if replaced < WRITE_CONNECTIONS => {
                    tracing::warn!("a write connection was left inside an ended transaction; opening a new one");
                    let stuck = self.writer.acquire().await?;
                    let _ = stuck.close().await;
                    replaced += 1;
                }
                begun => break begun?,
            }
        };
        crate::metrics::database_wait(waiting.elapsed());
        Ok(tx)
    }

    /// SQLite: makes this process the only server on the database file, for as long as the
    /// returned lock file stays open (dropping it, or the process ending, frees it). A second
    /// server on the same file is refused with a message saying why. PostgreSQL: nothing to do.
    pub fn claim_single_server(&self) -> Result<Option<std::fs::File>> {
        let Some(path) = (self.kind == DbKind::Sqlite).then(|| sqlite_path(&self.url)).flatten() else {
            return Ok(None);
        };
        claim_sqlite_file(path).map(Some)
    }

    /// The write pool, for tests that change how its connection behaves (a size cap).
    #[cfg(test)]
    pub(crate) fn writer_pool(&self) -> &AnyPool {
        &self.writer
    }

    /// The directory of the SQLite database file (absolute); `None` on PostgreSQL.
    pub fn sqlite_dir(&self) -> Option<std::path::PathBuf> {
        let path = Path::new(sqlite_path(&self.url)?);
        std::path::absolute(path).ok()?.parent().map(Path::to_path_buf)
    }

    /// The URL the store was opened with (listeners and the server's lock open connections of
    /// their own).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Commits `tx` if `fence` still holds: the lease row of its environment names this holder
    /// and epoch and has not expired by the database's clock. The row is locked for share until
    /// the commit, so a takeover (which updates it) waits for this commit and no write of an old
    /// epoch lands after it. Without a fence (a single server) this is a plain commit.
    pub async fn commit_fenced(&self, mut tx: Transaction, fence: Option<&crate::cluster::Fence>) -> Result<()> {
        if let Some(fence) = fence {
            // A server stopped between this check and its commit must not hold the row for
            // longer than a fraction of the lease: PostgreSQL ends such a session.
            sqlx::query(&format!("SET LOCAL idle_in_transaction_session_timeout = {}", fence.idle_timeout_ms()))
                .execute(&mut *tx)
                .await?;
            let held: Option<i64> = sqlx::query_scalar(&format!(
                "SELECT epoch FROM scheduler_lease WHERE environment = $1 AND holder = $2 AND epoch = $3 \
                 AND expires > {} FOR SHARE",
                db_now_ms(self.kind)
            ))
            .bind(fence.env.to_string())
            .bind(fence.holder.clone())
            .bind(fence.epoch)
            .fetch_optional(&mut *tx)
            .await?;
            if held.is_none() {
                tx.rollback().await?;
                return Err(Error::LeaseLost(fence.env));
            }
        }
        tx.commit().await?;
        Ok(())
    }

    /// A turn to run a list query (a page and its counts). At most one list per core runs at
    /// once; the others wait here, in arrival order, without holding a connection: 50 clients
    /// listing at once then neither take every reader connection (details, writes and health
    /// keep theirs) nor put 8 database threads on 2 cores in front of everything else, and
    /// the latency they see is the queue's, evenly shared, instead of a long tail.
    pub async fn list_permit(&self) -> Result<tokio::sync::OwnedSemaphorePermit> {
        self.lists.clone().acquire_owned().await.map_err(|_| Error::Corrupt("the list queue was closed".into()))
    }

    pub(crate) fn shared_statements(&self) -> &crate::list_sql::SharedStatements {
        &self.shared
    }

    /// The server version of the database, for the status page.
    pub async fn server_version(&self) -> Result<String> {
        let sql = match self.kind {
            DbKind::Sqlite => "SELECT 'SQLite ' || sqlite_version()",
            DbKind::Postgres => "SELECT version()",
        };
        Ok(sqlx::query_scalar(sql).fetch_one(&self.pool).await?)
    }

    /// PostgreSQL's version as Inmanta reports it (`SHOW server_version`: `16.4`).
    pub async fn short_server_version(&self) -> Result<String> {
        Ok(sqlx::query_scalar("SHOW server_version").fetch_one(&self.pool).await?)
    }

    /// The connections of the readers' pool: its bound, open ones and idle ones.
    pub fn pool_report(&self) -> PoolReport {
        PoolReport {
            max: self.pool.options().get_max_connections(),
            open: self.pool.size(),
            idle: self.pool.num_idle() as u32,
        }
    }

    /// The database's name and host as its URL names them (SQLite: the file, no host).
    pub fn name_and_host(&self) -> (String, String) {
        if let Some(path) = sqlite_path(&self.url) {
            return (path.to_string(), String::new());
        }
        let rest = self.url.split_once("://").map_or(self.url.as_str(), |(_, rest)| rest);
        let rest = rest.split('?').next().unwrap_or_default();
        let (authority, name) = rest.split_once('/').unwrap_or((rest, ""));
        let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
        let host =
            host.rsplit_once(':').filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit())).map_or(host, |(h, _)| h);
        (name.to_string(), host.to_string())
    }

    /// Whether the database answers, on a connection of its own: the health check never waits
    /// behind readers or writers.
    pub async fn probe(&self) -> Result<()> {
        sqlx::query_scalar::<_, i32>("SELECT 1").fetch_one(&self.probe).await?;
        Ok(())
    }

    /// Whether the database stores a write, on the probe's connection. PostgreSQL: a
    /// transaction that takes a transaction id commits (a read-only or recovering server, or
    /// one that cannot write its log, refuses). SQLite: nothing is written (a write would wait
    /// behind the scheduler's for the one write lock); a full disk shows in the free space of
    /// the state directory and in the scheduler's writes (crate::health).
    pub async fn probe_write(&self) -> Result<()> {
        if self.kind == DbKind::Postgres {
            let mut tx = self.probe.begin().await?;
            sqlx::query_scalar::<_, String>("SELECT CAST(txid_current() AS TEXT)").fetch_one(&mut *tx).await?;
            tx.commit().await?;
        }
        Ok(())
    }

    pub async fn close(&self) {
        self.pool.close().await;
        self.writer.close().await;
        self.probe.close().await;
    }
}

/// Write connections on PostgreSQL (SQLite has one writer anyway).
const WRITE_CONNECTIONS: u32 = 4;

/// List queries that may run at once: one per core, at least two.
fn concurrent_lists() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).max(2)
}

/// How long a query waits for a connection before it fails (and its caller, e.g. the
/// scheduler's writer, tries again). While the database refuses connections, sqlx tries again
/// after pauses that double up to a fifth of this: at sqlx's 30 s, a query waiting through an
/// outage tried only every 6 s and the server went on for up to 6 s after the database was back
/// as if it were still down (the fault-injection harness, server/tests/server/chaos.rs, found
/// it). At 10 s the pause is at most 2 s, the writer's own longest pause.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

async fn open_pool(kind: DbKind, url: &str, connections: u32) -> Result<AnyPool> {
    let options = AnyPoolOptions::new().max_connections(connections).acquire_timeout(ACQUIRE_TIMEOUT);
    Ok(match kind {
        DbKind::Sqlite => {
            options
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        // WAL lets readers run beside the single writer; FULL sync makes
                        // every acknowledged commit survive a crash of the process or host.
                        // Temporary storage in memory: the statement journals of the batched
                        // writes (a copy of every page a multi-row statement changes) and the
                        // sorters went to files in /var/tmp, 40 % of all that was written
                        // during a deploy; they hold nothing that must survive a crash. A
                        // checkpoint every 10 000 WAL pages (40 MB) instead of 1 000: a batch of
                        // results writes more than 1 000, so every commit also checkpointed, and
                        // the pages every batch changes were copied back each time.
                        conn.execute(
                            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; \
                             PRAGMA foreign_keys=ON; PRAGMA busy_timeout=30000; PRAGMA temp_store=MEMORY; PRAGMA wal_autocheckpoint=10000;",
                        )
                        .await?;
                        Ok(())
                    })
                })
                .connect(url)
                .await?
        }
        DbKind::Postgres => options.connect(url).await?,
    })
}

/// Takes the lock that makes one process the only server on the SQLite database `path` (see
/// [`Store::claim_single_server`]); restore takes it too, so it never replaces a file in use.
pub fn claim_sqlite_file(path: &str) -> Result<std::fs::File> {
    let lock_path = format!("{path}.server-lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| Error::BadRequest(format!("cannot open the server lock file {lock_path}: {e}")))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Conflict(format!(
            "another inmanta server already runs on the SQLite database {path}: SQLite supports one server \
                 per database file. Stop the other server, give this one its own database, or run several servers \
                 on PostgreSQL (docs/ha.md)"
        ))),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(Error::BadRequest(format!("cannot lock the server lock file {lock_path}: {e}")))
        }
    }
}

pub(crate) fn sqlite_path(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next()?;
    (!path.is_empty() && path != ":memory:").then_some(path)
}

/// An SQL expression for the database's clock in milliseconds since the Unix epoch: leases and
/// claims are measured against it so servers with skewed clocks agree.
pub fn db_now_ms(kind: DbKind) -> &'static str {
    match kind {
        DbKind::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000 AS BIGINT)",
        DbKind::Postgres => "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
    }
}

/// Timestamps are stored as fixed-width UTC text so that text order is time order
/// ([`api::Timestamp`]'s form).
pub fn format_time(t: DateTime<Utc>) -> String {
    Timestamp::from(t).to_string()
}

pub fn parse_time(s: &str) -> Result<DateTime<Utc>> {
    parse_timestamp(s).map(Timestamp::datetime)
}

/// A stored time as read from a text column.
pub fn parse_timestamp(s: &str) -> Result<Timestamp> {
    s.parse().map_err(|e| Error::Corrupt(format!("bad timestamp: {e}")))
}

/// A nullable stored time.
pub fn parse_opt_timestamp(s: Option<&str>) -> Result<Option<Timestamp>> {
    s.map(parse_timestamp).transpose()
}

/// The time column `column` of `row`.
pub fn time_column(row: &sqlx::any::AnyRow, column: &str) -> Result<Timestamp> {
    parse_timestamp(&row.try_get::<String, _>(column)?)
}

/// The nullable time column `column` of `row`.
pub fn opt_time_column(row: &sqlx::any::AnyRow, column: &str) -> Result<Option<Timestamp>> {
    parse_opt_timestamp(row.try_get::<Option<String>, _>(column)?.as_deref())
}

pub fn now() -> String {
    Timestamp::now().to_string()
}

pub fn parse_uuid(s: &str) -> Result<uuid::Uuid> {
    uuid::Uuid::parse_str(s).map_err(|e| Error::Corrupt(format!("bad uuid {s:?}: {e}")))
}

/// A FROM item, aliased `x`, that unpacks the JSON array of objects bound at `$param` into rows
/// with text columns `fields`: how many rows travel in one statement (binding values one by one
/// through the driver costs tens of µs each). SQLite reads it with `json_each`, PostgreSQL with
/// `json_to_recordset`; cast non-text columns where they are used.
pub fn json_rows(kind: DbKind, param: usize, fields: &[&str]) -> String {
    match kind {
        DbKind::Sqlite => format!(
            "(SELECT {} FROM json_each(${param}) j) x",
            fields.iter().map(|f| format!("j.value ->> '{f}' AS {f}")).collect::<Vec<_>>().join(", ")
        ),
        DbKind::Postgres => format!(
            "json_to_recordset(CAST(${param} AS json)) AS x({})",
            fields.iter().map(|f| format!("{f} text")).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// A subquery listing the strings of the JSON array bound at `$param`, for `IN (...)`: the
/// database keys on it instead of scanning.
pub fn json_list(kind: DbKind, param: usize) -> String {
    match kind {
        DbKind::Sqlite => format!("(SELECT value FROM json_each(${param}))"),
        DbKind::Postgres => format!("(SELECT json_array_elements_text(CAST(${param} AS json)))"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    /// Forwards 127.0.0.1:`port` to `target` until aborted; dropping the task closes the
    /// listener, so connections are refused, as when PostgreSQL is stopped.
    fn forward(listener: tokio::net::TcpListener, target: String) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut copies = tokio::task::JoinSet::new();
            while let Ok((mut client, _)) = listener.accept().await {
                let target = target.clone();
                copies.spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        })
    }

    /// A file read for a handler during an outage of PostgreSQL waits for the database rather
    /// than failing the resource (and skipping everything that requires it) until a repair.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_file_read_for_a_deploy_during_a_postgres_outage_waits_for_the_database() {
        let Some(_) = test_support::postgres_admin_url() else {
            test_support::missing_prerequisite("INMANTA_TEST_POSTGRES names no PostgreSQL to put behind a proxy");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let direct = crate::testing::fresh_database_url(dir.path()).await.unwrap();
        let (user, rest) = direct.trim_start_matches("postgres://").split_once('@').unwrap();
        let (target, database) = rest.split_once('/').unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut proxy = forward(listener, target.to_string());
        let o = crate::Orchestrator::open(&format!("postgres://{user}@127.0.0.1:{port}/{database}")).await.unwrap();
        let content = b"content of a deployed file\n".to_vec();
        let hash = sha1_smol::Sha1::from(&content).digest().to_string();
        o.upload_file(&hash, &content).await.unwrap();

        proxy.abort();
        let _ = (&mut proxy).await;
        let reading = tokio::spawn({
            let (o, hash) = (o.clone(), hash.clone());
            async move { o.get_file_for_deploy(&hash, Duration::from_secs(60)).await }
        });
        // Longer than a connection is waited for: the read itself must try again.
        tokio::time::sleep(super::ACQUIRE_TIMEOUT + Duration::from_secs(2)).await;
        assert!(!reading.is_finished(), "the read gave up during the outage: {:?}", reading.await);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("the proxy's port again");
        let _proxy = forward(listener, target.to_string());
        let read = tokio::time::timeout(Duration::from_secs(30), reading).await.expect("no answer").unwrap();
        assert_eq!(read.expect("the file once the database is back"), content);
    }

    /// PostgreSQL ending a connection (as a fast shutdown or an administrator does) is the
    /// database being unreachable, answered 503, not an incident (500).
    #[tokio::test]
    async fn a_connection_ended_by_postgres_is_unreachable_not_an_incident() {
        use sqlx::Connection;
        let Some(admin) = test_support::postgres_admin_url() else {
            test_support::missing_prerequisite("INMANTA_TEST_POSTGRES names no PostgreSQL");
            return;
        };
        sqlx::any::install_default_drivers();
        let mut connection = sqlx::AnyConnection::connect(&admin).await.unwrap();
        let ended = sqlx::query("SELECT pg_terminate_backend(pg_backend_pid())").execute(&mut connection).await;
        let error = crate::Error::from(ended.expect_err("the backend ended its own connection"));
        assert!(error.is_unreachable(), "{error}");
    }

    /// A query that keeps being tried through an outage of PostgreSQL runs soon after the
    /// database is back: sqlx's pauses between connection attempts no longer grow to 6 s.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_query_waiting_through_a_postgres_outage_runs_soon_after_the_database_is_back() {
        let Some(admin) = test_support::postgres_admin_url() else {
            test_support::missing_prerequisite("INMANTA_TEST_POSTGRES names no PostgreSQL to put behind a proxy");
            return;
        };
        sqlx::any::install_default_drivers();
        let (user, rest) = admin.trim_start_matches("postgres://").split_once('@').expect("user@host in the URL");
        let (target, database) = rest.split_once('/').expect("a database in the URL");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut proxy = forward(listener, target.to_string());
        let url = format!("postgres://{user}@127.0.0.1:{port}/{database}");
        let pool = super::open_pool(super::DbKind::Postgres, &url, 2).await.unwrap();
        sqlx::query("SELECT 1").execute(&pool).await.unwrap();

        // The outage: the connections through the proxy close, new ones are refused.
        proxy.abort();
        let _ = (&mut proxy).await;
        let started = Instant::now();
        let querying = tokio::spawn(async move {
            loop {
                if sqlx::query("SELECT 1").execute(&pool).await.is_ok() {
                    return Instant::now();
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        // Back after 10.5 s: with sqlx's default acquire timeout, the waiting query's next
        // attempt came at 16.2 s.
        tokio::time::sleep(Duration::from_millis(10_500).saturating_sub(started.elapsed())).await;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.expect("the proxy's port again");
        let back = Instant::now();
        let _proxy = forward(listener, target.to_string());
        let answered = tokio::time::timeout(Duration::from_secs(30), querying).await.expect("no answer").unwrap();
        let waited = answered.duration_since(back);
        assert!(waited < Duration::from_secs(3), "the query ran {waited:?} after the database was back");
    }

    /// A write that fails because the database is full leaves the store able to write again
    /// once there is room (SQLite may end such a transaction itself; see `begin_write`).
    #[tokio::test]
    async fn a_full_database_does_not_leave_the_writer_stuck() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("full.db").display());
        let o = crate::Orchestrator::open(&url).await.unwrap();
        let store = &o.store;
        let pages: i64 = sqlx::query_scalar("PRAGMA page_count").fetch_one(&store.writer).await.unwrap();
        sqlx::query(&format!("PRAGMA max_page_count = {}", pages + 2)).execute(&store.writer).await.unwrap();
        let full = async {
            let mut tx = store.begin_write().await?;
            sqlx::query("CREATE TABLE filler (v TEXT)").execute(&mut *tx).await?;
            for _ in 0..64 {
                sqlx::query("INSERT INTO filler VALUES ($1)").bind("x".repeat(64 * 1024)).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok::<_, crate::Error>(())
        }
        .await;
        assert!(full.is_err(), "a database capped at {} pages took 4 MB", pages + 2);
        sqlx::query("PRAGMA max_page_count = 1073741823").execute(&store.writer).await.unwrap();
        let mut tx = store.begin_write().await.expect("a write once the database has room again");
        sqlx::query("CREATE TABLE after_full (v TEXT)").execute(&mut *tx).await.unwrap();
        tx.commit().await.unwrap();
    }
}
