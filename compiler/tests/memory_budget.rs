//! A hostile model cannot take the compiler or the machine down: models whose values double at
//! each statement stop with a model error at the statement that passes the compile's memory
//! budget (`[compiler] max-memory`), and errors about huge values print a few lines.
//!
//! These check our own limits, which Inmanta does not have (it grows until the machine runs out
//! of memory): the expected messages are ours, not recorded from Inmanta.
//!
//! Each model is compiled in a child process (this test binary again, with the project named in
//! `MEMORY_BUDGET_TEST_PROJECT`) under an address-space limit (`ulimit -v`), so a compiler that
//! does not stop cannot hurt the machine: it is killed by a signal, which the test reports. The
//! child prints its peak resident memory (VmHWM).
//!
//! The child's side is no test: the binary has its own `main` (`harness = false` in
//! Cargo.toml), which compiles the project when that variable is set and otherwise runs the tests
//! below with [`run_tests`], a small stand-in for libtest's runner.

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

/// The child's address-space limit: far above what the budget lets the values take (1 GiB by
/// default), far below the machine's memory.
const ADDRESS_SPACE_KIB: u64 = 4 << 20;
/// The peak resident memory a compile stopped by the default budget stays under.
const PEAK_LIMIT_BYTES: u64 = 1_500_000_000;
/// A compile that does not stop is killed after this many seconds.
const TIME_LIMIT_S: u64 = 60;

/// One child at a time: each may take about 1 GB.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const PROJECT_VAR: &str = "MEMORY_BUDGET_TEST_PROJECT";

struct ChildResult {
    exit_code: Option<i32>,
    stderr: String,
    peak_bytes: u64,
}

fn compile_in_child(model: &str, env: &[(&str, &str)]) -> ChildResult {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("memory-budget-{}-{:x}", std::process::id(), fxhash(model)));
    std::fs::create_dir_all(&dir).expect("project directory");
    std::fs::write(dir.join("main.cf"), model).expect("main.cf");
    let exe = std::env::current_exe().expect("the test binary");
    let mut command = Command::new("sh");
    command
        .arg("-c")
        // Bounded in time too: a compile that does not stop is killed after a minute.
        .arg(format!("ulimit -v {ADDRESS_SPACE_KIB} && exec timeout -s KILL {TIME_LIMIT_S} \"$0\" \"$@\""))
        .arg(exe)
        .env(PROJECT_VAR, &dir)
        .env_remove("INMANTA_COMPILER_MAX_MEMORY");
    for (k, v) in env {
        command.env(k, v);
    }
    let output = command.output().expect("run the child");
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let peak_kib: u64 = stdout
        .split("peak_kib=")
        .nth(1)
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(u64::MAX / 1024);
    ChildResult {
        exit_code: output.status.code(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        peak_bytes: peak_kib * 1024,
    }
}

fn fxhash(text: &str) -> u64 {
    text.bytes().fold(0xcbf29ce484222325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100000001b3))
}

/// The child's side: compiles the project in `dir`, prints the errors as `inmanta compile` does
/// and its peak memory, and exits (1 on a compile error).
fn compile_as_child(dir: &Path) -> ! {
    let options =
        compiler::CompileOptions { main_file: Some("main.cf".into()), root_variables: false, ..Default::default() };
    let result = compiler::compile_project_with(dir, &options);
    if let Err(diagnostics) = &result {
        eprintln!("{diagnostics}");
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let peak = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).unwrap_or("0 kB").trim().trim_end_matches(" kB");
    println!("peak_kib={peak}");
    std::process::exit(if result.is_ok() { 0 } else { 1 });
}

