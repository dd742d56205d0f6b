//! What Inmanta's own web console (inmanta/web-console 4.1.0) showed differently in front of
//! this server than in front of Inmanta 20.1 (scripts/compare-web-console.sh), each answered as
//! the reference answered it.

use crate::common::TestServer;
use api::version::PutVersion;
use serde_json::{Value, json};

/// A released version of `ok` and `broken` (a NullResource set to fail); the environment id.
async fn failing_version(s: &TestServer) -> (String, i64) {
    let env = s.new_environment("project-console", "console").await;
    let client = s.client();
    let version = client.reserve_version(env).await.unwrap();
    let resources = [("ok", false), ("broken", true)]
        .iter()
        .map(|(name, fail)| {
            json!({"id": format!("std::testing::NullResource[agent0,name={name}],v={version}"), "name": name,
                   "agentname": "agent0", "fail": fail, "purged": false, "send_event": false, "requires": []})
            .as_object()
            .unwrap()
            .clone()
        })
        .collect();
    client.put_version(env, &PutVersion { version, resources, ..Default::default() }).await.unwrap();
    let _ = client.release_version(env, version, false).await;
    (env.to_string(), version)
}

async fn finished_report(s: &TestServer, tid: &str, version: i64, id: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (status, report) = s.call("GET", &format!("/api/v2/dryrun/{version}/{id}"), Some(tid), None).await;
        assert_eq!(status, 200, "{report}");
        if report["data"]["summary"]["todo"] == 0 {
            return report;
        }
        assert!(std::time::Instant::now() < deadline, "{report}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Inmanta 20.1 (recorded with the console's "Perform dry run" on a `fail=true` NullResource):
/// `{"status": "modified", "attributes": {"handler": {"from_value": "FAILED", "to_value":
/// "Handler failed", "from_value_compare": "FAILED", "to_value_compare": "Handler failed"}}}`;
/// its dry-run statuses have no "failed", and the console's compliance check shows nothing else.
#[tokio::test]
async fn a_handler_that_fails_in_a_dry_run_is_a_modified_handler_attribute() {
    let s = TestServer::start().await;
    let (tid, version) = failing_version(&s).await;
    let (status, body) = s.call("POST", &format!("/api/v2/dryrun/{version}"), Some(&tid), None).await;
    assert_eq!(status, 200, "{body}");
    // The answer is the dry run's id, as Inmanta's dryrun_trigger answers.
    let report = finished_report(&s, &tid, version, body["data"].as_str().unwrap()).await;
    let diff = report["data"]["diff"].as_array().unwrap();
    let of = |name: &str| {
        diff.iter().find(|d| d["resource_id"] == format!("std::testing::NullResource[agent0,name={name}]")).unwrap()
    };
    assert_eq!(of("ok")["status"], "unmodified", "{report}");
    assert_eq!(of("ok")["attributes"], json!({}), "{report}");
    assert_eq!(of("broken")["status"], "modified", "{report}");
    assert_eq!(
        of("broken")["attributes"],
        json!({"handler": {"from_value": "FAILED", "to_value": "Handler failed",
                           "from_value_compare": "FAILED", "to_value_compare": "Handler failed"}}),
        "{report}"
    );
}

/// Inmanta 20.1 answers `GET /api/v2/desiredstate/2/resource/<id>,v=2` with 404 ("The resource
/// with the given id does not exist"): the path's id is a resource id.
#[tokio::test]
async fn a_version_s_resource_is_asked_for_by_its_resource_id_only() {
    let s = TestServer::start().await;
    let (tid, version) = failing_version(&s).await;
    let rid = "std::testing::NullResource[agent0,name=ok]";
    let path = |id: &str| format!("/api/v2/desiredstate/{version}/resource/{}", api::url::encode(id));
    let (status, body) = s.call("GET", &path(rid), Some(&tid), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["attributes"]["name"], "ok", "{body}");
    let (status, body) = s.call("GET", &path(&format!("{rid},v={version}")), Some(&tid), None).await;
    assert_eq!(status, 404, "{body}");
    assert!(body["message"].as_str().unwrap().contains("resource version id"), "{body}");
}
