//! `inmanta server --check`, `inmanta server backup FILE` and `inmanta server restore FILE`:
//! what an operator runs around upgrades (docs/operations.md).
//!
//! Exit codes: 0 done (for `--check`: the database is current), 1 migrations are pending
//! (`--check` only), 2 it cannot be done (bad configuration, an unreachable or foreign database,
//! a database of a newer release, a server running on the database being restored).

use std::path::Path;
use std::process::ExitCode;

use orchestrator::Store;
use orchestrator::migrations::{MigrationStatus, known};

use crate::config::ServerConfig;

/// Says whether the database needs migrations, without changing it.
pub async fn check(config: &ServerConfig) -> ExitCode {
    let status = match migration_status(config).await {
        Ok(status) => status,
        Err(e) => return cannot(e),
    };
    let database = config.storage.database_display();
    if status.is_current() {
        println!("{database}: up to date for release {} ({} migrations applied)", api::VERSION, status.applied);
        return ExitCode::SUCCESS;
    }
    println!(
        "{database}: {} migration(s) pending for release {} ({} applied); `inmanta server` applies them at start, \
         all in one transaction:",
        status.pending.len(),
        api::VERSION,
        status.applied
    );
    for (version, description) in &status.pending {
        println!("  {version:04} {description}");
    }
    ExitCode::from(1)
}

/// A new SQLite database is not created just to be checked: every migration is pending.
async fn migration_status(config: &ServerConfig) -> orchestrator::Result<MigrationStatus> {
    if let Some(path) = sqlite_file(&config.storage.database_url)
        && !path.exists()
    {
        let pending =
            known(orchestrator::DbKind::Sqlite).iter().map(|m| (m.version, m.description.to_string())).collect();
        return Ok(MigrationStatus { applied: 0, pending });
    }
    let store = Store::open(&config.storage.database_url).await?;
    let status = store.migration_status().await;
    store.close().await;
    status
}

/// Writes a consistent copy of the SQLite database to `file`, also while a server runs on it.
pub async fn backup(config: &ServerConfig, file: &Path) -> ExitCode {
    if sqlite_file(&config.storage.database_url).is_some_and(|p| !p.exists()) {
        return cannot(format!("there is no database at {} to back up", config.storage.database_display()));
    }
    let result = async {
        let store = Store::open(&config.storage.database_url).await?;
        let size = store.backup_sqlite(file).await;
        store.close().await;
        size
    }
    .await;
    match result {
        Ok(size) => {
            println!("backed up {} to {} ({size} bytes)", config.storage.database_display(), file.display());
            ExitCode::SUCCESS
        }
        Err(e) => cannot(e),
    }
}

/// Replaces the SQLite database by the backup `file` (the server must be stopped).
pub async fn restore(config: &ServerConfig, file: &Path) -> ExitCode {
    match orchestrator::backup::restore_sqlite(&config.storage.database_url, file).await {
        Ok(restored) => {
            println!("restored {} from {}", config.storage.database_display(), file.display());
            if let Some(previous) = restored.previous {
                println!("the database it replaced is kept as {}", previous.display());
            }
            if restored.pending_migrations > 0 {
                println!(
                    "the backup comes from an older release: the next start applies {} migration(s)",
                    restored.pending_migrations
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => cannot(e),
    }
}

fn sqlite_file(url: &str) -> Option<&Path> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    rest.split('?').next().filter(|p| !p.is_empty()).map(Path::new)
}

fn cannot(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(2)
}