type Test = (&'static str, fn());

const TESTS: &[Test] = &[
    ("a_string_doubled_by_plus_stops_at_the_memory_budget", a_string_doubled_by_plus_stops_at_the_memory_budget),
    (
        "a_string_doubled_by_interpolation_stops_at_the_memory_budget",
        a_string_doubled_by_interpolation_stops_at_the_memory_budget,
    ),
    (
        "a_list_doubled_by_list_literals_stops_at_the_memory_budget",
        a_list_doubled_by_list_literals_stops_at_the_memory_budget,
    ),
    ("a_smaller_budget_comes_from_the_environment", a_smaller_budget_comes_from_the_environment),
    (
        "a_dict_that_holds_the_same_dict_at_each_level_is_not_copied_past_the_budget",
        a_dict_that_holds_the_same_dict_at_each_level_is_not_copied_past_the_budget,
    ),
    (
        "json_dumps_of_a_dict_that_holds_the_same_dict_at_each_of_40_levels_stops_at_the_memory_budget",
        json_dumps_of_a_dict_that_holds_the_same_dict_at_each_of_40_levels_stops_at_the_memory_budget,
    ),
    ("an_int_squared_40_times_stops_with_an_error", an_int_squared_40_times_stops_with_an_error),
    ("an_error_about_a_huge_string_prints_a_short_message", an_error_about_a_huge_string_prints_a_short_message),
    ("a_value_set_twice_shows_both_values_cut", a_value_set_twice_shows_both_values_cut),
];

fn main() -> std::process::ExitCode {
    if let Some(dir) = std::env::var_os(PROJECT_VAR) {
        compile_as_child(Path::new(&dir));
    }
    run_tests(TESTS, std::env::args().skip(1).collect())
}

/// Runs the tests whose names the arguments select, one after the other (each child may take
/// about 1 GB), and reports them as libtest does: the arguments `cargo test` passes on are
/// understood (name filters, `--exact`, `--skip NAME`, `--list`, `--ignored`), the others are
/// accepted and change nothing here.
fn run_tests(tests: &[Test], args: Vec<String>) -> std::process::ExitCode {
    const WITH_VALUE: &[&str] = &["--skip", "--test-threads", "--color", "--format", "--logfile", "-Z"];
    let (mut filters, mut skips, mut exact, mut list, mut ignored_only) = (Vec::new(), Vec::new(), false, false, false);
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--exact" => exact = true,
            "--list" => list = true,
            "--ignored" => ignored_only = true,
            "--skip" => skips.extend(args.next()),
            flag if WITH_VALUE.contains(&flag) => {
                args.next();
            }
            flag if flag.starts_with('-') => {}
            filter => filters.push(filter.to_string()),
        }
    }
    let matches = |name: &str, pattern: &str| if exact { name == pattern } else { name.contains(pattern) };
    let selected: Vec<&Test> = tests
        .iter()
        .filter(|_| !ignored_only)
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| matches(name, f)))
        .filter(|(name, _)| !skips.iter().any(|s| matches(name, s)))
        .collect();
    if list {
        for (name, _) in &selected {
            println!("{name}: test");
        }
        return std::process::ExitCode::SUCCESS;
    }
    let started = std::time::Instant::now();
    println!("\nrunning {} tests", selected.len());
    let mut failed = Vec::new();
    for (name, test) in &selected {
        let ok = std::panic::catch_unwind(test).is_ok();
        println!("test {name} ... {}", if ok { "ok" } else { "FAILED" });
        if !ok {
            failed.push(*name);
        }
    }
    if !failed.is_empty() {
        println!("\nfailures:");
        for name in &failed {
            println!("    {name}");
        }
    }
    println!(
        "\ntest result: {}. {} passed; {} failed; 0 ignored; 0 measured; {} filtered out; finished in {:.2}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        selected.len() - failed.len(),
        failed.len(),
        tests.len() - selected.len(),
        started.elapsed().as_secs_f64()
    );
    if failed.is_empty() { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::FAILURE }
}

/// `a0` of 1 KiB, then `NAME{i} = <doubling of NAME{i-1}>` for i in 1..=40 (lines 2 to 41).
fn doubling_chain(first: &str, step: impl Fn(usize) -> String) -> String {
    let mut model = format!("{first}\n");
    for i in 1..=40 {
        model.push_str(&step(i));
        model.push('\n');
    }
    model
}

