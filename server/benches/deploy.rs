//! End-to-end deploy benchmark against a real `inmanta server` process (SQLite):
//! - the generated 1 000-file model of `../shared/bench/gen_project.py` (the one Inmanta was
//!   measured on), from `inmanta export` to every resource deployed, files written for real;
//! - 10 000 `std::testing::NullResource`s on one agent, from `put_version` to all deployed.
//!
//! Also reports the server's peak memory (VmHWM). Run: `cargo bench -p server --bench deploy`.
//! `GEN_PROJECT` overrides the path of gen_project.py; `FILES` and `NULLS` the sizes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_inmanta");

struct Server {
    child: Child,
    url: String,
    http: reqwest::Client,
    /// The benchmark admin's login token: auth stays on, as in production.
    token: String,
}

const PASSWORD: &str = "Bench-password-123";

impl Server {
    async fn start(state: &Path) -> Server {
        let created = Command::new(BIN)
            .args(["user", "create", "bench", "--admin", "--direct"])
            .env("INMANTA_CONFIG_STATE_DIR", state)
            .env("INMANTA_PASSWORD", PASSWORD)
            .output()
            .expect("inmanta user create");
        assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
        let mut child = Command::new(BIN)
            .args(["server", "--bind-port", "0", "--state-dir"])
            .arg(state)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start inmanta server");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("server output");
        let url = line.split_whitespace().find(|w| w.starts_with("http://")).expect("listening line").to_string();
        let login: Value = reqwest::Client::new()
            .post(format!("{url}/api/v2/login"))
            .json(&json!({"username": "bench", "password": PASSWORD}))
            .send()
            .await
            .expect("login")
            .json()
            .await
            .expect("login answer");
        let token = login["data"]["token"].as_str().expect("token").to_string();
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {token}").parse().expect("header"));
        let http = reqwest::Client::builder().default_headers(headers).build().expect("client");
        Server { child, url, http, token }
    }

