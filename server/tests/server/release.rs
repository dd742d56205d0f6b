//! Running it like a product: one version everywhere, `inmanta server --check`, and backups
//! of a running server that restore to the same state (docs/operations.md).

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use api::ResourceState;
use common::{ADMIN, ADMIN_PASSWORD, BIN, TestServer, client_with};
use serde_json::{Value, json};
use uuid::Uuid;

/// `inmanta ARGS`, its exit code and output.
fn inmanta(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(BIN).args(args).env("RUST_LOG", "warn").output().expect("run inmanta");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn one_version_for_the_binary_the_api_and_the_changelog() {
    let (code, out, err) = inmanta(&["--version"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), format!("inmanta {}", api::VERSION));
    let s = TestServer::start().await;
    let status = s.client().server_status().await.expect("server status");
    assert_eq!(status.version, api::VERSION);
    assert_eq!(status.extensions[0].version, api::VERSION);
    let changelog = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../CHANGELOG.md")).unwrap();
    // What has landed since the release stands above it, under `## Unreleased`.
    let latest = changelog.lines().find(|l| l.starts_with("## ") && *l != "## Unreleased").expect("a release heading");
    assert!(latest.starts_with(&format!("## {} ", api::VERSION)), "CHANGELOG.md's latest release: {latest}");
}

/// `--check` on a new database, then on a migrated one; SQLite, and PostgreSQL with
/// INMANTA_TEST_POSTGRES.
#[tokio::test]
async fn server_check_says_whether_migrations_are_pending_without_applying_them() {
    let dir = tempfile::tempdir().unwrap();
    let url = common::fresh_database(dir.path()).await;
    let check =
        || inmanta(&["server", "--database-url", &url, "--state-dir", &dir.path().display().to_string(), "--check"]);
    let (code, out, err) = check();
    assert_eq!(code, 1, "a new database has every migration pending: {out}{err}");
    assert!(out.contains("pending") && out.contains("0001 initial"), "{out}");
    if url.starts_with("sqlite") {
        assert!(!dir.path().join("inmanta.db").exists(), "--check created the database");
    }
    let (code, out, _) = check();
    assert_eq!(code, 1, "still pending: --check applied nothing: {out}");

    orchestrator::Store::connect(&url).await.expect("migrate").close().await;
    let (code, out, err) = check();
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("up to date"), "{out}");

    let (code, _, err) = inmanta(&["server", "--database-url", "mysql://nowhere/x", "--check"]);
    assert_eq!(code, 2, "an unsupported database cannot be checked: {err}");
    assert!(err.contains("unsupported database url"), "{err}");
}

/// A server on SQLite in `dir` (backups are SQLite's; PostgreSQL uses pg_dump), with the test
/// admin logged in.
async fn sqlite_server(dir: &Path) -> TestServer {
    let url = format!("sqlite://{}", dir.join("inmanta.db").display());
    if !dir.join("inmanta.db").exists() {
        let o = orchestrator::Orchestrator::open(&url).await.expect("open the database");
        o.create_user(ADMIN, ADMIN_PASSWORD, true, false).await.expect("create the admin");
        o.store().close().await;
    }
    let mut s = TestServer::start_on(&url, &[]).await;
    let token = s.client().login(ADMIN, ADMIN_PASSWORD).await.expect("login").token;
    s.http = client_with(Some(&token));
    s.token = Some(token);
    s
}

/// Stores and releases (auto_deploy) `n` NullResources over 10 agents.
async fn store_null_resources(s: &TestServer, env: Uuid, n: usize) -> i64 {
    let client = s.client();
    let version = client.reserve_version(env).await.expect("reserve a version");
    let resources = (0..n)
        .map(|i| {
            let rid = format!("std::testing::NullResource[agent{},name=r{i}]", i % 10);
            json!({"id": format!("{rid},v={version}"), "name": format!("r{i}"), "agentname": format!("agent{}", i % 10),
                   "send_event": false, "purged": false, "requires": []})
            .as_object()
            .cloned()
            .unwrap()
        })
        .collect();
    let body = api::version::PutVersion { version, resources, ..Default::default() };
    client.put_version(env, &body).await.expect("put the version");
    version
}

async fn deployed(s: &TestServer, env: Uuid) -> u64 {
    let summary = s.client().deploy_summary(env).await.expect("deploy summary");
    summary.by_state.get(&ResourceState::Deployed).copied().unwrap_or_default()
}

