//! Issue 46: what Inmanta's own web console and clients ask of a server, answered as Inmanta
//! 20.1 answers: the console's dates in list filters, the server status (slices, features,
//! versions), the CORS header of `server.access-control-allow-origin`.

use crate::common::TestServer;
use api::version::PutVersion;
use serde_json::{Value, json};

/// A released version with one NullResource and a parameter; the environment's id.
async fn environment_with_content(s: &TestServer) -> String {
    let env = s.new_environment("project-surface", "surface").await;
    let client = s.client();
    let version = client.reserve_version(env).await.unwrap();
    let resource = json!({"id": format!("std::testing::NullResource[agent0,name=n],v={version}"), "name": "n",
                          "agentname": "agent0", "fail": false, "purged": false, "send_event": false, "requires": []});
    let resources = vec![resource.as_object().unwrap().clone()];
    client.put_version(env, &PutVersion { version, resources, ..Default::default() }).await.unwrap();
    // auto_deploy released it already.
    let _ = client.release_version(env, version, false).await;
    let tid = env.to_string();
    let (status, body) =
        s.call("PUT", "/api/v1/parameter/p", Some(&tid), Some(json!({"value": "v", "source": "user"}))).await;
    assert_eq!(status, 200, "{body}");
    tid
}

fn count(body: &Value) -> usize {
    body["data"].as_array().unwrap_or_else(|| panic!("no data in {body}")).len()
}

#[tokio::test]
async fn list_filters_read_dates_as_inmantas_console_sends_them() {
    let s = TestServer::start().await;
    let tid = environment_with_content(&s).await;
    let rid = "std::testing::NullResource[agent0,name=n]";
    let lists = [
        "/api/v2/compilereport?filter.requested=",
        "/api/v2/desiredstate?filter.date=",
        "/api/v2/parameters?filter.updated=",
        &format!("/api/v2/resource/{}/logs?filter.timestamp=", api::url::encode(rid)),
    ];
    for list in lists {
        // The web console's `YYYY-MM-DD+HH:mm:ss` (the `+` a space), the dashboard's poll.
        let (status, body) = s.call("GET", &format!("{list}ge:2026-11-24+22:07:46"), Some(&tid), None).await;
        assert_eq!(status, 200, "{list}: {body}");
        // Every form dateutil's isoparse takes, with its meaning: naive is UTC.
        for bound in [
            "ge:2000-01-01",
            "ge:2000-01-01T00:00Z",
            "ge:20000101T000000",
            "ge:2000-W01-1",
            "ge:2000-001",
            "le:2999-12-31+23:59:59,5",
            "lt:2999-12-31T23:59:59%2B0200",
            "gt:2000",
        ] {
            let (status, body) = s.call("GET", &format!("{list}{bound}"), Some(&tid), None).await;
            assert_eq!(status, 200, "{list}{bound}: {body}");
        }
        let (status, body) = s.call("GET", &format!("{list}ge:yesterday"), Some(&tid), None).await;
        assert_eq!(status, 400, "{list}: {body}");
        assert!(body["message"].as_str().unwrap().contains("yesterday"), "{body}");
    }
    // The bounds select: the version and the parameter are of now.
    let (_, all) = s.call("GET", "/api/v2/desiredstate?filter.date=ge:2000-01-01+00:00:00", Some(&tid), None).await;
    assert_eq!(count(&all), 1, "{all}");
    let (_, none) = s.call("GET", "/api/v2/desiredstate?filter.date=ge:2999-01-01+00:00:00", Some(&tid), None).await;
    assert_eq!(count(&none), 0, "{none}");
    let (_, none) = s.call("GET", "/api/v2/parameters?filter.updated=le:2000-01-01", Some(&tid), None).await;
    assert_eq!(count(&none), 0, "{none}");
    let (_, one) = s.call("GET", "/api/v2/parameters?filter.updated=le:2999-W01", Some(&tid), None).await;
    assert_eq!(count(&one), 1, "{one}");
}

