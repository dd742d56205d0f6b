//! Inmanta's own compiler tests as a corpus: the snippets of inmanta-core's `tests/compiler/*.py`
//! and `tests/test_compilation.py` (`tests/inmanta-suite/snippets/`, each named after its source
//! test, listed in `SOURCES.tsv`) and the `tests/data` projects those tests compile
//! (`tests/inmanta-suite/projects/`), each compared with the real Inmanta 20.1's recorded
//! answer beside it (docs/compiler-conformance.md, "Inmanta's own test suite").
//!
//! A snippet that imports one of the suite's test modules with Python plugins, and a project
//! whose `libs/` holds one, compiles through the reference install's Python
//! (scripts/inmanta-reference.sh: inmanta-core 20.1 with std, fs, exec and mitogen), the
//! environment Inmanta recorded them in. Without that install these cases fail under CI=true
//! and are skipped, loudly, elsewhere.
//!
//! Cases listed in `tests/inmanta-suite-pending.txt` are known disagreements (with the reason):
//! tolerated, and the test fails when one of them agrees (so the list only shrinks). A snippet
//! ending in `#> not-copied KIND: why` records an artefact of Inmanta's (a Python object id, its
//! `unicode_escape` mojibake) that we do not copy: it must differ in exactly that kind.
//! Run some cases with `CASE=part-of-name cargo test -p compiler --test compiler inmanta_suite::`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use compiler::conformance::{
    Disagreement, case_modules, check_case_with, deliberate, expand_cases, not_copied, read_pending,
};

fn suite() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/inmanta-suite")
}

fn name(case: &Path) -> String {
    case.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string()
}

/// Whether a case loads a module with Python plugins (only Python can run those).
fn needs_python(case: &Path) -> bool {
    if case.is_dir() {
        let libs = std::fs::read_dir(case.join("libs")).map(|rd| rd.flatten().collect()).unwrap_or_else(|_| Vec::new());
        return libs.iter().any(|m| m.path().join("plugins").is_dir());
    }
    let modules = case_modules(case);
    // the modules it imports, and those they import in turn (`import mod4` whose model imports `tests`)
    let mut files = vec![case.to_path_buf()];
    let mut seen = std::collections::HashSet::new();
    while let Some(file) = files.pop() {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for module in text
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("import "))
            .filter_map(|rest| rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next())
        {
            let dir = modules.join(module);
            if dir.join("plugins").is_dir() {
                return true;
            }
            if seen.insert(module.to_string()) {
                let model = std::fs::read_dir(dir.join("model"))
                    .map(|rd| rd.flatten().collect())
                    .unwrap_or_else(|_| Vec::new());
                files.extend(model.iter().map(|f| f.path()).filter(|p| p.extension().is_some_and(|e| e == "cf")));
            }
        }
    }
    false
}

/// The reference install's interpreter (scripts/inmanta-reference.sh), if installed.
fn reference_python() -> Option<PathBuf> {
    let dir = std::env::var_os("INMANTA_REFERENCE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/inmanta/reference")))?;
    let python = dir.join("venv/bin/python");
    python.exists().then_some(python)
}

#[test]
fn inmanta_test_suite_snippets_compile_as_inmanta_does() {
    let filter = std::env::var("CASE").ok();
    let pending = read_pending(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/inmanta-suite-pending.txt"));
    let cases: Vec<PathBuf> = expand_cases(&[suite().join("snippets"), suite().join("projects")])
        .into_iter()
        .filter(|c| filter.as_ref().is_none_or(|f| name(c).contains(f.as_str())))
        .collect();
    let python = reference_python();
    if python.is_none() {
        let why =
            "the Python cases of Inmanta's test suite need the reference install: scripts/inmanta-reference.sh install";
        let skipped = cases.iter().filter(|c| needs_python(c)).count();
        test_support::missing_prerequisite(format!("{why} ({skipped} cases not run)"));
    }
    for p in pending.keys() {
        assert!(
            filter.is_some() || cases.iter().any(|c| &name(c) == p),
            "inmanta-suite-pending.txt lists {p}, which is no case"
        );
    }

    // two compiles at a time: a Python case mostly waits for its Python process
    let queue = Mutex::new(cases.iter());
    let results: Mutex<Vec<(String, Vec<Disagreement>)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let Some(case) = queue.lock().unwrap().next() else { break };
                    let py = if needs_python(case) {
                        match &python {
                            Some(p) => Some(p.as_path()),
                            None => continue,
                        }
                    } else {
                        None
                    };
                    let found = check_case_with(case, py);
                    results.lock().unwrap().push((name(case), found));
                }
            });
        }
    });

    let mut results = results.into_inner().unwrap();
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let mut failed = Vec::new();
    let mut tolerated = 0;
    for (name, disagreements) in &results {
        let case = cases.iter().find(|c| &self::name(c) == name).expect("a case of the run");
        if !not_copied(case).is_empty() {
            // an Inmanta artefact we do not copy: the case must differ in exactly the declared kinds
            if !deliberate(case, disagreements) {
                let lines: Vec<String> = disagreements.iter().map(ToString::to_string).collect();
                failed.push(format!(
                    "--- {name}\ndeclares `#> not-copied` but differs otherwise (or agrees now): {}",
                    lines.join("\n")
                ));
            }
            continue;
        }
        match (pending.contains_key(name), disagreements.is_empty()) {
            (true, false) => tolerated += 1,
            (true, true) => {
                failed.push(format!("--- {name}\nagrees with Inmanta now: remove it from inmanta-suite-pending.txt"))
            }
            (false, false) => {
                let lines: Vec<String> = disagreements.iter().map(ToString::to_string).collect();
                failed.push(format!("--- {name}\n{}", lines.join("\n")));
            }
            (false, true) => {}
        }
    }
    eprintln!("Inmanta's test suite: {} cases, {} failed, {tolerated} pending", results.len(), failed.len());
    assert!(failed.is_empty(), "{} of {} cases failed:\n{}", failed.len(), results.len(), failed.join("\n"));
    if filter.is_none() {
        assert!(results.len() >= 400, "the corpus should have at least 400 cases, has {}", results.len());
    }
}
