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
        remove_database_files(&partial);
        let result = sqlx::query("VACUUM INTO $1").bind(partial.display().to_string()).execute(self.pool()).await;
        if let Err(e) = result {
            // With its journal: a full filesystem left `FILE.partial-journal` behind (issue 47).
            remove_database_files(&partial);
            let why = match &e {
                sqlx::Error::Database(db) if db.message().contains("full") => "the filesystem is full".to_string(),
                sqlx::Error::Database(db) => db.message().to_string(),
                other => other.to_string(),
            };
            return Err(Error::BadRequest(format!(
                "cannot write the backup {}: {why}; nothing was left behind",
                dest.display()
            )));
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
    // Checked before the store opens it: the pool retries a connection it cannot set up for its
    // whole acquire timeout, so a damaged file took 30 s to refuse, with sqlx's words (issue 47).
    let mut header = [0u8; 16];
    let read = std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut header));
    if read.is_err() || &header != b"SQLite format 3\0" {
        return Err(not_ours("it is not an SQLite database file (it does not start with SQLite's header)".into()));
    }
    readable_by_sqlite(path).await.map_err(|why| not_ours(format!("SQLite cannot read it ({why}): it is damaged")))?;
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

/// Opens the SQLite file `path` on one connection of its own (no pool, no retries) and runs
/// SQLite's quick check; what SQLite says when that fails.
async fn readable_by_sqlite(path: &Path) -> std::result::Result<(), String> {
    use sqlx::Connection;
    sqlx::any::install_default_drivers();
    let url = format!("sqlite://{}?mode=ro", path.display());
    let message = |e: sqlx::Error| match e {
        sqlx::Error::Database(db) => db.message().to_string(),
        other => other.to_string(),
    };
    let mut conn = sqlx::AnyConnection::connect(&url).await.map_err(message)?;
    let checked: std::result::Result<String, sqlx::Error> =
        sqlx::query_scalar("PRAGMA quick_check").fetch_one(&mut conn).await;
    let _ = conn.close().await;
    match checked.map_err(message)? {
        ok if ok == "ok" => Ok(()),
        damaged => Err(damaged),
    }
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

/// The database file with its rollback journal, write-ahead log and shared-memory index.
fn remove_database_files(path: &Path) {
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backup whose pages are damaged (SQLite's header, then garbage) is refused at once,
    /// in words, without the database driver's text (issue 47: 30 s and raw sqlx errors).
    #[tokio::test]
    async fn a_damaged_backup_is_refused_at_once_with_a_clear_message() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("inmanta.db").display());
        for (name, bytes) in [
            ("junk.db", b"not a database at all".to_vec()),
            ("damaged.db", [b"SQLite format 3\0".as_slice(), &[0xA5; 8192]].concat()),
        ] {
            let file = dir.path().join(name);
            std::fs::write(&file, bytes).unwrap();
            let started = std::time::Instant::now();
            let refused = tokio::time::timeout(std::time::Duration::from_secs(10), restore_sqlite(&url, &file))
                .await
                .expect("refused within seconds, not after the pool's 30 s");
            let message = refused.expect_err("refused").to_string();
            eprintln!("{name} refused in {:?}: {message}", started.elapsed());
            assert!(message.starts_with("not an inmanta database backup: "), "{message}");
            assert!(!message.contains("error returned from database") && !message.contains("code:"), "{message}");
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
            assert!(left.iter().all(|f| !f.to_string_lossy().contains(".partial")), "{left:?}");
        }
    }

    /// A backup onto a filesystem that fills leaves nothing behind: no `FILE.partial`, no
    /// `FILE.partial-journal` (issue 47). Needs root (a small tmpfs).
    #[tokio::test]
    async fn a_backup_to_a_full_filesystem_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let full = dir.path().join("full");
        std::fs::create_dir(&full).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(&full)
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            test_support::missing_prerequisite("a full filesystem is a small tmpfs, which only root may mount");
            return;
        }
        struct Unmount<'a>(&'a Path);
        impl Drop for Unmount<'_> {
            fn drop(&mut self) {
                let _ = std::process::Command::new("umount").arg("-l").arg(self.0).status();
            }
        }
        let _unmount = Unmount(&full);
        let store = Store::connect(&format!("sqlite://{}", dir.path().join("inmanta.db").display())).await.unwrap();
        // Enough rows that the copy cannot fit in 64 KiB.
        let project = store.pool().clone();
        for i in 0..200 {
            sqlx::query("INSERT INTO project (id, name) VALUES ($1, $2)")
                .bind(uuid::Uuid::new_v4().to_string())
                .bind(format!("{i}-{}", "x".repeat(500)))
                .execute(&project)
                .await
                .unwrap();
        }
        let dest = full.join("backup.db");
        let message = store.backup_sqlite(&dest).await.expect_err("the filesystem is full").to_string();
        assert!(
            message.contains("cannot write the backup") && message.contains("nothing was left behind"),
            "{message}"
        );
        let left: Vec<_> = std::fs::read_dir(&full).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert!(left.is_empty(), "left behind: {left:?}");
        store.close().await;
    }
}
