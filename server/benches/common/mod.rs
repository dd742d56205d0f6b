//! What the server benches share: a real `inmanta server` process with auth on, driven over
//! HTTP with a benchmark admin's token, and its peak memory.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The `inmanta` binary the benches run: the one cargo built beside them, or `BENCH_BIN` (a
/// copy of an older build, to compare before and after on the same machine state).
pub fn bin() -> String {
    std::env::var("BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_inmanta").to_string())
}

pub struct Server {
    child: Child,
    pub url: String,
    pub http: reqwest::Client,
    /// The benchmark admin's login token: auth stays on, as in production.
    #[allow(dead_code)] // each bench compiles this module on its own; only the deploy bench reads it
    pub token: String,
}

const PASSWORD: &str = "Bench-password-123";

impl Server {
    /// A server whose state lives in `state`, on SQLite there or on the database `database_url`.
    pub async fn start(state: &Path, database_url: Option<&str>) -> Server {
        let with_database = |command: &mut Command| {
            command.env("INMANTA_CONFIG_STATE_DIR", state);
            if let Some(url) = database_url {
                command.env("INMANTA_DATABASE_URL", url);
            }
        };
        let mut create = Command::new(bin());
        create.args(["user", "create", "bench", "--admin", "--direct"]).env("INMANTA_PASSWORD", PASSWORD);
        with_database(&mut create);
        let created = create.output().expect("inmanta user create");
        assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
        let mut server = Command::new(bin());
        server.args(["server", "--bind-port", "0", "--state-dir"]).arg(state);
        with_database(&mut server);
        // The server's log is thrown away unless BENCH_SERVER_LOG names a file to append it to.
        let log = match std::env::var_os("BENCH_SERVER_LOG") {
            Some(path) => {
                Stdio::from(std::fs::OpenOptions::new().create(true).append(true).open(path).expect("BENCH_SERVER_LOG"))
            }
            None => Stdio::null(),
        };
        let mut child = server.stdout(Stdio::piped()).stderr(log).spawn().expect("start inmanta server");
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
        let http =
            reqwest::Client::builder().default_headers(headers).pool_max_idle_per_host(64).build().expect("client");
        Server { child, url, http, token }
    }

    pub async fn call(&self, method: reqwest::Method, path: &str, env: Option<&str>, body: Option<Value>) -> Value {
        let text = self.call_text(method, path, env, body).await;
        if text.is_empty() { Value::Null } else { serde_json::from_str(&text).expect("json") }
    }

    /// The answer's body as text, asserting a 2xx status.
    pub async fn call_text(
        &self,
        method: reqwest::Method,
        path: &str,
        env: Option<&str>,
        body: Option<Value>,
    ) -> String {
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
        text
    }

    pub async fn environment(&self, name: &str) -> String {
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
    #[allow(dead_code)] // each bench compiles this module on its own; the scale bench polls a count instead
    pub async fn wait_deployed(&self, env: &str, total: u64, every: Duration) -> Instant {
        let deadline = Instant::now() + Duration::from_secs(1200);
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
            tokio::time::sleep(every).await;
        }
    }

    /// CPU time (user + system) the server process has used so far, in seconds: what compares
    /// when the machine is loaded and wall clock is not (the database's own processes, on
    /// PostgreSQL, are not counted).
    #[allow(dead_code)] // each bench compiles this module on its own; only the scale bench reads it
    pub fn cpu_seconds(&self) -> f64 {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // Fields after the command name (which is in parentheses and may contain spaces).
        let fields: Vec<&str> = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("").split_whitespace().collect();
        let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
        // utime and stime are fields 14 and 15 of the line (indexes 11 and 12 after the name), in
        // ticks of 1/100 s.
        (ticks(11) + ticks(12)) / 100.0
    }

    pub fn peak_memory_mb(&self) -> f64 {
        self.memory_mb("VmHWM:")
    }

    pub fn memory_mb(&self, field: &str) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        let kb: f64 = status
            .lines()
            .find(|l| l.starts_with(field))
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

/// The generated model of `n` files (`../shared/bench/gen_project.py`, or `GEN_PROJECT`) in
/// `dir/project`, with the root its directories live under (the harness provides it, as the one
/// Inmanta was measured with did).
#[allow(dead_code)] // each bench compiles this module on its own; the scale bench generates none
pub fn generate(dir: &Path, n: usize) -> PathBuf {
    let gen_script = std::env::var("GEN_PROJECT")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/bench/gen_project.py"));
    let project = dir.join("project");
    let status = Command::new("python3").arg(&gen_script).arg(n.to_string()).arg(&project).status().expect("python3");
    assert!(status.success(), "gen_project.py failed");
    std::fs::create_dir_all(project.join("deployed")).expect("deploy root");
    project
}

/// A new database on the PostgreSQL server of `INMANTA_TEST_POSTGRES` (an admin URL such as
/// `postgres://postgres@127.0.0.1:5432/postgres`); its URL. Drop it with [`drop_postgres`].
#[allow(dead_code)] // each bench compiles this module on its own; the deploy bench uses SQLite only
pub fn fresh_postgres() -> String {
    let admin = std::env::var("INMANTA_TEST_POSTGRES").expect("set INMANTA_TEST_POSTGRES for the PostgreSQL runs");
    let name = format!("inmanta_bench_{}_{}", std::process::id(), Instant::now().elapsed().subsec_nanos());
    let status = Command::new("psql").arg(&admin).args(["-q", "-c", &format!("CREATE DATABASE {name}")]).status();
    assert!(status.expect("psql").success(), "CREATE DATABASE {name}");
    let base = admin.rsplit_once('/').map(|(base, _)| base).unwrap_or(&admin);
    format!("{base}/{name}")
}

/// Drops a database [`fresh_postgres`] made (after the server that used it stopped).
#[allow(dead_code)] // each bench compiles this module on its own; the deploy bench uses SQLite only
pub fn drop_postgres(url: &str) {
    let admin = std::env::var("INMANTA_TEST_POSTGRES").expect("INMANTA_TEST_POSTGRES");
    let Some((_, name)) = url.rsplit_once('/') else { return };
    let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
    let dropped = Command::new("psql").arg(&admin).args(["-q", "-c", &sql]).status();
    if !dropped.is_ok_and(|s| s.success()) {
        eprintln!("could not drop the bench database {name}");
    }
}
