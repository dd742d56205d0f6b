//! Prints every disagreement between our compiler and the real Inmanta's recorded answers.
//!
//!   cargo run -q -p compiler --bin conformance -- [--quiet] [--python PY] [CASE_OR_DIR...]
//!
//! Without paths: `compiler/tests/cases` and the example projects. `--python` names the
//! interpreter of a virtual environment whose modules the cases use (the real-module corpus,
//! `compiler/tests/real-modules`). Exits 1 on any disagreement.
//! See docs/compiler-conformance.md.

use std::collections::BTreeMap;
use std::path::PathBuf;

use compiler::conformance::{Kind, check_case_with, deliberate, expand_cases};

fn main() {
    let mut quiet = false;
    let mut python = None;
    let mut paths = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quiet" | "-q" => quiet = true,
            "--python" => match args.next() {
                Some(p) => python = Some(PathBuf::from(p)),
                None => {
                    eprintln!("--python needs the path of a Python interpreter");
                    std::process::exit(2);
                }
            },
            _ => paths.push(PathBuf::from(arg)),
        }
    }
    if paths.is_empty() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        paths.push(root.join("tests/cases"));
        for example in ["webfleet", "modules-templates", "unknowns"] {
            paths.push(root.join("../examples").join(example));
        }
    }
    let cases = expand_cases(&paths);
    let mut per_kind: BTreeMap<Kind, usize> = BTreeMap::new();
    let mut disagreeing = 0;
    let mut not_copied = 0;
    for case in &cases {
        let found = check_case_with(case, python.as_deref());
        if found.is_empty() {
            continue;
        }
        if deliberate(case, &found) {
            // an Inmanta bug we do not copy, declared in the case (`#> not-copied`)
            not_copied += 1;
            continue;
        }
        disagreeing += 1;
        let mut kinds: Vec<Kind> = found.iter().map(|d| d.kind).collect();
        kinds.dedup();
        for k in kinds {
            *per_kind.entry(k).or_default() += 1;
        }
        if quiet {
            let kinds: Vec<String> = found.iter().map(|d| d.kind.to_string()).collect();
            println!("{}: {}", case.display(), kinds.join(", "));
        } else {
            println!("=== {}", case.display());
            for d in &found {
                println!("{d}");
            }
        }
    }
    println!(
        "\n{} of {} cases disagree with Inmanta ({not_copied} more differ where Inmanta has a bug we do not copy)",
        disagreeing,
        cases.len()
    );
    for (k, n) in &per_kind {
        println!("  {k}: {n} cases");
    }
    if disagreeing > 0 {
        std::process::exit(1);
    }
}