/// Asserts the child stopped with our budget error at `line` (shown with its source text),
/// without a signal and under the peak memory limit.
#[track_caller]
fn assert_stopped_by_the_budget(result: &ChildResult, line: usize, source: &str, grew: &str) {
    assert_eq!(result.exit_code, Some(1), "the compile must fail with a model error, not a signal:\n{}", result.stderr);
    let stderr = &result.stderr;
    assert!(stderr.contains("error[RuntimeException]"), "{stderr}");
    assert!(stderr.contains(grew), "{stderr}");
    assert!(stderr.contains("past the compile's memory budget of 1 GiB"), "{stderr}");
    assert!(stderr.contains("`[compiler] max-memory` or INMANTA_COMPILER_MAX_MEMORY"), "{stderr}");
    assert!(stderr.contains(&format!("main.cf:{line}:")), "{stderr}");
    assert!(stderr.contains(&format!("{line} | {source}")), "{stderr}");
    assert!(stderr.len() < 2000, "a short error, not the values: {} bytes", stderr.len());
    assert!(result.peak_bytes < PEAK_LIMIT_BYTES, "peak memory {} bytes", result.peak_bytes);
}

fn a_string_doubled_by_plus_stops_at_the_memory_budget() {
    let model =
        doubling_chain(&format!("a0 = \"{}\"", "a".repeat(1024)), |i| format!("a{i} = a{} + a{}", i - 1, i - 1));
    let result = compile_in_child(&model, &[]);
    // a string counts twice its length (its buffer and its value): a1..a18 count 1 GiB - 4 KiB,
    // a19 (512 MiB) is refused
    assert_stopped_by_the_budget(&result, 20, "a19 = a18 + a18", "this string would be 512 MiB");
}

fn a_string_doubled_by_interpolation_stops_at_the_memory_budget() {
    let model = doubling_chain(&format!("a0 = \"{}\"", "a".repeat(1024)), |i| {
        format!("a{i} = \"{{{{a{}}}}}{{{{a{}}}}}\"", i - 1, i - 1)
    });
    let result = compile_in_child(&model, &[]);
    assert_stopped_by_the_budget(&result, 20, "a19 = \"{{a18}}{{a18}}\"", "this string would be at least 512 MiB");
}

fn a_list_doubled_by_list_literals_stops_at_the_memory_budget() {
    let model = doubling_chain("l0 = [1, 2, 3, 4, 5, 6, 7, 8]", |i| format!("l{i} = [l{}, l{}]", i - 1, i - 1));
    let result = compile_in_child(&model, &[]);
    // an element counts 24 bytes: l1..l21 count 768 MiB, l22 (8 << 22 elements, 768 MiB) is refused
    // at its first half
    assert_stopped_by_the_budget(
        &result,
        23,
        "l22 = [l21, l21]",
        "this list would take 16 777 216 more elements (384 MiB)",
    );
}

fn a_smaller_budget_comes_from_the_environment() {
    let model =
        doubling_chain(&format!("a0 = \"{}\"", "a".repeat(1024)), |i| format!("a{i} = a{} + a{}", i - 1, i - 1));
    let result = compile_in_child(&model, &[("INMANTA_COMPILER_MAX_MEMORY", "1M")]);
    assert_eq!(result.exit_code, Some(1), "{}", result.stderr);
    assert!(result.stderr.contains("past the compile's memory budget of 1 MiB"), "{}", result.stderr);
    assert!(result.stderr.contains("main.cf:10:"), "{}", result.stderr);
}

fn a_dict_that_holds_the_same_dict_at_each_level_is_not_copied_past_the_budget() {
    // 24 levels take 48 entries in the model; std::json_dumps would write 2**25 of them (a
    // string of about 500 MB): the copy stops at the budget (16 MiB) before that string is
    // built. Deeper models spend their time first in walking the arguments for unknowns, which
    // takes no memory.
    let model = doubling_chain("d0 = {\"k\": 1}", |i| format!("d{i} = {{\"a\": d{}, \"b\": d{}}}", i - 1, i - 1))
        + "x = std::json_dumps(d24)\n";
    let result = compile_in_child(&model, &[("INMANTA_COMPILER_MAX_MEMORY", "16M")]);
    assert_eq!(result.exit_code, Some(1), "a model error:\n{}", result.stderr);
    assert!(result.stderr.contains("past the compile's memory budget of 16 MiB"), "{}", result.stderr);
    assert!(result.stderr.contains("this dict would take"), "{}", result.stderr);
    assert!(result.stderr.contains("42 | x = std::json_dumps(d24)"), "{}", result.stderr);
    assert!(result.peak_bytes < 200_000_000, "peak memory {} bytes", result.peak_bytes);
}

