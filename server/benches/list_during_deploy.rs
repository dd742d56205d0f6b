//! The resource list under load while a deploy runs (issue 36 point 7): a real `inmanta server`
//! (auth on) on SQLite or PostgreSQL, one environment of N resources stored unreleased, then 50
//! clients list the filtered, sorted resource page (page of 100) back to back while the version
//! is released and deployed. It prints the list's p50 / p95 / p99 / max over the requests that
//! started after the release and ended before the last resource was deployed, the deploy's own
//! time under that load, and the same load for a few seconds after the deploy for comparison.
//!
//! `KIND=files` (default): the generated model of `../shared/bench/gen_project.py` (N `fs::File`
//! resources over 4 agents, files written for real by the in-process agents), stored with
//! `inmanta export`; the list is filtered on one agent and sorted by value. `KIND=nulls`: N
//! `std::testing::NullResource`s over 10 agents stored with `put_version`, the same list on
//! `agent3`.
//!
//! Run: `cargo bench -p server --bench list_during_deploy`. `RESOURCES` (default 10000),
//! `DATABASES=sqlite,postgres` (default sqlite; PostgreSQL needs `INMANTA_TEST_POSTGRES`, an
//! admin URL such as `postgres://postgres@127.0.0.1:5432/postgres`; each run gets a fresh
//! database, dropped afterwards), `CLIENTS` (default 50), `DURING_SECONDS` (default 30: the
//! clients stop then if the deploy is not done, and the figures say how far it got),
//! `AFTER_SECONDS` (default 5: the load after the deploy), `RUNS` (default 1: runs per database), `BENCH_BIN` (another `inmanta`
//! binary, e.g. a copy of an older build), `QUERIES=distinct` (each client asks for its own page
//! size, so identical requests never share a read: the cost of the list itself).

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{Server, bin, drop_postgres, fresh_postgres, generate};
use reqwest::Method;
use serde_json::{Value, json};

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split_whitespace().next().unwrap_or("?").to_string()
}

/// What each list client saw: when each request started and how long it took.
type Samples = Vec<(Instant, Duration)>;

