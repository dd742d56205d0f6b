//! An `inmanta agent` process on "another machine": it connects to the server, deploys the
//! resources of its agent name (fetching file contents and shipped handlers over the API), is
//! listed down once it stayed away longer than `[server] agent-timeout` (its work waits for it),
//! does not flap on a quick reconnect, and survives a server restart.

use crate::common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use api::ResourceState;
use api::client::ListQuery;
use api::version::PutVersion;
use common::{BIN, TestServer, refusal};
use serde_json::{Map, Value, json};
use uuid::Uuid;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn start_agent(port: u16, env: &str, cache: &std::path::Path, token: &str) -> Child {
    Command::new(BIN)
        .args(["agent", "--name", "remote1", "-e", env, "--port", &port.to_string(), "--token", token, "--cache-dir"])
        .arg(cache)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start inmanta agent")
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn uuid(env: &str) -> Uuid {
    env.parse().unwrap()
}

fn objects(value: Value) -> Vec<Map<String, Value>> {
    value.as_array().unwrap().iter().map(|r| r.as_object().unwrap().clone()).collect()
}

/// The status of agent remote1 (an error answer counts as unknown).
async fn agent_status(s: &TestServer, env: &str) -> Option<String> {
    let agents = s.client().agents(uuid(env), &ListQuery::new().filter("name", "remote1")).await.ok()?;
    agents.data.first().map(|a| a.status.as_str().to_string())
}

async fn wait_for(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn put_version(s: &TestServer, env: &str, path: &str, content: &str) {
    use base64::Engine;
    let hash = sha1_hex(content.as_bytes());
    let body = json!({"content": base64::engine::general_purpose::STANDARD.encode(content)});
    let (status, _) = s.call("PUT", &format!("/api/v1/file/{hash}"), None, Some(body)).await;
    assert_eq!(status, 200);
    let client = s.client();
    let version = client.reserve_version(uuid(env)).await.unwrap();
    let resources = json!([
        {"id": format!("fs::File[remote1,path={path}],v={version}"), "path": path, "hash": hash, "permissions": 644,
         "owner": null, "group": null, "purged": false, "send_event": true, "receive_events": true, "requires": []},
        {"id": format!("std::testing::NullResource[remote1,name=n],v={version}"), "name": "n", "agentname": "remote1",
         "fail": false, "value": content, "int_value": 0, "purged": false, "send_event": true, "receive_events": true,
         "requires": []},
    ]);
    let body = PutVersion { version, resources: objects(resources), ..Default::default() };
    client.put_version(uuid(env), &body).await.unwrap();
}

fn sha1_hex(data: &[u8]) -> String {
    let mut hasher = sha1_smol::Sha1::new();
    hasher.update(data);
    hasher.digest().to_string()
}

async fn all_deployed(s: &TestServer, env: &str) -> bool {
    // An error answer counts as not yet.
    let Ok(summary) = s.client().deploy_summary(uuid(env)).await else { return false };
    summary.total == 2 && summary.by_state.get(&ResourceState::Deployed) == Some(&2)
}

#[tokio::test]
async fn a_remote_agent_deploys_waits_and_survives_a_restart() {
    let port = free_port();
    let port_text = port.to_string();
    let mut s =
        TestServer::start_with(&[("INMANTA_SERVER_BIND_PORT", &port_text), ("INMANTA_SERVER_AGENT_TIMEOUT", "1")])
            .await;
    let env = s.new_environment("p", "e").await.to_string();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("remote.conf").display().to_string();
    let cache = dir.path().join("cache");

    let agent = Killed(start_agent(port, &env, &cache, &s.environment_token(&env, &["agent"]).await));
    wait_for("the agent to connect", async || agent_status(&s, &env).await.as_deref() == Some("up")).await;
    put_version(&s, &env, &path, "one").await;
    wait_for("the remote agent to deploy", async || all_deployed(&s, &env).await).await;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one");

    // Away: listed down, and its work waits instead of running in the server.
    drop(agent);
    wait_for("the agent to be listed down", async || agent_status(&s, &env).await.as_deref() == Some("down")).await;
    put_version(&s, &env, &path, "two").await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one", "nothing deploys while the agent is away");
    assert!(!all_deployed(&s, &env).await);
    let agent = Killed(start_agent(port, &env, &cache, &s.environment_token(&env, &["agent"]).await));
    wait_for("the returning agent to deploy", async || all_deployed(&s, &env).await).await;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "two");

    // The server restarts under the agent: it reconnects and keeps working.
    s.kill_and_restart();
    wait_for("the agent to reconnect", async || agent_status(&s, &env).await.as_deref() == Some("up")).await;
    put_version(&s, &env, &path, "three").await;
    wait_for("a deploy after the restart", async || all_deployed(&s, &env).await).await;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "three");
    drop(agent);
}

async fn new_environment(s: &TestServer) -> String {
    s.new_environment("p", "e").await.to_string()
}

