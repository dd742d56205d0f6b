//! Robustness: deep nesting is an error, never a stack overflow; arbitrary and mutated input never
//! panics and stays within the step limit (proptest; `PROPTEST_CASES` sets the number of cases);
//! runaway models stop at a limit that names itself; the work of a compile is linear in its
//! statements. No assertion here is on time: they are on the compiler's own counters.

use std::path::PathBuf;

use compiler::{CompileOptions, PluginInputs, compile_source};
use proptest::prelude::*;

/// The compile always runs on its own thread (`CompileOptions::stack_size`), so the caller's stack
/// (e.g. a 2 MiB tokio blocking thread) does not matter; the depth limits of the parser and the
/// evaluator keep every input well inside that thread's stack, also in debug builds.
fn small_stack() -> CompileOptions {
    let plugin_inputs = PluginInputs { env: Some(Default::default()), ..PluginInputs::default() };
    CompileOptions { max_steps: STEP_LIMIT, plugin_inputs, ..CompileOptions::default() }
}

#[test]
fn deep_input_from_a_small_stack_caller() {
    // the caller runs on a 2 MiB thread, like tokio's blocking pool
    let h = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let src = format!("x = {}1{}\n", "(".repeat(100_000), ")".repeat(100_000));
            compile_source(&src, &CompileOptions::default()).is_err()
        })
        .expect("spawn");
    assert!(h.join().expect("no crash"));
}

/// Compiles without a crash; returns the statement runs (within the step limit of `small_stack`,
/// which is what bounds the time of any input), or 0 when the compile failed.
fn assert_no_crash(src: &str) -> u64 {
    match compile_source(src, &small_stack()) {
        Ok(out) => out.stats.statements_run,
        Err(d) => {
            assert!(
                !d.errors().iter().any(|e| e.message.contains("internal compiler error")),
                "compiler panicked on input:\n{src}\n---\n{d}"
            );
            0
        }
    }
}

const STEP_LIMIT: u64 = 200_000;

fn expect_error(src: &str, kind: &str) {
    match compile_source(src, &small_stack()) {
        Ok(_) => panic!("expected {kind}"),
        Err(d) => assert!(d.errors().iter().any(|e| e.kind == kind), "expected {kind}, got:\n{d}"),
    }
}

#[test]
fn deep_parentheses_are_a_parse_error() {
    let n = 100_000;
    let src = format!("x = {}1{}\n", "(".repeat(n), ")".repeat(n));
    expect_error(&src, "ParserException");
}

#[test]
fn deep_lists_are_a_parse_error() {
    let n = 50_000;
    let src = format!("x = {}1{}\n", "[".repeat(n), "]".repeat(n));
    expect_error(&src, "ParserException");
}

#[test]
fn deep_dicts_are_a_parse_error() {
    let n = 20_000;
    let src = format!("x = {}1{}\n", "{\"a\": ".repeat(n), "}".repeat(n));
    expect_error(&src, "ParserException");
}

#[test]
fn deep_not_chain_is_a_parse_error() {
    let src = format!("x = {}true\n", "not ".repeat(100_000));
    expect_error(&src, "ParserException");
}

#[test]
fn deep_conditional_chain_is_a_parse_error() {
    let src = format!("x = {}1{}\n", "true ? 1 : (".repeat(10_000), ")".repeat(10_000));
    expect_error(&src, "ParserException");
}

#[test]
fn deep_if_nesting_is_a_parse_error() {
    let n = 10_000;
    let src = format!("{}x = 1\n{}", "if true:\n".repeat(n), "end\n".repeat(n));
    expect_error(&src, "ParserException");
}

#[test]
fn deep_for_nesting_is_a_parse_error() {
    let n = 10_000;
    let src = format!("{}x = 1\n{}", "for i in [1]:\n".repeat(n), "end\n".repeat(n));
    expect_error(&src, "ParserException");
}

#[test]
fn long_operator_chain_is_bounded() {
    let src = format!("x = 1{}\n", " + 1".repeat(100_000));
    expect_error(&src, "ParserException");
    // a long but allowed chain evaluates fine on a small stack
    let ok = format!("x = 1{}\n", " + 1".repeat(450));
    compile_source(&ok, &small_stack()).expect("450 additions compile");
}

#[test]
fn moderate_nesting_compiles() {
    let src = format!("x = {}1{}\n", "(".repeat(50), ")".repeat(50));
    compile_source(&src, &small_stack()).expect("50 levels of parentheses compile");
}

#[test]
fn long_relation_chain_compiles() {
    // 2000 instances linked in a chain, read back through the chain one step at a time
    let mut src = String::from("entity N:\n    int v\nend\nN.next [0:1] -- N\nimplement N using std::none\n");
    let n = 2000;
    for i in 0..n {
        src.push_str(&format!("n{i} = N(v={i})\n"));
    }
    for i in 0..n - 1 {
        src.push_str(&format!("n{i}.next = n{}\n", i + 1));
    }
    src.push_str("n1999.next = null\n");
    compile_source(&src, &small_stack()).expect("chain compiles");
}

