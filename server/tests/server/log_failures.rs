//! The server's own log failing costs it no request and no result (issue 47): its stderr goes to
//! a file on a 2 MB tmpfs that a filler file fills; every request made meanwhile answers and
//! what it stored is there, and once the filler is gone the log says how many lines it lost.
//! On SQLite, and on PostgreSQL when `INMANTA_TEST_POSTGRES` is set; the database is elsewhere.
//! Needs root (mount); a missing prerequisite fails under `CI=true`.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::TestServer;
use crate::common::tmpfs::Tmpfs;
use serde_json::json;

/// Writes to `file` until the filesystem says it is full.
fn fill(file: &Path) {
    let mut filler = std::fs::File::create(file).expect("create the filler");
    let block = vec![0u8; 64 * 1024];
    while filler.write_all(&block).is_ok() {}
    // The last partial block may have found room for a few bytes: fill those too.
    while filler.write_all(&[0]).is_ok() {}
}

#[tokio::test]
async fn a_full_disk_under_the_servers_stderr_costs_no_request_and_no_result() {
    let tmpfs = match Tmpfs::mount("2m") {
        Ok(tmpfs) => tmpfs,
        Err(e) => {
            test_support::missing_prerequisite(format!("a full filesystem is a tmpfs, which only root may mount: {e}"));
            return;
        }
    };
    let log = tmpfs.path().join("server.log");
    // Debug: every request logs, so every request meets the full disk.
    let s = TestServer::start_logging_to(&[("RUST_LOG", "debug,sqlx=warn")], &log).await;
    let env = s.new_environment("logs", "e").await.to_string();
    fill(&tmpfs.path().join("filler"));
    let full_at = std::fs::metadata(&log).expect("the log").len();

    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .default_headers(
            [(reqwest::header::AUTHORIZATION, format!("Bearer {}", s.token.as_deref().unwrap()).parse().unwrap())]
                .into_iter()
                .collect(),
        )
        .build()
        .unwrap();
    for i in 0..20 {
        let answer = client
            .put(format!("{}/api/v1/parameter/p{i}", s.url))
            .header("X-Inmanta-tid", &env)
            .json(&json!({"value": format!("v{i}"), "source": "user"}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("parameter write {i} got no answer while the log's disk is full: {e}"));
        assert_eq!(answer.status(), 200, "parameter write {i}: {}", answer.text().await.unwrap_or_default());
        let answer = client
            .put(format!("{}/api/v1/project", s.url))
            .json(&json!({"name": format!("full-{i}")}))
            .send()
            .await
            .unwrap_or_else(|e| panic!("project create {i} got no answer while the log's disk is full: {e}"));
        assert_eq!(answer.status(), 200, "project create {i}");
    }
    // What was left of the log's last page (tmpfs pages are 4 KiB) may still have taken a line.
    assert!(std::fs::metadata(&log).unwrap().len() <= full_at + 4096, "the log did not grow past its page");

    std::fs::remove_file(tmpfs.path().join("filler")).expect("remove the filler");
    // Results are stored, and the log comes back and says what it lost.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, _) = s.call("GET", "/api/v1/project", None, None).await;
        assert_eq!(status, 200);
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("log lines were dropped (writing the log failed: No space left on device") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the log does not say it dropped lines: ...{}",
            &text[text.len().saturating_sub(2000)..]
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for i in 0..20 {
        let (status, parameter) = s.call("GET", &format!("/api/v1/parameter/p{i}"), Some(&env), None).await;
        assert_eq!(status, 200, "{parameter}");
        assert_eq!(parameter["parameter"]["value"], format!("v{i}"), "{parameter}");
    }
    let (_, projects) = s.call("GET", "/api/v1/project", None, None).await;
    let names: Vec<&str> = projects["projects"].as_array().unwrap().iter().filter_map(|p| p["name"].as_str()).collect();
    assert_eq!(names.iter().filter(|n| n.starts_with("full-")).count(), 20, "{names:?}");
}
