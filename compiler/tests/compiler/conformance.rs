//! Conformance suite: every `tests/cases/*.cf` and example project is compiled and compared with
//! the real Inmanta's recorded answer beside it (`NAME.inmanta.json`, written by
//! `scripts/reference/record.sh`; see docs/compiler-conformance.md). No Python needed.
//!
//! Cases listed in `tests/conformance-pending.txt` are known disagreements still to fix: they
//! are tolerated, and the suite fails when one of them agrees (so the list only shrinks).
//!
//! Besides the truth, a case may assert what Inmanta's answer does not record, about our own
//! output (comments at the start of a line):
//! - `#> message TEXT` — some error message of ours contains TEXT;
//! - `#> unknowns N` — N unknowns are reported;
//! - `#> warning KIND` / `#> no-warning KIND` — a warning of this kind is (not) reported;
//! - `#> not-copied KIND: why` — Inmanta's answer is plainly a bug we do not copy: the case must
//!   differ from it in exactly these kinds (each such case has a line in compiler/README.md).
//!
//! Run one case with `CASE=name cargo test -p compiler --test compiler conformance::`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use compiler::conformance::{check_case, compile_case, deliberate, expand_cases, not_copied};

fn all_cases() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut paths = vec![root.join("tests/cases")];
    for example in ["webfleet", "modules-templates", "unknowns"] {
        paths.push(root.join("../examples").join(example));
    }
    expand_cases(&paths)
}

fn name(case: &Path) -> String {
    case.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string()
}

/// Case name -> why it still disagrees.
fn pending() -> BTreeMap<String, String> {
    compiler::conformance::read_pending(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/conformance-pending.txt"),
    )
}

/// The `#>` assertions about our own output that the truth does not cover.
fn check_directives(case: &Path) -> Vec<String> {
    if case.is_dir() {
        return Vec::new();
    }
    let text = std::fs::read_to_string(case).unwrap_or_default();
    let directives: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("#> ")).collect();
    if directives.is_empty() {
        return Vec::new();
    }
    let Ok(result) = compile_case(case) else { return vec!["can not read the case".into()] };
    let mut fails = Vec::new();
    for dir in directives {
        if dir.starts_with("not-copied ") {
            continue;
        }
        if let Some(m) = dir.strip_prefix("message ") {
            let found = result.as_ref().err().is_some_and(|d| d.errors().iter().any(|e| e.message.contains(m)));
            if !found {
                fails.push(format!("no error message contains {m:?}; got {result:?}"));
            }
        } else if let Some(n) = dir.strip_prefix("unknowns ") {
            match &result {
                Ok(out) if out.unknowns.len().to_string() == n.trim() => {}
                Ok(out) => fails.push(format!("expected {n} unknowns, got {:?}", out.unknowns)),
                Err(d) => fails.push(format!("expected {n} unknowns, the compile failed:\n{d}")),
            }
        } else if let Some(k) = dir.strip_prefix("warning ") {
            let warnings = result.as_ref().map(|o| o.warnings.clone()).unwrap_or_default();
            if !warnings.iter().any(|w| w.kind == k.trim()) {
                fails.push(format!("expected warning {k}, got {warnings:?}"));
            }
        } else if let Some(k) = dir.strip_prefix("no-warning ") {
            let warnings = result.as_ref().map(|o| o.warnings.clone()).unwrap_or_default();
            if warnings.iter().any(|w| w.kind == k.trim()) {
                fails.push(format!("unexpected warning {k}"));
            }
        } else {
            fails.push(format!("unknown directive `#> {dir}`"));
        }
    }
    fails
}

#[test]
fn conformance_suite() {
    let filter = std::env::var("CASE").ok();
    let pending = pending();
    let mut failed = Vec::new();
    let mut ran = 0;
    let mut tolerated = 0;
    for case in all_cases() {
        let name = name(&case);
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        ran += 1;
        let disagreements = check_case(&case);
        let directive_fails = check_directives(&case);
        if !not_copied(&case).is_empty() {
            // an Inmanta bug we do not copy: the case must differ in exactly the declared kinds
            if !deliberate(&case, &disagreements) {
                let lines: Vec<String> = disagreements.iter().map(ToString::to_string).collect();
                failed.push(format!(
                    "--- {name}\ndeclares `#> not-copied` but differs otherwise (or agrees now): {}",
                    lines.join("\n")
                ));
            }
            continue;
        }
        match (pending.contains_key(&name), disagreements.is_empty()) {
            (true, false) => tolerated += 1,
            (true, true) => {
                failed.push(format!("--- {name}\nagrees with Inmanta now: remove it from conformance-pending.txt"))
            }
            (false, false) => {
                let lines: Vec<String> = disagreements.iter().map(ToString::to_string).collect();
                failed.push(format!("--- {name}\n{}", lines.join("\n")));
            }
            (false, true) => {}
        }
        if !directive_fails.is_empty() {
            failed.push(format!("--- {name}\n{}", directive_fails.join("\n")));
        }
    }
    eprintln!("conformance: {ran} cases, {} failed, {tolerated} pending", failed.len());
    assert!(failed.is_empty(), "{} of {ran} cases failed:\n{}", failed.len(), failed.join("\n"));
    if filter.is_none() {
        assert!(ran >= 450, "the suite should have at least 450 cases, has {ran}");
    }
}