/// The slices of the real Inmanta 20.1 server's `GET /api/v1/serverstatus`, in its order.
const INMANTA_SLICES: [&str; 20] = [
    "core.transport",
    "core.server",
    "core.scheduler_manager",
    "core.autostarted_agent_manager",
    "core.database",
    "core.compiler",
    "core.project",
    "core.environment",
    "core.file",
    "core.code",
    "core.metrics",
    "core.parameters",
    "core.resource",
    "core.orchestration",
    "core.dryrun",
    "core.notification",
    "core.user",
    "core.environment-metrics",
    "core.graphql",
    "core.feature",
];

#[tokio::test]
async fn the_server_status_has_inmantas_slices_and_features() {
    let s = TestServer::start().await;
    let (status, body) = s.call("GET", "/api/v1/serverstatus", None, None).await;
    assert_eq!(status, 200, "{body}");
    let data = &body["data"];
    let slices = data["slices"].as_array().unwrap();
    let names: Vec<&str> = slices.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names[..20], INMANTA_SLICES, "{names:?}");
    assert!(names[20..].iter().all(|n| n.starts_with("health.") || *n == "core.cluster"), "{names:?}");
    let slice = |name: &str| slices.iter().find(|s| s["name"] == name).unwrap()["status"].clone();
    // The keys the real server reports, where this server has the figure.
    let scheduler = slice("core.scheduler_manager");
    assert_eq!((scheduler["resource_facts"].clone(), scheduler["running"].clone()), (json!(0), json!(true)));
    assert!(scheduler["sessions"].is_u64(), "{scheduler}");
    assert_eq!(slice("core.autostarted_agent_manager"), json!({"processes": 0}));
    let database = slice("core.database");
    for key in ["connected", "database", "host", "max_pool", "free_pool", "open_connections", "free_connections"] {
        assert!(!database[key].is_null(), "{key} in {database}");
    }
    assert_eq!(database["connected"], true);
    let compiler = slice("core.compiler");
    assert_eq!((compiler["task_queue"].clone(), compiler["running"].clone()), (json!(0), json!(false)));
    assert_eq!(slice("core.transport")["running"], true);
    // Inmanta's open source edition: the console shows Discovered Resources and compliance.
    assert_eq!(
        data["features"],
        json!([{"slice": "core.resource", "name": "resource_discovery", "value": true},
               {"slice": "core.resource", "name": "compliance_reporting", "value": true}])
    );
    let python = data["python_version"].as_str().unwrap();
    assert!(!python.is_empty(), "{data}");
    if std::env::var("INMANTA_TEST_POSTGRES").is_ok_and(|u| !u.is_empty()) {
        let version = data["postgresql_version"].as_str().expect("PostgreSQL's version");
        assert!(version.chars().next().is_some_and(|c| c.is_ascii_digit()), "{version}");
    } else {
        assert!(data.get("postgresql_version").is_none(), "no PostgreSQL: {data}");
    }
}