    async fn call(&self, method: reqwest::Method, path: &str, env: Option<&str>, body: Option<Value>) -> Value {
        let mut request = self.http.request(method, format!("{}{}", self.url, path));
        if let Some(env) = env {
            request = request.header("X-Inmanta-tid", env);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request");
        let status = response.status();
        let text = response.text().await.expect("body");
        assert!(status.is_success(), "{path}: {status} {text}");
        if text.is_empty() { Value::Null } else { serde_json::from_str(&text).expect("json") }
    }

    async fn environment(&self, name: &str) -> String {
        let p = self.call(reqwest::Method::PUT, "/api/v2/project", None, Some(json!({"name": name}))).await;
        let e = self
            .call(
                reqwest::Method::PUT,
                "/api/v2/environment",
                None,
                Some(json!({"project_id": p["data"]["id"], "name": name})),
            )
            .await;
        e["data"]["id"].as_str().expect("environment id").to_string()
    }

    /// Polls until `total` resources are deployed; returns when that happened.
    async fn wait_deployed(&self, env: &str, total: u64) -> Instant {
        let deadline = Instant::now() + Duration::from_secs(600);
        loop {
            let list =
                self.call(reqwest::Method::GET, "/api/v2/resource?limit=1&deploy_summary=true", Some(env), None).await;
            let summary = &list["metadata"]["deploy_summary"];
            if summary["by_state"]["deployed"].as_u64() == Some(total) {
                return Instant::now();
            }
            let failed = summary["by_state"]["failed"].as_u64().unwrap_or(0);
            assert!(failed == 0, "resources failed: {summary}");
            assert!(Instant::now() < deadline, "not deployed in time: {summary}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn peak_memory_mb(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        let kb: f64 = status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        kb / 1024.0
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn files(n: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let gen_script = std::env::var("GEN_PROJECT")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/bench/gen_project.py"));
    let project = dir.path().join("project");
    let status = Command::new("python3").arg(&gen_script).arg(n.to_string()).arg(&project).status().expect("python3");
    assert!(status.success(), "gen_project.py failed");
    // The directories of the model live under this root, which the harness provides (as the
    // one Inmanta was measured with did).
    std::fs::create_dir_all(project.join("deployed")).expect("deploy root");
    let server = Server::start(&dir.path().join("state")).await;
    let env = server.environment("files").await;
    let port = server.url.rsplit(':').next().expect("port").to_string();
    std::fs::write(
        project.join(".inmanta"),
        format!(
            "[config]\nenvironment = {env}\n[compiler_rest_transport]\nhost = 127.0.0.1\nport = {port}\ntoken = {}\n",
            server.token
        ),
    )
    .expect(".inmanta");
    let started = Instant::now();
    let output = Command::new(BIN).arg("export").current_dir(&project).output().expect("inmanta export");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let exported = started.elapsed();
    let total =
        server.call(reqwest::Method::GET, "/api/v2/resource?limit=1", Some(&env), None).await["metadata"]["total"]
            .as_u64()
            .expect("total");
    let done = server.wait_deployed(&env, total).await;
    let written = walk(&project.join("deployed"));
    let drift = drift_repair(&project.join("deployed")).await;
    println!(
        "export + deploy of the generated {n}-file model ({total} resources, {written} files written): {:.2} s \
         (compile + export {:.2} s), server peak memory {:.0} MB; a hand-edited file repaired in {:.0} ms",
        (done - started).as_secs_f64(),
        exported.as_secs_f64(),
        server.peak_memory_mb(),
        drift.as_secs_f64() * 1000.0
    );
}

/// Overwrites one deployed file by hand and times how long until the server put it back.
async fn drift_repair(root: &Path) -> Duration {
    let file = first_file(root).expect("a deployed file");
    let deployed = std::fs::read(&file).expect("read deployed file");
    // Let the watcher settle after the deploy before editing.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let edited = Instant::now();
    std::fs::write(&file, b"edited by hand").expect("edit");
    while std::fs::read(&file).ok().as_deref() != Some(&deployed[..]) {
        assert!(edited.elapsed() < Duration::from_secs(60), "the edited file was not repaired");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    edited.elapsed()
}

fn first_file(dir: &Path) -> Option<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).collect();
    entries.sort();
    entries.iter().find(|p| p.is_file()).cloned().or_else(|| entries.iter().find_map(|p| first_file(p)))
}

fn walk(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| if e.path().is_dir() { walk(&e.path()) } else { 1 }).sum())
        .unwrap_or(0)
}

async fn nulls(n: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("state")).await;
    let env = server.environment("nulls").await;
    let version = server.call(reqwest::Method::POST, "/api/v2/reserve_version", Some(&env), None).await["data"]
        .as_i64()
        .expect("version");
    let resources: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "id": format!("std::testing::NullResource[agent1,name=n{i}],v={version}"),
                "name": format!("n{i}"), "agentname": "agent1", "fail": false, "value": "", "int_value": 0,
                "purged": false, "send_event": false, "receive_events": false, "requires": [],
            })
        })
        .collect();
    let started = Instant::now();
    server
        .call(
            reqwest::Method::PUT,
            "/api/v1/version",
            Some(&env),
            Some(json!({"version": version, "resources": resources})),
        )
        .await;
    let stored = started.elapsed();
    let done = server.wait_deployed(&env, n as u64).await;
    println!(
        "deploy of {n} NullResources on one agent, put_version to all deployed: {:.2} s (put_version {:.2} s), \
         server peak memory {:.0} MB",
        (done - started).as_secs_f64(),
        stored.as_secs_f64(),
        server.peak_memory_mb()
    );
}

#[tokio::main]
async fn main() {
    let size = |name: &str, default: usize| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    files(size("FILES", 1000)).await;
    nulls(size("NULLS", 10_000)).await;
}
