//! Several servers on one PostgreSQL database (issue 14, docs/ha.md): three real `inmanta server`
//! processes with a short scheduler lease deploy chains of `exec::Run` resources whose command
//! runs under `flock -n`, so two runs of one resource at the same time leave a mark. The owner of
//! the environment's scheduler is killed (SIGKILL) or stalled (SIGSTOP) in the middle: another
//! server takes over, everything ends deployed, nothing ran twice at once, and no write of the
//! old epoch lands after the takeover.
//!
//! PostgreSQL only (`INMANTA_TEST_POSTGRES`; these tests have `postgres` in their names, which
//! the SQLite pass of scripts/test.sh leaves out); on SQLite a second server on the same
//! database file is refused instead, which is tested here too, on a file of its own.

use crate::common;

use std::time::{Duration, Instant};

use api::compile::NotifyChange;
use api::version::PutVersion;
use common::TestServer;
use serde_json::{Value, json};

const CHAINS: usize = 5;
const PER_CHAIN: usize = 60;
const LEASE_SECONDS: &str = "2";

fn server_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("INMANTA_SERVER_AUTH", "false"),
        ("INMANTA_SERVER_SCHEDULER_LEASE", LEASE_SECONDS),
        ("RUST_LOG", "warn,orchestrator::cluster=info,orchestrator::ownership=info"),
    ]
}

