//! Real-time drift detection: watch the paths of deployed `fs` resources (inotify through the
//! `notify` crate) and report the resource id as soon as someone else changes them, so the
//! scheduler can repair at once instead of at the next repair interval.
//!
//! Each path is watched through its parent directory, which also sees the path being deleted,
//! recreated or renamed over (what editors do).
//! Events are debounced per resource, and events caused by our own handler are ignored: call
//! [`DriftWatcher::suspend`] around a handler run, then `watch`, which records a fingerprint of
//! each path (type, size, times, mode, owner, inode, link target). An event only counts as drift
//! when the fingerprint changed since: the echo of our own writes, arriving late, leaves it as
//! recorded, while an edit made right after a deploy is still caught.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use serde_json::Value;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::resource::ResourceRequest;
use api::ResourceId;

/// Events for one resource closer together than this are reported once.
const DEBOUNCE: Duration = Duration::from_millis(50);

/// The local paths whose change means drift for this resource (none for remote hosts and
/// resource types that are not files).
pub fn watch_paths(req: &ResourceRequest) -> Vec<PathBuf> {
    let local = match req.attributes.get("via") {
        None | Some(Value::Null) => true,
        Some(v) => v.get("method_name").and_then(Value::as_str).unwrap_or("local") == "local",
    };
    let attr = match req.id.entity_type.as_str() {
        "fs::File" | "fs::Directory" => "path",
        "fs::Symlink" => "dst",
        _ => return Vec::new(),
    };
    match (local, req.opt_str(attr)) {
        (true, Some(p)) if p.starts_with('/') => vec![PathBuf::from(p)],
        _ => Vec::new(),
    }
}

struct Entry {
    paths: Vec<PathBuf>,
    /// What each path looked like when it was last deployed.
    fingerprints: Vec<Option<Fingerprint>>,
    suspended: usize,
}

/// What a path looks like, as far as drift goes. Directories leave out size and times, which
/// change whenever something inside them does.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    kind: u8,
    mode: u32,
    uid: u32,
    gid: u32,
    inode: u64,
    size: u64,
    modified: (i64, i64),
    changed: (i64, i64),
    target: Option<PathBuf>,
}

fn fingerprint(path: &Path) -> Option<Fingerprint> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    let kind = if meta.file_type().is_symlink() {
        2
    } else if meta.is_dir() {
        1
    } else {
        0
    };
    let directory = kind == 1;
    Some(Fingerprint {
        kind,
        mode: meta.mode(),
        uid: meta.uid(),
        gid: meta.gid(),
        inode: if directory { 0 } else { meta.ino() },
        size: if directory { 0 } else { meta.size() },
        modified: if directory { (0, 0) } else { (meta.mtime(), meta.mtime_nsec()) },
        changed: if directory { (0, 0) } else { (meta.ctime(), meta.ctime_nsec()) },
        target: if kind == 2 { std::fs::read_link(path).ok() } else { None },
    })
}

#[derive(Default)]
struct State {
    entries: HashMap<ResourceId, Entry>,
    /// The resources watching each path: an event is matched by its paths, not by a walk over
    /// every entry (which made a deploy of n files cost O(n²): each file's own writes raise
    /// events in a directory where the files deployed before it are watched).
    by_path: HashMap<PathBuf, Vec<ResourceId>>,
    /// Parent directories watched, with how many watched paths live in each.
    dirs: HashMap<PathBuf, usize>,
}

impl State {
    fn insert(&mut self, rid: &ResourceId, entry: Entry) {
        for p in &entry.paths {
            let rids = self.by_path.entry(p.clone()).or_default();
            if !rids.contains(rid) {
                rids.push(rid.clone());
            }
        }
        self.entries.insert(rid.clone(), entry);
    }

    fn remove(&mut self, rid: &ResourceId) -> Option<Entry> {
        let entry = self.entries.remove(rid)?;
        for p in &entry.paths {
            if let Some(rids) = self.by_path.get_mut(p) {
                rids.retain(|r| r != rid);
                if rids.is_empty() {
                    self.by_path.remove(p);
                }
            }
        }
        Some(entry)
    }

    /// The resources whose watched paths `event` touches and that are not suspended.
    fn touched_by<'a>(&'a self, event: &'a notify::Event) -> impl Iterator<Item = &'a ResourceId> + 'a {
        event
            .paths
            .iter()
            .filter_map(|p| self.by_path.get(p))
            .flatten()
            .filter(|rid| self.entries.get(*rid).is_some_and(|e| e.suspended == 0))
    }
}

/// Watches paths per resource and yields the ids of resources whose paths changed.
pub struct DriftWatcher {
    state: Arc<Mutex<State>>,
    watcher: Mutex<RecommendedWatcher>,
}

/// Keeps a resource's events ignored while it lives (see [`DriftWatcher::suspend`]).
pub struct SuspendGuard {
    state: Arc<Mutex<State>>,
    rid: ResourceId,
}

