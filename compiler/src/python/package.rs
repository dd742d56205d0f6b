//! The Python side of the bridge, the package `inmanta_rs_bridge/` beside this file, embedded in
//! the binary. Python needs it as files: [`package_dir`] writes them once into a directory named
//! by the hash of their contents, so compilers of other versions (and compiles running at the same
//! time) never share a half-written or different copy, and Python's bytecode cache
//! (`__pycache__`, when the directory is writable) makes later starts cheaper than compiling one
//! big script from its text each time.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The package's name: no module of a project could take it.
pub(crate) const PACKAGE: &str = "inmanta_rs_bridge";

/// The package's files, by name.
const FILES: &[(&str, &str)] = &[
    ("__init__.py", include_str!("inmanta_rs_bridge/__init__.py")),
    ("bridge.py", include_str!("inmanta_rs_bridge/bridge.py")),
    ("core.py", include_str!("inmanta_rs_bridge/core.py")),
    ("deferral.py", include_str!("inmanta_rs_bridge/deferral.py")),
    ("errors.py", include_str!("inmanta_rs_bridge/errors.py")),
    ("exporter.py", include_str!("inmanta_rs_bridge/exporter.py")),
    ("main.py", include_str!("inmanta_rs_bridge/main.py")),
    ("paired.py", include_str!("inmanta_rs_bridge/paired.py")),
    ("plugin.py", include_str!("inmanta_rs_bridge/plugin.py")),
    ("protocol.py", include_str!("inmanta_rs_bridge/protocol.py")),
    ("references.py", include_str!("inmanta_rs_bridge/references.py")),
    ("remote.py", include_str!("inmanta_rs_bridge/remote.py")),
    ("serve.py", include_str!("inmanta_rs_bridge/serve.py")),
    ("standins.py", include_str!("inmanta_rs_bridge/standins.py")),
    ("state.py", include_str!("inmanta_rs_bridge/state.py")),
    ("typechecks.py", include_str!("inmanta_rs_bridge/typechecks.py")),
];

/// The directory of the package (`.../bridge-<hash>/inmanta_rs_bridge`), written if it is not
/// there yet: under the user's cache directory, else under the temporary directory.
pub(crate) fn package_dir() -> Result<PathBuf, String> {
    let name = format!("bridge-{}", content_hash());
    let mut failures = Vec::new();
    for base in bases() {
        let root = base.join(&name);
        match ensure(&root) {
            Ok(()) => return Ok(root.join(PACKAGE)),
            Err(e) => failures.push(format!("{}: {e}", root.display())),
        }
    }
    Err(format!("can not write the bridge's Python files ({})", failures.join("; ")))
}

/// Where the package may go, in order: `$XDG_CACHE_HOME` or `~/.cache` (the user's own), then the
/// temporary directory (for a user without a writable home).
fn bases() -> Vec<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")));
    let mut bases: Vec<PathBuf> = cache.map(|c| c.join("inmanta/compiler-bridge")).into_iter().collect();
    // one per user: a directory another user made there is not writable for us
    let user = my_uid().map(|uid| format!("-{uid}")).unwrap_or_default();
    bases.push(std::env::temp_dir().join(format!("inmanta-compiler-bridge{user}")));
    bases
}

fn content_hash() -> String {
    let mut hash = sha1_smol::Sha1::new();
    for (name, text) in FILES {
        hash.update(format!("{name}\0{}\0", text.len()).as_bytes());
        hash.update(text.as_bytes());
    }
    hash.digest().to_string()[..16].to_string()
}

/// Makes `root/inmanta_rs_bridge/` hold the package. A copy that is there already is used when it
/// is intact; else a new one is written beside it and renamed into place in one step, so Python
/// never sees a partial copy, and a process that loses the race to another uses the winner's.
fn ensure(root: &Path) -> Result<(), String> {
    if intact(root) {
        return Ok(());
    }
    let parent = root.parent().ok_or("no parent directory")?;
    std::fs::create_dir_all(parent).map_err(|e| format!("can not create {}: {e}", parent.display()))?;
    // a name no other process (pid) nor thread (count) writes to
    static COUNT: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let unique = format!("{}-{}-{nanos}", std::process::id(), COUNT.fetch_add(1, Ordering::Relaxed));
    let staging = parent.join(format!(".staging-{unique}"));
    let written = write_package(&staging);
    let outcome = written.and_then(|()| match std::fs::rename(&staging, root) {
        Ok(()) => Ok(()),
        Err(_) if intact(root) => Ok(()),
        Err(e) if root.exists() && owned(root) => {
            // a damaged copy of our own (a file removed, or changed): set it aside, then replace it
            let aside = parent.join(format!(".damaged-{unique}"));
            std::fs::rename(root, &aside).map_err(|e| format!("can not replace a damaged copy: {e}"))?;
            let _ = std::fs::remove_dir_all(&aside);
            std::fs::rename(&staging, root)
                .or_else(|e2| if intact(root) { Ok(()) } else { Err(format!("can not put it in place: {e}; {e2}")) })
        }
        Err(e) => Err(format!("can not put it in place: {e}")),
    });
    let _ = std::fs::remove_dir_all(&staging);
    outcome?;
    if intact(root) { Ok(()) } else { Err("it is there, but not as written".into()) }
}

