//! One Python kept loaded, for a tool that compiles the same project again and again (the
//! language server, on every change). Starting Python, importing inmanta-core and then the
//! modules' code takes hundreds of milliseconds, most of such a compile. So the first compile's
//! Python, once it has imported the modules, is kept: each compile is served by a fork of it
//! (`{"op": "fork"}`), which starts with the modules imported and nothing of an earlier compile,
//! and ends when the compile does (`{"op": "exit"}`); the loaded Python then waits for the next.
//!
//! The loaded Python serves a compile only when that compile asks for the very same load and no
//! Python file of those modules changed after it was loaded: an edited plugin is imported anew.
//! One left when the process ends stops by itself (its stdin closes).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde_json::Value as Json;

use super::bridge::{Bridge, BridgeError, START_LIMIT};
use super::protocol::{Answer, Forked, Loaded, Ready, Request};

/// What a loaded Python was started and loaded for, and what the load answered.
pub(crate) struct LoadedPython {
    python: PathBuf,
    cwd: PathBuf,
    /// The load request, as sent.
    load: Json,
    since: SystemTime,
    answer: Answer<Loaded>,
}

/// The loaded Python between compiles: at most one, a tool compiles one project at a time.
static IDLE: Mutex<Option<(Bridge, LoadedPython)>> = Mutex::new(None);

/// A ready Python for a compile, and the answer to `load` when it was loaded already. With
/// `keep_loaded`, the compile is served by a fork of the kept Python (started and loaded first
/// when there is none for this load); else by a Python of its own. `changed_since` says whether
/// a Python file of the modules changed after a moment.
pub(crate) fn take_or_start(
    python: &Path,
    cwd: &Path,
    limit: std::time::Duration,
    keep_loaded: bool,
    load: &Request<'_>,
    changed_since: impl Fn(SystemTime) -> bool,
) -> Result<(Bridge, Option<Answer<Loaded>>), BridgeError> {
    if !keep_loaded {
        return Bridge::start(python, cwd, limit).map(|bridge| (bridge, None));
    }
    let sent = serde_json::to_value(load).map_err(|e| BridgeError::Failed(format!("a load request: {e}")))?;
    let idle = IDLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
    let (mut parent, loaded) = match idle {
        Some((parent, loaded))
            if loaded.python == python && loaded.cwd == cwd && loaded.load == sent && !changed_since(loaded.since) =>
        {
            (parent, loaded)
        }
        // none yet, or loaded for other modules or older code (dropping it stops it)
        _ => {
            let mut parent = Bridge::start(python, cwd, limit)?;
            let since = SystemTime::now();
            let answer = parent.request::<Loaded>(load, &mut super::NoQuestions)?;
            let loaded =
                LoadedPython { python: python.to_path_buf(), cwd: cwd.to_path_buf(), load: sent, since, answer };
            (parent, loaded)
        }
    };
    parent.send(&Request::Fork)?;
    let _: Forked = parent.read()?;
    let answer = loaded.answer.clone();
    let mut child = parent.take_process().expect("a started bridge has its process");
    child.set_limit(limit.max(START_LIMIT));
    child.fork_of = Some(loaded);
    drop(parent);
    Ok((child, Some(answer)))
}

/// The end of a forked compile: its fork exits, and the loaded Python, idle again once it has
/// said so, is kept for the next compile. One that does not say so is stopped.
pub(crate) fn give_back(mut parent: Bridge, loaded: LoadedPython) {
    parent.set_limit(std::time::Duration::from_secs(10));
    let idle = parent.send(&Request::Exit).and_then(|()| parent.read::<Ready>());
    if idle.is_ok() {
        *IDLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some((parent, loaded));
    }
}

/// Whether a Python file under one of `dirs` was modified after `since`.
pub(crate) fn python_changed_since(dirs: &[&Path], since: SystemTime) -> bool {
    fn walk(dir: &Path, since: SystemTime, depth: usize) -> bool {
        let Ok(entries) = std::fs::read_dir(dir) else { return false };
        entries.flatten().any(|entry| {
            let path = entry.path();
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else { return false };
            if kind.is_dir() {
                // not into environments, caches or version control
                depth < 8
                    && !name.to_string_lossy().starts_with('.')
                    && name != "__pycache__"
                    && walk(&path, since, depth + 1)
            } else {
                path.extension().is_some_and(|e| e == "py")
                    && entry.metadata().and_then(|m| m.modified()).is_ok_and(|modified| modified >= since)
            }
        })
    }
    dirs.iter().any(|dir| walk(dir, since, 0))
}

#[cfg(test)]
mod tests {
    use super::super::protocol::LoadConfig;
    use super::*;
    use std::time::Duration;

    fn load<'a>(environment: &'a str, dir: &'a Path) -> Request<'a> {
        Request::Load {
            modules: Vec::new(),
            config: LoadConfig { environment, project_dir: dir, module_paths: Default::default() },
        }
    }

    // The bridge's own package on the machine's Python: without inmanta-core its load answers
    // an error, which is as good an answer to keep as any.
    fn compile(dir: &Path, load: &Request<'_>, changed: impl Fn(SystemTime) -> bool) -> (u32, Answer<Loaded>) {
        let python = Path::new("python3");
        let (bridge, answer) = take_or_start(python, dir, Duration::from_secs(60), true, load, changed).unwrap();
        (bridge.pid(), answer.expect("the load's answer"))
    }

    #[test]
    fn compiles_are_served_by_forks_of_one_loaded_python_until_its_code_changes() {
        let dir = tempfile::tempdir().unwrap();
        let plugins = dir.path().join("plugins");
        std::fs::create_dir(&plugins).unwrap();
        std::fs::write(plugins.join("__init__.py"), "").unwrap();
        let changed = |since| python_changed_since(&[plugins.as_path()], since);
        let (one, other) = (load("e1", dir.path()), load("e2", dir.path()));

        let (first, answer) = compile(dir.path(), &one, changed);
        let (second, again) = compile(dir.path(), &one, changed);
        assert_eq!(first, second, "the second compile is served by the Python the first loaded");
        assert_eq!(answer, again);
        // the plugin is edited after the load: a new Python, which loads anew
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(plugins.join("__init__.py"), "# edited").unwrap();
        let (third, _) = compile(dir.path(), &one, changed);
        assert_ne!(third, first, "an edited plugin is not served from the Python loaded before");
        // another load (another environment): another Python
        let (fourth, _) = compile(dir.path(), &other, changed);
        assert_ne!(fourth, third);
        assert_eq!(compile(dir.path(), &other, changed).0, fourth);
    }
}
