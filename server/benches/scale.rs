//! Scale benchmark: one environment of N `std::testing::NullResource`s (10 agents, requires
//! chains of 100 within an agent and 1 000 requires across agents) in a real `inmanta server`
//! process with auth on, on SQLite and on PostgreSQL, driven over HTTP. Prints every figure of
//! docs/performance.md ("Scale"): put_version, release, first deploy, repair, resource list
//! (filtered, sorted, paged) alone and under 50 concurrent clients with health and a parameter
//! write beside it, resource details, dry run, the whole version (`GET /api/v1/version/<v>`), a
//! second version differing in 1 000 resources and the diff, and the server's peak memory.
//!
//! Run: `cargo bench -p server --bench scale`. `SIZES=10000,100000` (default) picks the sizes;
//! `DATABASES=sqlite,postgres` the databases (PostgreSQL needs `INMANTA_TEST_POSTGRES`, an admin
//! URL such as `postgres://postgres@127.0.0.1:5432/postgres`; each run gets a fresh database);
//! `LOAD_SECONDS` the length of the load test (default 10); `BIG=200000` adds a put_version of
//! that many resources while writes and health are timed beside it, then its whole version and
//! diff. `BENCH_SERVER_LOG=FILE` keeps the server's log (its stderr; `RUST_LOG` applies).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{Server, fresh_postgres};
use reqwest::Method;
use serde_json::{Value, json};

const AGENTS: usize = 10;
const CHAIN: usize = 100;
const CROSS_AGENT: usize = 1000;
const CLIENTS: usize = 50;

fn rid(agent: usize, i: usize) -> String {
    format!("std::testing::NullResource[agent{agent},name=n{i:07}]")
}

/// N NullResources: resource i is on agent i % 10 at position k = i / 10; within an agent each
/// requires the one before it except at the start of a chain of 100; 1 000 of them also require
/// the resource one position lower on the next agent (positions only go down along requires,
/// so there is no cycle). `changed` resources get another value (the second version of a diff).
fn resources(n: usize, version: i64, changed: usize) -> Vec<Value> {
    let every = (n / CROSS_AGENT).max(1);
    let mut cross = vec![false; n];
    for j in 0..CROSS_AGENT.min(n) {
        let i = (j * every + j % AGENTS).max(AGENTS);
        if i < n {
            cross[i] = true;
        }
    }
    (0..n)
        .map(|i| {
            let (agent, k) = (i % AGENTS, i / AGENTS);
            let mut requires = vec![];
            if k % CHAIN != 0 {
                requires.push(format!("{},v={version}", rid(agent, i - AGENTS)));
            }
            if cross[i] {
                let other = (agent + 1) % AGENTS;
                requires.push(format!("{},v={version}", rid(other, (k - 1) * AGENTS + other)));
            }
            json!({
                "id": format!("{},v={version}", rid(agent, i)),
                "name": format!("n{i:07}"), "agentname": format!("agent{agent}"), "fail": false,
                "value": if i < changed { format!("changed {i}") } else { format!("value {i}") },
                "int_value": i, "purged": false, "send_event": false, "receive_events": false,
                "requires": requires,
            })
        })
        .collect()
}

