//! The database: one sqlx pool over SQLite (embedded default) or PostgreSQL.
//!
//! Queries are written once in the SQL both databases understand and run through sqlx's `Any`
//! driver. Portable column types keep that possible: ids are TEXT (UUIDs), timestamps are TEXT
//! in a fixed-width UTC ISO-8601 form (so they sort as text), booleans are BIGINT 0/1 and JSON
//! documents are TEXT.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{AnyPool, Executor};

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
    kind: DbKind,
}

pub type Transaction = sqlx::Transaction<'static, sqlx::Any>;

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/postgres");

impl Store {
    pub async fn connect(url: &str) -> Result<Store> {
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
            DbKind::Postgres => (16, 4),
        };
        // The writer pool connects first: on a new SQLite file it is the one that creates it.
        let writer = open_pool(kind, &url, writers).await?;
        let store =
            Store { pool: open_pool(kind, &url, readers).await?, writer, probe: open_pool(kind, &url, 1).await?, kind };
        store.migrate().await?;
        Ok(store)
    }

    /// Brings the schema up to date. A database that already has every migration, each with the
    /// checksum it has now, is left alone after one query: the common start (and every
    /// `inmanta deploy`) skips the migrator's table creation, locking and bookkeeping.
    async fn migrate(&self) -> Result<()> {
        let migrator = match self.kind {
            DbKind::Sqlite => &SQLITE_MIGRATIONS,
            DbKind::Postgres => &POSTGRES_MIGRATIONS,
        };
        let applied: std::result::Result<Vec<(i64, Vec<u8>)>, _> =
            sqlx::query_as("SELECT version, checksum FROM _sqlx_migrations WHERE success")
                .fetch_all(&self.writer)
                .await;
        if let Ok(applied) = applied {
            let applied: std::collections::HashMap<i64, Vec<u8>> = applied.into_iter().collect();
            let current = applied.len() == migrator.iter().count()
                && migrator.iter().all(|m| applied.get(&m.version).is_some_and(|c| c[..] == m.checksum[..]));
            if current {
                return Ok(());
            }
        }
        migrator.run(&self.writer).await?;
        Ok(())
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    pub fn kind(&self) -> DbKind {
        self.kind
    }

    /// A transaction that will write. On SQLite it takes the write lock up front: a deferred
    /// transaction that reads first cannot upgrade once another connection committed.
    pub async fn begin_write(&self) -> Result<Transaction> {
        let waiting = std::time::Instant::now();
        let tx = match self.kind {
            DbKind::Sqlite => self.writer.begin_with("BEGIN IMMEDIATE").await?,
            DbKind::Postgres => self.writer.begin().await?,
        };
        crate::metrics::database_wait(waiting.elapsed());
        Ok(tx)
    }

    /// The server version of the database, for the status page.
    pub async fn server_version(&self) -> Result<String> {
        let sql = match self.kind {
            DbKind::Sqlite => "SELECT 'SQLite ' || sqlite_version()",
            DbKind::Postgres => "SELECT version()",
        };
        Ok(sqlx::query_scalar(sql).fetch_one(&self.pool).await?)
    }

    /// Whether the database answers, on a connection of its own: the health check never waits
    /// behind readers or writers.
    pub async fn probe(&self) -> Result<()> {
        sqlx::query_scalar::<_, i32>("SELECT 1").fetch_one(&self.probe).await?;
        Ok(())
    }

    pub async fn close(&self) {
        self.pool.close().await;
        self.writer.close().await;
        self.probe.close().await;
    }
}

async fn open_pool(kind: DbKind, url: &str, connections: u32) -> Result<AnyPool> {
    let options = AnyPoolOptions::new().max_connections(connections).acquire_timeout(Duration::from_secs(30));
    Ok(match kind {
        DbKind::Sqlite => {
            options
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        // WAL lets readers run beside the single writer; FULL sync makes
                        // every acknowledged commit survive a crash of the process or host.
                        conn.execute(
                            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; \
                             PRAGMA foreign_keys=ON; PRAGMA busy_timeout=30000;",
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

fn sqlite_path(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next()?;
    (!path.is_empty() && path != ":memory:").then_some(path)
}

/// Timestamps are stored as fixed-width UTC text so that text order is time order.
pub fn format_time(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

pub fn parse_time(s: &str) -> Result<DateTime<Utc>> {
    DateTime::<Utc>::from_str(s).map_err(|e| Error::Corrupt(format!("bad timestamp {s:?}: {e}")))
}

pub fn now() -> String {
    format_time(Utc::now())
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