/// The id a server registered under, read from its log.
fn server_id(s: &TestServer) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let log = s.log();
        if let Some(at) = log.find("joined the servers on this database") {
            let line_start = log[..at].rfind('\n').map_or(0, |i| i + 1);
            let line = &log[line_start..log[at..].find('\n').map_or(log.len(), |i| at + i)];
            if let Some(pos) = line.find("server=") {
                return line[pos + 7..].chars().take(36).collect();
            }
        }
        assert!(Instant::now() < deadline, "no server id in the log:\n{log}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

struct Cluster {
    servers: Vec<TestServer>,
    ids: Vec<String>,
    db: orchestrator::Orchestrator,
    env: String,
    work: tempfile::TempDir,
}

impl Cluster {
    async fn start() -> Cluster {
        let work = tempfile::tempdir().expect("temp dir");
        let database_url = common::fresh_database(work.path()).await;
        let db = orchestrator::Orchestrator::open(&database_url).await.expect("open the database");
        let env_vars = server_env();
        let mut servers = Vec::new();
        for _ in 0..3 {
            servers.push(TestServer::start_on(&database_url, &env_vars).await);
        }
        let ids = servers.iter().map(server_id).collect();
        let s = &servers[0];
        let env = s.new_environment("p", "e").await.to_string();
        Cluster { servers, ids, db, env, work }
    }

    /// (index of the server holding the lease, epoch) once someone holds it.
    async fn owner(&self) -> (usize, i64) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let row: Option<(String, i64)> = sqlx::query_as(
                "SELECT holder, epoch FROM scheduler_lease WHERE environment = $1 AND expires > \
                 CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
            )
            .bind(&self.env)
            .fetch_optional(self.db.store().pool())
            .await
            .expect("read the lease");
            if let Some((holder, epoch)) = row
                && let Some(i) = self.ids.iter().position(|id| *id == holder)
            {
                return (i, epoch);
            }
            assert!(Instant::now() < deadline, "nobody holds the lease");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Deploy results written under epochs older than `epoch`.
    async fn writes_before(&self, epoch: i64) -> i64 {
        sqlx::query_scalar("SELECT COUNT(*) FROM resource_action WHERE environment = $1 AND epoch < $2")
            .bind(&self.env)
            .bind(epoch)
            .fetch_one(self.db.store().pool())
            .await
            .expect("count actions")
    }

    fn rid(&self, i: usize) -> String {
        format!("exec::Run[agent-{},command={}]", i % CHAINS, self.command(i))
    }

    /// Runs under `flock -n` on the resource's own lock: a second run while one is still going
    /// fails to lock and writes the resource's number to `conflicts`.
    fn command(&self, i: usize) -> String {
        let dir = self.work.path().display();
        format!(
            "sh -c \"flock -n {dir}/lock-{i} sh -c 'sleep 0.02; echo {i} >> {dir}/runs' || echo {i} >> {dir}/conflicts\""
        )
    }

    /// Chains per agent: resource i requires i - CHAINS.
    async fn export(&self) {
        let s = self.alive();
        let (status, body) = s.call("POST", "/api/v2/reserve_version", Some(&self.env), None).await;
        assert_eq!(status, 200, "{body}");
        let version = body["data"].as_i64().expect("version");
        let resources: Vec<Value> = (0..CHAINS * PER_CHAIN)
            .map(|i| {
                json!({
                    "id": format!("{},v={version}", self.rid(i)), "command": self.command(i),
                    "returns": [0], "timeout": 60, "purged": false, "send_event": false, "receive_events": false,
                    "requires": if i >= CHAINS { vec![self.rid(i - CHAINS)] } else { vec![] },
                })
            })
            .collect();
        let body = json!({
            "version": version, "resources": resources, "resource_state": {}, "unknowns": [],
            "version_info": {}, "module_version_info": {}, "compiler_version": "test",
        });
        let (status, body) = s.call("PUT", "/api/v1/version", Some(&self.env), Some(body)).await;
        assert_eq!(status, 200, "{body}");
    }

    /// An `inmanta agent` process serving every chain's agent name, connected to `server`; its
    /// stderr goes to `agent.log` in the work directory.
    fn start_agent(&self, server: &str) -> std::process::Child {
        let mut args: Vec<String> =
            vec!["agent".into(), "-e".into(), self.env.clone(), "--server".into(), server.into()];
        for chain in 0..CHAINS {
            args.extend(["--name".to_string(), format!("agent-{chain}")]);
        }
        std::process::Command::new(common::BIN)
            .args(&args)
            .arg("--cache-dir")
            .arg(self.work.path().join("agent-cache"))
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(self.work.path().join("agent.log")).expect("agent log"))
            .spawn()
            .expect("start inmanta agent")
    }

    /// Waits until every chain's agent name is served by a remote agent process.
    async fn wait_remote_agents(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let remote: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM agent WHERE environment = $1 AND remote = 1")
                .bind(&self.env)
                .fetch_one(self.db.store().pool())
                .await
                .expect("count agents");
            if remote == CHAINS as i64 {
                return;
            }
            assert!(Instant::now() < deadline, "the remote agent did not connect");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn alive(&self) -> &TestServer {
        self.servers.iter().find(|s| s.pid().is_some()).expect("a live server")
    }

    async fn deployed(&self) -> usize {
        // Deployed at its current hash.
        let count: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM resource_persistent_state WHERE environment = $1 \
             AND last_deployed_attribute_hash = current_intent_attribute_hash \
             AND last_non_deploying_status = 'deployed'",
        )
        .bind(&self.env)
        .fetch_one(self.db.store().pool())
        .await
        .unwrap_or(0);
        count as usize
    }

    async fn wait_deployed_at_least(&self, n: usize, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let done = self.deployed().await;
            if done >= n {
                return;
            }
            if Instant::now() > deadline {
                let logs: String = self.servers.iter().map(|s| s.log()).collect::<Vec<_>>().join("\n-----\n");
                panic!("only {done} of {n} resources deployed after {within:?}; logs:\n{logs}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn conflicts(&self) -> String {
        std::fs::read_to_string(self.work.path().join("conflicts")).unwrap_or_default()
    }

    fn runs(&self) -> Vec<usize> {
        let text = std::fs::read_to_string(self.work.path().join("runs")).unwrap_or_default();
        let mut runs = vec![0; CHAINS * PER_CHAIN];
        for line in text.lines() {
            if let Ok(i) = line.trim().parse::<usize>() {
                runs[i] += 1;
            }
        }
        runs
    }
}

#[tokio::test]
async fn the_owner_killed_mid_deploy_is_replaced_and_nothing_runs_twice_at_once_on_postgres() {
    if test_support::postgres_admin_url().is_none() {
        return;
    }
    let mut c = Cluster::start().await;
    let total = CHAINS * PER_CHAIN;
    c.export().await;
    let (owner, epoch) = c.owner().await;
    c.wait_deployed_at_least(total / 4, Duration::from_secs(60)).await;
    let killed = Instant::now();
    c.servers[owner].signal("KILL");
    let (next, new_epoch) = loop {
        let (holder, e) = c.owner().await;
        if e > epoch {
            break (holder, e);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let took_over = killed.elapsed();
    assert_ne!(next, owner);
    // Every write of the old epoch is in by now: the takeover waited for its commits.
    let old_writes = c.writes_before(new_epoch).await;
    assert!(old_writes > 0, "the killed owner's deploy results carry its epoch");
    let before = c.deployed().await;
    c.wait_deployed_at_least(before + 1, Duration::from_secs(30)).await;
    let resumed = killed.elapsed();
    eprintln!("failover after SIGKILL: lease taken over after {took_over:?}, deploying again after {resumed:?}");
    c.wait_deployed_at_least(total, Duration::from_secs(120)).await;
    assert_eq!(c.conflicts(), "", "resources ran twice at the same time");
    assert!(c.runs().iter().all(|n| *n >= 1), "every resource ran: {:?}", c.runs());
    assert_eq!(c.writes_before(new_epoch).await, old_writes, "a write of the old epoch landed after the takeover");

    // A repair asked through a server that does not run the scheduler reaches the one that does.
    let (owner, _) = c.owner().await;
    let other = (0..3).find(|i| *i != owner && c.servers[*i].pid().is_some()).expect("a non-owner");
    let runs_before: usize = c.runs().iter().sum();
    let (status, body) = c.servers[other]
        .call("POST", "/api/v1/deploy", Some(&c.env), Some(json!({"agent_trigger_method": "push_full_deploy"})))
        .await;
    assert_eq!(status, 200, "{body}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while c.runs().iter().sum::<usize>() < runs_before + total {
        assert!(Instant::now() < deadline, "the repair asked through a non-owner did not run everything");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(c.conflicts(), "", "resources ran twice at the same time");
}

/// Issue 47: handlers that ran on an owner killed before their results were stored run again
/// on the next owner; each run is an action of its own in the resource action log (the first
/// one closed with a warning that its server stopped), none is left open.
#[tokio::test]
async fn every_handler_run_around_a_killed_owner_is_in_the_action_log_on_postgres() {
    if test_support::postgres_admin_url().is_none() {
        return;
    }
    let mut c = Cluster::start().await;
    let total = CHAINS * PER_CHAIN;
    c.export().await;
    let (owner, _) = c.owner().await;
    c.wait_deployed_at_least(total / 3, Duration::from_secs(60)).await;
    c.servers[owner].signal("KILL");
    c.wait_deployed_at_least(total, Duration::from_secs(120)).await;
    // What the killed server's last commands still write lands within their 20 ms.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT ar.resource_id, COUNT(*) FROM resource_action a JOIN resource_action_resource ar \
         ON ar.environment = a.environment AND ar.action_id = a.action_id \
         WHERE a.environment = $1 AND a.action = 'deploy' GROUP BY ar.resource_id",
    )
    .bind(&c.env)
    .fetch_all(c.db.store().pool())
    .await
    .expect("count actions");
    let actions: std::collections::HashMap<String, i64> = rows.into_iter().collect();
    let runs = c.runs();
    let unlogged: Vec<String> = (0..total)
        .filter(|i| actions.get(&c.rid(*i)).copied().unwrap_or(0) < runs[*i] as i64)
        .map(|i| format!("{}: {} runs, {} actions", c.rid(i), runs[i], actions.get(&c.rid(i)).copied().unwrap_or(0)))
        .collect();
    assert!(unlogged.is_empty(), "handler runs without their own action: {unlogged:?}");
    let ran_again = runs.iter().filter(|n| **n > 1).count();
    let open: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM resource_action WHERE environment = $1 AND action = 'deploy' AND finished IS NULL",
    )
    .bind(&c.env)
    .fetch_one(c.db.store().pool())
    .await
    .expect("count open actions");
    assert_eq!(open, 0, "every action is closed once everything is deployed");
    let interrupted: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM resource_log WHERE environment = $1 AND msg LIKE 'the server that ran this deploy stopped%'",
    )
    .bind(&c.env)
    .fetch_one(c.db.store().pool())
    .await
    .expect("count warnings");
    eprintln!("after SIGKILL: {ran_again} resources ran again, {interrupted} actions closed as interrupted");
    assert!(interrupted as usize >= ran_again, "a run whose result was lost says so in its action");
}

#[tokio::test]
async fn a_stalled_owner_cannot_commit_after_its_lease_on_postgres() {
    if test_support::postgres_admin_url().is_none() {
        return;
    }
    let mut c = Cluster::start().await;
    let total = CHAINS * PER_CHAIN;
    c.export().await;
    let (owner, epoch) = c.owner().await;
    c.wait_deployed_at_least(total / 4, Duration::from_secs(60)).await;
    let lease = Duration::from_secs(LEASE_SECONDS.parse().expect("seconds"));
    let stopped = Instant::now();
    c.servers[owner].signal("STOP");
    let new_epoch = loop {
        let (holder, e) = c.owner().await;
        if e > epoch {
            assert_ne!(holder, owner);
            break e;
        }
        assert!(stopped.elapsed() < Duration::from_secs(30), "nobody took over from the stalled owner");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let took_over = stopped.elapsed();
    eprintln!("failover after SIGSTOP: lease taken over after {took_over:?} (lease {lease:?})");
    let remaining = (2 * lease).saturating_sub(stopped.elapsed());
    tokio::time::sleep(remaining).await;
    let old_writes = c.writes_before(new_epoch).await;
    c.servers[owner].signal("CONT");
    c.wait_deployed_at_least(total, Duration::from_secs(120)).await;
    // Give the resumed server time to try its writes.
    tokio::time::sleep(lease).await;
    assert_eq!(c.writes_before(new_epoch).await, old_writes, "the stalled owner committed after its lease");
    assert_eq!(c.conflicts(), "", "resources ran twice at the same time");
    assert!(c.servers[owner].log().contains("lease"), "the resumed owner says it lost its lease");
}

#[tokio::test]
async fn a_second_server_on_one_sqlite_file_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("shared.db").display());
    let _first = TestServer::start_on(&url, &[("INMANTA_SERVER_AUTH", "false")]).await;
    let output = std::process::Command::new(common::BIN)
        .args(["server", "--bind-port", "0", "--database-url", &url, "--state-dir"])
        .arg(dir.path().join("second"))
        .env("INMANTA_SERVER_AUTH", "false")
        .output()
        .expect("run a second server");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("another inmanta server already runs on the SQLite database"), "{stderr}");
    assert!(stderr.contains("PostgreSQL"), "{stderr}");
}

