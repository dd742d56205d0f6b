//! Handler executables that modules ship (`handlers/<namespace>__<Type>`, docs/handlers.md).
//! A version names them by the sha1 of their content; the agent fetches each one once through
//! its [`FileSource`], checks the sha1 and keeps it as `<dir>/<sha1>` with mode 0755, so every
//! version that ships the same code shares one file and a changed handler gets a new one.

use std::collections::HashSet;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::resource::FileSource;

/// The on-disk cache of shipped handler executables.
pub struct ShippedHandlers {
    dir: PathBuf,
    /// Hashes whose file was written or checked by this process; checking reads the whole file,
    /// so it is done once per process rather than once per resource.
    verified: Mutex<HashSet<String>>,
    /// Makes temporary names unique between threads of this process.
    next_temp: AtomicU64,
}

impl ShippedHandlers {
    /// A cache in `dir`, created when the first handler is stored.
    pub fn new(dir: PathBuf) -> ShippedHandlers {
        ShippedHandlers { dir, verified: Mutex::default(), next_temp: AtomicU64::new(0) }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of the executable whose content has sha1 `hash`, fetched through `files` unless
    /// a verified copy is on disk already.
    pub fn program(&self, hash: &str, files: &dyn FileSource) -> Result<PathBuf, String> {
        if hash.len() != 40 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("{hash:?} is not the sha1 of a shipped handler"));
        }
        let hash = hash.to_ascii_lowercase();
        let path = self.dir.join(&hash);
        let known = self.verified.lock().unwrap_or_else(|p| p.into_inner()).contains(&hash);
        if known && path.is_file() {
            return Ok(path);
        }
        if let Ok(content) = std::fs::read(&path) {
            if sha1_hex(&content) == hash {
                // Someone may have changed the mode by hand; the handler must stay runnable.
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                    .map_err(|e| format!("cannot make {} executable: {e}", path.display()))?;
                self.remember(&hash);
                return Ok(path);
            }
            tracing::warn!(path = %path.display(), "a cached handler does not match its sha1; fetching it again");
        }
        let content = files.get(&hash).map_err(|e| format!("cannot fetch the shipped handler {hash}: {e}"))?;
        let actual = sha1_hex(&content);
        if actual != hash {
            return Err(format!("the shipped handler fetched as {hash} has sha1 {actual}; refusing to run it"));
        }
        self.store(&path, &content)?;
        self.remember(&hash);
        Ok(path)
    }

    fn remember(&self, hash: &str) {
        self.verified.lock().unwrap_or_else(|p| p.into_inner()).insert(hash.to_string());
    }

    /// Writes under a temporary name and renames: a concurrent reader sees the whole file or none.
    fn store(&self, path: &Path, content: &[u8]) -> Result<(), String> {
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| format!("cannot create the handler cache {}: {e}", self.dir.display()))?;
        let temp = self.dir.join(format!(
            ".{}.{}.{}.tmp",
            path.file_name().and_then(|n| n.to_str()).unwrap_or("handler"),
            std::process::id(),
            self.next_temp.fetch_add(1, Ordering::Relaxed)
        ));
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o755)
            .open(&temp)
            .and_then(|mut f| f.write_all(content).and_then(|()| f.sync_all()));
        let result = written
            // The umask may have dropped bits from the mode given at creation.
            .and_then(|()| std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(0o755)))
            .and_then(|()| std::fs::rename(&temp, path));
        if let Err(e) = result {
            let _ = std::fs::remove_file(&temp);
            return Err(format!("cannot store the shipped handler as {}: {e}", path.display()));
        }
        Ok(())
    }
}

fn sha1_hex(content: &[u8]) -> String {
    sha1_smol::Sha1::from(content).digest().to_string()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    struct Counted {
        files: HashMap<String, Vec<u8>>,
        fetches: AtomicUsize,
    }

    impl FileSource for Counted {
        fn get(&self, hash: &str) -> Result<Vec<u8>, String> {
            self.fetches.fetch_add(1, Ordering::Relaxed);
            self.files.get(hash).cloned().ok_or_else(|| format!("no file {hash}"))
        }
    }

    #[test]
    fn fetches_once_verifies_and_refetches_a_tampered_copy() {
        let dir = tempfile::tempdir().unwrap();
        let content = b"#!/bin/sh\necho '{}'\n".to_vec();
        let hash = sha1_hex(&content);
        let source = Counted { files: HashMap::from([(hash.clone(), content.clone())]), fetches: AtomicUsize::new(0) };
        let cache = ShippedHandlers::new(dir.path().join("handlers"));
        let path = cache.program(&hash, &source).unwrap();
        assert_eq!(path, dir.path().join("handlers").join(&hash));
        assert_eq!(std::fs::read(&path).unwrap(), content);
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o755);
        cache.program(&hash, &source).unwrap();
        assert_eq!(source.fetches.load(Ordering::Relaxed), 1, "cached after the first fetch");

        // A new process finds a copy that was changed on disk: it is replaced.
        std::fs::write(&path, b"#!/bin/sh\nrm -rf /\n").unwrap();
        let again = ShippedHandlers::new(dir.path().join("handlers"));
        again.program(&hash, &source).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), content);
        assert_eq!(source.fetches.load(Ordering::Relaxed), 2);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("handlers")).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary files stay behind");
    }

    #[test]
    fn refuses_content_that_does_not_match_its_hash() {
        let dir = tempfile::tempdir().unwrap();
        let hash = sha1_hex(b"the real one");
        let source = Counted {
            files: HashMap::from([(hash.clone(), b"something else".to_vec())]),
            fetches: AtomicUsize::new(0),
        };
        let cache = ShippedHandlers::new(dir.path().to_path_buf());
        let err = cache.program(&hash, &source).unwrap_err();
        assert!(err.contains("refusing to run it"), "{err}");
        assert!(!dir.path().join(&hash).exists());
        assert!(cache.program("not-a-hash", &source).is_err());
    }
}
