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

#[derive(Clone)]
pub struct Store {
    pool: AnyPool,
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
        let pool = match kind {
            DbKind::Sqlite => {
                if let Some(parent) = sqlite_path(url).and_then(|p| Path::new(p).parent().map(Path::to_path_buf))
                    && !parent.as_os_str().is_empty()
                {
                    std::fs::create_dir_all(&parent).map_err(|e| {
                        Error::BadRequest(format!("cannot create database directory {}: {e}", parent.display()))
                    })?;
                }
                let url = if url.contains("mode=") {
                    url.to_string()
                } else if url.contains('?') {
                    format!("{url}&mode=rwc")
                } else {
                    format!("{url}?mode=rwc")
                };
                AnyPoolOptions::new()
                    .max_connections(8)
                    .acquire_timeout(Duration::from_secs(30))
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
                    .connect(&url)
                    .await?
            }
            DbKind::Postgres => {
                AnyPoolOptions::new().max_connections(16).acquire_timeout(Duration::from_secs(30)).connect(url).await?
            }
        };
        let store = Store { pool, kind };
        match kind {
            DbKind::Sqlite => SQLITE_MIGRATIONS.run(&store.pool).await?,
            DbKind::Postgres => POSTGRES_MIGRATIONS.run(&store.pool).await?,
        }
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
    pub async fn begin_write(&self) -> Result<Transaction> {
        let waiting = std::time::Instant::now();
        let tx = match self.kind {
            DbKind::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await?,
            DbKind::Postgres => self.pool.begin().await?,
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

    pub async fn close(&self) {
        self.pool.close().await;
    }
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
