//! Upgrades: the database of every release, filled with every kind of row, is kept under
//! `server/tests/fixtures/release-<version>/` (`inmanta.db` for SQLite, `postgres.sql`, a plain
//! `pg_dump`). Each is migrated by this build at start and must then serve every route.
//! `scripts/make-upgrade-fixture.sh` makes the fixture of the current release (the ignored test
//! `make_release_fixture` below).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use api::ResourceState;
use common::{ADMIN, ADMIN_PASSWORD, BIN, TestServer, client_with};
use serde_json::json;
use uuid::Uuid;

const HELLO: &str = "f572d396fae9206628714fb2ce00f72e94f2258f"; // sha1 of "hello\n"
const OPERATOR: &str = "operator";
const OPERATOR_PASSWORD: &str = "Operator-password-1";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Fills a new server's database with a row of every kind an operator's database holds.
async fn fill(s: &TestServer) {
    let client = s.client();
    let project = client.create_project("shop").await.expect("project");
    let mut envs = Vec::new();
    for name in ["prod", "test"] {
        let body = api::environment::EnvironmentCreate {
            project_id: project.id,
            name: name.into(),
            repository: Some("https://example.com/shop.git".into()),
            branch: Some("main".into()),
            ..Default::default()
        };
        envs.push(client.create_environment(&body).await.expect("environment").id);
    }
    let env = envs[0];
    let tid = env.to_string();
    client.set_environment_setting(env, "auto_deploy", true).await.expect("setting");
    client.set_environment_setting(env, "notification_retention", 30).await.expect("setting");
    let param = api::operations::SetParameter {
        source: "user".into(),
        value: json!("eu-west"),
        resource_id: None,
        metadata: Some(json!({"owner": "ops"})),
        recompile: false,
        expires: None,
    };
    client.set_parameter(env, "region", &param).await.expect("parameter");
    let (status, body) =
        s.call("PUT", &format!("/api/v1/file/{HELLO}"), None, Some(json!({"content": "aGVsbG8K"}))).await;
    assert_eq!(status, 200, "{body}");

    // Two versions of resources (the second released and deployed: actions, logs, agents).
    for round in 0..2 {
        let version = client.reserve_version(env).await.expect("reserve");
        let resources = (0..20)
            .map(|i| {
                let rid = format!("std::testing::NullResource[agent{},name=r{i}]", i % 2);
                json!({"id": format!("{rid},v={version}"), "name": format!("r{i}"), "agentname": format!("agent{}", i % 2),
                       "send_event": false, "purged": false, "requires": [], "hash": HELLO, "round": round})
                .as_object()
                .cloned()
                .unwrap()
            })
            .collect();
        let body = api::version::PutVersion { version, resources, ..Default::default() };
        client.put_version(env, &body).await.expect("put version");
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let summary = client.deploy_summary(env).await.expect("summary");
        if summary.by_state.get(&ResourceState::Deployed) == Some(&20) {
            break;
        }
        assert!(Instant::now() < deadline, "the fixture's deploy did not finish: {summary:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rid = "std::testing::NullResource[agent0,name=r0]";
    let fact = api::operations::SetParameter {
        source: "fact".into(),
        value: json!("42"),
        resource_id: Some(rid.into()),
        metadata: None,
        recompile: false,
        expires: None,
    };
    client.set_fact(env, "size", &fact).await.expect("fact");
    let found = api::resource::DiscoveredResourceInput {
        discovered_resource_id: "std::testing::NullResource[agent0,name=found]".into(),
        values: json!({"name": "found"}),
        discovery_resource_id: rid.into(),
    };
    // Reported by an agent, with an agent's token.
    let agent_token = s.environment_token(&tid, &["agent"]).await;
    let agent = api::client::Client::new(s.url.clone()).with_token(Some(agent_token)).with_ca_file(None).unwrap();
    agent.report_discovered(env, &[found]).await.expect("discovered");
    let version = client.desired_state(env, &Default::default()).await.expect("versions").data[0].version;
    client.dry_run(env, version).await.expect("dry run");
    client.pause_agent(env, Some("agent1")).await.expect("pause");
    // A compile request: no repository can be cloned, so it fails and notifies.
    client.notify(envs[1], &api::compile::NotifyChange { update: false, ..Default::default() }).await.expect("compile");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (_, body) = s.call("GET", "/api/v2/notification?limit=10", Some(&envs[1].to_string()), None).await;
        if body["data"].as_array().is_some_and(|n| !n.is_empty()) {
            break;
        }
        assert!(Instant::now() < deadline, "no notification of the failed compile: {body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    client.create_user(OPERATOR, OPERATOR_PASSWORD).await.expect("user");
    let (status, body) = s
        .call(
            "POST",
            &format!("/api/v2/role_assignment/{OPERATOR}"),
            None,
            Some(json!({"environment": tid, "role": "noc"})),
        )
        .await;
    assert!(status == 200 || status == 201, "role: {body}");
    s.environment_token(&tid, &["agent"]).await;
}

/// Regenerates the fixture of this release (SQLite, or PostgreSQL with INMANTA_TEST_POSTGRES)
/// in `INMANTA_FIXTURE_DIR`: `scripts/make-upgrade-fixture.sh`.
#[tokio::test]
#[ignore = "run by scripts/make-upgrade-fixture.sh"]
async fn make_release_fixture() {
    let out = PathBuf::from(std::env::var("INMANTA_FIXTURE_DIR").expect("INMANTA_FIXTURE_DIR"));
    std::fs::create_dir_all(&out).unwrap();
    let mut s = TestServer::start().await;
    fill(&s).await;
    s.terminate();
    if s.database_url.starts_with("sqlite") {
        let file = out.join("inmanta.db");
        let _ = std::fs::remove_file(&file);
        let status = Command::new(BIN)
            .args(["server", "--database-url", &s.database_url, "backup"])
            .arg(&file)
            .status()
            .unwrap();
        assert!(status.success());
    } else {
        let dump = Command::new("pg_dump")
            .args(["--no-owner", "--no-privileges", "--format=plain", &s.database_url])
            .output()
            .expect("pg_dump");
        assert!(dump.status.success(), "{}", String::from_utf8_lossy(&dump.stderr));
        std::fs::write(out.join("postgres.sql"), dump.stdout).unwrap();
    }
}

/// The release fixtures in order.
fn releases() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("server/tests/fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("release-")))
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no release fixture under {}", fixtures().display());
    dirs
}

/// Starts this build on a copy of a release's database and logs the fixture's admin in.
async fn serve(database_url: &str) -> TestServer {
    let mut s = TestServer::start_on(database_url, &[]).await;
    let token = s.client().login(ADMIN, ADMIN_PASSWORD).await.expect("the fixture's admin logs in").token;
    s.http = client_with(Some(&token));
    s.token = Some(token);
    s
}

#[tokio::test]
async fn release_fixtures_migrate_and_serve_every_route_on_sqlite() {
    for release in releases() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("inmanta.db");
        std::fs::copy(release.join("inmanta.db"), &db).expect("copy the SQLite fixture");
        let s = serve(&format!("sqlite://{}", db.display())).await;
        walk(&s, &release).await;
    }
}

#[tokio::test]
async fn release_fixtures_migrate_and_serve_every_route_on_postgres() {
    let Some(admin) = test_support::postgres_admin_url() else {
        return;
    };
    for release in releases() {
        let dir = tempfile::tempdir().unwrap();
        let url = common::fresh_database(dir.path()).await;
        assert!(url.starts_with("postgres"), "{url} from {admin}");
        let load = Command::new("psql")
            .args(["-q", "-v", "ON_ERROR_STOP=1", "-f"])
            .arg(release.join("postgres.sql"))
            .arg(&url)
            .output()
            .expect("psql");
        assert!(load.status.success(), "loading {}: {}", release.display(), String::from_utf8_lossy(&load.stderr));
        let s = serve(&url).await;
        walk(&s, &release).await;
    }
}

/// What the fixture holds is served after the migration, and no route answers 5xx.
async fn walk(s: &TestServer, release: &Path) {
    let client = s.client();
    let what = release.display();
    let envs = client.environments().await.expect("environments");
    let prod = envs.iter().find(|e| e.name == "prod").unwrap_or_else(|| panic!("{what}: no prod: {envs:?}"));
    assert_eq!(envs.len(), 2, "{what}");
    assert_eq!(prod.repo_url, "https://example.com/shop.git", "{what}");
    let env = prod.id;
    let tid = env.to_string();
    let summary = client.deploy_summary(env).await.expect("summary");
    assert_eq!(summary.by_state.get(&ResourceState::Deployed), Some(&20), "{what}: {summary:?}");
    let versions = client.desired_state(env, &Default::default()).await.expect("versions").data;
    assert_eq!(versions.len(), 2, "{what}");
    let region = client.parameter(env, "region", None).await.expect("parameter");
    assert_eq!(region.value, json!("eu-west"), "{what}");
    assert!(client.login(OPERATOR, OPERATOR_PASSWORD).await.is_ok(), "{what}: the operator logs in");
    let (status, _) = s.call("GET", &format!("/api/v1/file/{HELLO}"), None, None).await;
    assert_eq!(status, 200, "{what}: the file");

    let rid = "std::testing::NullResource[agent0,name=r0]";
    let version = versions[0].version;
    let docs: serde_json::Value = s
        .http
        .get(format!("{}/api/v2/docs?format=openapi", s.url))
        .send()
        .await
        .expect("the OpenAPI document")
        .json()
        .await
        .expect("OpenAPI JSON");
    let paths = docs["paths"].as_object().unwrap_or_else(|| panic!("{what}: no OpenAPI paths: {docs}"));
    let mut failures = Vec::new();
    let mut walked = 0;
    // Reads first, then the rest with an empty body (refused or done, never a server error);
    // deletions of the environment and the project last.
    let mut calls: Vec<(String, String)> = paths
        .iter()
        .flat_map(|(path, ops)| {
            ops.as_object().into_iter().flatten().map(move |(m, _)| (m.to_uppercase(), path.clone()))
        })
        .collect();
    calls.sort_by_key(|(method, path)| (method != "GET", method == "DELETE" && !path.contains("{rid}")));
    for (method, path) in calls {
        if path == "/api/v1/notify/{id}" || path.contains("shutdown") {
            continue;
        }
        let concrete = fill_path(&path, env, version, rid);
        let body = matches!(method.as_str(), "POST" | "PUT" | "PATCH").then(|| json!({}));
        let mut request = s
            .http
            .request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), format!("{}{concrete}", s.url))
            .header(api::TID_HEADER, &tid);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("a route answers");
        let status = response.status().as_u16();
        let answer = response.text().await.unwrap_or_default();
        walked += 1;
        if status >= 500 {
            failures.push(format!("{method} {concrete}: {status} {answer}"));
        }
    }
    assert!(walked > 90, "{what}: walked {walked} routes");
    assert!(failures.is_empty(), "{what}: server errors after the upgrade:\n{}", failures.join("\n"));
    for page in ["/console", &format!("/console/environment/{tid}/resources")] {
        let response = s.http.get(format!("{}{page}", s.url)).send().await.expect("page");
        assert!(response.status().as_u16() < 500, "{what}: {page}: {}", response.status());
    }
}

fn fill_path(path: &str, env: Uuid, version: i64, rid: &str) -> String {
    path.split('/')
        .map(|segment| match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some("id" | "tid" | "env" | "environment" | "environment_id") => env.to_string(),
            Some("version" | "from" | "to") => version.to_string(),
            Some("rid" | "rvid" | "resource_id") => api::url::encode(rid),
            Some("username") => OPERATOR.to_string(),
            Some("action") => "pause".to_string(),
            Some("file" | "file_id" | "hash") => HELLO.to_string(),
            Some(_) => "00000000-0000-0000-0000-000000000001".to_string(),
            None => segment.to_string(),
        })
        .collect::<Vec<_>>()
        .join("/")
}