/// How many cross-agent requires `resources` makes (printed, so the figure says what it timed).
fn cross_agent_requires(resources: &[Value]) -> usize {
    resources
        .iter()
        .map(|r| {
            let agent = r["agentname"].as_str().unwrap_or_default();
            r["requires"]
                .as_array()
                .map(|req| {
                    req.iter().filter(|q| !q.as_str().unwrap_or_default().contains(&format!("[{agent},"))).count()
                })
                .unwrap_or(0)
        })
        .sum()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Median of `runs` timed calls of `path`.
async fn median(server: &Server, env: &str, path: &str, runs: usize) -> (Duration, usize) {
    let mut times = vec![];
    let mut bytes = 0;
    server.call_text(Method::GET, path, Some(env), None).await;
    for _ in 0..runs {
        let start = Instant::now();
        bytes = server.call_text(Method::GET, path, Some(env), None).await.len();
        times.push(start.elapsed());
    }
    times.sort();
    (percentile(&times, 0.5), bytes)
}

async fn put_version(server: &Server, env: &str, n: usize, changed: usize) -> (i64, Duration) {
    let version =
        server.call(Method::POST, "/api/v2/reserve_version", Some(env), None).await["data"].as_i64().expect("version");
    let resources = resources(n, version, changed);
    let body = json!({"version": version, "resources": resources});
    let started = Instant::now();
    server.call(Method::PUT, "/api/v1/version", Some(env), Some(body)).await;
    (version, started.elapsed())
}

/// How many resources have `status` (the total of a one-row page filtered on it: a count on the
/// status index).
async fn count_status(server: &Server, env: &str, status: &str) -> u64 {
    let page =
        server.call(Method::GET, &format!("/api/v2/resource?limit=1&filter.status={status}"), Some(env), None).await;
    page["metadata"]["total"].as_u64().expect("total")
}

/// Waits until all `n` resources are deployed, polling a count every `every`; fails when some
/// fail. On PostgreSQL such a count is not free while a deploy changes the rows (about 60 ms of
/// the database's CPU at 100 000: the index-only scan visits the table for every changed row),
/// so until nine tenths are deployed it polls ten times less often (once a second at 100 000):
/// a poll every 100 ms took a sixth of the machine's CPU from the deploy it timed. The last
/// tenth is polled at `every`.
async fn wait_deployed(server: &Server, env: &str, n: u64, every: Duration) -> Instant {
    let deadline = Instant::now() + Duration::from_secs(1200);
    let mut polls = 0u64;
    loop {
        let deployed = count_status(server, env, "deployed").await;
        if deployed == n {
            return Instant::now();
        }
        polls += 1;
        if polls.is_multiple_of(25) {
            assert_eq!(count_status(server, env, "failed").await, 0, "resources failed");
        }
        assert!(Instant::now() < deadline, "not deployed in time");
        let far = deployed * 10 < n * 9;
        tokio::time::sleep(if far { every * 10 } else { every }).await;
    }
}

/// Waits until the scheduler holds no queued or running task. The status answer lists every
/// resource (Inmanta's shape), megabytes at 100 000: polled every `every`.
async fn wait_scheduler_idle(server: &Server, env: &str, every: Duration) -> Instant {
    loop {
        let status = server.call(Method::GET, "/api/v2/scheduler_status", Some(env), None).await;
        // Done means stored: the results the scheduler still holds unsaved count too.
        let busy =
            ["scheduled", "running", "unsaved"].iter().map(|k| status["data"][k].as_u64().unwrap_or(0)).sum::<u64>();
        if busy == 0 {
            return Instant::now();
        }
        tokio::time::sleep(every).await;
    }
}

/// The machine's load average over the last minute (the figures say how loaded it was).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split_whitespace().next().unwrap_or("?").to_string()
}

/// What the load test saw: latencies sorted, and how many requests in how long.
struct Load {
    list: Vec<Duration>,
    health: Vec<Duration>,
    writes: Vec<Duration>,
    elapsed: Duration,
}

/// `CLIENTS` clients list resources back to back for `seconds`; beside them one prober calls
/// health every 50 ms and one writer sets a parameter every 200 ms.
async fn load(server: &Arc<Server>, env: &str, list_path: &str, seconds: u64) -> Load {
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut clients = vec![];
    for _ in 0..CLIENTS {
        let (server, env, path, stop) = (server.clone(), env.to_string(), list_path.to_string(), stop.clone());
        clients.push(tokio::spawn(async move {
            let mut times = vec![];
            while !stop.load(Ordering::Relaxed) {
                let start = Instant::now();
                server.call_text(Method::GET, &path, Some(&env), None).await;
                times.push(start.elapsed());
            }
            times
        }));
    }
    let prober = health_prober(&server.url, stop.clone(), Duration::from_millis(50));
    let writer = writer(server.clone(), env.to_string(), stop.clone(), Duration::from_millis(200));
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut list = vec![];
    for client in clients {
        list.extend(client.await.expect("client"));
    }
    let elapsed = started.elapsed();
    let mut health = prober.join().expect("prober");
    let mut writes = writer.await.expect("writer");
    list.sort();
    health.sort();
    writes.sort();
    Load { list, health, writes, elapsed }
}

