//! The server gets over a full disk and a database outage by itself (issue 36), and its health
//! check says what is going on, fast.
//!
//! - A full disk under SQLite: the database lives on a 20 MB tmpfs, filled up to a little room
//!   before a deploy of 1 500 files in chains is released, so the scheduler's writes fail in the
//!   middle of it. Health answers 503 within a second; once the filler is removed every resource
//!   ends deployed, as the API shows, with no restart. Needs root (mount).
//! - A PostgreSQL of the test's own (initdb, pg_ctl) stopped for 20 s in the middle of a deploy
//!   of chains of files and commands, with one server and with two servers on it: everything
//!   ends deployed within a minute of its return, health answers 503 within a second during the
//!   outage and 200 after. Needs PostgreSQL's server binaries.
//!
//! A missing prerequisite fails the test under `CI=true` and is reported loudly otherwise.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine;
use common::TestServer;
use common::postgres_cluster::{PostgresCluster, is_root};
use common::tmpfs::Tmpfs;
use serde_json::{Value, json};
use uuid::Uuid;

/// The health check must answer within this, whatever the database does.
const HEALTH_DEADLINE: Duration = Duration::from_secs(1);

fn server_env() -> Vec<(&'static str, &'static str)> {
    vec![("INMANTA_SERVER_AUTH", "false"), ("RUST_LOG", "warn,orchestrator=info")]
}

/// `GET /api/v2/health`: (status, body, how long it took). Fails when it took longer than
/// [`HEALTH_DEADLINE`].
async fn health(s: &TestServer) -> (u16, Value) {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("client");
    let asked = Instant::now();
    let response = client.get(format!("{}/api/v2/health", s.url)).send().await.expect("health answers");
    let status = response.status().as_u16();
    let body: Value = response.json().await.expect("health answers JSON");
    let took = asked.elapsed();
    assert!(took < HEALTH_DEADLINE, "health took {took:?} (status {status}): {body}");
    (status, body)
}

/// Asks for health until it answers `want` (each answer within the deadline); the body.
async fn health_becomes(s: &TestServer, want: u16, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let (status, body) = health(s).await;
        if status == want {
            return body;
        }
        assert!(Instant::now() < deadline, "health did not answer {want} within {within:?}; last: {status} {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn check<'a>(body: &'a Value, name: &str) -> &'a Value {
    body["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no check {name} in {body}"))
}

/// Resources of the latest released version that are deployed, as the API shows them.
async fn deployed(s: &TestServer, env: Uuid) -> Option<u64> {
    let (status, body) =
        s.call("GET", "/api/v2/resource?limit=1&deploy_summary=true", Some(&env.to_string()), None).await;
    (status == 200).then(|| body["metadata"]["deploy_summary"]["by_state"]["deployed"].as_u64().unwrap_or(0))
}

