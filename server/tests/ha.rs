//! Several servers on one PostgreSQL database (issue 14, docs/ha.md): three real `inmanta server`
//! processes with a short scheduler lease deploy chains of `exec::Run` resources whose command
//! runs under `flock -n`, so two runs of one resource at the same time leave a mark. The owner of
//! the environment's scheduler is killed (SIGKILL) or stalled (SIGSTOP) in the middle: another
//! server takes over, everything ends deployed, nothing ran twice at once, and no write of the
//! old epoch lands after the takeover.
//!
//! PostgreSQL only (`INMANTA_TEST_POSTGRES`); on SQLite a second server on the same database
//! file is refused instead, which is tested here too.

mod common;

use std::time::{Duration, Instant};

use common::TestServer;
use serde_json::{Value, json};

const CHAINS: usize = 4;
const PER_CHAIN: usize = 60;
const LEASE_SECONDS: &str = "2";

fn postgres() -> bool {
    std::env::var("INMANTA_TEST_POSTGRES").is_ok_and(|u| !u.is_empty())
}

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
        let (_, p) = s.call("PUT", "/api/v2/project", None, Some(json!({"name": "p"}))).await;
        let (status, e) =
            s.call("PUT", "/api/v2/environment", None, Some(json!({"project_id": p["data"]["id"], "name": "e"}))).await;
        assert_eq!(status, 200, "{e}");
        let env = e["data"]["id"].as_str().expect("environment id").to_string();
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
async fn the_owner_killed_mid_deploy_is_replaced_and_nothing_runs_twice_at_once() {
    if !postgres() {
        eprintln!("several servers need PostgreSQL: set INMANTA_TEST_POSTGRES");
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
    let before = c.deployed().await;
    c.wait_deployed_at_least(before + 1, Duration::from_secs(30)).await;
    let resumed = killed.elapsed();
    eprintln!("failover after SIGKILL: lease taken over after {took_over:?}, deploying again after {resumed:?}");
    let old_writes = c.writes_before(new_epoch).await;
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

#[tokio::test]
async fn a_stalled_owner_cannot_commit_after_its_lease() {
    if !postgres() {
        eprintln!("several servers need PostgreSQL: set INMANTA_TEST_POSTGRES");
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
    if postgres() {
        return;
    }
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
async fn a_remote_agent_connected_to_another_server_gets_the_owners_tasks() {
    if !postgres() {
        eprintln!("several servers need PostgreSQL: set INMANTA_TEST_POSTGRES");
        return;
    }
    let c = Cluster::start().await;
    let total = CHAINS * PER_CHAIN;
    // Any environment's owner is decided by the leases; the agent connects to another server.
    let (owner, _) = c.owner().await;
    let other = (owner + 1) % 3;
    let port = c.servers[other].url.rsplit(':').next().expect("port").to_string();
    let mut args: Vec<String> = vec!["agent".into(), "-e".into(), c.env.clone(), "--port".into(), port];
    for chain in 0..CHAINS {
        args.extend(["--name".to_string(), format!("agent-{chain}")]);
    }
    let mut agent = std::process::Command::new(common::BIN)
        .args(&args)
        .arg("--cache-dir")
        .arg(c.work.path().join("agent-cache"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start inmanta agent");
    // The agent names are remote before the version arrives, so nothing runs in-process.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let remote: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM agent WHERE environment = $1 AND remote = 1")
            .bind(&c.env)
            .fetch_one(c.db.store().pool())
            .await
            .expect("count agents");
        if remote == CHAINS as i64 {
            break;
        }
        assert!(Instant::now() < deadline, "the remote agent did not connect");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
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