/// Calls health every `every` until `stop`, on a thread and runtime of its own with its own
/// connection: what it times is the server's answer, not this process's 50 list clients
/// waiting for the same two worker threads.
fn health_prober(url: &str, stop: Arc<AtomicBool>, every: Duration) -> std::thread::JoinHandle<Vec<Duration>> {
    let url = format!("{url}/api/v2/health");
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async move {
            let http = reqwest::Client::new();
            let mut times = vec![];
            while !stop.load(Ordering::Relaxed) {
                let start = Instant::now();
                let response = http.get(&url).send().await.expect("health");
                assert!(response.status().is_success(), "health: {}", response.status());
                response.bytes().await.expect("health body");
                times.push(start.elapsed());
                tokio::time::sleep(every).await;
            }
            times
        })
    })
}

/// Sets a parameter every `every` until `stop`; the latencies of the writes.
fn writer(
    server: Arc<Server>,
    env: String,
    stop: Arc<AtomicBool>,
    every: Duration,
) -> tokio::task::JoinHandle<Vec<Duration>> {
    tokio::spawn(async move {
        let mut times = vec![];
        let mut i = 0;
        while !stop.load(Ordering::Relaxed) {
            let start = Instant::now();
            let body = json!({"source": "user", "value": format!("v{i}")});
            server.call(Method::PUT, "/api/v2/parameters/bench", Some(&env), Some(body)).await;
            times.push(start.elapsed());
            i += 1;
            tokio::time::sleep(every).await;
        }
        times
    })
}