#[tokio::test]
async fn a_remote_agent_connected_to_another_server_gets_the_owners_tasks_on_postgres() {
    if test_support::postgres_admin_url().is_none() {
        return;
    }
    let c = Cluster::start().await;
    let total = CHAINS * PER_CHAIN;
    // Any environment's owner is decided by the leases; the agent connects to another server.
    let (owner, _) = c.owner().await;
    let other = (owner + 1) % 3;
    let mut agent = c.start_agent(&c.servers[other].url.clone());
    // The agent names are remote before the version arrives, so nothing runs in-process.
    c.wait_remote_agents().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    c.export().await;
    c.wait_deployed_at_least(total, Duration::from_secs(120)).await;
    let _ = agent.kill();
    let _ = agent.wait();
    assert_eq!(c.conflicts(), "", "resources ran twice at the same time");
    assert!(c.runs().iter().all(|n| *n == 1), "every resource ran once: {:?}", c.runs());
    let (owner_now, _) = c.owner().await;
    assert_eq!(owner_now, owner, "the scheduler stayed where it was");
}

/// A TCP load balancer as an operator puts in front of the servers (HAProxy, say): each new
/// connection goes to the first backend, from `preferred` on, that accepts it; a backend that
/// died refuses and the next one is tried. Returns the address agents are given.
async fn balancer(backends: Vec<String>, preferred: usize) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the balancer");
    let address = listener.local_addr().expect("balancer address");
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let backends = backends.clone();
            tokio::spawn(async move {
                for k in 0..backends.len() {
                    let backend = &backends[(preferred + k) % backends.len()];
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(backend).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        return;
                    }
                }
            });
        }
    });
    address.to_string()
}