async fn wait_deployed(s: &TestServer, env: Uuid, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(600);
    while deployed(s, env).await < n {
        assert!(Instant::now() < deadline, "not all {n} resources deployed within 10 minutes");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What a server shows of an environment: its versions, its resources' states, the users.
async fn shown(s: &TestServer, env: Uuid) -> (Value, Value, Value) {
    let tid = env.to_string();
    let (_, versions) = s.call("GET", "/api/v2/desiredstate?limit=100", Some(&tid), None).await;
    let versions: Vec<Value> =
        versions["data"].as_array().unwrap().iter().map(|v| json!([v["version"], v["status"], v["total"]])).collect();
    let summary = s.client().deploy_summary(env).await.expect("deploy summary");
    let users = s.client().users().await.expect("users");
    let users: Vec<Value> = users.iter().map(|u| json!(u)).collect();
    (json!(versions), json!(summary.by_state), json!(users))
}

#[tokio::test]
async fn a_backup_taken_during_a_deploy_restores_versions_states_users_and_tokens() {
    const RESOURCES: usize = 10_000;
    let original_dir = tempfile::tempdir().unwrap();
    let original = sqlite_server(original_dir.path()).await;
    let env = original.new_environment("shop", "prod").await;
    let agent_token = original.environment_token(&env.to_string(), &["agent"]).await;
    let operator = "operator";
    original.client().create_user(operator, "Operator-password-1").await.expect("create a user");
    store_null_resources(&original, env, RESOURCES).await;

    // Backups while the deploy runs (each one a complete, consistent database).
    let backups = tempfile::tempdir().unwrap();
    let during = backups.path().join("during.db");
    let deadline = Instant::now() + Duration::from_secs(120);
    while deployed(&original, env).await == 0 {
        assert!(Instant::now() < deadline, "the deploy did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (code, out, err) =
        inmanta(&["server", "--database-url", &original.database_url, "backup", &during.display().to_string()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("backed up"), "{out}");
    let (code, _, err) =
        inmanta(&["server", "--database-url", &original.database_url, "backup", &during.display().to_string()]);
    assert_eq!(code, 2, "an existing file is not overwritten: {err}");
    assert!(err.contains("exists already"), "{err}");

    // The backup as it was taken, read without a scheduler: part of the deploy done.
    let copy = backups.path().join("copy.db");
    std::fs::copy(&during, &copy).unwrap();
    let o = orchestrator::Orchestrator::open(&format!("sqlite://{}", copy.display())).await.expect("open the backup");
    let at_backup = o.deploy_summary(env).await.expect("summary of the backup");
    o.store().close().await;
    assert_eq!(at_backup.total, RESOURCES as u64);
    let done = at_backup.by_state.get(&ResourceState::Deployed).copied().unwrap_or_default();
    assert!(done > 0 && done < RESOURCES as u64, "the backup was taken during the deploy: {at_backup:?}");

    wait_deployed(&original, env, RESOURCES as u64).await;
    let after = backups.path().join("after.db");
    let (code, out, err) =
        inmanta(&["server", "--database-url", &original.database_url, "backup", &after.display().to_string()]);
    assert_eq!(code, 0, "{out}{err}");
    let expected = shown(&original, env).await;

    // The mid-deploy backup restored in a new place: the same versions, users and tokens, and
    // the scheduler there finishes the deploy.
    let restored_dir = tempfile::tempdir().unwrap();
    let restored_url = format!("sqlite://{}", restored_dir.path().join("inmanta.db").display());
    let (code, out, err) =
        inmanta(&["server", "--database-url", &restored_url, "restore", &during.display().to_string()]);
    assert_eq!(code, 0, "{out}{err}");
    let mut restored = TestServer::start_on(&restored_url, &[]).await;
    restored.http = client_with(original.token.as_deref());
    restored.token = original.token.clone();
    let (status, body) = restored.call("GET", "/api/v2/project", None, None).await;
    assert_eq!(status, 200, "the admin's token of before the backup works: {body}");
    let agent = client_with(Some(&agent_token));
    let response = agent
        .get(format!("{}/api/v2/resource?limit=1", restored.url))
        .header("X-Inmanta-tid", env.to_string())
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success() || response.status() == 403, "{}", response.status());
    assert_ne!(response.status(), 401, "the environment token of before the backup is known");
    wait_deployed(&restored, env, RESOURCES as u64).await;
    assert_eq!(shown(&restored, env).await, expected);
    let login = restored.client().login(operator, "Operator-password-1").await;
    assert!(login.is_ok(), "the user made before the backup logs in: {login:?}");

    // A restore is refused while a server runs on the database; once stopped, the backup taken
    // after the deploy replaces it and the database it replaced is kept.
    let (code, _, err) = inmanta(&["server", "--database-url", &restored_url, "restore", &after.display().to_string()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("stop it before restoring"), "{err}");
    restored.terminate();
    let (code, out, err) =
        inmanta(&["server", "--database-url", &restored_url, "restore", &after.display().to_string()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("is kept as"), "{out}");
    let kept = std::fs::read_dir(restored_dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().starts_with("inmanta.db.before-restore-"));
    assert!(kept, "the replaced database is kept");
    let mut again = TestServer::start_on(&restored_url, &[]).await;
    again.http = client_with(original.token.as_deref());
    again.token = original.token.clone();
    assert_eq!(shown(&again, env).await, expected, "the backup of a settled server restores the same state");

    // Not a database: refused, nothing replaced.
    again.terminate();
    let junk = backups.path().join("junk.db");
    std::fs::write(&junk, "not a database").unwrap();
    let (code, _, err) = inmanta(&["server", "--database-url", &restored_url, "restore", &junk.display().to_string()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not an inmanta database backup"), "{err}");
}
