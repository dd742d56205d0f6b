//! API calls answer within about two seconds during a PostgreSQL outage (issue 47), instead of
//! when the database is back: 503 with a message that says the database cannot be reached.
//!
//! The outage is a TCP proxy of the test's own between the server and PostgreSQL
//! (`common::proxy`), cut for 10 s. Needs `INMANTA_TEST_POSTGRES`; a missing prerequisite fails under
//! `CI=true`.

use crate::common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::common::TestServer;
use crate::common::proxy::Proxy;
use serde_json::{Value, json};

/// A call with a client-side limit far above what is expected and far below the outage: its
/// status, body and how long it took.
async fn timed(s: &TestServer, method: &str, path: &str, env: &str, body: Option<Value>) -> (u16, Value, Duration) {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(8)).build().unwrap();
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = client.request(method, format!("{}{path}", s.url)).header("X-Inmanta-tid", env);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let started = Instant::now();
    let response = request.send().await.unwrap_or_else(|e| panic!("{path} did not answer during the outage: {e}"));
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null), started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_calls_answer_503_within_seconds_during_a_postgres_outage() {
    let admin = std::env::var("INMANTA_TEST_POSTGRES").unwrap_or_default();
    if admin.is_empty() {
        test_support::missing_prerequisite("INMANTA_TEST_POSTGRES names no PostgreSQL to put behind a proxy");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let direct = common::fresh_database(dir.path()).await;
    let name = direct.rsplit('/').next().unwrap().to_string();
    let target: SocketAddr = {
        let host_port = admin.split('@').nth(1).and_then(|rest| rest.split('/').next()).unwrap_or("127.0.0.1:5432");
        tokio::net::lookup_host(host_port).await.unwrap().next().expect("the PostgreSQL address")
    };
    let proxy = Proxy::start(target).await;
    let user = admin.strip_prefix("postgres://").and_then(|rest| rest.split('@').next()).unwrap_or("postgres");
    let url = format!("postgres://{user}@127.0.0.1:{}/{name}", proxy.port);
    let s = TestServer::start_on(&url, &[("INMANTA_SERVER_AUTH", "false")]).await;
    let env = s.new_environment("outage", "e").await.to_string();
    let (status, _, _) =
        timed(&s, "PUT", "/api/v1/parameter/before", &env, Some(json!({"value": "1", "source": "user"}))).await;
    assert_eq!(status, 200);

    proxy.cut().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let write = timed(&s, "PUT", "/api/v1/parameter/during", &env, Some(json!({"value": "2", "source": "user"})));
    let read = timed(&s, "GET", "/api/v1/parameter/before", &env, None);
    let (write, read) = tokio::join!(write, read);
    for (what, (status, body, took)) in [("write", write), ("read", read)] {
        eprintln!("{what} 2 s into the outage answered {status} after {took:?}");
        assert_eq!(status, 503, "{what}: {body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.contains("the database cannot be reached"), "{what}: {body}");
    }

    proxy.restore().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _, _) =
            timed(&s, "PUT", "/api/v1/parameter/after", &env, Some(json!({"value": "3", "source": "user"}))).await;
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "writes still fail 30 s after the database came back: {status}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let (status, body, _) = timed(&s, "GET", "/api/v1/parameter/before", &env, None).await;
    assert_eq!(status, 200, "{body}");
}