/// `[server] agent-timeout`: a dropped connection is not reported at once; a reconnect within the
/// timeout never shows the agent down; staying away longer does.
#[tokio::test]
async fn a_remote_agent_is_down_only_after_the_agent_timeout() {
    let timeout = Duration::from_secs(2);
    let s = TestServer::start_with(&[("INMANTA_SERVER_AGENT_TIMEOUT", "2")]).await;
    let port: u16 = s.url.rsplit(':').next().unwrap().parse().unwrap();
    let env = new_environment(&s).await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");

    let agent = Killed(start_agent(port, &env, &cache, &s.environment_token(&env, &["agent"]).await));
    wait_for("the agent to connect", async || agent_status(&s, &env).await.as_deref() == Some("up")).await;

    // A quick reconnect: up all along.
    drop(agent);
    let agent = Killed(start_agent(port, &env, &cache, &s.environment_token(&env, &["agent"]).await));
    let watch_until = Instant::now() + timeout + Duration::from_secs(1);
    while Instant::now() < watch_until {
        assert_eq!(agent_status(&s, &env).await.as_deref(), Some("up"), "a quick reconnect must not show down");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Gone for good: still up during the grace period, down after it.
    drop(agent);
    let gone = Instant::now();
    while gone.elapsed() < timeout - Duration::from_millis(500) {
        assert_eq!(agent_status(&s, &env).await.as_deref(), Some("up"), "down too early, after {:?}", gone.elapsed());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_for("the agent to be listed down", async || agent_status(&s, &env).await.as_deref() == Some("down")).await;
    assert!(gone.elapsed() >= timeout, "down after {:?}, before the timeout", gone.elapsed());
    assert!(gone.elapsed() < timeout + Duration::from_secs(5), "down only after {:?}", gone.elapsed());
}

/// A resource type without a built-in handler, on a remote agent: the task names the handler its
/// version ships, and the agent fetches it over the API into its cache directory.
#[tokio::test]
async fn a_remote_agent_runs_shipped_handlers() {
    use base64::Engine;
    let s = TestServer::start().await;
    let port: u16 = s.url.rsplit(':').next().unwrap().parse().unwrap();
    let env = new_environment(&s).await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let conf = dir.path().join("app.conf").display().to_string();
    let _agent = Killed(start_agent(port, &env, &cache, &s.environment_token(&env, &["agent"]).await));
    wait_for("the agent to connect", async || agent_status(&s, &env).await.as_deref() == Some("up")).await;

    let handler =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/handlers/keyvalue/handlers/keyvalue__Line");
    let content = std::fs::read(handler).unwrap();
    let hash = sha1_hex(&content);
    let body = json!({"content": base64::engine::general_purpose::STANDARD.encode(&content)});
    assert_eq!(s.call("PUT", &format!("/api/v1/file/{hash}"), None, Some(body)).await.0, 200);
    let client = s.client();
    let version = client.reserve_version(uuid(&env)).await.unwrap();
    let resources = json!([{"id": format!("keyvalue::Line[remote1,key=port],v={version}"), "path": conf, "key": "port",
        "value": "8080", "purged": false, "send_event": true, "requires": []}]);
    let handlers = [("keyvalue::Line".to_string(), hash.clone())].into();
    let put = PutVersion { version, resources: objects(resources), handlers, ..Default::default() };
    client.put_version(uuid(&env), &put).await.unwrap();
    wait_for("the shipped handler to deploy the line", async || {
        std::fs::read_to_string(&conf).is_ok_and(|t| t == "port=8080\n")
    })
    .await;
    assert_eq!(std::fs::read(cache.join(&hash)).unwrap(), content, "kept in the agent's cache directory");

    // The file store must hold the handler before a version may name it.
    let version = client.reserve_version(uuid(&env)).await.unwrap();
    let missing = "0123456789abcdef0123456789abcdef01234567";
    let handlers = [("keyvalue::Line".to_string(), missing.to_string())].into();
    let put = PutVersion { version, handlers, ..Default::default() };
    let (status, message) = refusal(client.put_version(uuid(&env), &put).await);
    assert_eq!(status, 400, "{message}");
    assert!(message.contains("not in the file store"), "{message}");
}

/// Revoking an agent's token ends its session within about a second (the session checks the
/// registry while it lasts), and the agent, refused when it reconnects, stops and says why.
#[tokio::test]
async fn revoking_its_token_ends_a_remote_agent_session() {
    let s = TestServer::start_with(&[("INMANTA_SERVER_AGENT_TIMEOUT", "1")]).await;
    let port: u16 = s.url.rsplit(':').next().unwrap().parse().unwrap();
    let env = new_environment(&s).await;
    let dir = tempfile::tempdir().unwrap();
    let token = s.environment_token(&env, &["agent"]).await;
    let mut agent = Killed(start_agent(port, &env, &dir.path().join("cache"), &token));
    wait_for("the agent to connect", async || agent_status(&s, &env).await.as_deref() == Some("up")).await;

    let jti = orchestrator::auth::jwt::peek(&token).unwrap().claims["jti"].as_str().unwrap().to_string();
    s.client().revoke_environment_token(uuid(&env), &jti).await.unwrap();
    let revoked = Instant::now();
    let status = loop {
        if let Some(status) = agent.0.try_wait().unwrap() {
            break status;
        }
        assert!(revoked.elapsed() < Duration::from_secs(15), "the agent still runs with a revoked token");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(status.code(), Some(2), "a refused agent stops with a usage error");
    wait_for("the agent to be listed down", async || agent_status(&s, &env).await.as_deref() == Some("down")).await;
}
