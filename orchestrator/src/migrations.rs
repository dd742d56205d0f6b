//! Schema migrations (`migrations/sqlite`, `migrations/postgres`), applied all in one
//! transaction: a migration that fails leaves the database exactly as it was before the start,
//! with none of the pending migrations applied (sqlx's migrator commits each migration on its
//! own, so a failure half-way left a database between two releases).
//!
//! The bookkeeping table is sqlx's `_sqlx_migrations` (same columns, same checksums), so
//! databases migrated before keep working and the `sqlx` CLI can still read them.

use sqlx::migrate::Migration;

use crate::store::Transaction;
use crate::{DbKind, Error, Result, Store};

static SQLITE: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/postgres");

/// Serialises the migration of several servers starting at once on one PostgreSQL (held until
/// the migration transaction ends). Any fixed number: it only has to be the same everywhere.
const POSTGRES_MIGRATION_LOCK: i64 = 0x0069_6e6d_616e_7461;

/// The migrations this binary carries for a database of `kind`.
pub fn known(kind: DbKind) -> &'static [Migration] {
    match kind {
        DbKind::Sqlite => &SQLITE.migrations,
        DbKind::Postgres => &POSTGRES.migrations,
    }
}

/// How a database's schema compares with this binary's migrations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationStatus {
    /// Versions applied.
    pub applied: usize,
    /// Migrations this binary would apply, in order: `(version, description)`.
    pub pending: Vec<(i64, String)>,
}

impl MigrationStatus {
    pub fn is_current(&self) -> bool {
        self.pending.is_empty()
    }
}

/// One row of `_sqlx_migrations`.
struct Applied {
    version: i64,
    checksum: Vec<u8>,
    success: bool,
}

