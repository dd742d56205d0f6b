//! A real `inmanta server` process on a free loopback port, on SQLite (default) or on a fresh
//! PostgreSQL database when `INMANTA_TEST_POSTGRES` holds an admin URL
//! (e.g. `postgres://postgres@127.0.0.1:5432/postgres`).

pub mod postgres_cluster;
pub mod proxy;
pub mod reference;
pub mod rng;
pub mod tmpfs;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use api::auth::ClientType;
use api::client::{Client, ClientError};
use api::environment::EnvironmentCreate;
use serde_json::Value;
use uuid::Uuid;

pub const BIN: &str = env!("CARGO_BIN_EXE_inmanta");
pub const ADMIN: &str = "tester";
pub const ADMIN_PASSWORD: &str = "Test-admin-password-1";

/// An HTTP client that sends a bearer token with every request.
pub fn client_with(token: Option<&str>) -> reqwest::Client {
    client_trusting(token, None)
}

/// An HTTP client that sends a bearer token with every request and trusts the certificate of
/// this PEM file for HTTPS (a server with `[server] ssl-cert-file`).
pub fn client_trusting(token: Option<&str>, ca_file: Option<&str>) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(token) = token {
        headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {token}").parse().expect("header"));
    }
    let mut builder = reqwest::Client::builder().default_headers(headers);
    if let Some(file) = ca_file {
        let pem = std::fs::read(file).expect("read the CA file");
        builder = builder.add_root_certificate(reqwest::Certificate::from_pem(&pem).expect("a PEM certificate"));
    }
    builder.build().expect("http client")
}

/// The HTTP status and message of a typed call the server refused; panics on success.
pub fn refusal<T: std::fmt::Debug>(result: Result<T, ClientError>) -> (u16, String) {
    match result {
        Err(ClientError::Api { status, message }) => (status.as_u16(), message),
        other => panic!("expected an error status, got {other:?}"),
    }
}

/// The HTTP status of a typed call the server refused; panics on success.
pub fn refused<T: std::fmt::Debug>(result: Result<T, ClientError>) -> u16 {
    refusal(result).0
}

