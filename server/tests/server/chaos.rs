//! Faults injected at random during deploys and exports (issue 47): nothing lost, nothing stuck,
//! no restart by hand.
//!
//! A real `inmanta server` process, kept running by a supervisor of the test's own (as systemd's
//! `Restart=always` would: restarted 0.3 s after it exits, for whatever reason), with auth on,
//! deploys the generated project of `../shared/bench/gen_project.py` (200 `fs::File`s and 4
//! `fs::Directory`s written for real) and gets a new version of it from `inmanta export` before
//! every injection, each export changing every file. One fault at a time, chosen at random:
//!
//! - `kill`: SIGKILL of the server process; the supervisor starts it again.
//! - `database_stop` (PostgreSQL): the server's own cluster (initdb, pg_ctl, never the machine's
//!   shared one) stopped with `pg_ctl -m fast` for 1–8 s and started again.
//! - `network_cut` (PostgreSQL): the TCP proxy between the server and its database
//!   (`common::proxy`) closes every connection and refuses new ones for 1–8 s.
//! - `disk_full`: the server's state directory and its log are on a tmpfs (the SQLite database
//!   too), filled up to the last byte for 1–8 s.
//! - `clock_jump`: the server's wall clock steps by 1 to 10 minutes, forwards or backwards
//!   (Debian's libfaketime preloaded into the server, its offset file rewritten while it runs;
//!   the monotonic clock is left alone, as a real step of the system clock leaves it), and stays.
//!
//! Each fault hits either an export in flight (0–3 s after `inmanta export` started: during the
//! compile, the upload or the store) or the deploy of the version just stored (0–1.5 s after).
//! An export that fails is run again, as a CI pipeline would, until it succeeds. After each
//! injection the harness waits (at most [`RECOVERY_BOUND`]) until every check holds: health 200;
//! every version an export reported stored is there; the newest is released and all of its
//! resources are `deployed` (none `deploying` or anything else); every file on disk holds the
//! newest content; and the server never exited but when killed. The time from the fault's end
//! to all of that is its recovery time.
//!
//! SQLite by default; with `INMANTA_TEST_POSTGRES` set, on a PostgreSQL cluster of the test's own
//! (the variable only chooses the database: the shared server is never stopped). `FAULT_SEED`
//! replays a run (the seed is printed first), `FAULT_INJECTIONS` sets its length and `FAULT_BIN` the binary (5: the short
//! form CI runs; `FAULT_INJECTIONS=100` gave the figures of docs/security.md). Needs root (tmpfs),
//! libfaketime and python3 with gen_project.py; a missing prerequisite fails under `CI=true`.

use crate::common;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::postgres_cluster::{PostgresCluster, is_root};
use common::proxy::Proxy;
use common::rng::Rng;
use common::tmpfs::Tmpfs;
use serde_json::{Value, json};

const FILES: usize = 200;
const AGENTS: usize = 4;
/// After a fault ends, everything holds again within this, or the run fails.
const RECOVERY_BOUND: Duration = Duration::from_secs(120);
/// An export that keeps failing after the fault ended for this long fails the run.
const EXPORT_BOUND: Duration = Duration::from_secs(180);
/// How long the supervisor waits before it starts an exited server again (systemd's
/// `RestartSec`).
const RESTART_DELAY: Duration = Duration::from_millis(300);
const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
const USER: &str = "chaos";

/// The `inmanta` binary: the one cargo built for the tests, or `FAULT_BIN` (a copy, so that a
/// long run keeps one build while the tree is rebuilt).
fn bin() -> String {
    std::env::var("FAULT_BIN").unwrap_or_else(|_| common::BIN.to_string())
}
const PASSWORD: &str = "Chaos-password-123";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    Kill,
    DatabaseStop,
    NetworkCut,
    DiskFull,
    ClockJump,
}

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::Kill => "kill",
            Fault::DatabaseStop => "database_stop",
            Fault::NetworkCut => "network_cut",
            Fault::DiskFull => "disk_full",
            Fault::ClockJump => "clock_jump",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The supervisor

/// One exit of the server process.
struct Exit {
    status: ExitStatus,
    /// The harness killed it.
    killed: bool,
}