fn json_dumps_of_a_dict_that_holds_the_same_dict_at_each_of_40_levels_stops_at_the_memory_budget() {
    // 40 levels, 80 entries in the model, 2**41 in its text (issue 47): looking for unknowns in
    // the argument visits each dict once, and the copy stops at the default budget.
    let model = doubling_chain("d0 = {\"k\": 1}", |i| format!("d{i} = {{\"a\": d{}, \"b\": d{}}}", i - 1, i - 1))
        + "x = std::json_dumps(d40)\n";
    let started = std::time::Instant::now();
    let result = compile_in_child(&model, &[]);
    eprintln!("json_dumps of 40 levels stopped after {:?}, peak {} MB", started.elapsed(), result.peak_bytes >> 20);
    assert_eq!(result.exit_code, Some(1), "a model error:\n{}", result.stderr);
    assert!(result.stderr.contains("past the compile's memory budget of 1 GiB"), "{}", result.stderr);
    assert!(result.stderr.contains("main.cf:42:"), "{}", result.stderr);
    assert!(result.stderr.contains("42 | x = std::json_dumps(d40)"), "{}", result.stderr);
    assert!(result.peak_bytes < PEAK_LIMIT_BYTES, "peak memory {} bytes", result.peak_bytes);
}

fn an_int_squared_40_times_stops_with_an_error() {
    // `*` on ints, unbounded until issue 47: the bits double at each line; the product that
    // would pass 2**24 bits (as `**` is capped) is refused where it is written.
    let model = doubling_chain("x0 = 3", |i| format!("x{i} = x{} * x{}", i - 1, i - 1));
    let started = std::time::Instant::now();
    let result = compile_in_child(&model, &[]);
    eprintln!("x = x * x stopped after {:?}, peak {} MB", started.elapsed(), result.peak_bytes >> 20);
    assert_eq!(result.exit_code, Some(1), "a model error:\n{}", result.stderr);
    let stderr = &result.stderr;
    assert!(stderr.contains("the result of this multiplication is too large"), "{stderr}");
    // 3 has 2 bits: x23 has 2**23 * log2(3) bits, more than half the cap
    assert!(stderr.contains("main.cf:25:") && stderr.contains("25 | x24 = x23 * x23"), "{stderr}");
    assert!(stderr.len() < 2000, "a short error, not the values: {} bytes", stderr.len());
    assert!(result.peak_bytes < PEAK_LIMIT_BYTES, "peak memory {} bytes", result.peak_bytes);
}

fn an_error_about_a_huge_string_prints_a_short_message() {
    // a 64 MiB string (budget allowing), then an error that shows it
    let mut model = format!("a0 = \"{}\"\n", "a".repeat(1024));
    for i in 1..=16 {
        model.push_str(&format!("a{i} = a{} + a{}\n", i - 1, i - 1));
    }
    model.push_str("x = a16.name\n");
    let result = compile_in_child(&model, &[]);
    assert_eq!(result.exit_code, Some(1), "{}", result.stderr);
    let stderr = &result.stderr;
    assert!(stderr.contains("Can not get attribute name of string 'aaaa"), "{stderr}");
    assert!(stderr.contains("…' (67 108 864 characters)"), "{stderr}");
    assert!(stderr.contains("main.cf:18:"), "{stderr}");
    assert!(stderr.len() < 2000, "the error is {} bytes", stderr.len());
}

fn a_value_set_twice_shows_both_values_cut() {
    let mut model = format!("a0 = \"{}\"\n", "b".repeat(1024));
    for i in 1..=12 {
        model.push_str(&format!("a{i} = a{} + a{}\n", i - 1, i - 1));
    }
    model.push_str("entity E:\n  string s\nend\nimplement E using std::none\ne = E(s=a12)\ne.s = a11\n");
    let result = compile_in_child(&model, &[]);
    assert_eq!(result.exit_code, Some(1), "{}", result.stderr);
    let stderr = &result.stderr;
    assert!(stderr.contains("value set twice"), "{stderr}");
    assert!(stderr.contains("(4 194 304 characters)") && stderr.contains("(2 097 152 characters)"), "{stderr}");
    assert!(stderr.len() < 2000, "the error is {} bytes", stderr.len());
}