#[tokio::test]
async fn the_server_holding_a_remote_agents_session_killed_the_agent_reconnects_elsewhere_on_postgres() {
    if test_support::postgres_admin_url().is_none() {
        return;
    }
    let mut c = Cluster::start().await;
    let total = CHAINS * PER_CHAIN;
    // The agent's session lands on a server that does not run the scheduler.
    let (owner, _) = c.owner().await;
    let holder = (owner + 1) % 3;
    let backends = c.servers.iter().map(|s| s.url.trim_start_matches("http://").to_string()).collect();
    let address = balancer(backends, holder).await;
    let mut agent = c.start_agent(&format!("http://{address}"));
    c.wait_remote_agents().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    c.export().await;
    c.wait_deployed_at_least(total / 4, Duration::from_secs(60)).await;
    let killed = Instant::now();
    c.servers[holder].signal("KILL");
    let before = c.deployed().await;
    c.wait_deployed_at_least(before + 1, Duration::from_secs(60)).await;
    eprintln!("the agent's session server SIGKILLed: deploying again after {:?}", killed.elapsed());
    c.wait_deployed_at_least(total, Duration::from_secs(120)).await;
    let _ = agent.kill();
    let _ = agent.wait();
    let log = std::fs::read_to_string(c.work.path().join("agent.log")).unwrap_or_default();
    assert!(log.matches("connected to").count() >= 2, "the agent reconnected through the balancer:\n{log}");
    assert_eq!(c.conflicts(), "", "resources ran twice at the same time");
    assert!(c.runs().iter().all(|n| *n >= 1), "every resource ran: {:?}", c.runs());
    // Only the agent process ran them: the in-process agents of the servers never took its names.
    let local: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM agent WHERE environment = $1 AND remote = 0")
        .bind(&c.env)
        .fetch_one(c.db.store().pool())
        .await
        .expect("count agents");
    assert_eq!(local, 0, "the agent names stayed remote");
    let (owner_now, _) = c.owner().await;
    assert_eq!(owner_now, owner, "the scheduler stayed where it was");
}