struct Supervised {
    child: Option<Child>,
    /// The next exit is the harness's kill.
    kill_sent: bool,
    exits: Vec<Exit>,
}

/// Keeps `inmanta server` running: starts it, and starts it again [`RESTART_DELAY`] after it
/// exits, whatever the reason; records every exit.
struct Supervisor {
    state: Arc<Mutex<Supervised>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What starts the server: the same command every time.
#[derive(Clone)]
struct ServerCommand {
    port: u16,
    database_url: String,
    state_dir: PathBuf,
    clock_file: PathBuf,
    /// The server's stdout and stderr (on the tmpfs: a full disk is a full log too).
    log: Arc<File>,
}

impl ServerCommand {
    fn spawn(&self) -> std::io::Result<Child> {
        let log = || self.log.try_clone().map(Stdio::from);
        Command::new(bin())
            .args(["server", "--bind-port", &self.port.to_string(), "--database-url", &self.database_url])
            .arg("--state-dir")
            .arg(&self.state_dir)
            .env("RUST_LOG", "warn,orchestrator=info")
            .env("LD_PRELOAD", LIBFAKETIME)
            .env("FAKETIME_TIMESTAMP_FILE", &self.clock_file)
            // The offset file is read again at most every second; the monotonic clock is real.
            .env("FAKETIME_CACHE_DURATION", "1")
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
            .stdin(Stdio::null())
            .stdout(log()?)
            .stderr(log()?)
            .spawn()
    }
}

impl Supervisor {
    fn start(command: ServerCommand) -> Supervisor {
        let first = command.spawn().expect("start inmanta server");
        let state = Arc::new(Mutex::new(Supervised { child: Some(first), kill_sent: false, exits: vec![] }));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (state, stop) = (state.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut exited_at: Option<Instant> = None;
                while !stop.load(Ordering::SeqCst) {
                    {
                        let mut s = state.lock().unwrap();
                        if let Some(child) = s.child.as_mut()
                            && let Ok(Some(status)) = child.try_wait()
                        {
                            let killed = std::mem::take(&mut s.kill_sent);
                            s.exits.push(Exit { status, killed });
                            s.child = None;
                            exited_at = Some(Instant::now());
                        }
                        if s.child.is_none() && exited_at.is_some_and(|at| at.elapsed() >= RESTART_DELAY) {
                            match command.spawn() {
                                Ok(child) => {
                                    s.child = Some(child);
                                    exited_at = None;
                                }
                                Err(e) => eprintln!("supervisor: cannot start the server: {e}"),
                            }
                        }
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        };
        Supervisor { state, stop, thread: Some(thread) }
    }

    /// SIGKILL: no chance to flush anything; the supervisor starts it again.
    fn kill(&self) {
        let mut s = self.state.lock().unwrap();
        s.kill_sent = true;
        if let Some(child) = s.child.as_mut() {
            let _ = child.kill();
        }
    }

    /// Restarts, and the exits the harness did not cause (with their status).
    fn exits(&self) -> (usize, Vec<String>) {
        let s = self.state.lock().unwrap();
        let unexpected = s.exits.iter().filter(|e| !e.killed).map(|e| e.status.to_string()).collect();
        (s.exits.len(), unexpected)
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if let Some(mut child) = self.state.lock().unwrap().child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The API, as an operator's scripts would use it

struct Api {
    url: String,
    http: reqwest::Client,
    token: Mutex<Option<String>>,
}

impl Api {
    fn new(port: u16) -> Api {
        let http = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().expect("client");
        Api { url: format!("http://127.0.0.1:{port}"), http, token: Mutex::new(None) }
    }

    async fn login(&self) -> Result<String, String> {
        let answer = self
            .http
            .post(format!("{}/api/v2/login", self.url))
            .json(&json!({"username": USER, "password": PASSWORD}))
            .send()
            .await
            .map_err(|e| format!("login: {e}"))?;
        let status = answer.status();
        let body: Value = answer.json().await.map_err(|e| format!("login answer: {e}"))?;
        let token = body["data"]["token"].as_str().ok_or_else(|| format!("login: {status} {body}"))?.to_string();
        *self.token.lock().unwrap() = Some(token.clone());
        Ok(token)
    }

    async fn token(&self) -> Result<String, String> {
        let current = self.token.lock().unwrap().clone();
        match current {
            Some(token) => Ok(token),
            None => self.login().await,
        }
    }

    /// A call; a refused token (expired after a clock jump) is replaced by a new login once.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        env: Option<&str>,
        body: Option<Value>,
    ) -> Result<(u16, Value), String> {
        for attempt in 0..2 {
            let token = self.token().await?;
            let mut request = self.http.request(method.clone(), format!("{}{path}", self.url)).bearer_auth(&token);
            if let Some(env) = env {
                request = request.header("X-Inmanta-tid", env);
            }
            if let Some(body) = &body {
                request = request.json(body);
            }
            let answer = request.send().await.map_err(|e| format!("{path}: {e}"))?;
            let status = answer.status().as_u16();
            let text = answer.text().await.map_err(|e| format!("{path}: {e}"))?;
            if (status == 401 || status == 403) && attempt == 0 {
                *self.token.lock().unwrap() = None;
                continue;
            }
            let value =
                if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
            return Ok((status, value));
        }
        unreachable!("the loop returns on its second attempt")
    }

    async fn get(&self, path: &str, env: Option<&str>) -> Result<Value, String> {
        match self.call(reqwest::Method::GET, path, env, None).await? {
            (200, value) => Ok(value),
            (status, value) => Err(format!("GET {path}: {status} {value}")),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The harness

/// The database and what can be done to it.
enum Database {
    Sqlite,
    Postgres { cluster: PostgresCluster, proxy: Proxy },
}

struct Harness {
    api: Api,
    supervisor: Supervisor,
    database: Database,
    tmpfs: Tmpfs,
    clock_file: PathBuf,
    /// The server's clock offset from the real one, in seconds.
    clock_offset: i64,
    gen_script: PathBuf,
    project: PathBuf,
    deployed: PathBuf,
    env: String,
    generation: u64,
    /// Every version an `inmanta export` said it stored, with the generation it holds.
    exported: Vec<(i64, u64)>,
    export_retries: usize,
    log: PathBuf,
}

/// What is missing for a run, or `None`.
fn missing_prerequisite() -> Option<String> {
    if !is_root() {
        return Some("the state directory is a tmpfs (to fill it), which only root may mount".into());
    }
    if !Path::new(LIBFAKETIME).exists() {
        return Some(format!("no {LIBFAKETIME}: install Debian's libfaketime (the clock jumps)"));
    }
    if gen_script().is_none() {
        return Some(
            "no gen_project.py (set GEN_PROJECT, or ../shared/bench/gen_project.py beside the repository)".into(),
        );
    }
    None
}

fn gen_script() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("GEN_PROJECT").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/bench/gen_project.py")),
        Some(PathBuf::from("/work/shared/bench/gen_project.py")),
    ];
    candidates.into_iter().flatten().find(|p| p.exists())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// The path of file `i` of the generated project under its deploy root.
fn file_path(root: &Path, i: usize) -> PathBuf {
    const TIERS: [&str; 5] = ["web", "api", "worker", "db", "cache"];
    root.join(format!("agent-{}", i % AGENTS)).join(format!("{}-svc-{i:06}.conf", TIERS[i % TIERS.len()]))
}

/// Writes to `file` until the filesystem says it is full.
fn fill(file: &Path) {
    let Ok(mut filler) = File::create(file) else { return };
    let block = vec![0u8; 1024 * 1024];
    while filler.write_all(&block).is_ok() {}
    while filler.write_all(&[0; 512]).is_ok() {}
    while filler.write_all(&[0]).is_ok() {}
}

impl Harness {
    async fn start(postgres: bool, work: &Path) -> Harness {
        let tmpfs = Tmpfs::mount("256m").expect("mount a tmpfs");
        let state_dir = tmpfs.path().join("state");
        std::fs::create_dir_all(&state_dir).expect("state dir");
        let (database, database_url) = if postgres {
            let cluster = PostgresCluster::start_new().expect("a PostgreSQL cluster of the test's own");
            let target: SocketAddr = format!("127.0.0.1:{}", cluster.port()).parse().unwrap();
            let proxy = Proxy::start(target).await;
            let url = format!("postgres://postgres@127.0.0.1:{}/postgres", proxy.port);
            (Database::Postgres { cluster, proxy }, url)
        } else {
            (Database::Sqlite, format!("sqlite://{}", state_dir.join("inmanta.db").display()))
        };
        let created = Command::new(bin())
            .args(["user", "create", USER, "--admin", "--direct"])
            .env("INMANTA_PASSWORD", PASSWORD)
            .env("INMANTA_DATABASE_URL", &database_url)
            .env("INMANTA_CONFIG_STATE_DIR", &state_dir)
            .output()
            .expect("inmanta user create");
        assert!(created.status.success(), "user create: {}", String::from_utf8_lossy(&created.stderr));
        let clock_file = work.join("clock-offset");
        std::fs::write(&clock_file, "+0\n").expect("clock file");
        let log = tmpfs.path().join("server.log");
        let port = free_port();
        let command = ServerCommand {
            port,
            database_url,
            state_dir,
            clock_file: clock_file.clone(),
            log: Arc::new(std::fs::OpenOptions::new().create(true).append(true).open(&log).expect("log")),
        };
        let supervisor = Supervisor::start(command);
        let api = Api::new(port);
        let deadline = Instant::now() + Duration::from_secs(60);
        while api.login().await.is_err() {
            assert!(Instant::now() < deadline, "the server did not start; its log:\n{}", read_tail(&log));
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let (_, project) =
            api.call(reqwest::Method::PUT, "/api/v2/project", None, Some(json!({"name": "chaos"}))).await.unwrap();
        let (status, environment) = api
            .call(
                reqwest::Method::PUT,
                "/api/v2/environment",
                None,
                Some(json!({"project_id": project["data"]["id"], "name": "chaos"})),
            )
            .await
            .unwrap();
        assert_eq!(status, 200, "{environment}");
        let env = environment["data"]["id"].as_str().unwrap().to_string();
        // Every exported version stays, so that every one can be checked.
        let (status, body) = api
            .call(
                reqwest::Method::POST,
                "/api/v2/environment_settings/available_versions_to_keep",
                Some(&env),
                Some(json!({"value": 1000})),
            )
            .await
            .unwrap();
        assert_eq!(status, 200, "available_versions_to_keep: {body}");
        let project = work.join("project");
        let deployed = project.join("deployed");
        Harness {
            api,
            supervisor,
            database,
            tmpfs,
            clock_file,
            clock_offset: 0,
            gen_script: gen_script().expect("gen_project.py"),
            project,
            deployed,
            env,
            generation: 0,
            exported: vec![],
            export_retries: 0,
            log,
        }
    }

    fn kinds(&self) -> Vec<Fault> {
        match self.database {
            Database::Sqlite => vec![Fault::Kill, Fault::DiskFull, Fault::ClockJump],
            Database::Postgres { .. } => {
                vec![Fault::Kill, Fault::DatabaseStop, Fault::NetworkCut, Fault::DiskFull, Fault::ClockJump]
            }
        }
    }

    /// The project at the next generation: every file's content changes.
    fn next_generation(&mut self) {
        self.generation += 1;
        let status = Command::new("python3")
            .arg(&self.gen_script)
            .args([FILES.to_string(), self.project.display().to_string()])
            .args(["--agents", &AGENTS.to_string(), "--generation", &self.generation.to_string()])
            .status()
            .expect("python3");
        assert!(status.success(), "gen_project.py failed");
        std::fs::create_dir_all(&self.deployed).expect("deploy root");
    }

    /// `inmanta export` of the project as it is, pointed at the server with a fresh token.
    async fn export_command(&self) -> tokio::process::Command {
        // A token from before the fault: a login may be impossible during it.
        let token = match self.api.token().await {
            Ok(token) => token,
            Err(_) => self.api.token.lock().unwrap().clone().unwrap_or_default(),
        };
        let port = self.api.url.rsplit(':').next().unwrap();
        std::fs::write(
            self.project.join(".inmanta"),
            format!(
                "[config]\nenvironment = {}\n\n[compiler_rest_transport]\nhost = 127.0.0.1\nport = {port}\ntoken = {token}\n",
                self.env
            ),
        )
        .expect(".inmanta");
        let mut command = tokio::process::Command::new(bin());
        command.args(["-v", "export"]).current_dir(&self.project).kill_on_drop(true);
        command
    }

    /// Records what a finished export said; `Ok(version)` when it stored one.
    fn exported(&mut self, output: std::io::Result<std::process::Output>) -> Result<i64, String> {
        let output = output.map_err(|e| format!("cannot run inmanta export: {e}"))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").to_string();
            return Err(format!("export failed ({}): {last}", output.status));
        }
        let version = stored_version(&stderr)
            .ok_or_else(|| format!("export succeeded without saying which version it stored:\n{stderr}"))?;
        self.exported.push((version, self.generation));
        Ok(version)
    }

    /// Exports until an export succeeds (a pipeline retrying a failed job).
    async fn export_until_stored(
        &mut self,
        first: Option<std::io::Result<std::process::Output>>,
    ) -> Result<i64, String> {
        let started = Instant::now();
        let mut result = match first {
            Some(output) => self.exported(output),
            None => {
                let output = self.export_command().await.output().await;
                self.exported(output)
            }
        };
        loop {
            match result {
                Ok(version) => return Ok(version),
                Err(e) if started.elapsed() > EXPORT_BOUND => {
                    return Err(format!("exports still fail {EXPORT_BOUND:?} after the fault: {e}"));
                }
                Err(_) => {}
            }
            self.export_retries += 1;
            tokio::time::sleep(Duration::from_secs(1)).await;
            let output = self.export_command().await.output().await;
            result = self.exported(output);
        }
    }

    /// Injects `fault`, holds it for `hold`, ends it; returns when it ended.
    async fn inject(&mut self, fault: Fault, hold: Duration, rng: &mut Rng) -> Instant {
        match fault {
            Fault::Kill => {
                self.supervisor.kill();
                Instant::now()
            }
            Fault::DatabaseStop => {
                let Database::Postgres { cluster, .. } = &self.database else { unreachable!("PostgreSQL only") };
                cluster.stop();
                tokio::time::sleep(hold).await;
                cluster.start().expect("start PostgreSQL again");
                Instant::now()
            }
            Fault::NetworkCut => {
                let Database::Postgres { proxy, .. } = &self.database else { unreachable!("PostgreSQL only") };
                proxy.cut().await;
                tokio::time::sleep(hold).await;
                proxy.restore().await;
                Instant::now()
            }
            Fault::DiskFull => {
                let filler = self.tmpfs.path().join("filler");
                let filling = filler.clone();
                tokio::task::spawn_blocking(move || fill(&filling)).await.expect("fill");
                tokio::time::sleep(hold).await;
                std::fs::remove_file(&filler).expect("remove the filler");
                Instant::now()
            }
            Fault::ClockJump => {
                // 1 to 10 minutes either way, the offset staying within 15 minutes.
                let step = 60 + rng.below(540) as i64;
                let forward = if self.clock_offset + step > 900 {
                    false
                } else if self.clock_offset - step < -900 {
                    true
                } else {
                    rng.below(2) == 0
                };
                self.clock_offset += if forward { step } else { -step };
                std::fs::write(&self.clock_file, format!("{:+}\n", self.clock_offset)).expect("clock file");
                // The server reads the offset file again within a second.
                Instant::now() + Duration::from_secs(1)
            }
        }
    }

    /// Waits until every check holds; how long it took, or what still did not hold at the bound.
    async fn settle(&self, since: Instant) -> Result<Duration, String> {
        let deadline = since + RECOVERY_BOUND;
        loop {
            let problems = self.problems().await;
            if problems.is_empty() {
                return Ok(since.elapsed());
            }
            if Instant::now() > deadline {
                return Err(problems.join("\n"));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The files on disk that do not hold `generation` yet.
    fn stale_files(&self, generation: u64) -> Vec<PathBuf> {
        let want = format!("generation={generation}\n");
        (0..FILES)
            .map(|i| file_path(&self.deployed, i))
            .filter(|p| !std::fs::read_to_string(p).is_ok_and(|content| content.contains(&want)))
            .collect()
    }

    /// How many files of the newest export the deploy has still to write.
    fn files_to_write(&self) -> usize {
        self.exported.last().map_or(0, |(_, generation)| self.stale_files(*generation).len())
    }

    /// Every check that does not hold now, in words.
    async fn problems(&self) -> Vec<String> {
        let mut problems = vec![];
        let (_, unexpected) = self.supervisor.exits();
        if !unexpected.is_empty() {
            problems.push(format!("the server exited by itself: {unexpected:?}"));
        }
        match self.api.http.get(format!("{}/api/v2/health", self.api.url)).send().await {
            Ok(answer) if answer.status() == 200 => {}
            Ok(answer) => {
                problems.push(format!("health: {} {}", answer.status(), answer.text().await.unwrap_or_default()))
            }
            Err(e) => problems.push(format!("health: {e}")),
        }
        if !problems.is_empty() {
            return problems;
        }
        let Some(&(newest, generation)) = self.exported.last() else { return problems };
        match self.api.get("/api/v2/desiredstate?limit=1000", Some(&self.env)).await {
            Ok(versions) => {
                let stored: BTreeMap<i64, &str> = versions["data"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| Some((v["version"].as_i64()?, v["status"].as_str().unwrap_or(""))))
                    .collect();
                let lost: Vec<i64> =
                    self.exported.iter().map(|(v, _)| *v).filter(|v| !stored.contains_key(v)).collect();
                if !lost.is_empty() {
                    problems.push(format!("LOST: exported versions {lost:?} are not stored"));
                }
                if stored.get(&newest) != Some(&"active") {
                    problems.push(format!("version {newest} is {:?}, not active", stored.get(&newest)));
                }
            }
            Err(e) => problems.push(e),
        }
        let path = "/api/v2/resource?limit=1000&filter.status=!orphaned";
        match self.api.get(path, Some(&self.env)).await {
            Ok(list) => {
                let mut by_status: BTreeMap<String, usize> = BTreeMap::new();
                for resource in list["data"].as_array().into_iter().flatten() {
                    let version = resource["resource_version_id"].as_str().and_then(|id| id.rsplit("v=").next());
                    let status = resource["status"].as_str().unwrap_or("?");
                    let key = if version == Some(&newest.to_string()) {
                        status.to_string()
                    } else {
                        format!("{status} (of version {})", version.unwrap_or("?"))
                    };
                    *by_status.entry(key).or_default() += 1;
                }
                if by_status.get("deployed") != Some(&(FILES + AGENTS)) {
                    problems.push(format!("resources: {by_status:?}, want {} deployed", FILES + AGENTS));
                }
            }
            Err(e) => problems.push(e),
        }
        let wrong = self.stale_files(generation);
        if !wrong.is_empty() {
            problems.push(format!(
                "{} files on disk do not hold generation {generation}, e.g. {}",
                wrong.len(),
                wrong[0].display()
            ));
        }
        problems
    }
}

/// The version number `inmanta -v export` logged as stored.
fn stored_version(stderr: &str) -> Option<i64> {
    let line = stderr.lines().rev().find(|l| l.contains("version stored"))?;
    let at = line.find("version=")? + "version=".len();
    line[at..].split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

fn read_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    match values.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_faults_during_deploys_and_exports_lose_nothing_and_leave_nothing_stuck() {
    if let Some(missing) = missing_prerequisite() {
        test_support::missing_prerequisite(missing);
        return;
    }
    let postgres = std::env::var("INMANTA_TEST_POSTGRES").is_ok_and(|v| !v.is_empty());
    let injections: usize = std::env::var("FAULT_INJECTIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let seed = Rng::seed_from("FAULT_SEED");
    let database = if postgres { "PostgreSQL" } else { "SQLite" };
    eprintln!("fault injection on {database}: FAULT_SEED={seed} FAULT_INJECTIONS={injections}");
    let mut rng = Rng(seed);
    let work = tempfile::tempdir().expect("temp dir");
    let mut h = Harness::start(postgres, work.path()).await;
    // The first version, deployed before any fault: how long an export and a deploy take here
    // decides when the faults strike (somewhere inside either).
    h.next_generation();
    let exporting = Instant::now();
    h.export_until_stored(None).await.expect("the first export");
    let export_takes = exporting.elapsed();
    h.settle(Instant::now()).await.unwrap_or_else(|e| panic!("the first deploy: {e}\n{}", read_tail(&h.log)));
    // A second version, as every injection has: the deploy of a change to every file.
    h.next_generation();
    h.export_until_stored(None).await.expect("the second export");
    let deploy_takes =
        h.settle(Instant::now()).await.unwrap_or_else(|e| panic!("the second deploy: {e}\n{}", read_tail(&h.log)));
    eprintln!(
        "an export takes {:.1} s, a deploy of every file {:.1} s: faults strike within those",
        export_takes.as_secs_f64(),
        deploy_takes.as_secs_f64()
    );

    let kinds = h.kinds();
    let mut recoveries: BTreeMap<Fault, Vec<Duration>> = BTreeMap::new();
    let (mut exports_hit, mut deploys_hit) = (0, 0);
    let run_started = Instant::now();
    for injection in 1..=injections {
        let fault = kinds[rng.below(kinds.len() as u64) as usize];
        let during_export = rng.below(2) == 0;
        let hold = Duration::from_millis(1000 + rng.below(7000));
        h.next_generation();
        let (ended, hit) = if during_export {
            let delay = Duration::from_millis(rng.below(export_takes.as_millis() as u64 + 1));
            let export = tokio::spawn(h.export_command().await.output());
            tokio::time::sleep(delay).await;
            let in_flight = !export.is_finished();
            let ended = h.inject(fault, hold, &mut rng).await;
            let output = export.await.expect("the export task");
            h.export_until_stored(Some(output)).await.unwrap_or_else(|e| {
                panic!("injection {injection} (FAULT_SEED={seed}): {e}\nserver log:\n{}", read_tail(&h.log))
            });
            exports_hit += usize::from(in_flight);
            (ended, if in_flight { "during an export" } else { "just after an export" })
        } else {
            h.export_until_stored(None).await.unwrap_or_else(|e| panic!("injection {injection}: {e}"));
            tokio::time::sleep(Duration::from_millis(rng.below(deploy_takes.as_millis() as u64 + 1))).await;
            let in_flight = h.files_to_write() > 0;
            deploys_hit += usize::from(in_flight);
            (h.inject(fault, hold, &mut rng).await, if in_flight { "during a deploy" } else { "just after a deploy" })
        };
        match h.settle(ended).await {
            Ok(took) => {
                eprintln!(
                    "injection {injection}/{injections}: {} {hit}{}: all checks hold {:.1} s after it ended",
                    fault.name(),
                    if matches!(fault, Fault::Kill | Fault::ClockJump) {
                        String::new()
                    } else {
                        format!(" for {:.1} s", hold.as_secs_f64())
                    },
                    took.as_secs_f64()
                );
                recoveries.entry(fault).or_default().push(took);
            }
            Err(problems) => panic!(
                "injection {injection} (FAULT_SEED={seed}): {} {hit}: after {RECOVERY_BOUND:?}:\n{problems}\n\
                 server log:\n{}",
                fault.name(),
                read_tail(&h.log)
            ),
        }
    }
    // At the end, every version is still there.
    let problems = h.problems().await;
    assert!(problems.is_empty(), "{problems:?}");
    let (exits, unexpected) = h.supervisor.exits();
    eprintln!(
        "\n{injections} injections on {database} in {:.0} s (FAULT_SEED={seed}); {} versions exported and stored, \
         {} exports retried, {exports_hit} faults hit an export in flight and {deploys_hit} a deploy in flight, \
         {exits} restarts by the supervisor (all after a kill: {} unexpected), losses 0, stuck 0; \
         load average {}",
        run_started.elapsed().as_secs_f64(),
        h.exported.len(),
        h.export_retries,
        unexpected.len(),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    eprintln!("{:<14} {:>5} {:>12} {:>10}", "fault", "count", "median (s)", "max (s)");
    for (fault, took) in recoveries.iter_mut() {
        let max = took.iter().max().copied().unwrap_or_default();
        eprintln!(
            "{:<14} {:>5} {:>12.1} {:>10.1}",
            fault.name(),
            took.len(),
            median(took).as_secs_f64(),
            max.as_secs_f64()
        );
    }
}