pub struct TestServer {
    child: Option<Child>,
    pub url: String,
    /// A global admin's login token, sent with every call of [`TestServer::call`], `http` and
    /// [`TestServer::cli`]; `None` when the server runs with `INMANTA_SERVER_AUTH=false`.
    pub token: Option<String>,
    pub database_url: String,
    pub state_dir: tempfile::TempDir,
    extra_env: Vec<(String, String)>,
    pub http: reqwest::Client,
    /// Where stderr goes when not `server.log` in the state directory.
    log_file: Option<std::path::PathBuf>,
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
        Self::start_inner(env, true, None).await
    }

    /// A server whose stderr goes to `log_file` (e.g. on a filesystem a test fills).
    pub async fn start_logging_to(env: &[(&str, &str)], log_file: &std::path::Path) -> TestServer {
        Self::start_inner(env, true, Some(log_file.to_path_buf())).await
    }

    /// Another server on an existing database (several servers on one PostgreSQL, docs/ha.md);
    /// with `INMANTA_SERVER_AUTH=false` among `env`, as no admin is logged in.
    pub async fn start_on(database_url: &str, env: &[(&str, &str)]) -> TestServer {
        let mut server = TestServer {
            child: None,
            url: String::new(),
            token: None,
            database_url: database_url.to_string(),
            state_dir: tempfile::tempdir().expect("temp dir"),
            extra_env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            http: reqwest::Client::new(),
            log_file: None,
        };
        server.spawn();
        server
    }

    /// Sends `signal` (`KILL`, `STOP`, `CONT`) to the server process; after `KILL` it is reaped.
    pub fn signal(&mut self, signal: &str) {
        let pid = self.pid().expect("a running server");
        let status = Command::new("kill").args([&format!("-{signal}"), &pid.to_string()]).status().expect("kill");
        assert!(status.success(), "kill -{signal} {pid}");
        if signal == "KILL"
            && let Some(mut child) = self.child.take()
        {
            let _ = child.wait();
        }
    }

    /// A server whose database has no users yet, as on a first start.
    pub async fn start_without_users(env: &[(&str, &str)]) -> TestServer {
        Self::start_inner(env, false, None).await
    }

    async fn start_inner(env: &[(&str, &str)], create_admin: bool, log_file: Option<std::path::PathBuf>) -> TestServer {
        let state_dir = tempfile::tempdir().expect("temp dir");
        let database_url = fresh_database(state_dir.path()).await;
        let auth = !env.iter().any(|(k, v)| *k == "INMANTA_SERVER_AUTH" && *v == "false");
        if auth && create_admin {
            // The admin the tests act as, made directly in the database like `inmanta user
            // create --direct` does, so the server does not generate one.
            let o = orchestrator::Orchestrator::open(&database_url).await.expect("open the test database");
            o.create_user(ADMIN, ADMIN_PASSWORD, true, false).await.expect("create the test admin");
            o.store().close().await;
        }
        let mut server = TestServer {
            child: None,
            url: String::new(),
            token: None,
            database_url,
            state_dir,
            extra_env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            http: reqwest::Client::new(),
            log_file,
        };
        server.spawn();
        if auth && create_admin {
            server.login().await;
        }
        server
    }

    /// The certificate a server with TLS serves, which its clients trust.
    fn ca_file(&self) -> Option<&str> {
        self.extra_env.iter().find(|(k, _)| k == "INMANTA_SERVER_SSL_CERT_FILE").map(|(_, v)| v.as_str())
    }

    /// Logs the test admin in and sends its token from now on.
    async fn login(&mut self) {
        let response = client_trusting(None, self.ca_file())
            .post(format!("{}/api/v2/login", self.url))
            .json(&serde_json::json!({"username": ADMIN, "password": ADMIN_PASSWORD}))
            .send()
            .await
            .expect("login");
        assert!(response.status().is_success(), "test admin login: {}", response.status());
        let body: Value = response.json().await.expect("login answer");
        let token = body["data"]["token"].as_str().expect("a token").to_string();
        self.http = client_trusting(Some(&token), self.ca_file());
        self.token = Some(token);
    }

    /// An environment token (e.g. `["agent"]` for an agent process).
    pub async fn environment_token(&self, env: &str, client_types: &[&str]) -> String {
        let env = env.parse().expect("an environment id");
        let types: Vec<ClientType> =
            client_types.iter().map(|t| ClientType::parse(t).expect("a client type")).collect();
        self.client().environment_token(env, &types).await.expect("an environment token")
    }

    /// The typed API client for this server, acting as the test admin (its token, and for a
    /// server with TLS its certificate).
    pub fn client(&self) -> Client {
        let ca_file = self.ca_file().map(std::path::PathBuf::from);
        Client::new(self.url.clone())
            .with_token(self.token.clone())
            .with_ca_file(ca_file.as_deref())
            .expect("a client for the test server")
    }

    /// A new project and an environment in it, through the typed client; the environment's id.
    pub async fn new_environment(&self, project: &str, name: &str) -> Uuid {
        let client = self.client();
        let project = client.create_project(project).await.expect("create a project");
        let body = EnvironmentCreate { project_id: project.id, name: name.to_string(), ..Default::default() };
        client.create_environment(&body).await.expect("create an environment").id
    }

    /// A project's `.inmanta` that points `inmanta export` and the other commands at this server
    /// and environment, with the admin's token.
    pub fn dot_inmanta(&self, env: &str) -> String {
        let port = self.url.rsplit(':').next().unwrap_or_default();
        let token = self.token.as_deref().map(|t| format!("token = {t}\n")).unwrap_or_default();
        format!(
            "[config]\nenvironment = {env}\n\n[compiler_rest_transport]\nhost = 127.0.0.1\nport = {port}\n{token}\n\
             [cmdline_rest_transport]\nhost = 127.0.0.1\nport = {port}\n{token}"
        )
    }

    /// Environment variables that give a CLI process (`inmanta export`, commands) the admin's token.
    pub fn token_env(&self) -> Vec<(&'static str, String)> {
        match &self.token {
            Some(token) => vec![
                ("INMANTA_CMDLINE_REST_TRANSPORT_TOKEN", token.clone()),
                ("INMANTA_COMPILER_REST_TRANSPORT_TOKEN", token.clone()),
            ],
            None => Vec::new(),
        }
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
            .stderr(Stdio::from(
                std::fs::OpenOptions::new().create(true).append(true).open(self.log_path()).expect("log file"),
            ));
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
        self.url = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("server did not start within 60 s; its log:\n{}", self.log()));
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
        self.http = client_with(self.token.as_deref());
        self.spawn();
    }

    /// Where the server's log (stderr) goes.
    pub fn log_path(&self) -> std::path::PathBuf {
        self.log_file.clone().unwrap_or_else(|| self.state_dir.path().join("server.log"))
    }

    /// Everything the server logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
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
            .envs(self.token_env())
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

/// A self-signed server certificate for 127.0.0.1 and localhost; returns (cert, key) paths.
pub fn certificate(dir: &std::path::Path) -> (String, String) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
        .args(["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        // A server certificate, not a CA: rustls refuses a CA certificate as a server's own.
        .args(["-addext", "basicConstraints=critical,CA:FALSE", "-addext", "extendedKeyUsage=serverAuth", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    (cert.display().to_string(), key.display().to_string())
}