/// Runs git in `dir`; panics when it fails.
fn git(dir: &std::path::Path, args: &[&str]) {
    let output = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
}

/// A project repository whose compile takes a moment (`items` instances) and yields one
/// resource; returns its URL.
fn project_repository(root: &std::path::Path, items: u32) -> String {
    let bare = root.join("project.git");
    std::fs::create_dir_all(&bare).unwrap();
    git(&bare, &["init", "--bare", "--quiet"]);
    let work = root.join("project");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "--quiet"]);
    git(&work, &["checkout", "--quiet", "-B", "main"]);
    std::fs::write(work.join("project.yml"), "name: ha\nmodulepath: libs\ndownloadpath: libs\n").unwrap();
    let model = format!(
        "import std::testing\nentity Item:\n    int x\nend\nimplement Item using std::none\n\
         for i in std::sequence({items}):\n    Item(x=i)\nend\n\
         std::testing::NullResource(name=\"compiled\", agentname=\"internal\")\n"
    );
    std::fs::write(work.join("main.cf"), model).unwrap();
    git(&work, &["add", "--all"]);
    git(&work, &["commit", "--quiet", "-m", "model"]);
    let url = format!("file://{}", bare.display());
    git(&work, &["push", "--quiet", &url, "main"]);
    url
}

