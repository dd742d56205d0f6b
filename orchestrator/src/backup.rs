//! Backup and restore of an SQLite database (`inmanta server backup FILE` / `restore FILE`).
//! PostgreSQL has its own tools (`pg_dump`, `pg_restore`; docs/operations.md).
//!
//! A backup is `VACUUM INTO`: SQLite copies the database as one read transaction sees it, so the
//! copy is consistent while the server keeps deploying (WAL: the server's writers are not
//! blocked), and it is a plain database file that `sqlite3` opens too.

use std::path::{Path, PathBuf};

use crate::store::{claim_sqlite_file, sqlite_path};
use crate::{DbKind, Error, Result, Store};

/// What a restore did.
#[derive(Debug)]
pub struct Restored {
    /// Where the database that was replaced was kept (none when there was none).
    pub previous: Option<PathBuf>,
    /// Migrations the server will apply at its next start (a backup of an older release).
    pub pending_migrations: usize,
}

impl Store {
    /// Writes a consistent copy of this SQLite database to `dest`, which must not exist yet.
    /// The copy appears under its name only once complete. Returns its size in bytes.
    pub async fn backup_sqlite(&self, dest: &Path) -> Result<u64> {
        if self.kind() != DbKind::Sqlite {
            return Err(Error::BadRequest(
                "backup works on SQLite only: back PostgreSQL up with pg_dump (docs/operations.md)".into(),
            ));
        }
        if dest.exists() {
            return Err(Error::Conflict(format!("{} exists already: choose a new file name", dest.display())));
        }
        let partial = partial_name(dest);
        let _ = std::fs::remove_file(&partial);
        let result = sqlx::query("VACUUM INTO $1").bind(partial.display().to_string()).execute(self.pool()).await;
        if let Err(e) = result {
            let _ = std::fs::remove_file(&partial);
            return Err(Error::BadRequest(format!("cannot write the backup {}: {e}", dest.display())));
        }
        std::fs::rename(&partial, dest)
            .map_err(|e| Error::BadRequest(format!("cannot move the backup into {}: {e}", dest.display())))?;
        Ok(std::fs::metadata(dest).map(|m| m.len()).unwrap_or_default())
    }
}

/// Replaces the SQLite database of `url` by the backup `backup`. Refused while a server runs on
/// that database. The backup is checked first (an SQLite database of this product, of this or
/// an older release); the database it replaces is kept beside it as
/// `<name>.before-restore-<time>`.
pub async fn restore_sqlite(url: &str, backup: &Path) -> Result<Restored> {
    let Some(target) = sqlite_path(url).map(PathBuf::from) else {
        return Err(Error::BadRequest(
            "restore works on SQLite only: restore PostgreSQL with pg_restore or psql (docs/operations.md)".into(),
        ));
    };
    if !backup.is_file() {
        return Err(Error::NotFound(format!("no backup file {}", backup.display())));
    }
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::BadRequest(format!("cannot create {}: {e}", parent.display())))?;
    }
    let _lock = claim_sqlite_file(&target.display().to_string()).map_err(|e| match e {
        Error::Conflict(_) => Error::Conflict(format!(
            "a server runs on {}: stop it before restoring (a backup can be taken while it runs)",
            target.display()
        )),
        other => other,
    })?;

    // Check a copy next to the target, so the final step is a rename on one filesystem.
    let incoming = partial_name(&target);
    std::fs::copy(backup, &incoming)
        .map_err(|e| Error::BadRequest(format!("cannot copy {} to {}: {e}", backup.display(), incoming.display())))?;
    let pending_migrations = match check_backup(&incoming).await {
        Ok(pending) => pending,
        Err(e) => {
            remove_database_files(&incoming);
            return Err(e);
        }
    };

    let previous = if target.exists() {
        let kept = PathBuf::from(format!(
            "{}.before-restore-{}",
            target.display(),
            chrono::Utc::now().format("%Y%m%dT%H%M%S")
        ));
        // Through SQLite, so what the write-ahead log of the old database holds is kept too.
        let store = Store::open(&format!("sqlite://{}", target.display())).await?;
        let kept_copy = store.backup_sqlite(&kept).await;
        store.close().await;
        kept_copy?;
        Some(kept)
    } else {
        None
    };
    remove_database_files(&target);
    std::fs::rename(&incoming, &target)
        .map_err(|e| Error::BadRequest(format!("cannot move the restored database into place: {e}")))?;
    give_to_directory_owner(&target);
    Ok(Restored { previous, pending_migrations })
}

/// The migrations a server would apply to the database `path`: an error when it is no database
/// of this product, is damaged, or comes from a newer release.
async fn check_backup(path: &Path) -> Result<usize> {
    let not_ours = |why: String| Error::BadRequest(format!("not an inmanta database backup: {why}"));
    let store = Store::open(&format!("sqlite://{}", path.display())).await.map_err(|e| not_ours(e.to_string()))?;
    let checked = async {
        let integrity: String = sqlx::query_scalar("PRAGMA quick_check").fetch_one(store.pool()).await?;
        if integrity != "ok" {
            return Err(not_ours(format!("SQLite finds it damaged: {integrity}")));
        }
        let status = store.migration_status().await?;
        if status.applied == 0 {
            return Err(not_ours("it has no inmanta schema".into()));
        }
        Ok(status.pending.len())
    }
    .await;
    store.close().await;
    checked
}

/// A restore run by root for a server that runs as its own user (the Debian package's `inmanta`):
/// the restored database and the server's lock file get the owner of the directory they are in,
/// or the server could not write them. Nothing to do (and not allowed) for anyone else.
fn give_to_directory_owner(database: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Some(owner) = database.parent().and_then(|dir| std::fs::metadata(dir).ok()) else { return };
    for file in [database.to_path_buf(), PathBuf::from(format!("{}.server-lock", database.display()))] {
        if std::fs::metadata(&file).is_ok_and(|m| m.uid() != owner.uid()) {
            let _ = std::os::unix::fs::chown(&file, Some(owner.uid()), Some(owner.gid()));
        }
    }
}

/// `FILE.partial`: where a file is written before it is renamed into place.
fn partial_name(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}.partial", path.display()))
}

/// The database file with its write-ahead log and shared-memory index.
fn remove_database_files(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}