#[test]
fn step_limit_stops_runaway_models_and_names_itself() {
    // a million statement runs: stopped at the step limit, which the error names with its knobs
    let src = "for i in std::sequence(1000):\n    for j in std::sequence(1000):\n        x = i * j\n    end\nend\n";
    let err = compile_source(src, &small_stack()).expect_err("the step limit should stop this model");
    let message = err.errors().iter().map(|e| e.message.clone()).collect::<Vec<_>>().join("\n");
    assert!(message.contains(&format!("within {STEP_LIMIT} steps")), "{message}");
    assert!(message.contains("[compiler] max-steps") && message.contains("INMANTA_COMPILER_MAX_STEPS"), "{message}");
}

/// The 8-line model of issue 18 that grew to 1.2 GB: an implementation that constructs its own
/// entity. It stops at the depth limit (10 000 instances by default), long before the instance
/// limit (here 50 000, which it would reach without the depth limit).
#[test]
fn recursion_without_end_stops_at_the_depth_limit() {
    let src = "entity A:\n    int n = 0\nend\nimplementation more for A:\n    A(n=self.n + 1)\nend\nimplement A using more\nA()\n";
    assert_eq!(src.lines().count(), 8);
    let options = CompileOptions { max_instances: 50_000, max_steps: 10_000_000, ..small_stack() };
    let err = compile_source(src, &options).expect_err("endless recursion");
    let message = err.errors().iter().map(|e| e.message.clone()).collect::<Vec<_>>().join("\n");
    assert!(message.contains("10001 implementations deep"), "{message}");
    assert!(message.contains("[compiler] max-depth") && message.contains("INMANTA_COMPILER_MAX_DEPTH"), "{message}");
    // a model as deep as the limit allows compiles, and the limit can be raised
    let chain = "entity A:\n    int n = 0\nend\nimplementation more for A:\n    if self.n < 200:\n        A(n=self.n + 1)\n    end\nend\nimplement A using more\nA()\n";
    let shallow = CompileOptions { max_depth: 100, ..small_stack() };
    assert!(compile_source(chain, &shallow).is_err(), "200 levels are past a limit of 100");
    let deep = CompileOptions { max_depth: 300, ..small_stack() };
    let out = compile_source(chain, &deep).expect("200 levels within a limit of 300");
    let builtin = compile_source("", &small_stack()).expect("empty model").stats.instances;
    assert_eq!(out.stats.instances - builtin, 201);
}

#[test]
fn limits_come_from_the_compiler_config_section() {
    let mut options = CompileOptions::default();
    let config = |key: &str| match key {
        "max-steps" => Some("1234".to_string()),
        "max-depth" => Some(" 77 ".to_string()),
        "max-memory" => Some("512M".to_string()),
        _ => None,
    };
    options.apply_limits(config).expect("valid limits");
    assert_eq!((options.max_steps, options.max_depth, options.max_instances), (1234, 77, 2_000_000));
    assert_eq!(options.max_memory, 512 << 20);
    let err = options.apply_limits(|_| Some("-1".into())).expect_err("negative");
    assert!(err.contains("[compiler] max-steps must be a positive integer"), "{err}");
    let err = options.apply_limits(|k| (k == "max-memory").then(|| "lots".into())).expect_err("not a size");
    assert!(err.contains("[compiler] max-memory must be a positive size in bytes"), "{err}");
}

/// Issue 18: 80 000 statements took 30 s, because every variable of `main.cf` was looked up by a
/// linear scan of its namespace. The lookups of a compile now cost a constant per statement.
#[test]
fn compile_work_is_linear_in_the_number_of_statements() {
    let model = |n: usize| {
        let mut src = String::from("entity A:\n    int n\nend\nimplement A using std::none\n");
        for i in 0..n {
            // variables, instances and reads of earlier variables, in reverse order of need
            src.push_str(&format!("x{i} = A(n=y{i})\ny{i} = {i}\nz{i} = x{i}.n\n"));
        }
        src
    };
    let probes = |n: usize| {
        let out = compile_source(
            &model(n),
            &CompileOptions {
                plugin_inputs: PluginInputs { env: Some(Default::default()), ..Default::default() },
                ..Default::default()
            },
        )
        .expect("compiles");
        (out.stats.variable_probes, out.stats.statements_run)
    };
    let (small, small_runs) = probes(5_000);
    let (large, large_runs) = probes(20_000);
    assert!(small <= 20 * small_runs, "{small} variable probes for {small_runs} statement runs");
    assert!(large <= 20 * large_runs, "{large} variable probes for {large_runs} statement runs");
    // four times the statements, about four times the work (a quadratic compile would be 16 times)
    assert!(large < 5 * small, "{small} probes for 5 000 statements, {large} for 20 000");
}

