//! Conformance suite: every `tests/cases/*.cf` is a small model with its expected outcome.
//!
//! Expectations are comments:
//! - `#> ok` — the compile succeeds;
//! - `#> value NAME = JSON` — variable NAME of main.cf has this JSON value;
//! - `#> resources N` — N resources are exported;
//! - `#> resource RID FIELD = JSON` — field FIELD of the resource with unversioned id RID;
//! - `#> undefined RID` — the resource is in resource_state as undefined;
//! - `#> unknowns N` — N unknowns are reported;
//! - `#> printed TEXT` — std::print printed TEXT;
//! - `#> warning KIND` — a warning of this kind is reported;
//! - `#> message TEXT` — some error message contains TEXT;
//! - `#> errors N` — exactly N errors;
//! - `#! KIND` or `#! KIND:COL` at the end of a model line — an error of that kind is reported
//!   on that line (and column).
//!
//! Modules under `tests/modules/` are on the module path. All failures are reported together.

use std::path::{Path, PathBuf};

use compiler::{CompileOptions, CompileOutput, Diagnostics, compile_source};

fn options(path: &Path) -> CompileOptions {
    let env = [("CONF_SET".to_string(), "hello".to_string())].into_iter().collect();
    CompileOptions {
        main_file: Some(path.to_path_buf()),
        module_path: vec![PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/modules")],
        env: Some(env),
        stack_size: 8 << 20,
        ..CompileOptions::default()
    }
}

fn check_case(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("read case");
    let mut fails = Vec::new();
    let result = compile_source(&text, &options(path));
    let mut expect_ok = false;
    let mut expected_errors: Vec<(String, usize, Option<usize>)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if let Some(pos) = line.find("#! ") {
            let spec = line[pos + 3..].trim();
            let (kind, col) = match spec.split_once(':') {
                Some((k, c)) => (k.to_string(), c.trim().parse().ok()),
                None => (spec.to_string(), None),
            };
            expected_errors.push((kind, n + 1, col));
        }
    }
    let directives: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("#> ")).collect();
    if directives.contains(&"ok") {
        expect_ok = true;
    }
    match (&result, expected_errors.is_empty()) {
        (Err(d), true) => {
            let wants_message = directives
                .iter()
                .any(|d| d.starts_with("message ") || d.starts_with("error-kind ") || d.starts_with("errors "));
            if expect_ok || !wants_message {
                fails.push(format!("expected success, got errors:\n{d}"));
                return fails;
            }
        }
        (Ok(_), false) => {
            fails.push(format!("expected errors {expected_errors:?}, but the compile succeeded"));
            return fails;
        }
        _ => {}
    }
    if let Err(d) = &result {
        check_errors(d, &expected_errors, &directives, &mut fails);
    }
    if let Ok(out) = &result {
        check_output(out, &directives, &mut fails);
    }
    fails
}

fn check_errors(
    d: &Diagnostics,
    expected: &[(String, usize, Option<usize>)],
    directives: &[&str],
    fails: &mut Vec<String>,
) {
    for (kind, line, col) in expected {
        let found = d.errors().iter().any(|e| {
            e.kind == *kind && e.location.as_ref().is_some_and(|l| l.line == *line && col.is_none_or(|c| l.col == c))
        });
        if !found {
            fails.push(format!(
                "expected {kind} at line {line}{}, got:\n{d}",
                col.map(|c| format!(":{c}")).unwrap_or_default()
            ));
        }
    }
    for dir in directives {
        if let Some(m) = dir.strip_prefix("message ")
            && !d.errors().iter().any(|e| e.message.contains(m))
        {
            fails.push(format!("no error message contains {m:?}; got:\n{d}"));
        }
        if let Some(n) = dir.strip_prefix("errors ")
            && d.errors().len() != n.trim().parse::<usize>().unwrap_or(0)
        {
            fails.push(format!("expected {n} errors, got {}:\n{d}", d.errors().len()));
        }
        if let Some(k) = dir.strip_prefix("error-kind ")
            && !d.errors().iter().any(|e| e.kind == k.trim())
        {
            fails.push(format!("expected an error of kind {k}, got:\n{d}"));
        }
    }
    // compile data is well formed
    let cd = d.to_compile_data();
    if cd["errors"].as_array().map(|a| a.len()) != Some(d.errors().len()) {
        fails.push("compile data does not list every error".into());
    }
}