impl Drop for SuspendGuard {
    fn drop(&mut self) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = st.entries.get_mut(&self.rid) {
            e.suspended = e.suspended.saturating_sub(1);
            // What was written while suspended is ours: it is the new state to compare against.
            e.fingerprints = e.paths.iter().map(|p| fingerprint(p)).collect();
        }
    }
}

impl DriftWatcher {
    /// Starts the watcher; the receiver yields a resource id each time its paths drift.
    pub fn new() -> Result<(DriftWatcher, UnboundedReceiver<ResourceId>), String> {
        let state = Arc::new(Mutex::new(State::default()));
        let (raw_tx, raw_rx) = mpsc::channel::<notify::Event>();
        let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            if let Ok(ev) = res {
                let _ = raw_tx.send(ev);
            }
        })
        .map_err(|e| format!("cannot start the file watcher: {e}"))?;
        let (tx, rx) = unbounded_channel();
        let st = state.clone();
        thread::Builder::new()
            .name("drift-watcher".into())
            .spawn(move || debounce_loop(st, raw_rx, tx))
            .map_err(|e| format!("cannot start the drift thread: {e}"))?;
        Ok((DriftWatcher { state, watcher: Mutex::new(watcher) }, rx))
    }

    /// Watches `paths` for `rid` (replacing what was watched for it before).
    pub fn watch(&self, rid: &ResourceId, paths: &[PathBuf]) -> Result<(), String> {
        self.unwatch(rid);
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut watcher = self.watcher.lock().unwrap_or_else(|p| p.into_inner());
        let mut added: Vec<PathBuf> = Vec::new();
        for p in paths {
            let dir = p.parent().unwrap_or(Path::new("/")).to_path_buf();
            if !st.dirs.contains_key(&dir)
                && let Err(e) = watcher.watch(&dir, RecursiveMode::NonRecursive)
            {
                for d in &added {
                    release_dir(&mut st, &mut watcher, d);
                }
                return Err(format!("cannot watch {}: {e}", dir.display()));
            }
            *st.dirs.entry(dir.clone()).or_default() += 1;
            added.push(dir);
        }
        let fingerprints = paths.iter().map(|p| fingerprint(p)).collect();
        let entry = Entry { paths: paths.to_vec(), fingerprints, suspended: 0 };
        st.insert(rid, entry);
        Ok(())
    }

    /// Stops watching `rid`'s paths.
    pub fn unwatch(&self, rid: &ResourceId) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let Some(entry) = st.remove(rid) else { return };
        let mut watcher = self.watcher.lock().unwrap_or_else(|p| p.into_inner());
        for p in &entry.paths {
            let dir = p.parent().unwrap_or(Path::new("/")).to_path_buf();
            release_dir(&mut st, &mut watcher, &dir);
        }
    }

    /// Ignores `rid`'s events until the guard is dropped: hold it while its handler runs.
    pub fn suspend(&self, rid: &ResourceId) -> SuspendGuard {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = st.entries.get_mut(rid) {
            e.suspended += 1;
        }
        SuspendGuard { state: self.state.clone(), rid: rid.clone() }
    }

    /// The resources being watched.
    pub fn watched(&self) -> Vec<ResourceId> {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).entries.keys().cloned().collect()
    }
}

fn release_dir(st: &mut State, watcher: &mut RecommendedWatcher, dir: &Path) {
    if let Some(n) = st.dirs.get_mut(dir) {
        *n -= 1;
        if *n == 0 {
            st.dirs.remove(dir);
            let _ = watcher.unwatch(dir);
        }
    }
}

fn debounce_loop(state: Arc<Mutex<State>>, raw: mpsc::Receiver<notify::Event>, tx: UnboundedSender<ResourceId>) {
    let mut pending: HashMap<ResourceId, Instant> = HashMap::new();
    loop {
        let wait = pending.values().min().map(|d| d.saturating_duration_since(Instant::now()));
        let received = match wait {
            Some(w) => raw.recv_timeout(w),
            None => raw.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        match received {
            Ok(ev) => {
                if matches!(ev.kind, EventKind::Access(a) if a != AccessKind::Close(AccessMode::Write)) {
                    continue;
                }
                let now = Instant::now();
                let st = state.lock().unwrap_or_else(|p| p.into_inner());
                for rid in st.touched_by(&ev) {
                    pending.entry(rid.clone()).or_insert(now + DEBOUNCE);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        let now = Instant::now();
        let due: Vec<ResourceId> = pending.iter().filter(|(_, d)| **d <= now).map(|(r, _)| r.clone()).collect();
        let st = state.lock().unwrap_or_else(|p| p.into_inner());
        for rid in due {
            pending.remove(&rid);
            // Only a path that no longer looks as deployed is drift (not the echo of our writes).
            let drifted = st.entries.get(&rid).is_some_and(|e| {
                e.suspended == 0 && e.paths.iter().zip(&e.fingerprints).any(|(p, f)| fingerprint(p) != *f)
            });
            let still = drifted;
            if still && tx.send(rid).is_err() {
                return;
            }
        }
    }
}