const TOKENS: &[&str] = &[
    "9223372036854775807",
    "-9223372036854775808",
    "f\"{x:99999999999999999999}\"",
    "f\"{x:>{x}}\"",
    "std::add_to_ip",
    "std::ipindex",
    "std::format",
    "std::json_loads",
    "std::at",
    "std::template",
    "\"ff::1/64\"",
    "\"{0}{x[1]}\"",
    "std::Host",
    "fs::File",
    "std::testing::NullResource",
    "host",
    "content",
    "path",
    "requires",
    "provides",
    "entity",
    "A",
    "B",
    "Server",
    ":",
    "end",
    "string",
    "int",
    "bool",
    "dict",
    "name",
    "x",
    "y",
    "=",
    "+=",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ".",
    "::",
    "std",
    "implement",
    "using",
    "std::none",
    "when",
    "implementation",
    "for",
    "in",
    "if",
    "elif",
    "else",
    "not",
    "and",
    "or",
    "is",
    "defined",
    "index",
    "typedef",
    "as",
    "matching",
    "/a+/",
    "1",
    "-2",
    "3.5",
    "\"s\"",
    "'t'",
    "\"{{x}}\"",
    "f\"{x}\"",
    "r\"\\d\"",
    "\"\"\"doc\"\"\"",
    "true",
    "false",
    "null",
    "?",
    "==",
    "!=",
    "<",
    ">",
    "+",
    "-",
    "*",
    "/",
    "%",
    "**",
    "--",
    "[0:]",
    "[1]",
    "self",
    "import",
    "fs",
    "exec",
    "std::print",
    "std::count",
    "std::sequence",
    "**",
    "extends",
    "parents",
    "undef",
    "\n",
    "\n",
    "\n",
    "#c\n",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..80).prop_map(|t| t.join(" "))
}

fn cases() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let p = e.path();
                    let name = p.file_name()?.to_str()?.to_string();
                    Some((name, std::fs::read_to_string(&p).ok()?))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out.into_iter().map(|(_, t)| t).collect()
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize, usize),
    Duplicate(usize, usize),
    Insert(usize, &'static str),
    Swap(usize, usize),
}

fn apply(src: &str, muts: &[Mutation]) -> String {
    let mut b: Vec<char> = src.chars().collect();
    for m in muts {
        let n = b.len().max(1);
        match m {
            Mutation::Delete(a, l) => {
                let s = a % n;
                let e = (s + l % 40).min(b.len());
                if s < e {
                    b.drain(s..e);
                }
            }
            Mutation::Duplicate(a, l) => {
                let s = a % n;
                let e = (s + l % 60).min(b.len());
                if s < e {
                    let piece: Vec<char> = b[s..e].to_vec();
                    b.splice(e..e, piece);
                }
            }
            Mutation::Insert(a, t) => {
                let s = (a % n).min(b.len());
                b.splice(s..s, format!(" {t} ").chars());
            }
            Mutation::Swap(a, c) => {
                if !b.is_empty() {
                    let (i, j) = (a % b.len(), c % b.len());
                    b.swap(i, j);
                }
            }
        }
    }
    b.into_iter().collect()
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<usize>()).prop_map(|(a, l)| Mutation::Delete(a, l)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, l)| Mutation::Duplicate(a, l)),
        (any::<usize>(), prop::sample::select(TOKENS)).prop_map(|(a, t)| Mutation::Insert(a, t)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, c)| Mutation::Swap(a, c)),
    ]
}

fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(64);
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fuzz_token_soup(src in token_soup()) {
        let t = assert_no_crash(&src);
        prop_assert!(t <= STEP_LIMIT, "{t} statement runs");
    }

    #[test]
    fn fuzz_arbitrary_text(src in "\\PC{0,300}") {
        let t = assert_no_crash(&src);
        prop_assert!(t <= STEP_LIMIT, "{t} statement runs");
    }

    #[test]
    fn fuzz_mutated_cases(idx in any::<usize>(), muts in prop::collection::vec(mutation(), 1..6)) {
        let all = cases();
        prop_assume!(!all.is_empty());
        let src = apply(&all[idx % all.len()], &muts);
        let t = assert_no_crash(&src);
        prop_assert!(t <= STEP_LIMIT, "{t} statement runs");
    }
}

#[test]
fn endless_instance_creation_stops_at_the_instance_limit_with_a_clear_error() {
    let src = "entity A:\nend\nimplement A using more\nimplementation more for A:\n    A()\nend\nA()\n";
    let options = CompileOptions { max_instances: 10_000, ..small_stack() };
    let err = compile_source(src, &options).expect_err("endless recursion");
    let message = err.errors().iter().map(|e| e.message.clone()).collect::<Vec<_>>().join("\n");
    assert!(message.contains("more than 10000 instances"), "{message}");
    assert!(message.contains("INMANTA_COMPILER_MAX_INSTANCES"), "{message}");
}
