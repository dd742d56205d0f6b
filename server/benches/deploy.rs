//! End-to-end deploy benchmark against a real `inmanta server` process (SQLite):
//! - the generated 1 000-file model of `../shared/bench/gen_project.py` (the one Inmanta was
//!   measured on), from `inmanta export` to every resource deployed, files written for real;
//! - 10 000 `std::testing::NullResource`s on one agent, from `put_version` to all deployed.
//!
//! - `inmanta deploy` (all-in-one) of the same 1 000-file model, wall clock of the command.
//!
//! Also reports the server's peak memory (VmHWM). Run: `cargo bench -p server --bench deploy`.
//! `GEN_PROJECT` overrides the path of gen_project.py; `FILES` and `NULLS` the sizes (each a
//! comma-separated list, e.g. `FILES=1000,10000`); `PARTS` which parts run (default
//! `files,all_in_one,nulls`); `BENCH_BIN` another `inmanta` binary to run (an older build).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;
use common::{Server, bin, generate};

async fn files(n: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let project = generate(dir.path(), n);
    let server = Server::start(&dir.path().join("state"), None).await;
    let env = server.environment("files").await;
    let port = server.url.rsplit(':').next().expect("port").to_string();
    std::fs::write(
        project.join(".inmanta"),
        format!(
            "[config]\nenvironment = {env}\n[compiler_rest_transport]\nhost = 127.0.0.1\nport = {port}\ntoken = {}\n",
            server.token
        ),
    )
    .expect(".inmanta");
    let started = Instant::now();
    let output = Command::new(bin()).arg("export").current_dir(&project).output().expect("inmanta export");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let exported = started.elapsed();
    let total =
        server.call(reqwest::Method::GET, "/api/v2/resource?limit=1", Some(&env), None).await["metadata"]["total"]
            .as_u64()
            .expect("total");
    let done = server.wait_deployed(&env, total, Duration::from_millis(10)).await;
    let written = walk(&project.join("deployed"));
    let drift = drift_repair(&project.join("deployed")).await;
    println!(
        "export + deploy of the generated {n}-file model ({total} resources, {written} files written): {:.2} s \
         (compile + export {:.2} s), server peak memory {:.0} MB; a hand-edited file repaired in {:.0} ms",
        (done - started).as_secs_f64(),
        exported.as_secs_f64(),
        server.peak_memory_mb(),
        drift.as_secs_f64() * 1000.0
    );
}

/// Overwrites one deployed file by hand and times how long until the server put it back.
async fn drift_repair(root: &Path) -> Duration {
    let file = first_file(root).expect("a deployed file");
    let deployed = std::fs::read(&file).expect("read deployed file");
    // Let the watcher settle after the deploy before editing.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let edited = Instant::now();
    std::fs::write(&file, b"edited by hand").expect("edit");
    while std::fs::read(&file).ok().as_deref() != Some(&deployed[..]) {
        assert!(edited.elapsed() < Duration::from_secs(60), "the edited file was not repaired");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    edited.elapsed()
}

fn first_file(dir: &Path) -> Option<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).collect();
    entries.sort();
    entries.iter().find(|p| p.is_file()).cloned().or_else(|| entries.iter().find_map(|p| first_file(p)))
}

fn walk(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| if e.path().is_dir() { walk(&e.path()) } else { 1 }).sum())
        .unwrap_or(0)
}

/// `inmanta deploy` (all-in-one: embedded store, in-process export, in-process agents) of the
/// generated model, wall clock of the whole command; a first run on a new project and a second
/// run with nothing to change (store and migrations already there).
fn all_in_one(n: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let project = generate(dir.path(), n);
    let mut walls = vec![];
    let mut cpus = vec![];
    for _ in 0..2 {
        let (cpu, started) = (children_cpu_seconds(), Instant::now());
        let output = Command::new(bin()).arg("deploy").current_dir(&project).output().expect("inmanta deploy");
        walls.push(started.elapsed());
        cpus.push(children_cpu_seconds() - cpu);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    println!(
        "inmanta deploy (all-in-one) of the generated {n}-file model: {:.2} s wall ({:.2} s CPU) on a new project, \
         {:.2} s wall ({:.2} s CPU) again with nothing to change; load average {}",
        walls[0].as_secs_f64(),
        cpus[0],
        walls[1].as_secs_f64(),
        cpus[1],
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split_whitespace().next().unwrap_or("?")
    );
}

/// CPU time (user + system) of this process's finished children, in seconds: the wall clock of
/// a command means little on a loaded machine, its CPU time still compares.
fn children_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("").split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // cutime and cstime are fields 16 and 17 of the line (indexes 13 and 14 after the name), in
    // ticks of 1/100 s.
    (ticks(13) + ticks(14)) / 100.0
}

async fn nulls(n: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("state"), None).await;
    let env = server.environment("nulls").await;
    let version = server.call(reqwest::Method::POST, "/api/v2/reserve_version", Some(&env), None).await["data"]
        .as_i64()
        .expect("version");
    let resources: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "id": format!("std::testing::NullResource[agent1,name=n{i}],v={version}"),
                "name": format!("n{i}"), "agentname": "agent1", "fail": false, "value": "", "int_value": 0,
                "purged": false, "send_event": false, "receive_events": false, "requires": [],
            })
        })
        .collect();
    let started = Instant::now();
    server
        .call(
            reqwest::Method::PUT,
            "/api/v1/version",
            Some(&env),
            Some(json!({"version": version, "resources": resources})),
        )
        .await;
    let stored = started.elapsed();
    let done = server.wait_deployed(&env, n as u64, Duration::from_millis(10)).await;
    println!(
        "deploy of {n} NullResources on one agent, put_version to all deployed: {:.2} s (put_version {:.2} s), \
         server peak memory {:.0} MB",
        (done - started).as_secs_f64(),
        stored.as_secs_f64(),
        server.peak_memory_mb()
    );
}

#[tokio::main]
async fn main() {
    let var = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.to_string());
    let sizes = |name: &str, default: &str| -> Vec<usize> {
        var(name, default).split(',').filter_map(|v| v.trim().parse().ok()).collect()
    };
    let parts = var("PARTS", "files,all_in_one,nulls");
    let runs = |part: &str| parts.split(',').any(|p| p.trim() == part);
    for n in sizes("FILES", "1000") {
        if runs("files") {
            files(n).await;
        }
        if runs("all_in_one") {
            all_in_one(n);
        }
    }
    if runs("nulls") {
        for n in sizes("NULLS", "10000") {
            nulls(n).await;
        }
    }
}