/// `clients` clients list `path` back to back until `stop`.
fn start_clients(
    server: &Arc<Server>,
    env: &str,
    path: &str,
    clients: usize,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<Samples>> {
    let distinct = std::env::var("QUERIES").is_ok_and(|q| q == "distinct");
    (0..clients)
        .map(|i| {
            // `QUERIES=distinct`: each client its own page size (100 down to 51), so no two
            // clients send the same request and none shares another's read.
            let path =
                if distinct { path.replace("limit=100", &format!("limit={}", 100 - i % 50)) } else { path.into() };
            let (server, env, stop) = (server.clone(), env.to_string(), stop.clone());
            tokio::spawn(async move {
                let mut samples = vec![];
                while !stop.load(Ordering::Relaxed) {
                    let start = Instant::now();
                    server.call_text(Method::GET, &path, Some(&env), None).await;
                    samples.push((start, start.elapsed()));
                }
                samples
            })
        })
        .collect()
}

async fn stop_clients(clients: Vec<tokio::task::JoinHandle<Samples>>, stop: &AtomicBool) -> Samples {
    stop.store(true, Ordering::Relaxed);
    let mut all = vec![];
    for client in clients {
        all.extend(client.await.expect("client"));
    }
    all
}

/// The latencies of the requests that started at or after `from` and ended by `to`, sorted.
fn window(samples: &Samples, from: Instant, to: Instant) -> Vec<Duration> {
    let mut inside: Vec<Duration> =
        samples.iter().filter(|(start, took)| *start >= from && *start + *took <= to).map(|(_, took)| *took).collect();
    inside.sort();
    inside
}

fn describe(latencies: &[Duration], seconds: f64) -> String {
    format!(
        "{} lists ({:.0}/s): p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        latencies.len(),
        latencies.len() as f64 / seconds,
        ms(percentile(latencies, 0.5)),
        ms(percentile(latencies, 0.95)),
        ms(percentile(latencies, 0.99)),
        ms(latencies.last().copied().unwrap_or_default())
    )
}

/// How many resources have `status` (the total of a one-row page filtered on it).
async fn count_status(server: &Server, env: &str, status: &str) -> u64 {
    let page =
        server.call(Method::GET, &format!("/api/v2/resource?limit=1&filter.status={status}"), Some(env), None).await;
    page["metadata"]["total"].as_u64().expect("total")
}

/// Polls (every 100 ms: a count is cheap beside 50 listing clients) until `n` are deployed.
async fn wait_deployed(server: &Server, env: &str, n: u64) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(1200);
    let mut polls = 0u64;
    loop {
        if count_status(server, env, "deployed").await == n {
            return Instant::now();
        }
        polls += 1;
        if polls.is_multiple_of(20) {
            assert_eq!(count_status(server, env, "failed").await, 0, "resources failed");
        }
        assert!(Instant::now() < deadline, "not deployed in time");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Stores the generated `n`-file model with `inmanta export` (unreleased); its version.
async fn export_files(server: &Server, env: &str, dir: &Path, n: usize) -> i64 {
    let project = generate(dir, n);
    let port = server.url.rsplit(':').next().expect("port").to_string();
    std::fs::write(
        project.join(".inmanta"),
        format!(
            "[config]\nenvironment = {env}\n[compiler_rest_transport]\nhost = 127.0.0.1\nport = {port}\ntoken = {}\n",
            server.token
        ),
    )
    .expect(".inmanta");
    let output = Command::new(bin()).arg("export").current_dir(&project).output().expect("inmanta export");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let versions = server.call(Method::GET, "/api/v1/version?start=0&limit=1", Some(env), None).await;
    versions["versions"][0]["version"].as_i64().expect("the exported version")
}

/// Stores `n` NullResources over 10 agents (unreleased); its version.
async fn put_nulls(server: &Server, env: &str, n: usize) -> i64 {
    let version =
        server.call(Method::POST, "/api/v2/reserve_version", Some(env), None).await["data"].as_i64().expect("version");
    let resources: Vec<Value> = (0..n)
        .map(|i| {
            let agent = i % 10;
            json!({
                "id": format!("std::testing::NullResource[agent{agent},name=n{i:07}],v={version}"),
                "name": format!("n{i:07}"), "agentname": format!("agent{agent}"), "fail": false,
                "value": format!("value {i}"), "int_value": i, "purged": false, "send_event": false,
                "receive_events": false, "requires": [],
            })
        })
        .collect();
    server
        .call(Method::PUT, "/api/v1/version", Some(env), Some(json!({"version": version, "resources": resources})))
        .await;
    version
}

async fn run(database: &str, kind: &str, n: usize, clients: usize, during_seconds: u64, after_seconds: u64) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = (database == "postgres").then(fresh_postgres);
    let server = Arc::new(Server::start(&dir.path().join("state"), url.as_deref()).await);
    let env = server.environment("list").await;
    server
        .call(Method::POST, "/api/v2/environment_settings/auto_deploy", Some(&env), Some(json!({"value": false})))
        .await;
    let (version, list_path) = match kind {
        "nulls" => (
            put_nulls(&server, &env, n).await,
            "/api/v2/resource?limit=100&filter.agent=agent3&sort=resource_id_value.desc",
        ),
        _ => (
            export_files(&server, &env, dir.path(), n).await,
            "/api/v2/resource?limit=100&filter.agent=agent-1&sort=resource_id_value.desc",
        ),
    };
    // The generated model has a directory per agent besides its files.
    let versions = server.call(Method::GET, "/api/v1/version?start=0&limit=1", Some(&env), None).await;
    let n = versions["versions"][0]["total"].as_u64().expect("the version's total") as usize;
    let label = format!("{database} {kind} {n}");
    println!("{label}: load average {} before the release; {clients} clients on {list_path}", load_average());

    let stop = Arc::new(AtomicBool::new(false));
    let running = start_clients(&server, &env, list_path, clients, &stop);
    // The clients' connections are open and their first requests answered before the release.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (cpu, released) = (server.cpu_seconds(), Instant::now());
    server.call(Method::POST, &format!("/api/v1/version/{version}"), Some(&env), Some(json!({"push": true}))).await;
    // The clients stop when the deploy is done or after `during_seconds`, whichever comes first
    // (a deploy starved by the clients would otherwise keep the bench running for long).
    let deployed_under_load = tokio::select! {
        done = wait_deployed(&server, &env, n as u64) => Some(done),
        _ = tokio::time::sleep(Duration::from_secs(during_seconds)) => None,
    };
    let window_end = deployed_under_load.unwrap_or_else(Instant::now);
    let deployed_then = count_status(&server, &env, "deployed").await;
    let samples = stop_clients(running, &stop).await;
    let during = window(&samples, released, window_end);
    let done = match deployed_under_load {
        Some(done) => done,
        None => wait_deployed(&server, &env, n as u64).await,
    };
    let deploy_cpu = server.cpu_seconds() - cpu;
    let seconds = (window_end - released).as_secs_f64();
    let how_far = match deployed_under_load {
        Some(_) => "all deployed under load".to_string(),
        None => format!("{deployed_then} of {n} deployed when the clients stopped after {during_seconds} s"),
    };
    println!(
        "{label}: deploy (release to all deployed) {:.2} s, server CPU {deploy_cpu:.2} s ({how_far}); during it {}",
        (done - released).as_secs_f64(),
        describe(&during, seconds)
    );

    let stop = Arc::new(AtomicBool::new(false));
    let running = start_clients(&server, &env, list_path, clients, &stop);
    let from = Instant::now();
    tokio::time::sleep(Duration::from_secs(after_seconds)).await;
    let to = Instant::now();
    let samples = stop_clients(running, &stop).await;
    let after = window(&samples, from, to);
    println!(
        "{label}: after the deploy, {after_seconds} s: {}; server peak memory {:.0} MB; load average {} at the end",
        describe(&after, (to - from).as_secs_f64()),
        server.peak_memory_mb(),
        load_average()
    );
    drop(server);
    if let Some(url) = url {
        drop_postgres(&url);
    }
}

#[tokio::main]
async fn main() {
    let var = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let number = |name: &str, default: usize| var(name, "").parse().unwrap_or(default);
    let (n, clients, runs) = (number("RESOURCES", 10_000), number("CLIENTS", 50), number("RUNS", 1));
    let (during_seconds, after_seconds) = (number("DURING_SECONDS", 30) as u64, number("AFTER_SECONDS", 5) as u64);
    let kind = var("KIND", "files");
    for database in var("DATABASES", "sqlite").split(',').map(str::trim) {
        for _ in 0..runs {
            run(database, &kind, n, clients, during_seconds, after_seconds).await;
        }
    }
}
