//! No request keeps working after its client has gone (issue 47): slow resource lists and a
//! slow GraphQL query whose clients close their connections stop costing the server CPU. The
//! server's CPU time (its process's, from /proc) over the requests answered in full is the
//! yardstick; the same requests abandoned must cost a small part of it after their clients
//! went. Loopback only, on SQLite or on PostgreSQL (`INMANTA_TEST_POSTGRES`).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::TestServer;

const RESOURCES: usize = 3000;
/// Requests sent at once: more than the list queue runs together (one per core).
const REQUESTS: usize = 24;

/// The CPU time the process `pid` has used so far, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the server's /proc stat");
    // The fields after the command name (which is in parentheses and may hold spaces).
    let fields: Vec<&str> = stat.rsplit_once(')').expect("a stat line").1.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
    let per_second = std::process::Command::new("getconf").arg("CLK_TCK").output().expect("getconf CLK_TCK");
    ticks / String::from_utf8_lossy(&per_second.stdout).trim().parse::<f64>().expect("clock ticks")
}

/// A halted environment (nothing deploys, nothing else costs CPU) holding RESOURCES released
/// NullResources over 4 agents.
async fn environment(server: &TestServer) -> String {
    let env = server.new_environment("disconnect", "e").await.to_string();
    let (status, _) = server.call("POST", "/api/v2/actions/environment/halt", Some(&env), None).await;
    assert_eq!(status, 200);
    let (status, reserved) = server.call("POST", "/api/v2/reserve_version", Some(&env), None).await;
    assert_eq!(status, 200);
    let version = reserved["data"].as_i64().expect("a version");
    let resources: Vec<_> = (0..RESOURCES)
        .map(|i| {
            let agent = i % 4;
            json!({
                "id": format!("std::testing::NullResource[agent{agent},name=n{i:05}],v={version}"),
                "name": format!("n{i:05}"), "agentname": format!("agent{agent}"), "purged": false,
                "send_event": false, "requires": [],
            })
        })
        .collect();
    let body = json!({"version": version, "resources": resources});
    let (status, answer) = server.call("PUT", "/api/v1/version", Some(&env), Some(body)).await;
    assert_eq!(status, 200, "{answer}");
    // `auto_deploy` (on by default) released it.
    let (_, page) = server.call("GET", "/api/v2/resource?limit=1", Some(&env), None).await;
    assert_eq!(page["metadata"]["total"], RESOURCES, "the released resources are listed");
    env
}

/// Sends the `REQUESTS` requests `request(i)` at once with a client that gives up after
/// `give_up` (when set); how many were answered, and the server CPU time they cost while their
/// clients waited and after all of them were answered or had gone (over `settle`).
async fn cost(
    server: &TestServer,
    give_up: Option<Duration>,
    settle: Duration,
    request: impl Fn(&reqwest::Client, usize) -> reqwest::RequestBuilder,
) -> (usize, f64, f64) {
    let mut headers = reqwest::header::HeaderMap::new();
    let token = server.token.as_deref().expect("an admin token");
    headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {token}").parse().expect("header"));
    let mut client = reqwest::Client::builder().default_headers(headers).pool_max_idle_per_host(0);
    if let Some(give_up) = give_up {
        client = client.timeout(give_up);
    }
    let client = client.build().expect("client");
    let pid = server.pid().expect("a running server");
    let start = cpu_seconds(pid);
    let sent: Vec<_> = (0..REQUESTS)
        .map(|i| {
            let request = request(&client, i);
            tokio::spawn(async move {
                match request.send().await {
                    Ok(response) => response.status().is_success() && response.bytes().await.is_ok(),
                    Err(_) => false,
                }
            })
        })
        .collect();
    let mut answered = 0;
    for request in sent {
        answered += usize::from(request.await.expect("a request task"));
    }
    let ended = cpu_seconds(pid);
    tokio::time::sleep(settle).await;
    (answered, ended - start, cpu_seconds(pid) - ended)
}

/// `request` answered in full costs the yardstick; abandoned after a tenth of the time that
/// took, it may cost at most a third of it once its clients have gone.
async fn abandoned_requests_stop(
    server: &TestServer,
    what: &str,
    request: impl Fn(&reqwest::Client, usize) -> reqwest::RequestBuilder,
) {
    let began = Instant::now();
    let (answered, full, _) = cost(server, None, Duration::ZERO, &request).await;
    let took = began.elapsed();
    assert_eq!(answered, REQUESTS, "{what}: every request answered when its client waits");
    assert!(full > 0.3, "{what}: the requests are too cheap to tell ({full:.2} s of CPU); make them slower");
    let give_up = (took / 10).max(Duration::from_millis(20));
    let (answered, before, after) = cost(server, Some(give_up), took.max(Duration::from_secs(1)), &request).await;
    assert!(answered < REQUESTS / 2, "{what}: the clients gave up after {give_up:?} ({answered} were answered)");
    eprintln!(
        "{what}: {full:.2} s of server CPU answered in {took:?}; abandoned after {give_up:?}: {before:.2} s, then {after:.2} s"
    );
    assert!(
        after < full / 3.0,
        "{what}: {after:.2} s of server CPU after the clients had gone (and {before:.2} s before), \
         against {full:.2} s for the whole requests: the server kept working for nobody"
    );
}

#[tokio::test]
async fn lists_and_graphql_queries_stop_when_their_clients_go() {
    let server = TestServer::start().await;
    let env = environment(&server).await;
    // Each list a page of 1 000 resources, no two alike (so none shares another's read).
    abandoned_requests_stop(&server, "resource lists", |client, i| {
        client
            .get(format!("{}/api/v2/resource?limit={}&sort=resource_id_value.asc", server.url, 1000 - i))
            .header("X-Inmanta-tid", &env)
    })
    .await;
    let aliases: Vec<String> = (0..2)
        .map(|i| {
            format!(
                "a{i}: resources(filter: {{environment: \"{env}\"}}, first: 1000) \
                 {{ edges {{ node {{ resourceId agent resourceType resourceIdValue }} }} }}"
            )
        })
        .collect();
    let query = format!("query {{ {} }}", aliases.join(" "));
    abandoned_requests_stop(&server, "GraphQL queries", |client, _| {
        client.post(format!("{}/api/v2/graphql", server.url)).json(&json!({"query": query}))
    })
    .await;
}