async fn run(database: &str, n: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = match database {
        "postgres" => Some(fresh_postgres()),
        _ => None,
    };
    let server = Arc::new(Server::start(&dir.path().join("state"), url.as_deref()).await);
    let env = server.environment("scale").await;
    let label = format!("{database} {n}");
    println!("{label}: load average {} at start", load_average());
    let cpu = |from: f64| server.cpu_seconds() - from;
    server
        .call(Method::POST, "/api/v2/environment_settings/auto_deploy", Some(&env), Some(json!({"value": false})))
        .await;

    let before = server.cpu_seconds();
    let (version, stored) = put_version(&server, &env, n, 0).await;
    let cross = cross_agent_requires(&resources(n, version, 0));
    println!(
        "{label}: put_version {:.0} ms, server CPU {:.2} s ({cross} cross-agent requires)",
        ms(stored),
        cpu(before)
    );
    let before = server.cpu_seconds();
    let started = Instant::now();
    server.call(Method::POST, &format!("/api/v1/version/{version}"), Some(&env), Some(json!({"push": true}))).await;
    println!("{label}: release {:.0} ms", ms(started.elapsed()));
    let poll = Duration::from_millis(if n > 20_000 { 100 } else { 20 });
    let done = wait_deployed(&server, &env, n as u64, poll).await;
    println!(
        "{label}: first deploy (release to all deployed) {:.2} s, server CPU {:.2} s",
        (done - started).as_secs_f64(),
        cpu(before)
    );

    let before = server.cpu_seconds();
    let started = Instant::now();
    server
        .call(Method::POST, "/api/v1/deploy", Some(&env), Some(json!({"agent_trigger_method": "push_full_deploy"})))
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let done = wait_scheduler_idle(&server, &env, Duration::from_millis(if n > 20_000 { 1000 } else { 200 })).await;
    let repair_cpu = cpu(before);
    // What one of those polls costs (the status lists every resource), to tell it apart.
    let before = server.cpu_seconds();
    for _ in 0..5 {
        server.call(Method::GET, "/api/v2/scheduler_status", Some(&env), None).await;
    }
    println!(
        "{label}: repair of all {:.2} s, server CPU {repair_cpu:.2} s (with a status poll a second, each \
         costing about {:.0} ms of CPU)",
        (done - started).as_secs_f64(),
        cpu(before) * 1000.0 / 5.0
    );

    if let Some(url) = &url {
        // This machine's PostgreSQL runs without autovacuum (/etc/postgresql/15/main/conf.d/
        // 90-ci.conf); a server's would have vacuumed the state table after the deploys, which
        // is what lets the list's counts read the indexes alone (index-only scans need the
        // visibility map). Stand in for it, once, and say so.
        let started = Instant::now();
        let status = std::process::Command::new("psql")
            .arg(url)
            .args(["-q", "-c", "VACUUM (ANALYZE) resource_persistent_state"])
            .status()
            .expect("psql");
        assert!(status.success(), "VACUUM");
        println!(
            "{label}: VACUUM (ANALYZE) resource_persistent_state (autovacuum is off here) {:.0} ms",
            ms(started.elapsed())
        );
    }
    let list_path = "/api/v2/resource?limit=100&filter.agent=agent3&filter.status=deployed&sort=resource_id_value.desc";
    let (list, _) = median(&server, &env, list_path, 21).await;
    let (plain, _) = median(&server, &env, "/api/v2/resource?limit=100", 21).await;
    let last_page = format!("/api/v2/resource?limit=100&sort=resource_id.asc&start={}", rid(9, n - 1));
    let (last, _) = median(&server, &env, &last_page, 21).await;
    println!(
        "{label}: resource list page of 100, median of 21: filtered+sorted {:.1} ms, unfiltered {:.1} ms, \
         past the end {:.1} ms",
        ms(list),
        ms(plain),
        ms(last)
    );
    let details = format!("/api/v2/resource/{}", api::url::encode(&rid(5, n / 2 + 5)));
    let (details, _) = median(&server, &env, &details, 21).await;
    println!("{label}: resource details, median of 21 {:.1} ms", ms(details));
    let (summary, _) = median(&server, &env, "/api/v2/resource?limit=1&deploy_summary=true", 21).await;
    println!("{label}: deploy summary (page of 1 with deploy_summary), median of 21 {:.1} ms", ms(summary));

    let seconds = std::env::var("LOAD_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(10);
    let load = load(&server, &env, "/api/v2/resource?limit=100", seconds).await;
    println!(
        "{label}: under {CLIENTS} clients listing resources for {seconds} s: {:.0} lists/s, list p50 {:.1} ms p99 \
         {:.1} ms; health p50 {:.1} ms p99 {:.1} ms max {:.1} ms; parameter write p50 {:.1} ms max {:.1} ms",
        load.list.len() as f64 / load.elapsed.as_secs_f64(),
        ms(percentile(&load.list, 0.5)),
        ms(percentile(&load.list, 0.99)),
        ms(percentile(&load.health, 0.5)),
        ms(percentile(&load.health, 0.99)),
        ms(load.health.last().copied().unwrap_or_default()),
        ms(percentile(&load.writes, 0.5)),
        ms(load.writes.last().copied().unwrap_or_default()),
    );

    let before = server.cpu_seconds();
    let started = Instant::now();
    let dryrun = server.call(Method::POST, &format!("/api/v2/dryrun/{version}"), Some(&env), None).await;
    // the answer's data is the dry run's id (as in Inmanta); its report says how many are left
    let id = dryrun["data"].as_str().expect("dry run id").to_string();
    // Polls the list of the version's dry runs (their `todo` counts), not the report, which
    // holds every resource's diff: megabytes a poll at 100 000.
    loop {
        let runs = server.call(Method::GET, &format!("/api/v2/dryrun/{version}"), Some(&env), None).await;
        let todo = runs["data"].as_array().and_then(|runs| runs.iter().find(|r| r["id"].as_str() == Some(&id)));
        if todo.and_then(|r| r["todo"].as_i64()) == Some(0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("{label}: dry run of all {:.2} s, server CPU {:.2} s", started.elapsed().as_secs_f64(), cpu(before));

    let started = Instant::now();
    let whole = server.call_text(Method::GET, &format!("/api/v1/version/{version}"), Some(&env), None).await;
    println!("{label}: GET /api/v1/version/{version} {:.0} ms ({} MB)", ms(started.elapsed()), whole.len() / 1_000_000);
    drop(whole);

    let (second, stored) = put_version(&server, &env, n, 1000).await;
    let before = server.cpu_seconds();
    let started = Instant::now();
    let diff =
        server.call(Method::GET, &format!("/api/v2/desiredstate/diff/{version}/{second}"), Some(&env), None).await;
    let differ = diff["data"].as_array().map(Vec::len).unwrap_or(0);
    assert_eq!(differ, 1000, "the diff finds the changed resources");
    println!(
        "{label}: second version (1 000 changed) put_version {:.0} ms, diff {:.0} ms (server CPU {:.2} s)",
        ms(stored),
        ms(started.elapsed()),
        cpu(before)
    );
    println!(
        "{label}: server peak memory {:.0} MB; load average {} at the end",
        server.peak_memory_mb(),
        load_average()
    );

    if let Some(big) = std::env::var("BIG").ok().and_then(|s| s.parse::<usize>().ok()) {
        big_version(&server, &env, big, &label).await;
    }
}

/// A put_version of `n` resources while a writer and a health prober run beside it, then the
/// whole version and its diff against the previous one.
async fn big_version(server: &Arc<Server>, env: &str, n: usize, label: &str) {
    let stop = Arc::new(AtomicBool::new(false));
    let writes = writer(server.clone(), env.to_string(), stop.clone(), Duration::from_millis(50));
    let prober = health_prober(&server.url, stop.clone(), Duration::from_millis(20));
    let (version, stored) = put_version(server, env, n, 0).await;
    stop.store(true, Ordering::Relaxed);
    let writes = writes.await.expect("writer");
    let health = prober.join().expect("prober").into_iter().max().unwrap_or_default();
    println!(
        "{label}: put_version of {n} {:.2} s; beside it parameter writes max {:.0} ms ({} writes), health max {:.0} ms",
        stored.as_secs_f64(),
        ms(writes.iter().max().copied().unwrap_or_default()),
        writes.len(),
        ms(health)
    );
    let started = Instant::now();
    let whole = server.call_text(Method::GET, &format!("/api/v1/version/{version}"), Some(env), None).await;
    println!(
        "{label}: GET /api/v1/version/{version} of {n}: {:.2} s ({} MB)",
        started.elapsed().as_secs_f64(),
        whole.len() / 1_000_000
    );
    drop(whole);
    let started = Instant::now();
    server
        .call_text(Method::GET, &format!("/api/v2/desiredstate/diff/{}/{version}", version - 1), Some(env), None)
        .await;
    println!("{label}: diff against the previous version: {:.2} s", started.elapsed().as_secs_f64());
    println!("{label}: server peak memory {:.0} MB", server.peak_memory_mb());
}

#[tokio::main]
async fn main() {
    let list = |name: &str, default: &str| -> Vec<String> {
        std::env::var(name).unwrap_or_else(|_| default.into()).split(',').map(|s| s.trim().to_string()).collect()
    };
    let sizes: Vec<usize> = list("SIZES", "10000,100000").iter().filter_map(|s| s.parse().ok()).collect();
    for database in list("DATABASES", "sqlite,postgres") {
        for &n in &sizes {
            run(&database, n).await;
        }
    }
}