impl Cluster {
    /// Starts another server on the database in place of the dead one at `index`.
    async fn replace(&mut self, index: usize) {
        let server = TestServer::start_on(&self.servers[index].database_url, &server_env()).await;
        self.ids[index] = server_id(&server);
        self.servers[index] = server;
    }

    /// (claim holder's index, completed, versions its export stored) of the compile `id`.
    async fn compile_state(&self, env: &str, id: &str) -> (Option<usize>, bool, i64) {
        let row: Option<(Option<String>, Option<String>)> =
            sqlx::query_as("SELECT claim_holder, completed FROM compile WHERE id = $1")
                .bind(id)
                .fetch_optional(self.db.store().pool())
                .await
                .expect("read the compile");
        let (holder, completed) = row.expect("the compile exists");
        let versions: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM version WHERE environment = $1 AND version_info LIKE $2")
                .bind(env)
                .bind(format!("%{id}%"))
                .fetch_one(self.db.store().pool())
                .await
                .expect("count versions");
        let holder = holder.and_then(|h| self.ids.iter().position(|id| *id == h));
        (holder, completed.is_some(), versions)
    }

    /// The id of the requested compile, as text for the database queries.
    async fn request_compile(&self, env: &str) -> String {
        let request = NotifyChange { update: false, ..Default::default() };
        let answer = self.alive().client().notify(env.parse().unwrap(), &request).await.unwrap();
        answer.compile_id.expect("a compile id").to_string()
    }

