//! Compile + export benchmark on the generated model Inmanta was measured on.
//!
//! Run: `cargo bench -p compiler --bench compile` (set `BENCH_SIZES=1000,10000` and
//! `BENCH_RUNS=5` to change the sizes and the number of timed runs).
//! Each size is generated with `python3 ../shared/bench/gen_project.py N DIR`, compiled and
//! exported `BENCH_RUNS` times (median reported), then compiled once more in a child process
//! that reports its peak resident memory (VmHWM).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

// The allocator of the `inmanta` binary, whose `compile` and `export` this measures: glibc's
// malloc took a third of the 100 000-resource compile's samples and held more memory.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn gen_script() -> PathBuf {
    if let Ok(p) = std::env::var("BENCH_GEN") {
        return PathBuf::from(p);
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for cand in [manifest.join("../../shared/bench/gen_project.py"), manifest.join("../shared/bench/gen_project.py")] {
        if cand.exists() {
            return cand;
        }
    }
    PathBuf::from("/work/shared/bench/gen_project.py")
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok()
}

fn compile_once(dir: &Path) -> (Duration, usize) {
    let start = Instant::now();
    // the options of `inmanta compile` / `export` (no JSON copy of main.cf's variables)
    let options = compiler::CompileOptions { root_variables: false, ..Default::default() };
    let out = compiler::compile_project_with(dir, &options)
        .unwrap_or_else(|e| panic!("compile of {} failed:\n{e}", dir.display()));
    let json = out.export_json();
    let elapsed = start.elapsed();
    assert!(!json.is_empty());
    (elapsed, out.resources.len())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(pos) = args.iter().position(|a| a == "--child") {
        let dir = PathBuf::from(&args[pos + 1]);
        let (t, n) = compile_once(&dir);
        println!("{} {} {}", n, t.as_secs_f64(), peak_rss_kib().unwrap_or(0));
        return;
    }
    let sizes: Vec<usize> = std::env::var("BENCH_SIZES")
        .unwrap_or_else(|_| "1000,10000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let runs: usize = std::env::var("BENCH_RUNS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let base = std::env::temp_dir().join(format!("inmanta-compiler-bench-{}", std::process::id()));
    println!("| resources (fs::File) | exported resources | median compile+export | min | peak RSS |");
    println!("|---:|---:|---:|---:|---:|");
    for n in sizes {
        let dir = base.join(format!("n{n}"));
        let status = Command::new("python3")
            .arg(gen_script())
            .arg(n.to_string())
            .arg(&dir)
            .status()
            .expect("run gen_project.py");
        assert!(status.success(), "gen_project.py failed");
        let mut times = Vec::new();
        let mut count = 0;
        for _ in 0..runs {
            let (t, c) = compile_once(&dir);
            times.push(t);
            count = c;
        }
        assert_eq!(count, n + 4, "expected N files and 4 directories");
        times.sort();
        let median = times[times.len() / 2];
        let child =
            Command::new(std::env::current_exe().expect("exe")).arg("--child").arg(&dir).output().expect("child");
        let line = String::from_utf8_lossy(&child.stdout);
        let rss_kib: u64 = line.split_whitespace().nth(2).and_then(|s| s.parse().ok()).unwrap_or(0);
        println!(
            "| {n} | {count} | {:.1} ms | {:.1} ms | {:.1} MB |",
            median.as_secs_f64() * 1000.0,
            times[0].as_secs_f64() * 1000.0,
            rss_kib as f64 / 1024.0
        );
    }
    let _ = std::fs::remove_dir_all(&base);
}
