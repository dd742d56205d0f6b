//! The Python tests of the bridge's own package (`src/python/inmanta_rs_bridge/`), in
//! `tests/python_bridge/`: its parts tested without the compiler (protocol framing, values across
//! it, annotation checks, dataclass pairing, error answers, import deferral, the request loop).
//!
//! They run on the Python of `scripts/python-test-venv.sh` (a cached environment with inmanta-core,
//! made on first use). Without a Python >= 3.12 they say so loudly and pass without running; under
//! `CI=true` that fails.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The interpreter of the test environment, or `None` after reporting it missing.
fn python() -> Option<PathBuf> {
    let script = root().join("../scripts/python-test-venv.sh");
    let found =
        Command::new(&script).output().map_err(|e| format!("can not run {}: {e}", script.display())).and_then(|out| {
            if out.status.success() {
                Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
            } else {
                Err(format!("{} failed: {}", script.display(), String::from_utf8_lossy(&out.stderr).trim()))
            }
        });
    test_support::require("a Python >= 3.12 with inmanta-core for the bridge's Python tests", found)
}

#[test]
fn the_bridges_python_tests_pass() {
    let Some(python) = python() else { return };
    let tests = root().join("tests/python_bridge");
    let out = Command::new(&python)
        .args(["-m", "unittest", "discover", "--start-directory"])
        .arg(&tests)
        .arg("--verbose")
        .current_dir(Path::new(&tests))
        .output()
        .unwrap_or_else(|e| panic!("can not run {}: {e}", python.display()));
    // unittest reports on stderr
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the bridge's Python tests failed ({}):\n{report}", python.display());
    assert!(!report.contains("skipped="), "some of the bridge's Python tests did not run:\n{report}");
    assert!(report.contains("\nOK"), "no test report from unittest:\n{report}");
}