#[tokio::test]
async fn access_control_allow_origin_is_sent_as_configured_and_preflights_answer() {
    let s = TestServer::start_with(&[("INMANTA_SERVER_ACCESS_CONTROL_ALLOW_ORIGIN", "https://console.example")]).await;
    let http = reqwest::Client::new();
    let get = http
        .get(format!("{}/api/v1/serverstatus", s.url))
        .bearer_auth(s.token.as_deref().unwrap_or_default())
        .send()
        .await
        .unwrap();
    assert_eq!(get.headers()["access-control-allow-origin"], "https://console.example");
    let preflight = http.request(reqwest::Method::OPTIONS, format!("{}/api/v2/project", s.url)).send().await.unwrap();
    assert_eq!(preflight.status(), 200);
    assert_eq!(preflight.headers()["access-control-allow-origin"], "https://console.example");
    assert_eq!(preflight.headers()["access-control-allow-methods"], "HEAD, GET, POST, PUT, OPTIONS, DELETE, PATCH");
    let allowed = preflight.headers()["access-control-allow-headers"].to_str().unwrap();
    assert!(allowed.contains("X-Inmanta-tid") && allowed.ends_with("Authorization"), "{allowed}");
    // Unset (Inmanta's default): no such header at all.
    let plain = TestServer::start().await;
    let get = http
        .get(format!("{}/api/v1/serverstatus", plain.url))
        .bearer_auth(plain.token.as_deref().unwrap_or_default())
        .send()
        .await
        .unwrap();
    assert!(get.headers().get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn compile_reports_past_their_retention_are_removed() {
    let s = TestServer::start_with(&[
        ("INMANTA_SERVER_COMPILER_REPORT_RETENTION", "0"),
        ("INMANTA_SERVER_CLEANUP_COMPILER_REPORTS_INTERVAL", "1"),
    ])
    .await;
    let env = s.new_environment("project-retention", "e").await.to_string();
    // No repository: the compile fails at once; its notification says it finished.
    let (status, body) = s.call("POST", &format!("/api/v1/notify/{env}"), None, Some(json!({}))).await;
    assert_eq!(status, 200, "{body}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (_, notes) = s.call("GET", "/api/v2/notification", Some(&env), None).await;
        let (_, reports) = s.call("GET", "/api/v2/compilereport", Some(&env), None).await;
        if count(&notes) == 1 && count(&reports) == 0 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "notifications: {notes}\nreports: {reports}");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_filtered_dry_run_covers_what_the_filter_selects_and_keeps_filter_and_context() {
    let s = TestServer::start().await;
    let env = s.new_environment("project-filtered", "filtered").await;
    let client = s.client();
    let version = client.reserve_version(env).await.unwrap();
    let resources = ["a", "b"]
        .iter()
        .map(|name| {
            json!({"id": format!("std::testing::NullResource[agent0,name={name}],v={version}"), "name": name,
                   "agentname": "agent0", "fail": false, "purged": false, "send_event": false, "requires": []})
            .as_object()
            .unwrap()
            .clone()
        })
        .collect();
    client.put_version(env, &PutVersion { version, resources, ..Default::default() }).await.unwrap();
    let _ = client.release_version(env, version, false).await;
    let tid = env.to_string();
    let filter = json!({"resourceIdValue": {"eq": ["a"]}});
    let context = json!({"my-tool": {"ticket": 42}});
    let (status, body) = s
        .call("POST", "/api/v2/dryrun_filtered", Some(&tid), Some(json!({"filter": filter, "context": context})))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["model"], version);
    let id = body["data"]["id"].as_str().unwrap().to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let report = loop {
        let (status, report) = s.call("GET", &format!("/api/v2/dryrun/{version}/{id}"), Some(&tid), None).await;
        assert_eq!(status, 200, "{report}");
        if report["data"]["summary"]["todo"] == 0 {
            break report;
        }
        assert!(std::time::Instant::now() < deadline, "{report}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let summary = &report["data"]["summary"];
    assert_eq!((summary["total"].clone(), summary["resource_filter"].clone()), (json!(1), filter.clone()));
    assert_eq!(summary["context"], context);
    let diffs: Vec<&str> =
        report["data"]["diff"].as_array().unwrap().iter().map(|d| d["resource_id"].as_str().unwrap()).collect();
    assert_eq!(diffs, ["std::testing::NullResource[agent0,name=a]"]);
    let (_, listed) = s.call("GET", &format!("/api/v2/dryrun/{version}"), Some(&tid), None).await;
    assert_eq!(listed["data"][0]["context"], context, "{listed}");

    // Without a filter: every resource; a filter matching nothing is 404, a malformed one 400.
    let (status, body) = s.call("POST", "/api/v2/dryrun_filtered", Some(&tid), Some(json!({}))).await;
    assert_eq!(status, 200, "{body}");
    let (_, all) = s
        .call("GET", &format!("/api/v2/dryrun/{version}/{}", body["data"]["id"].as_str().unwrap()), Some(&tid), None)
        .await;
    assert_eq!(all["data"]["summary"]["total"], 2, "{all}");
    assert_eq!(all["data"]["summary"]["resource_filter"], Value::Null, "{all}");
    let nothing = json!({"filter": {"resourceIdValue": {"eq": ["nope"]}}});
    let (status, body) = s.call("POST", "/api/v2/dryrun_filtered", Some(&tid), Some(nothing)).await;
    assert_eq!(status, 404, "{body}");
    let (status, body) =
        s.call("POST", "/api/v2/dryrun_filtered", Some(&tid), Some(json!({"filter": {"nonsense": 1}}))).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["message"].as_str().unwrap().contains("nonsense"), "{body}");
}