async fn wait_deployed(servers: &[&TestServer], env: Uuid, total: u64, within: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let mut last = None;
        for s in servers {
            last = deployed(s, env).await;
            if last == Some(total) {
                return started.elapsed();
            }
        }
        if started.elapsed() > within {
            let logs: Vec<String> = servers.iter().map(|s| s.log()).collect();
            panic!("{last:?} of {total} resources deployed after {within:?}; logs:\n{}", logs.join("\n-----\n"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A deploy of `chains` chains on agents `agent-<chain>`: in each, `per_chain` files (content
/// from the file store) and, with `command`, a command before each file; every element requires
/// the one before it.
struct Deploy {
    resources: Vec<Value>,
    files: std::collections::BTreeMap<String, String>,
}

fn chains(dir: &Path, chains: usize, per_chain: usize, command: Option<&str>) -> Deploy {
    let mut resources = vec![];
    let mut files = std::collections::BTreeMap::new();
    for chain in 0..chains {
        let agent = format!("agent-{chain}");
        let mut previous: Option<String> = None;
        for i in 0..per_chain {
            if let Some(command) = command {
                // The last word only makes each command (and so each id) unique: `$0` of the shell.
                let command = format!("{command} {chain}-{i}");
                let rid = format!("exec::Run[{agent},command={command}]");
                resources.push(json!({
                    "id": format!("{rid},v=0"), "command": command, "returns": [0], "timeout": 60,
                    "purged": false, "send_event": false, "receive_events": false,
                    "requires": previous.iter().collect::<Vec<_>>(),
                }));
                previous = Some(rid);
            }
            let content = format!("file {i} of chain {chain}\n{}", "x".repeat(64));
            let hash = sha1_smol::Sha1::from(content.as_bytes()).digest().to_string();
            files.insert(hash.clone(), base64::engine::general_purpose::STANDARD.encode(&content));
            let path = dir.join(format!("c{chain}-f{i}.txt")).display().to_string();
            let rid = format!("fs::File[{agent},path={path}]");
            resources.push(json!({
                "id": format!("{rid},v=0"), "path": path, "hash": hash, "permissions": 644,
                "purged": false, "send_event": false, "receive_events": false,
                "requires": previous.iter().collect::<Vec<_>>(),
            }));
            previous = Some(rid);
        }
    }
    Deploy { resources, files }
}

/// Uploads the files and stores the resources as a new version, not released (auto_deploy is
/// off); returns the version.
async fn store(s: &TestServer, env: Uuid, deploy: &Deploy) -> i64 {
    let tid = env.to_string();
    let (status, body) = s.call("PUT", "/api/v2/files", None, Some(json!({"files": deploy.files}))).await;
    assert_eq!(status, 200, "{body}");
    let client = s.client();
    client.set_environment_setting(env, "auto_deploy", false).await.expect("auto_deploy off");
    let version = client.reserve_version(env).await.expect("a version");
    let resources: Vec<Value> = deploy
        .resources
        .iter()
        .map(|r| {
            let mut r = r.clone();
            let id = r["id"].as_str().expect("id").trim_end_matches(",v=0").to_string();
            r["id"] = json!(format!("{id},v={version}"));
            r
        })
        .collect();
    let body = json!({
        "version": version, "resources": resources, "resource_state": {}, "unknowns": [],
        "version_info": {}, "module_version_info": {}, "compiler_version": "test",
    });
    let (status, body) = s.call("PUT", "/api/v1/version", Some(&tid), Some(body)).await;
    assert_eq!(status, 200, "{body}");
    version
}

// ---------------------------------------------------------------------------------------------
// A full disk (SQLite)

/// Room left on the filesystem when the deploy is released: enough for the release itself,
/// far too little for the results of 1 500 deploys.
const ROOM_LEFT: u64 = 3 * 1024 * 1024;

#[tokio::test]
async fn a_full_disk_delays_results_and_everything_ends_deployed_once_there_is_room() {
    if !is_root() {
        test_support::missing_prerequisite("a full disk is simulated with a tmpfs, which only root may mount");
        return;
    }
    let tmpfs = match Tmpfs::mount("20m") {
        Ok(tmpfs) => tmpfs,
        Err(e) => {
            test_support::missing_prerequisite(format!("cannot mount a tmpfs: {e}"));
            return;
        }
    };
    let work = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", tmpfs.path().join("inmanta.db").display());
    let s = TestServer::start_on(&url, &server_env()).await;
    let env = s.new_environment("p", "e").await;
    let deploy = chains(work.path(), 10, 150, None);
    let total = deploy.resources.len() as u64;
    assert_eq!(total, 1500);
    let version = store(&s, env, &deploy).await;
    health_becomes(&s, 200, Duration::from_secs(10)).await;

    // Fill the filesystem up to a little room, then release.
    let filler = tmpfs.path().join("filler");
    let fill = tmpfs.available().saturating_sub(ROOM_LEFT);
    std::fs::write(&filler, vec![0u8; fill as usize]).expect("fill the disk");
    s.client().release_version(env, version, false).await.expect("release");

    // The writes fail in the middle of the deploy...
    let deadline = Instant::now() + Duration::from_secs(60);
    while !s.log().contains("cannot store the scheduler's writes") {
        let done = deployed(&s, env).await;
        assert!(
            done != Some(total),
            "the deploy finished without filling the disk: leave less than {ROOM_LEFT} bytes; log:\n{}",
            s.log()
        );
        assert!(Instant::now() < deadline, "no write failed within 60 s; log:\n{}", s.log());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // ...and health says so, within a second per answer.
    let body = health_becomes(&s, 503, Duration::from_secs(5)).await;
    assert!(body["message"].as_str().is_some_and(|m| m.contains("disk") || m.contains("store")), "{body}");
    assert!(check(&body, "disk_space")["status"] == "Error" || check(&body, "database_writable")["status"] == "Error");
    let stuck = deployed(&s, env).await;
    assert_ne!(stuck, Some(total), "the disk is full: not everything can be stored yet");
    eprintln!("full disk: {stuck:?} of {total} shown deployed; health: {}", body["message"]);
    // It stays so while the disk is full: nothing is dropped, nothing moves on by itself.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (status, _) = health(&s).await;
    assert_eq!(status, 503);

    // Room again: everything ends deployed, with no restart.
    std::fs::remove_file(&filler).expect("free the disk");
    let took = wait_deployed(&[&s], env, total, Duration::from_secs(60)).await;
    eprintln!("full disk: all {total} deployed {took:?} after the space was freed");
    let body = health_becomes(&s, 200, Duration::from_secs(5)).await;
    // The database grew on a 20 MB filesystem: a warning that the disk is almost full may stay.
    assert_ne!(check(&body, "disk_space")["status"], "Error", "{body}");
    assert_eq!(check(&body, "database_writable")["status"], "OK", "{body}");
    let log = s.log();
    assert!(log.contains("the scheduler's writes are stored again"), "{log}");
    assert!(!log.contains("could not store"), "a result was dropped:\n{log}");
    // What the API says is what is on disk.
    for r in &deploy.resources {
        let path = r["path"].as_str().expect("path");
        assert!(Path::new(path).exists(), "{path} was not written");
    }
    drop(s);
}

// ---------------------------------------------------------------------------------------------
// A database outage (PostgreSQL)

/// How long the database stays down.
const OUTAGE: Duration = Duration::from_secs(20);

/// Stops the database in the middle of a deploy, starts it again after [`OUTAGE`]; checks
/// health on every server meanwhile and that everything ends deployed within a minute.
async fn outage_mid_deploy(servers: usize) {
    let pg = match PostgresCluster::start_new() {
        Ok(pg) => pg,
        Err(e) => {
            test_support::missing_prerequisite(format!("a PostgreSQL cluster of the test's own: {e}"));
            return;
        }
    };
    let work = tempfile::tempdir().expect("temp dir");
    let mut started = vec![];
    for _ in 0..servers {
        started.push(TestServer::start_on(&pg.url(), &server_env()).await);
    }
    let all: Vec<&TestServer> = started.iter().collect();
    let env = all[0].new_environment("p", "e").await;
    // Four chains of 40 (command, file) pairs: each command sleeps, so the deploy lasts
    // several seconds and the outage hits it in the middle; files are read from the database.
    let deploy = chains(work.path(), 4, 40, Some("sh -c 'sleep 0.1'"));
    let total = deploy.resources.len() as u64;
    let version = store(all[0], env, &deploy).await;
    for s in &all {
        health_becomes(s, 200, Duration::from_secs(15)).await;
    }
    all[0].client().release_version(env, version, false).await.expect("release");
    // Stop the database once part of the deploy is done.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let done = deployed(all[0], env).await.unwrap_or(0);
        if done >= total / 8 {
            assert!(done < total, "the deploy finished before the outage");
            break;
        }
        assert!(Instant::now() < deadline, "the deploy did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    pg.stop();
    let stopped = Instant::now();
    for s in &all {
        let body = health_becomes(s, 503, Duration::from_secs(5)).await;
        assert_eq!(check(&body, "database")["status"], "Error", "{body}");
        assert!(body["message"].as_str().is_some_and(|m| m.contains("database")), "{body}");
    }
    // Health keeps answering fast for the whole outage.
    while stopped.elapsed() < OUTAGE {
        for s in &all {
            let (status, body) = health(s).await;
            assert_eq!(status, 503, "{body}");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    pg.start().expect("start PostgreSQL again");
    let took = wait_deployed(&all, env, total, Duration::from_secs(60)).await;
    eprintln!("{servers} server(s): all {total} deployed {took:?} after the database came back");
    for s in &all {
        let body = health_becomes(s, 200, Duration::from_secs(15)).await;
        assert_eq!(check(&body, "database")["status"], "OK", "{body}");
    }
    for r in deploy.resources.iter().filter(|r| r["path"].is_string()) {
        let path = r["path"].as_str().expect("path");
        assert!(Path::new(path).exists(), "{path} was not written");
    }
    for (i, s) in all.iter().enumerate() {
        let log = s.log();
        // For the record: what each server said about the fault (one line each way).
        for line in log.lines() {
            eprintln!("server {i}: {line}");
        }
        assert!(!log.contains("another server runs this environment"), "{log}");
        assert!(!log.contains("could not store"), "a result was dropped:\n{log}");
    }
    drop(started);
}

#[tokio::test]
async fn a_database_outage_mid_deploy_with_one_server() {
    outage_mid_deploy(1).await;
}

#[tokio::test]
async fn a_database_outage_mid_deploy_with_two_servers() {
    outage_mid_deploy(2).await;
}