    /// Waits until the compile `id` finished; its success.
    async fn compile_finished(&self, env: &str, id: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            let details =
                self.alive().client().compile_report(env.parse().unwrap(), id.parse().unwrap()).await.unwrap();
            if details.report.times.completed.is_some() {
                return details.report.success == Some(true);
            }
            assert!(Instant::now() < deadline, "compile {id} did not finish: {details:#?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn versions(&self, env: &str) -> i64 {
        sqlx::query_scalar("SELECT COUNT(*) FROM version WHERE environment = $1")
            .bind(env)
            .fetch_one(self.db.store().pool())
            .await
            .expect("count versions")
    }
}

#[tokio::test]
async fn a_compile_whose_server_dies_yields_exactly_one_version_on_postgres() {
    if test_support::postgres_admin_url().is_none() {
        return;
    }
    let mut c = Cluster::start().await;
    let repo = project_repository(c.work.path(), 100_000);
    let client = c.servers[0].client();
    let project = client.create_project("compiled").await.unwrap();
    let body = api::environment::EnvironmentCreate {
        project_id: project.id,
        name: "compiled".into(),
        repository: Some(repo.clone()),
        branch: Some("main".into()),
        ..Default::default()
    };
    let env = client.create_environment(&body).await.unwrap().id.to_string();

    // 1. The server running the compile dies while the compiler runs: another server runs it.
    let id = c.request_compile(&env).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let holder = loop {
        let stage: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM compile_report WHERE compile = $1 AND name = 'Recompiling configuration model'",
        )
        .bind(&id)
        .fetch_one(c.db.store().pool())
        .await
        .expect("read the stages");
        let (holder, completed, _) = c.compile_state(&env, &id).await;
        assert!(!completed, "the compile was too fast to interrupt");
        if let (1, Some(holder)) = (stage, holder) {
            break holder;
        }
        assert!(Instant::now() < deadline, "the compile never reached the compiler");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    c.servers[holder].signal("KILL");
    assert!(c.compile_finished(&env, &id).await, "the compile, run again elsewhere, succeeds");
    assert_eq!(c.compile_state(&env, &id).await.2, 1, "exactly one version of the compile");
    assert_eq!(c.versions(&env).await, 1);
    c.replace(holder).await;

    // 2. The server dies after the export stored the version but before it recorded the end of
    //    the compile: the compile is finished with that version, not run again. The window is a
    //    few milliseconds, so a few compiles may pass before one is caught in it.
    let mut compiles = 1;
    let mut caught = false;
    for _ in 0..8 {
        let id = c.request_compile(&env).await;
        compiles += 1;
        let mut killed = None;
        loop {
            let (holder, completed, versions) = c.compile_state(&env, &id).await;
            if completed {
                break;
            }
            if versions == 1
                && let Some(holder) = holder
            {
                c.servers[holder].signal("KILL");
                killed = Some(holder);
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(c.compile_finished(&env, &id).await);
        assert_eq!(c.compile_state(&env, &id).await.2, 1, "exactly one version of the compile");
        if let Some(holder) = killed {
            // Still not completed at the kill: the recovery finished it (it may also have
            // completed in the instant between the read and the kill).
            c.replace(holder).await;
            caught = true;
            break;
        }
    }
    assert_eq!(c.versions(&env).await, compiles, "one version per compile");
    eprintln!("caught a server between export and the end of its compile: {caught}");
}

#[tokio::test]
async fn every_database_connection_cut_all_servers_recover_on_postgres() {
    if test_support::postgres_admin_url().is_none() {
        return;
    }
    use sqlx::Connection;
    let c = Cluster::start().await;
    let total = CHAINS * PER_CHAIN;
    c.export().await;
    c.wait_deployed_at_least(total / 4, Duration::from_secs(60)).await;
    // Every connection to the database, of every server (pools, liveness locks, listeners)
    // and of this test, is terminated at once.
    let admin = std::env::var("INMANTA_TEST_POSTGRES").unwrap();
    let database = c.servers[0].database_url.rsplit('/').next().unwrap().to_string();
    let mut conn = sqlx::AnyConnection::connect(&admin).await.expect("connect as admin");
    let cut: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = $1 AND pid <> pg_backend_pid()) t",
    )
    .bind(&database)
    .fetch_one(&mut conn)
    .await
    .expect("terminate the connections");
    assert!(cut >= 6, "three servers' connections were cut: {cut}");
    // The deploy finishes, nothing ran twice at once.
    c.wait_deployed_at_least(total, Duration::from_secs(120)).await;
    assert_eq!(c.conflicts(), "", "resources ran twice at the same time");
    // Every server is back: it answers, and lists all three alive (their liveness locks taken
    // again) with one of them running the scheduler.
    for s in &c.servers {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (status, body) = s.call("GET", "/api/v2/serverstatus", None, None).await;
            let cluster = body["data"]["slices"]
                .as_array()
                .and_then(|slices| slices.iter().find(|slice| slice["name"] == "core.cluster"))
                .map(|slice| slice["status"].clone())
                .unwrap_or_default();
            let servers = cluster["servers"].as_array().cloned().unwrap_or_default();
            let alive = servers.iter().filter(|m| m["alive"] == true).count();
            let owners = servers.iter().filter(|m| m["environments"].as_array().is_some_and(|e| !e.is_empty())).count();
            if status == 200 && alive == 3 && owners == 1 {
                break;
            }
            assert!(Instant::now() < deadline, "{} did not recover: {status} {cluster:#}", s.url);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // Deploys continue: a repair asked through every server in turn runs everything again.
    for s in &c.servers {
        let runs_before: usize = c.runs().iter().sum();
        let (status, body) = s
            .call("POST", "/api/v1/deploy", Some(&c.env), Some(json!({"agent_trigger_method": "push_full_deploy"})))
            .await;
        assert_eq!(status, 200, "{body}");
        let deadline = Instant::now() + Duration::from_secs(60);
        while c.runs().iter().sum::<usize>() < runs_before + total {
            assert!(Instant::now() < deadline, "the repair through {} did not run everything", s.url);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    assert_eq!(c.conflicts(), "", "resources ran twice at the same time");
}

#[tokio::test]
async fn a_console_on_one_server_sees_the_deploys_another_runs_on_postgres() {
    if test_support::postgres_admin_url().is_none() {
        return;
    }
    let c = Cluster::start().await;
    let total = CHAINS * PER_CHAIN;
    let (owner, _) = c.owner().await;
    let watcher = (owner + 1) % 3;
    // The console's event stream on a server that does not run the scheduler.
    let mut stream = reqwest::Client::new()
        .get(format!("{}/console/events?env={}", c.servers[watcher].url, c.env))
        .send()
        .await
        .expect("open the event stream");
    assert_eq!(stream.status(), 200);
    let (events, mut received) = tokio::sync::mpsc::unbounded_channel::<(Instant, String)>();
    let reader = tokio::spawn(async move {
        let mut pending = String::new();
        while let Ok(Some(chunk)) = stream.chunk().await {
            pending.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = pending.find("\n\n") {
                let message: String = pending.drain(..end + 2).collect();
                if let Some(data) = message.lines().find_map(|l| l.strip_prefix("data:")) {
                    let _ = events.send((Instant::now(), data.trim().to_string()));
                }
            }
        }
    });
    // The owner stores the version and deploys it.
    let s = &c.servers[owner];
    let (client, env) = (s.client(), c.env.parse().unwrap());
    let version = client.reserve_version(env).await.unwrap();
    let resources: Vec<Value> = (0..total)
        .map(|i| {
            json!({
                "id": format!("{},v={version}", c.rid(i)), "command": c.command(i),
                "returns": [0], "timeout": 60, "purged": false, "send_event": false, "receive_events": false,
                "requires": if i >= CHAINS { vec![c.rid(i - CHAINS)] } else { vec![] },
            })
        })
        .collect();
    let resources = resources.into_iter().map(|r| r.as_object().unwrap().clone()).collect();
    client.put_version(env, &PutVersion { version, resources, ..Default::default() }).await.unwrap();
    let stored = Instant::now();
    // While the owner deploys, the watcher's stream reports resource changes; each is compared
    // with when the deploy count last grew (polled), for the figure.
    let mut changes = 0;
    let mut delays = Vec::new();
    let mut last_count = 0;
    let mut grew_at = stored;
    let deadline = Instant::now() + Duration::from_secs(120);
    while c.deployed().await < total {
        assert!(Instant::now() < deadline, "the deploy did not finish");
        let count = c.deployed().await;
        if count > last_count {
            (last_count, grew_at) = (count, Instant::now());
        }
        while let Ok((at, data)) = received.try_recv() {
            if data.contains("resources_changed") && at > stored {
                changes += 1;
                if last_count > 0 {
                    delays.push(at.saturating_duration_since(grew_at));
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let end = Instant::now();
    // What the stream says about the last results.
    tokio::time::sleep(Duration::from_millis(500)).await;
    while let Ok((at, data)) = received.try_recv() {
        if data.contains("resources_changed") && at > stored {
            changes += 1;
        }
    }
    reader.abort();
    assert!(changes >= 2, "the watcher saw the deploy as it went: {changes} changes");
    delays.sort();
    let median = delays.get(delays.len() / 2).copied().unwrap_or_default();
    eprintln!(
        "console on another server: {changes} resource changes seen during a {total}-resource deploy of {:?}; \
         event after the deploy count grew (polled every 20 ms): median {median:?}, max {:?}",
        end - stored,
        delays.last().copied().unwrap_or_default()
    );
}