fn write_package(staging: &Path) -> Result<(), String> {
    let package = staging.join(PACKAGE);
    let fail = |e: std::io::Error| format!("can not write {}: {e}", package.display());
    std::fs::create_dir_all(&package).map_err(fail)?;
    for (name, text) in FILES {
        let mut file = std::fs::File::create(package.join(name)).map_err(fail)?;
        // no fsync: a copy cut short by a crash is not intact, and is written again
        file.write_all(text.as_bytes()).map_err(fail)?;
        file.set_permissions(std::fs::Permissions::from_mode(0o644)).map_err(fail)?;
    }
    // writable by us only, whatever the umask: `intact` takes nothing else
    for dir in [&package, &staging.to_path_buf()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).map_err(fail)?;
    }
    Ok(())
}

/// Whether `root` holds exactly our files, in directories of our own that nobody else can write
/// into (the temporary directory is shared: another user could have made one of this name).
fn intact(root: &Path) -> bool {
    let package = root.join(PACKAGE);
    let private = |dir: &Path| std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir() && m.mode() & 0o022 == 0);
    private(root)
        && private(&package)
        && owned(root)
        && owned(&package)
        && FILES.iter().all(|(name, text)| std::fs::read(package.join(name)).is_ok_and(|b| b == text.as_bytes()))
}

/// Whether this process's user owns `path` (always true where `/proc` does not say who that is).
fn owned(path: &Path) -> bool {
    let Some(me) = my_uid() else { return true };
    std::fs::symlink_metadata(path).is_ok_and(|m| m.uid() == me)
}

/// The user id files this process creates get (its file system uid), from `/proc/self/status`.
fn my_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    // "Uid:" real, effective, saved, file system
    status.lines().find_map(|l| l.strip_prefix("Uid:"))?.split_whitespace().nth(3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("bridge-package-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn the_user_is_the_owner_of_what_it_creates() {
        let dir = scratch("owner");
        std::fs::create_dir_all(&dir).unwrap();
        let created = std::fs::metadata(&dir).unwrap().uid();
        std::fs::remove_dir_all(&dir).unwrap();
        if Path::new("/proc/self/status").exists() {
            assert_eq!(my_uid(), Some(created));
        }
    }

    #[test]
    fn every_python_file_of_the_package_is_embedded() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/python").join(PACKAGE);
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".py"))
            .collect();
        on_disk.sort();
        let embedded: Vec<&str> = FILES.iter().map(|(n, _)| *n).collect();
        assert_eq!(on_disk, embedded);
    }

    #[test]
    fn the_package_is_written_once_and_then_reused() {
        let dir = scratch("reuse");
        let root = dir.join("bridge-x");
        ensure(&root).unwrap();
        let init = root.join(PACKAGE).join("__init__.py");
        let written = std::fs::metadata(&init).unwrap().modified().unwrap();
        ensure(&root).unwrap();
        assert_eq!(std::fs::metadata(&init).unwrap().modified().unwrap(), written, "rewritten");
        // nothing is left of the staging copies
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("bridge-x")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_copy_is_replaced() {
        let dir = scratch("damaged");
        let root = dir.join("bridge-x");
        ensure(&root).unwrap();
        std::fs::write(root.join(PACKAGE).join("main.py"), "raise SystemExit(3)\n").unwrap();
        std::fs::remove_file(root.join(PACKAGE).join("state.py")).unwrap();
        ensure(&root).unwrap();
        assert!(intact(&root));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_copy_in_a_read_only_directory_is_used_as_it_is() {
        let dir = scratch("readonly");
        let root = dir.join("bridge-x");
        ensure(&root).unwrap();
        let read_only = std::fs::Permissions::from_mode(0o555);
        std::fs::set_permissions(root.join(PACKAGE), read_only.clone()).unwrap();
        std::fs::set_permissions(&root, read_only.clone()).unwrap();
        std::fs::set_permissions(&dir, read_only).unwrap();
        let again = ensure(&root);
        for d in [&dir, &root, &root.join(PACKAGE)] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(again, Ok(()));
    }

    #[test]
    fn compiles_at_the_same_time_share_one_copy() {
        let dir = scratch("race");
        let root = dir.join("bridge-x");
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let root = root.clone();
                std::thread::spawn(move || ensure(&root))
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap(), Ok(()));
        }
        assert!(intact(&root));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
