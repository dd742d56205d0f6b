//! Throughput of several servers on one PostgreSQL (issue 14, docs/performance.md, "Several servers, faults, memory"):
//! the same deploy of N `std::testing::NullResource`s spread over E environments (one
//! environment is one scheduler, so several environments are what spreads over servers), with
//! one server and with three. Prints the time from the first store to everything deployed,
//! resources per second, where the schedulers ran and the load average.
//!
//! Run: `INMANTA_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/postgres cargo bench -p server
//! --bench ha`. `RESOURCES` (default 10000), `ENVIRONMENTS` (6), `SERVERS` (`1,3`) and `AGENTS`
//! per environment (5) change the shape. Auth is off: the figure is about the deploy.

#[path = "../tests/server/common/mod.rs"]
#[allow(dead_code, reason = "the bench uses a part of the tests' helpers")]
mod common;

use std::time::{Duration, Instant};

use common::TestServer;
use serde_json::{Value, json};

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Resources of one environment: chains of 100 within each agent.
fn resources(n: usize, agents: usize, version: i64) -> Vec<Value> {
    let rid = |i: usize| format!("std::testing::NullResource[agent{},name=n{i:06}]", i % agents);
    (0..n)
        .map(|i| {
            let requires = if !(i / agents).is_multiple_of(100) {
                vec![format!("{},v={version}", rid(i - agents))]
            } else {
                vec![]
            };
            json!({
                "id": format!("{},v={version}", rid(i)), "name": format!("n{i:06}"),
                "agentname": format!("agent{}", i % agents), "fail": false, "value": "v", "int_value": i,
                "purged": false, "send_event": false, "receive_events": false, "requires": requires,
            })
        })
        .collect()
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

async fn run(servers: usize, total: usize, environments: usize, agents: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = orchestrator::testing::fresh_database_url(dir.path()).await.expect("a database");
    let db = orchestrator::Orchestrator::open(&url).await.expect("open the database");
    let env_vars = [("INMANTA_SERVER_AUTH", "false"), ("INMANTA_SERVER_SCHEDULER_LEASE", "5")];
    let mut cluster = Vec::new();
    for _ in 0..servers {
        cluster.push(TestServer::start_on(&url, &env_vars).await);
    }
    let s = &cluster[0];
    let (_, p) = s.call("PUT", "/api/v2/project", None, Some(json!({"name": "bench"}))).await;
    let mut envs = Vec::new();
    for e in 0..environments {
        let (status, body) = s
            .call(
                "PUT",
                "/api/v2/environment",
                None,
                Some(json!({"project_id": p["data"]["id"], "name": format!("e{e}")})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        envs.push(body["data"]["id"].as_str().expect("id").to_string());
    }
    // Wait until every environment's scheduler runs somewhere and the leases have spread.
    let share = environments.div_ceil(servers) as i64;
    let deadline = Instant::now() + Duration::from_secs(60);
    let spread = loop {
        let held: Vec<(String, i64)> = sqlx::query_as(
            "SELECT holder, COUNT(*) FROM scheduler_lease WHERE expires > \
             CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT) GROUP BY holder",
        )
        .fetch_all(db.store().pool())
        .await
        .expect("read the leases");
        if held.iter().map(|(_, n)| n).sum::<i64>() == environments as i64 && held.iter().all(|(_, n)| *n <= share) {
            break held.iter().map(|(_, n)| n.to_string()).collect::<Vec<_>>().join("+");
        }
        assert!(Instant::now() < deadline, "the leases did not spread: {held:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // One version per environment, stored through the servers in turn.
    let per_env = total / environments;
    // The clock starts with the first store: the first environments deploy while the others
    // are being stored.
    let started = Instant::now();
    for (e, env) in envs.iter().enumerate() {
        let s = &cluster[e % servers];
        let (_, v) = s.call("POST", "/api/v2/reserve_version", Some(env), None).await;
        let version = v["data"].as_i64().expect("version");
        let body = json!({"version": version, "resources": resources(per_env, agents, version)});
        let (status, answer) = s.call("PUT", "/api/v1/version", Some(env), Some(body)).await;
        assert_eq!(status, 200, "{answer}");
    }
    let stored = Instant::now();
    let expected = (per_env * environments) as i64;
    let deadline = stored + Duration::from_secs(1800);
    loop {
        let deployed: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM resource_persistent_state WHERE last_non_deploying_status = 'deployed' \
             AND last_deployed_attribute_hash = current_intent_attribute_hash",
        )
        .fetch_one(db.store().pool())
        .await
        .expect("count deployed");
        if deployed >= expected {
            break;
        }
        assert!(Instant::now() < deadline, "only {deployed} of {expected} deployed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = started.elapsed();
    println!(
        "{servers} server(s), {expected} resources in {environments} environments (schedulers per server: {spread}): \
         stored in {:.1} s, all deployed {:.1} s after the first store = {:.0} resources/s; load average {}",
        (stored - started).as_secs_f64(),
        took.as_secs_f64(),
        expected as f64 / took.as_secs_f64(),
        load_average()
    );
}

#[tokio::main]
async fn main() {
    if !std::env::var("INMANTA_TEST_POSTGRES").is_ok_and(|u| !u.is_empty()) {
        eprintln!("several servers need PostgreSQL: set INMANTA_TEST_POSTGRES");
        return;
    }
    let total = setting("RESOURCES", 10_000);
    let environments = setting("ENVIRONMENTS", 6);
    let agents = setting("AGENTS", 5);
    let counts = std::env::var("SERVERS").unwrap_or_else(|_| "1,3".into());
    println!(
        "machine: {} cores; load average before: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    for servers in counts.split(',').filter_map(|n| n.trim().parse().ok()) {
        run(servers, total, environments, agents).await;
    }
}
