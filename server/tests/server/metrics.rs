//! `GET /metrics` against a real server: its own access rule, and the deploy's counters,
//! histograms and gauges moving while Prometheus would scrape. Also checks that every query of
//! the Grafana dashboard in docs/ names a metric the server exports.

use crate::common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use api::version::PutVersion;
use common::{TestServer, client_with};
use serde_json::{Value, json};

async fn scrape(s: &TestServer, token: Option<&str>) -> (u16, String) {
    let response = client_with(token).get(format!("{}/metrics", s.url)).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// The value of one sample: `name{labels...}` whose labels include every `label="value"` given.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
        let matches = metric == name && labels.iter().all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")));
        matches.then(|| value.parse().ok()).flatten()
    })
}

fn null_resource(name: &str, fail: bool) -> Value {
    json!({
        "id": format!("std::testing::NullResource[internal,name={name}],v=0"), "name": name,
        "agentname": "internal", "fail": fail, "purged": false, "send_event": false, "requires": [],
    })
}

#[tokio::test]
async fn metrics_need_their_own_token_and_move_during_a_deploy() {
    let s = TestServer::start().await;
    let env = s.new_environment("p", "e").await.to_string();

    // Its own access rule: nothing without a token, not with a user's or an agent's token.
    let (status, body) = scrape(&s, None).await;
    assert_eq!(status, 401, "{body}");
    let (status, body) = scrape(&s, s.token.as_deref()).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("metrics"), "the refusal says which token to use: {body}");
    let agent = s.environment_token(&env, &["agent"]).await;
    assert_eq!(scrape(&s, Some(&agent)).await.0, 403);
    let token = s.environment_token(&env, &["metrics"]).await;
    // A scraping token reads nothing else.
    let (status, _) = {
        let r = client_with(Some(&token)).get(format!("{}/api/v2/resource", s.url)).header("X-Inmanta-tid", &env);
        let r = r.send().await.unwrap();
        (r.status().as_u16(), ())
    };
    assert_eq!(status, 403);

    let (status, before) = scrape(&s, Some(&token)).await;
    assert_eq!(status, 200, "{before}");
    assert!(sample(&before, "inmanta_build_info", &[("version", env!("CARGO_PKG_VERSION"))]) == Some(1.0), "{before}");
    assert_eq!(sample(&before, "inmanta_resources", &[("environment", &env), ("state", "deployed")]), Some(0.0));
    assert_eq!(sample(&before, "inmanta_compile_queue_length", &[("environment", &env)]), Some(0.0));
    assert!(sample(&before, "inmanta_resource_deploys_total", &[("environment", &env)]).is_none());

    // A deploy of 300 resources, one of which fails.
    let total = 300;
    let mut resources: Vec<Value> = (0..total - 1).map(|n| null_resource(&format!("r{n}"), false)).collect();
    resources.push(null_resource("broken", true));
    let (client, env_id) = (s.client(), env.parse().unwrap());
    let version = client.reserve_version(env_id).await.unwrap();
    let resources = resources.into_iter().map(|r| r.as_object().unwrap().clone()).collect();
    client.put_version(env_id, &PutVersion { version, resources, ..Default::default() }).await.unwrap();
    // auto_deploy (the default) releases it at once.

    // Scrape while it deploys, until every resource has a final state.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    let last = loop {
        let (status, text) = scrape(&s, Some(&token)).await;
        assert_eq!(status, 200);
        let deployed =
            sample(&text, "inmanta_resource_deploys_total", &[("environment", &env), ("result", "deployed")]);
        seen.push(deployed.unwrap_or(0.0));
        let done = sample(&text, "inmanta_resources", &[("environment", &env), ("state", "deployed")])
            == Some((total - 1) as f64)
            && sample(&text, "inmanta_resources", &[("environment", &env), ("state", "failed")]) == Some(1.0)
            // the scheduler sets its queue gauges once a second
            && sample(&text, "inmanta_scheduler_queue_depth", &[("environment", &env), ("agent", "internal")]).is_some();
        if done {
            break text;
        }
        assert!(Instant::now() < deadline, "the deploy did not finish: {text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "a counter never goes down: {seen:?}");
    assert!(
        sample(&last, "inmanta_resource_deploys_total", &[("environment", &env), ("result", "deployed")]).unwrap()
            >= (total - 1) as f64
    );
    assert!(
        sample(&last, "inmanta_resource_deploys_total", &[("environment", &env), ("result", "failed")]).unwrap() >= 1.0
    );
    let count = sample(&last, "inmanta_resource_deploy_duration_seconds_count", &[("environment", &env)]).unwrap();
    assert!(count >= total as f64, "one observation per deploy: {count}");
    assert!(
        sample(&last, "inmanta_resource_deploy_duration_seconds_bucket", &[("environment", &env), ("le", "+Inf")])
            .unwrap()
            >= total as f64
    );
    // The API calls of the deploy, by route pattern and status.
    let put = [("method", "PUT"), ("route", "/api/v1/version"), ("status", "200")];
    assert!(sample(&last, "inmanta_api_request_duration_seconds_count", &put) >= Some(1.0), "{last}");
    assert!(sample(&last, "inmanta_agents", &[("environment", &env), ("state", "up")]) >= Some(1.0), "{last}");
    assert!(
        sample(&last, "inmanta_scheduler_queue_depth", &[("environment", &env), ("agent", "internal")]).is_some(),
        "{last}"
    );
    assert!(sample(&last, "inmanta_database_pool_wait_seconds_count", &[]) >= Some(1.0), "{last}");
    assert!(sample(&last, "inmanta_database_pool_connections", &[("state", "idle")]).is_some(), "{last}");
    assert!(sample(&last, "inmanta_environment_info", &[("environment", &env), ("name", "e")]) == Some(1.0), "{last}");
}

