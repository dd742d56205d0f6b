//! Shared helpers: an in-memory file store and short ways to build and run resources.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use agent::{Events, Executor, FileSource, Mode, Outcome, ResourceRequest};
use serde_json::Value;

/// File contents by sha1, like the server's file store.
#[derive(Default)]
pub struct MemFiles(Mutex<HashMap<String, Vec<u8>>>);

impl MemFiles {
    pub fn add(&self, content: &str) -> String {
        let hash = sha1_smol::Sha1::from(content.as_bytes()).digest().to_string();
        self.0.lock().unwrap().insert(hash.clone(), content.as_bytes().to_vec());
        hash
    }

    /// Stores content under a hash of the caller's choosing (to test that a mismatch is caught).
    pub fn put(&self, hash: &str, content: &str) {
        self.0.lock().unwrap().insert(hash.to_string(), content.as_bytes().to_vec());
    }
}

impl FileSource for MemFiles {
    fn get(&self, hash: &str) -> Result<Vec<u8>, String> {
        self.0.lock().unwrap().get(hash).cloned().ok_or_else(|| format!("no file {hash}"))
    }
}

pub fn executor() -> (Executor, Arc<MemFiles>) {
    let files = Arc::new(MemFiles::default());
    (Executor::new(files.clone()), files)
}

pub fn req(v: Value) -> ResourceRequest {
    ResourceRequest::from_json(&v).unwrap()
}

pub fn deploy(ex: &Executor, r: &ResourceRequest) -> Outcome {
    ex.execute(r, Mode::Deploy, &Events::default())
}

pub fn dry(ex: &Executor, r: &ResourceRequest) -> Outcome {
    ex.execute(r, Mode::DryRun, &Events::default())
}

pub fn mode_of(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

pub fn logs(o: &Outcome) -> String {
    o.logs.iter().map(|l| format!("{}: {}\n", l.level, l.msg)).collect()
}

pub fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}