fn check_output(out: &CompileOutput, directives: &[&str], fails: &mut Vec<String>) {
    let by_id = |rid: &str| out.resources.iter().find(|r| r["id"].as_str() == Some(&format!("{rid},v=0")));
    for dir in directives {
        if let Some(rest) = dir.strip_prefix("value ") {
            let Some((name, json)) = rest.split_once(" = ") else {
                fails.push(format!("bad directive {dir}"));
                continue;
            };
            let want: serde_json::Value = match serde_json::from_str(json) {
                Ok(v) => v,
                Err(e) => {
                    fails.push(format!("bad JSON in directive {dir}: {e}"));
                    continue;
                }
            };
            match out.variables.get(name.trim()) {
                Some(got) if *got == want => {}
                got => fails.push(format!("variable {name}: expected {want}, got {got:?}")),
            }
        } else if let Some(n) = dir.strip_prefix("resources ") {
            if out.resources.len().to_string() != n.trim() {
                let ids: Vec<&str> = out.resources.iter().filter_map(|r| r["id"].as_str()).collect();
                fails.push(format!("expected {n} resources, got {}: {ids:?}", out.resources.len()));
            }
        } else if let Some(rest) = dir.strip_prefix("resource ") {
            let Some((head, json)) = rest.split_once(" = ") else {
                fails.push(format!("bad directive {dir}"));
                continue;
            };
            let Some((rid, field)) = head.rsplit_once(' ') else {
                fails.push(format!("bad directive {dir}"));
                continue;
            };
            let want: serde_json::Value = serde_json::from_str(json).unwrap_or(serde_json::Value::Null);
            match by_id(rid) {
                None => {
                    let ids: Vec<&str> = out.resources.iter().filter_map(|r| r["id"].as_str()).collect();
                    fails.push(format!("no resource {rid}; have {ids:?}"));
                }
                Some(r) if r[field] != want => fails.push(format!("{rid} {field}: expected {want}, got {}", r[field])),
                _ => {}
            }
        } else if let Some(rid) = dir.strip_prefix("undefined ") {
            if out.resource_state.get(rid.trim()).map(String::as_str) != Some("undefined") {
                fails.push(format!("{rid} is not undefined: {:?}", out.resource_state));
            }
        } else if let Some(n) = dir.strip_prefix("unknowns ") {
            if out.unknowns.len().to_string() != n.trim() {
                fails.push(format!("expected {n} unknowns, got {:?}", out.unknowns));
            }
        } else if let Some(t) = dir.strip_prefix("printed ") {
            if !out.printed.iter().any(|p| p == t) {
                fails.push(format!("expected printed {t:?}, got {:?}", out.printed));
            }
        } else if let Some(k) = dir.strip_prefix("warning ") {
            if !out.warnings.iter().any(|w| w.kind == k.trim()) {
                let kinds: Vec<&str> = out.warnings.iter().map(|w| w.kind.as_str()).collect();
                fails.push(format!("expected warning {k}, got {kinds:?}"));
            }
        } else if let Some(k) = dir.strip_prefix("no-warning ")
            && out.warnings.iter().any(|w| w.kind == k.trim())
        {
            fails.push(format!("unexpected warning {k}"));
        }
    }
}

#[test]
fn conformance_suite() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("cases dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "cf"))
        .collect();
    cases.sort();
    let filter = std::env::var("CASE").ok();
    let mut failed = Vec::new();
    let mut ran = 0;
    for c in &cases {
        let name = c.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string();
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        ran += 1;
        let fails = check_case(c);
        if !fails.is_empty() {
            failed.push(format!("--- {name}\n{}", fails.join("\n")));
        }
    }
    eprintln!("conformance: {ran} cases, {} failed", failed.len());
    assert!(failed.is_empty(), "{} of {ran} cases failed:\n{}", failed.len(), failed.join("\n"));
    if filter.is_none() {
        assert!(ran >= 250, "the suite should have at least 250 cases, has {ran}");
    }
}