/// What `store`'s database has applied; an empty list when it has no migration table yet.
async fn applied(executor: impl sqlx::Executor<'_, Database = sqlx::Any>) -> Result<Option<Vec<Applied>>> {
    // The Any driver reads no SQLite BOOLEAN: the flag comes back as a number.
    let rows: std::result::Result<Vec<(i64, Vec<u8>, i64)>, _> = sqlx::query_as(
        "SELECT version, checksum, CAST(CASE WHEN success THEN 1 ELSE 0 END AS BIGINT) FROM _sqlx_migrations \
         ORDER BY version",
    )
    .fetch_all(executor)
    .await;
    match rows {
        Ok(rows) => Ok(Some(
            rows.into_iter()
                .map(|(version, checksum, success)| Applied { version, checksum, success: success != 0 })
                .collect(),
        )),
        // No table yet: a new database.
        Err(sqlx::Error::Database(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Compares what was applied with `migrations`: the pending ones, or why this binary must not
/// touch the database (a newer release migrated it, a migration was changed after it was applied,
/// a failed migration was left by another tool).
fn compare(applied: &[Applied], migrations: &[Migration]) -> Result<MigrationStatus> {
    for row in applied {
        if !row.success {
            return Err(Error::Corrupt(format!(
                "migration {} is recorded as failed in _sqlx_migrations: the database was left half-migrated by \
                 another tool; restore a backup",
                row.version
            )));
        }
        match migrations.iter().find(|m| m.version == row.version) {
            None => {
                return Err(Error::Conflict(format!(
                    "the database has migration {} which this release ({}) does not know: a newer release \
                     migrated it. Run that release, or restore a backup taken before the upgrade",
                    row.version,
                    api::VERSION
                )));
            }
            Some(m) if m.checksum[..] != row.checksum[..] => {
                return Err(Error::Corrupt(format!(
                    "migration {} ({}) was changed after it was applied to this database",
                    m.version, m.description
                )));
            }
            Some(_) => {}
        }
    }
    let pending = migrations
        .iter()
        .filter(|m| !applied.iter().any(|a| a.version == m.version))
        .map(|m| (m.version, m.description.to_string()))
        .collect();
    Ok(MigrationStatus { applied: applied.len(), pending })
}

impl Store {
    /// Whether migrations are pending, without changing anything.
    pub async fn migration_status(&self) -> Result<MigrationStatus> {
        let applied = applied(self.pool()).await?.unwrap_or_default();
        compare(&applied, known(self.kind()))
    }

    /// Brings the schema up to date with this binary's migrations, all in one transaction. A
    /// database already current costs one query (every start and every `inmanta deploy`).
    pub(crate) async fn migrate(&self) -> Result<()> {
        self.apply_migrations(known(self.kind())).await
    }

    /// Applies the migrations of `migrations` that the database lacks, in one transaction.
    pub async fn apply_migrations(&self, migrations: &[Migration]) -> Result<()> {
        if let Some(applied) = applied(self.pool()).await?
            && compare(&applied, migrations)?.is_current()
        {
            return Ok(());
        }
        let mut tx = self.begin_write().await?;
        if self.kind() == DbKind::Postgres {
            sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(POSTGRES_MIGRATION_LOCK).execute(&mut *tx).await?;
        }
        sqlx::raw_sql(create_table(self.kind())).execute(&mut *tx).await?;
        // Read again under the lock: another server may have migrated meanwhile.
        let applied = applied(&mut *tx).await?.unwrap_or_default();
        let status = compare(&applied, migrations)?;
        for (version, description) in &status.pending {
            let migration = migrations.iter().find(|m| m.version == *version).expect("pending comes from migrations");
            apply_one(&mut tx, migration).await.map_err(|e| {
                Error::BadRequest(format!(
                    "migration {version} ({description}) failed, so none of the {} pending migrations was applied \
                     and the database is as it was: {e}",
                    status.pending.len()
                ))
            })?;
        }
        tx.commit().await?;
        if !status.pending.is_empty() {
            tracing::info!(applied = status.pending.len(), "database migrated");
        }
        Ok(())
    }
}

async fn apply_one(tx: &mut Transaction, migration: &Migration) -> Result<()> {
    let started = std::time::Instant::now();
    sqlx::raw_sql(&migration.sql).execute(&mut **tx).await?;
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES ($1, $2, TRUE, $3, $4)",
    )
    .bind(migration.version)
    .bind(migration.description.to_string())
    .bind(migration.checksum.to_vec())
    .bind(i64::try_from(started.elapsed().as_nanos()).unwrap_or(i64::MAX))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// sqlx's own definition of its table, so both tools read the same rows.
fn create_table(kind: DbKind) -> &'static str {
    match kind {
        DbKind::Sqlite => {
            "CREATE TABLE IF NOT EXISTS _sqlx_migrations (version BIGINT PRIMARY KEY, description TEXT NOT NULL, \
             installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, success BOOLEAN NOT NULL, \
             checksum BLOB NOT NULL, execution_time BIGINT NOT NULL)"
        }
        DbKind::Postgres => {
            "CREATE TABLE IF NOT EXISTS _sqlx_migrations (version BIGINT PRIMARY KEY, description TEXT NOT NULL, \
             installed_on TIMESTAMPTZ NOT NULL DEFAULT now(), success BOOLEAN NOT NULL, \
             checksum BYTEA NOT NULL, execution_time BIGINT NOT NULL)"
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use sqlx::migrate::MigrationType;

    use super::*;

    fn extra(version: i64, sql: &'static str) -> Migration {
        Migration::new(version, Cow::Borrowed("test"), MigrationType::Simple, Cow::Borrowed(sql), false)
    }

    async fn tables(store: &Store) -> Vec<String> {
        let sql = match store.kind() {
            DbKind::Sqlite => "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
            DbKind::Postgres => "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
        };
        sqlx::query_scalar(sql).fetch_all(store.pool()).await.unwrap()
    }

    /// A release that brings two migrations, the second of which fails: the first one's table
    /// and its bookkeeping row are gone too, and the real migrations that were pending as well
    /// are not applied either. Runs on PostgreSQL with INMANTA_TEST_POSTGRES.
    #[tokio::test]
    async fn a_failed_migration_leaves_the_database_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let url = crate::testing::fresh_database_url(dir.path()).await.unwrap();
        let store = Store::open(&url).await.unwrap();
        let real = known(store.kind());
        let older = &real[..real.len() - 2];
        store.apply_migrations(older).await.unwrap();
        let before = tables(&store).await;
        let status = store.migration_status().await.unwrap();
        assert_eq!(status.pending.len(), 2, "{status:?}");

        let mut failing = real.to_vec();
        failing.push(extra(9001, "CREATE TABLE migration_test (id BIGINT PRIMARY KEY);"));
        failing.push(extra(9002, "INSERT INTO migration_test (id) VALUES (1); INSERT INTO no_such_table VALUES (1);"));
        let err = store.apply_migrations(&failing).await.unwrap_err().to_string();
        assert!(err.contains("migration 9002") && err.contains("as it was"), "{err}");
        assert_eq!(tables(&store).await, before, "no table of the failed run stays");
        assert_eq!(store.migration_status().await.unwrap(), status, "no migration recorded");

        // The same database then migrates normally, and is current afterwards.
        store.apply_migrations(real).await.unwrap();
        assert!(store.migration_status().await.unwrap().is_current());
        store.close().await;
    }

    #[tokio::test]
    async fn a_database_of_a_newer_release_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let url = crate::testing::fresh_database_url(dir.path()).await.unwrap();
        let store = Store::connect(&url).await.unwrap();
        let mut newer = known(store.kind()).to_vec();
        newer.push(extra(9001, "CREATE TABLE newer_release (id BIGINT PRIMARY KEY);"));
        store.apply_migrations(&newer).await.unwrap();
        let err = store.migration_status().await.unwrap_err().to_string();
        assert!(err.contains("migration 9001") && err.contains("newer release"), "{err}");
        store.close().await;
    }
}
