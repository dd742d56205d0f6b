//! The GraphQL `resources` query at scale (issue 35 point 1): a real `inmanta server` (auth on)
//! on SQLite or PostgreSQL, one environment of N released `std::testing::NullResource`s over 10
//! agents, released and deployed, then the web console's resources query (page of 100, filtered on one agent by
//! `contains`, ordered by value descending, with `totalCount` and `resourceSummary`) asked
//! `REQUESTS` times one after the other: p50 / p95 / max, and the same page further on through
//! its cursor. Target: p50 under 20 ms at 10 000 resources.
//!
//! Run: `cargo bench -p server --bench graphql`. `RESOURCES` (default 10000),
//! `DATABASES=sqlite,postgres` (default sqlite; PostgreSQL needs `INMANTA_TEST_POSTGRES`),
//! `REQUESTS` (default 200).

mod common;

use std::time::{Duration, Instant};

use common::{Server, drop_postgres, fresh_postgres};
use reqwest::Method;
use serde_json::{Value, json};

const QUERY: &str = r#"
query GetResources($filter: ResourceFilter!, $environment: String!, $first: Int, $after: String,
                   $orderBy: [StrawberryOrder!]) {
  resources(filter: $filter, first: $first, after: $after, orderBy: $orderBy) {
    totalCount
    pageInfo { hasNextPage hasPreviousPage endCursor startCursor }
    edges { node { resourceId resourceType agent resourceIdValue requiresLength
                   state { isDeploying lastHandlerRun compliance blocked lastHandlerRunAt isOrphan } } }
  }
  resourceSummary(environment: $environment) { lastHandlerRun blocked compliance isDeploying totalCount }
}"#;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

async fn put_nulls(server: &Server, env: &str, n: usize) -> i64 {
    let version =
        server.call(Method::POST, "/api/v2/reserve_version", Some(env), None).await["data"].as_i64().expect("version");
    let resources: Vec<Value> = (0..n)
        .map(|i| {
            let agent = i % 10;
            json!({
                "id": format!("std::testing::NullResource[agent{agent},name=n{i:07}],v={version}"),
                "name": format!("n{i:07}"), "agentname": format!("agent{agent}"), "fail": false,
                "purged": false, "send_event": false, "receive_events": false, "requires": [],
            })
        })
        .collect();
    server
        .call(Method::PUT, "/api/v1/version", Some(env), Some(json!({"version": version, "resources": resources})))
        .await;
    server.call(Method::POST, &format!("/api/v1/version/{version}"), Some(env), Some(json!({"push": true}))).await;
    // Timed once everything is deployed: the list's own cost, not the deploy's.
    server.wait_deployed(env, n as u64, Duration::from_millis(200)).await;
    version
}

async fn timed(server: &Server, variables: &Value, requests: usize) -> (Vec<Duration>, Value) {
    let mut samples = Vec::with_capacity(requests);
    let mut last = Value::Null;
    for _ in 0..requests {
        let started = Instant::now();
        last = server
            .call(Method::POST, "/api/v2/graphql", None, Some(json!({"query": QUERY, "variables": variables})))
            .await;
        samples.push(started.elapsed());
    }
    samples.sort();
    (samples, last)
}

fn report(label: &str, samples: &[Duration]) {
    let at = |p: f64| ms(samples[((samples.len() - 1) as f64 * p).round() as usize]);
    println!("{label}: p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms", at(0.5), at(0.95), at(1.0));
}

async fn run(database: &str, n: usize, requests: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = (database == "postgres").then(fresh_postgres);
    let server = Server::start(&dir.path().join("state"), url.as_deref()).await;
    let env = server.environment("graphql").await;
    server
        .call(Method::POST, "/api/v2/environment_settings/auto_deploy", Some(&env), Some(json!({"value": false})))
        .await;
    put_nulls(&server, &env, n).await;
    let mut variables = json!({
        "filter": {"environment": env, "agent": {"contains": ["%agent3%"]}},
        "environment": env, "first": 100,
        "orderBy": [{"key": "resource_id_value", "order": "desc"}],
    });
    let (samples, answer) = timed(&server, &variables, requests).await;
    let resources = &answer["data"]["data"]["resources"];
    assert_eq!(resources["edges"].as_array().map(Vec::len), Some(100), "{answer}");
    assert_eq!(resources["totalCount"].as_u64(), Some((n / 10) as u64), "{answer}");
    report(&format!("{database} {n}: first page of 100 on agent3"), &samples);
    // Five pages further on, through the cursors.
    for _ in 0..5 {
        let answer = server
            .call(Method::POST, "/api/v2/graphql", None, Some(json!({"query": QUERY, "variables": variables})))
            .await;
        variables["after"] = answer["data"]["data"]["resources"]["pageInfo"]["endCursor"].clone();
    }
    let (samples, answer) = timed(&server, &variables, requests).await;
    assert_eq!(answer["data"]["data"]["resources"]["edges"].as_array().map(Vec::len), Some(100), "{answer}");
    report(&format!("{database} {n}: sixth page of 100 on agent3"), &samples);
    println!("{database} {n}: server peak memory {:.0} MB", server.peak_memory_mb());
    drop(server);
    if let Some(url) = url {
        drop_postgres(&url);
    }
}

#[tokio::main]
async fn main() {
    let n = env_number("RESOURCES", 10_000);
    let requests = env_number("REQUESTS", 200);
    let databases = std::env::var("DATABASES").unwrap_or_else(|_| "sqlite".into());
    for database in databases.split(',') {
        run(database.trim(), n, requests).await;
    }
}