#[tokio::test]
async fn a_separate_metrics_address_needs_no_credentials() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let s = TestServer::start_with(&[("INMANTA_SERVER_METRICS_BIND_PORT", &port)]).await;
    let response = reqwest::get(format!("http://127.0.0.1:{port}/metrics")).await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(response.text().await.unwrap().contains("inmanta_build_info"));
    // The main port still asks for a token.
    assert_eq!(scrape(&s, None).await.0, 401);
}

/// Every PromQL expression of the dashboard names only metrics the server exports.
#[test]
fn the_grafana_dashboard_queries_exported_metrics() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/grafana-dashboard.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("valid JSON");
    assert!(dashboard["title"].is_string() && dashboard["schemaVersion"].as_u64().is_some());
    let exported: BTreeSet<String> = orchestrator::metrics::ALL
        .iter()
        .flat_map(|m| [m.to_string(), format!("{m}_bucket"), format!("{m}_count"), format!("{m}_sum")])
        .collect();
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(panels.len() >= 8, "a panel per area");
    let mut used = BTreeSet::new();
    for panel in panels {
        assert!(panel["title"].is_string() && panel["type"].is_string() && panel["gridPos"].is_object(), "{panel}");
        let targets = panel["targets"].as_array().unwrap_or_else(|| panic!("panel without queries: {panel}"));
        assert!(!targets.is_empty());
        for target in targets {
            let expr = target["expr"].as_str().expect("a PromQL expression");
            let names: Vec<&str> = expr
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .filter(|w| w.starts_with("inmanta_"))
                .collect();
            assert!(!names.is_empty(), "{expr} queries no inmanta metric");
            for name in names {
                assert!(exported.contains(name), "{expr} names {name}, which the server does not export");
                used.insert(
                    name.trim_end_matches("_bucket").trim_end_matches("_count").trim_end_matches("_sum").to_string(),
                );
            }
        }
    }
    for metric in orchestrator::metrics::ALL.iter().filter(|m| **m != "inmanta_environment_info") {
        assert!(used.contains(*metric), "the dashboard shows nothing of {metric}");
    }
}
