//! A real `inmanta server` process on a free loopback port, on SQLite (default) or on a fresh
//! PostgreSQL database when `INMANTA_TEST_POSTGRES` holds an admin URL
//! (e.g. `postgres://postgres@127.0.0.1:5432/postgres`).

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_inmanta");

pub struct TestServer {
    child: Option<Child>,
    pub url: String,
    pub database_url: String,
    pub state_dir: tempfile::TempDir,
    extra_env: Vec<(String, String)>,
    pub http: reqwest::Client,
}

/// A database URL for a new test server: a file in `dir`, or a new PostgreSQL database.
pub async fn fresh_database(dir: &std::path::Path) -> String {
    orchestrator::testing::fresh_database_url(dir).await.expect("a test database")
}

impl TestServer {
    pub async fn start() -> TestServer {
        Self::start_with(&[]).await
    }

    pub async fn start_with(env: &[(&str, &str)]) -> TestServer {
        let state_dir = tempfile::tempdir().expect("temp dir");
        let database_url = fresh_database(state_dir.path()).await;
        let mut server = TestServer {
            child: None,
            url: String::new(),
            database_url,
            state_dir,
            extra_env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            http: reqwest::Client::new(),
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let mut command = Command::new(BIN);
        // A fixed port (for tests that restart the server under clients) comes from the env.
        let port = self
            .extra_env
            .iter()
            .find(|(k, _)| k == "INMANTA_SERVER_BIND_PORT")
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "0".into());
        command
            .args(["server", "--bind-port", &port, "--database-url", &self.database_url, "--state-dir"])
            .arg(self.state_dir.path())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in &self.extra_env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("start inmanta server");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("Inmanta server listening on ") {
                    let url = rest.split_whitespace().next().unwrap_or_default().to_string();
                    let _ = tx.send(url);
                }
            }
        });
        self.url = rx.recv_timeout(Duration::from_secs(60)).expect("server did not start within 60 s");
        self.child = Some(child);
    }

    /// Kills the server with SIGKILL (no chance to flush anything) and starts it again on the
    /// same database.
    pub fn kill_and_restart(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("SIGKILL");
            child.wait().expect("reap");
        }
        // Pooled connections went down with the old process.
        self.http = reqwest::Client::new();
        self.spawn();
    }

    /// The process id of the running server.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Sends SIGTERM and returns the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running server");
        // The test harness has no signal crate; kill(1) sends SIGTERM.
        let pid = child.id() as i32;
        unsafe_free_sigterm(pid);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                return status;
            }
            assert!(Instant::now() < deadline, "server did not stop within 20 s of SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub async fn call(&self, method: &str, path: &str, tid: Option<&str>, body: Option<Value>) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self.http.request(method, format!("{}{}", self.url, path));
        if let Some(tid) = tid {
            request = request.header("X-Inmanta-tid", tid);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        let text = response.text().await.expect("body");
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path} answered non-JSON: {text}"))
        };
        (status, value)
    }

    /// Runs the `inmanta` CLI against this server; returns exit code, stdout and stderr.
    pub fn cli(&self, args: &[&str]) -> (i32, String, String) {
        let port = self.url.rsplit(':').next().unwrap_or_default().to_string();
        let output = Command::new(BIN)
            .args(args)
            .args(["--host", "127.0.0.1", "--port", &port])
            .current_dir(self.state_dir.path())
            .output()
            .expect("run inmanta cli");
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }
}

fn unsafe_free_sigterm(pid: i32) {
    let status = Command::new("kill").args(["-TERM", &pid.to_string()]).status().expect("kill -TERM");
    assert!(status.success());
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
