//! Tests that need something of the machine (Python, sshd, age, Chromium, PostgreSQL, the
//! reference install of Inmanta...) and cannot find it. A test that ends early passes, so ending
//! silently would hide that it never ran: under `CI=true` the missing prerequisite fails the
//! test, saying what is missing; elsewhere the test says so loudly on stderr and ends.
//!
//! ```ignore
//! let Some(sshd) = test_support::program("sshd (Debian package openssh-server)", &["/usr/sbin/sshd"]) else {
//!     return;
//! };
//! ```

use std::fmt::Display;
use std::path::PathBuf;

/// The variable that names the PostgreSQL server tests create their databases on (an admin URL
/// such as `postgres://postgres@127.0.0.1:5432/postgres`).
pub const POSTGRES_VARIABLE: &str = "INMANTA_TEST_POSTGRES";

/// Whether this run is CI's (`CI=true`), where every test must run.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// This test cannot run here because `what` is missing: fails it under `CI=true`, else says so
/// on stderr. The caller returns right after.
pub fn missing_prerequisite(what: impl Display) {
    if let Some(failure) = report(&what.to_string(), in_ci()) {
        panic!("{failure}");
    }
}

/// What [`missing_prerequisite`] does, with the CI flag given: the panic message under CI,
/// `None` once the notice is printed elsewhere.
fn report(what: &str, ci: bool) -> Option<String> {
    if ci {
        return Some(format!("a prerequisite of this test is missing, and CI=true: {what}"));
    }
    eprintln!("\n*** NOT RUN: a prerequisite of this test is missing: {what} ***\n");
    None
}

/// The value of `found`, or `None` after reporting `what` missing (with the error).
pub fn require<T, E: Display>(what: &str, found: Result<T, E>) -> Option<T> {
    match found {
        Ok(value) => Some(value),
        Err(e) => {
            missing_prerequisite(format!("{what}: {e}"));
            None
        }
    }
}

/// The first of `candidates` (absolute paths of a program) that exists, or `None` after
/// reporting `what` missing.
pub fn program(what: &str, candidates: &[&str]) -> Option<PathBuf> {
    let found = candidates.iter().map(PathBuf::from).find(|p| p.exists());
    require(what, found.ok_or_else(|| format!("none of {} exists", candidates.join(", "))))
}

/// The admin URL of the PostgreSQL server in [`POSTGRES_VARIABLE`], or `None` after reporting it
/// missing. Tests that need it have `postgres` in their name: the SQLite pass of
/// `scripts/test.sh` leaves them out by that filter, and its PostgreSQL pass runs them.
pub fn postgres_admin_url() -> Option<String> {
    let url = std::env::var(POSTGRES_VARIABLE).ok().filter(|u| !u.is_empty());
    require(
        "PostgreSQL",
        url.ok_or_else(|| {
            format!("set {POSTGRES_VARIABLE} to an admin URL (scripts/test.sh does, in its PostgreSQL pass)")
        }),
    )
}

/// Fails unless every `.rs` file of the integration-test binary `binary` (the folder
/// `tests_dir/binary`, whose `main.rs` declares one `mod` per file or folder) is declared in its
/// `main.rs`, and unless `tests_dir` itself holds no `.rs` file but `own_binaries` (cargo builds
/// each as a binary of its own, linking the crate and its dependencies again). A file nobody
/// declares would never be compiled, its tests never run.
pub fn assert_test_files_are_modules(tests_dir: &str, binary: &str, own_binaries: &[&str]) {
    let tests = std::path::Path::new(tests_dir);
    let dir = tests.join(binary);
    let main =
        std::fs::read_to_string(dir.join("main.rs")).unwrap_or_else(|e| panic!("{}/main.rs: {e}", dir.display()));
    let declared: std::collections::BTreeSet<&str> = main
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let line = line.strip_prefix("pub ").unwrap_or(line);
            line.strip_prefix("mod ")?.strip_suffix(';').map(str::trim)
        })
        .collect();
    let rust_files = |dir: &std::path::Path| -> Vec<(String, bool)> {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        entries
            .filter_map(|entry| {
                let path = entry.ok()?.path();
                let name = path.file_name()?.to_str()?.to_string();
                if path.is_dir() {
                    path.join("mod.rs").is_file().then_some((name, true))
                } else {
                    name.strip_suffix(".rs").map(|stem| (stem.to_string(), false))
                }
            })
            .collect()
    };
    let mut undeclared: Vec<String> = rust_files(&dir)
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name != "main" && !declared.contains(name.as_str()))
        .collect();
    undeclared.sort();
    let mut outside: Vec<String> = rust_files(tests)
        .into_iter()
        .filter(|(_, is_dir)| !is_dir)
        .map(|(name, _)| format!("{name}.rs"))
        .filter(|name| !own_binaries.contains(&name.as_str()))
        .collect();
    outside.sort();
    assert!(
        undeclared.is_empty(),
        "{binary}/main.rs declares no module for {undeclared:?}: add `mod <name>;` there (docs/development.md, \"Tests\")"
    );
    assert!(
        outside.is_empty(),
        "test files outside the one test binary: {outside:?}. Move each into it: `git mv tests/<name>.rs \
         tests/{binary}/`, add `mod <name>;` to tests/{binary}/main.rs and replace its `mod common;` with \
         `use crate::common;` (docs/development.md, \"Tests\")"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_prerequisite_fails_under_ci_and_is_only_told_elsewhere() {
        let failure = report("sshd", true).expect("CI fails the test");
        assert!(failure.contains("sshd") && failure.contains("CI=true"), "{failure}");
        assert_eq!(report("sshd", false), None);
    }

    #[test]
    fn a_found_prerequisite_is_handed_back() {
        assert_eq!(require::<_, String>("x", Ok(3)), Some(3));
        assert_eq!(program("a shell", &["/no/such/sh", "/bin/sh"]), Some(PathBuf::from("/bin/sh")));
    }
}
