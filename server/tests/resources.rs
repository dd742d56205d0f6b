//! Resource views, logs, actions, facts, parameters and notifications over a real socket. The
//! deploy results are written through the orchestrator on the server's own database, as the
//! scheduler will.

mod common;

use api::ResourceId;
use api::resource::LogLine;
use api::state::{ActionKind, Change, HandlerStatus};
use common::TestServer;
use orchestrator::resources::FinishedAction;
use orchestrator::{ActionOutcome, Orchestrator};
use serde_json::{Value, json};

async fn environment(s: &TestServer) -> String {
    let (_, p) = s.call("PUT", "/api/v2/project", None, Some(json!({"name": "p"}))).await;
    let (_, e) =
        s.call("PUT", "/api/v2/environment", None, Some(json!({"project_id": p["data"]["id"], "name": "e"}))).await;
    e["data"]["id"].as_str().unwrap().to_string()
}

fn rid(path: &str) -> String {
    format!("fs::File[agent-1,path={path}]")
}

fn file(path: &str, hash: &str, requires: &[&str]) -> Value {
    json!({
        "id": format!("{},v=0", rid(path)), "path": path, "hash": hash, "permissions": 644, "purged": false,
        "send_event": true, "requires": requires.iter().map(|p| rid(p)).collect::<Vec<_>>(),
    })
}

async fn release(s: &TestServer, env: &str, resources: Vec<Value>) -> i64 {
    let (_, body) = s.call("POST", "/api/v2/reserve_version", Some(env), None).await;
    let version = body["data"].as_i64().unwrap();
    let (status, body) =
        s.call("PUT", "/api/v1/version", Some(env), Some(json!({"version": version, "resources": resources}))).await;
    assert_eq!(status, 200, "{body}");
    version
}

/// Percent-encodes a path segment (resource ids hold `/`, `[`, `,` and `=`).
fn enc(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn line(level: &str, msg: &str) -> LogLine {
    LogLine {
        level: level.into(),
        msg: msg.into(),
        args: vec![],
        kwargs: Default::default(),
        timestamp: orchestrator::store::now(),
    }
}

async fn deploy(o: &Orchestrator, env: &str, version: i64, path: &str, status: HandlerStatus, msg: &str) {
    let env = env.parse().unwrap();
    let id = ResourceId::parse(&rid(path)).unwrap();
    let started = line("DEBUG", "deploy started");
    o.record_scheduler_batch(env, &[id.to_string()], &[], &[], None).await.unwrap();
    let level = if status == HandlerStatus::Failed { "ERROR" } else { "INFO" };
    let outcome = ActionOutcome {
        status,
        messages: vec![started, line(level, msg)],
        changes: None,
        change: Some(if status == HandlerStatus::Deployed { Change::Created } else { Change::NoChange }),
        send_event: Some(true),
    };
    let action = FinishedAction {
        action_id: uuid::Uuid::new_v4(),
        version,
        action: ActionKind::Deploy,
        started: orchestrator::store::now(),
        resource_ids: vec![id],
        outcome,
    };
    o.record_scheduler_batch(env, &[], &[action], &[], None).await.unwrap();
}

fn ids(body: &Value) -> Vec<String> {
    body["data"].as_array().unwrap().iter().map(|r| r["resource_id"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn resource_list_details_history_logs_and_actions() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let tid = Some(env.as_str());
    // Halted: the server's own agents stay out; this test writes deploy results itself.
    assert_eq!(s.call("POST", "/api/v2/actions/environment/halt", tid, None).await.0, 200);
    let v1 = release(&s, &env, vec![file("/a", "1", &[]), file("/b", "1", &["/a"]), file("/c", "1", &[])]).await;

    let (status, body) = s.call("GET", "/api/v2/resource?deploy_summary=true&sort=resource_id.asc", tid, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body), vec![rid("/a"), rid("/b"), rid("/c")]);
    assert_eq!(body["data"][1]["requires"], json!([format!("{},v={v1}", rid("/a"))]));
    assert_eq!(body["data"][0]["status"], "available");
    assert_eq!(body["metadata"]["deploy_summary"]["total"], 3);
    assert_eq!(body["metadata"]["deploy_summary"]["by_state"]["available"], 3);
    assert_eq!(body["metadata"]["total"], 3);

    let (_, page) = s.call("GET", "/api/v2/resource?limit=2&sort=resource_id.asc", tid, None).await;
    assert_eq!(ids(&page).len(), 2);
    let next = page["links"]["next"].as_str().expect("a next link").to_string();
    let (_, rest) = s.call("GET", &next, tid, None).await;
    assert_eq!(ids(&rest), vec![rid("/c")]);

    for bad in ["sort=color.asc", "filter.colour=red", "limit=5000", "deploy_summary=maybe"] {
        let (status, body) = s.call("GET", &format!("/api/v2/resource?{bad}"), tid, None).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body["message"].as_str().is_some());
    }
    assert_eq!(s.call("GET", "/api/v2/resource", None, None).await.0, 400, "the environment header is required");

    let o = Orchestrator::open(&s.database_url).await.unwrap();
    deploy(&o, &env, v1, "/a", HandlerStatus::Deployed, "file written").await;
    deploy(&o, &env, v1, "/b", HandlerStatus::Failed, "disk full").await;

    let (_, failed) = s.call("GET", "/api/v2/resource?filter.status=failed", tid, None).await;
    assert_eq!(ids(&failed), vec![rid("/b")]);
    let (_, others) =
        s.call("GET", "/api/v2/resource?filter.status=!failed&filter.resource_id_value=/a", tid, None).await;
    assert_eq!(ids(&others), vec![rid("/a")]);

    let (status, details) = s.call("GET", &format!("/api/v2/resource/{}", enc(&rid("/b"))), tid, None).await;
    assert_eq!(status, 200, "{details}");
    assert_eq!(details["data"]["status"], "failed");
    assert_eq!(details["data"]["requires_status"][rid("/a")], "deployed");
    assert_eq!(details["data"]["attributes"]["hash"], "1");
    assert_eq!(s.call("GET", &format!("/api/v2/resource/{}", enc(&rid("/zz"))), tid, None).await.0, 404);
    assert_eq!(s.call("GET", "/api/v2/resource/not-an-id", tid, None).await.0, 400);

    let (status, logs) = s.call("GET", &format!("/api/v2/resource/{}/logs", enc(&rid("/b"))), tid, None).await;
    assert_eq!(status, 200, "{logs}");
    // The deploy's two lines and the line of the `store` action of the version that brought it.
    let messages: Vec<&str> = logs["data"].as_array().unwrap().iter().map(|l| l["msg"].as_str().unwrap()).collect();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages.iter().filter(|m| m.starts_with("Successfully stored version")).count(), 1, "{messages:?}");
    let (_, errors) = s
        .call("GET", &format!("/api/v2/resource/{}/logs?filter.minimal_log_level=ERROR", enc(&rid("/b"))), tid, None)
        .await;
    assert_eq!(errors["data"][0]["msg"], "disk full");
    assert_eq!(errors["data"][0]["action"], "deploy");
    let (_, found) =
        s.call("GET", &format!("/api/v2/resource/{}/logs?filter.message=DISK", enc(&rid("/b"))), tid, None).await;
    assert_eq!(found["data"].as_array().unwrap().len(), 1, "message filter is case-insensitive");

    let (_, actions) = s.call("GET", "/api/v2/resource_actions?log_severity=ERROR", tid, None).await;
    assert_eq!(actions["data"].as_array().unwrap().len(), 1, "{actions}");
    assert_eq!(actions["data"][0]["status"], "failed");
    let (_, created) = s.call("GET", "/api/v2/resource_actions?exclude_changes=nochange", tid, None).await;
    assert_eq!(created["data"][0]["resource_version_ids"], json!([format!("{},v={v1}", rid("/a"))]));
    assert_eq!(s.call("GET", "/api/v2/resource_actions?attribute=path", tid, None).await.0, 400);

    let rvid = format!("{},v={v1}", rid("/a"));
    let (status, v1_resource) = s.call("GET", &format!("/api/v1/resource/{}?logs=true", enc(&rvid)), tid, None).await;
    assert_eq!(status, 200, "{v1_resource}");
    assert_eq!(v1_resource["resource"]["resource_id"], rid("/a"));
    // Its deploy and the `store` action of its version, as Inmanta answers.
    let kinds: Vec<&str> =
        v1_resource["logs"].as_array().unwrap().iter().map(|a| a["action"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["deploy", "store"], "{v1_resource}");
    assert_eq!(s.call("GET", &format!("/api/v1/resource/{}", enc(&rid("/a"))), tid, None).await.0, 400);

    // /a changes, /c goes away: history gets a second entry, /c becomes an orphan.
    release(&s, &env, vec![file("/a", "2", &[]), file("/b", "1", &["/a"])]).await;
    let (_, history) = s.call("GET", &format!("/api/v2/resource/{}/history", enc(&rid("/a"))), tid, None).await;
    let hashes: Vec<&Value> = history["data"].as_array().unwrap().iter().map(|h| &h["attributes"]["hash"]).collect();
    assert_eq!(hashes, vec![&json!("2"), &json!("1")]);
    let (_, list) = s.call("GET", "/api/v2/resource?filter.status=orphaned", tid, None).await;
    assert_eq!(ids(&list), vec![rid("/c")]);
    let (_, a) = s.call("GET", &format!("/api/v2/resource/{}", enc(&rid("/a"))), tid, None).await;
    assert_eq!(a["data"]["status"], "available", "a changed intent is to be deployed again");

    // The failed deploy raised a notification.
    let (_, notes) = s.call("GET", "/api/v2/notification", tid, None).await;
    let note = &notes["data"][0];
    assert_eq!(note["severity"], "error");
    assert!(note["message"].as_str().unwrap().contains("disk full"));
    let id = note["id"].as_str().unwrap();
    let (status, patched) =
        s.call("PATCH", &format!("/api/v2/notification/{id}"), tid, Some(json!({"read": true, "cleared": true}))).await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!((patched["data"]["read"].clone(), patched["data"]["cleared"].clone()), (json!(true), json!(true)));
    let (_, unread) = s.call("GET", "/api/v2/notification?filter.cleared=false", tid, None).await;
    assert!(unread["data"].as_array().unwrap().is_empty());
    assert_eq!(s.call("PATCH", &format!("/api/v2/notification/{id}"), tid, Some(json!({}))).await.0, 400);
    assert_eq!(
        s.call("PATCH", &format!("/api/v2/notification/{id}"), tid, Some(json!({"read": "maybe"}))).await.0,
        400
    );
    let missing = uuid::Uuid::new_v4();
    assert_eq!(s.call("GET", &format!("/api/v2/notification/{missing}"), tid, None).await.0, 404);
}

#[tokio::test]
async fn facts_and_parameters_v1_and_v2() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let tid = Some(env.as_str());

    let (status, body) =
        s.call("PUT", "/api/v2/parameters/db_host", tid, Some(json!({"source": "user", "value": "10.0.0.1"}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["value"], "10.0.0.1");
    let (_, v1) = s.call("GET", "/api/v1/parameter/db_host", tid, None).await;
    assert_eq!(v1["parameter"]["value"], "10.0.0.1");
    assert_eq!(s.call("GET", "/api/v1/parameter/nope", tid, None).await.0, 404);
    let (status, bad) =
        s.call("PUT", "/api/v2/parameters/x", tid, Some(json!({"source": "wizard", "value": "1"}))).await;
    assert_eq!(status, 400);
    assert!(bad["message"].as_str().unwrap().contains("user"), "{bad}");

    // A fact nobody reported yet: the agents are asked, the caller retries.
    let r = rid("/a");
    let (status, body) = s.call("GET", &format!("/api/v1/parameter/size?resource_id={}", enc(&r)), tid, None).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["message"], "Agents queried for resource parameter.");
    let (status, fact) = s
        .call("PUT", "/api/v2/facts/size", tid, Some(json!({"source": "fact", "value": "42", "resource_id": r})))
        .await;
    assert_eq!(status, 200, "{fact}");
    assert_eq!(fact["data"]["expires"], true);
    assert_eq!(s.call("PUT", "/api/v2/facts/size", tid, Some(json!({"source": "fact", "value": "1"}))).await.0, 400);
    let (status, _) = s.call("GET", &format!("/api/v1/parameter/size?resource_id={}", enc(&r)), tid, None).await;
    assert_eq!(status, 200);

    let (_, facts) = s.call("GET", &format!("/api/v2/resource/{}/facts", enc(&r)), tid, None).await;
    assert_eq!(facts["data"].as_array().unwrap().len(), 1);
    let fact_id = facts["data"][0]["id"].as_str().unwrap();
    let (status, _) = s.call("GET", &format!("/api/v2/resource/{}/facts/{fact_id}", enc(&r)), tid, None).await;
    assert_eq!(status, 200);
    let (_, all) = s.call("GET", "/api/v2/facts?filter.name=siz", tid, None).await;
    assert_eq!(all["data"].as_array().unwrap().len(), 1);
    let (_, params) = s.call("GET", "/api/v2/parameters?sort=name.asc", tid, None).await;
    assert_eq!(params["data"].as_array().unwrap().len(), 1, "facts are not parameters: {params}");

    let batch = json!({"parameters": [
        {"id": "region", "source": "report", "value": "eu", "metadata": {"team": "ops"}},
        {"id": "zone", "source": "report", "value": "b", "metadata": {"team": "dev"}},
    ]});
    assert_eq!(s.call("PUT", "/api/v1/parameters", tid, Some(batch)).await.0, 200);
    let (_, listed) = s.call("POST", "/api/v1/parameter", tid, Some(json!({"query": {"team": "ops"}}))).await;
    let names: Vec<&str> =
        listed["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["region"]);
    assert!(listed["expire"].as_i64().is_some());

    assert_eq!(s.call("DELETE", "/api/v1/parameter/region", tid, None).await.0, 200);
    assert_eq!(s.call("DELETE", "/api/v1/parameter/region", tid, None).await.0, 404);
}

#[tokio::test]
async fn setting_an_awaited_parameter_or_recompile_true_queues_a_compile() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let tid = Some(env.as_str());
    let queued = async || {
        let (_, reports) = s.call("GET", "/api/v2/compilereport", tid, None).await;
        reports["data"].as_array().unwrap().len()
    };
    // A plain parameter: nothing to compile.
    let (status, _) =
        s.call("PUT", "/api/v2/parameters/plain", tid, Some(json!({"source": "user", "value": "1"}))).await;
    assert_eq!(status, 200);
    assert_eq!(queued().await, 0);
    // recompile=true asks for one.
    let body = json!({"source": "user", "value": "2", "recompile": true});
    assert_eq!(s.call("PUT", "/api/v2/parameters/plain", tid, Some(body)).await.0, 200);
    assert_eq!(queued().await, 1);
    let (_, reports) = s.call("GET", "/api/v2/compilereport", tid, None).await;
    assert!(reports["data"][0]["metadata"]["message"].as_str().unwrap().contains("plain"), "{reports}");

    // A value the last compile waited on (an unknown of the latest version) asks for one too.
    let (_, v) = s.call("POST", "/api/v2/reserve_version", tid, None).await;
    let version = v["data"].as_i64().unwrap();
    let unknowns = json!([{"parameter": "db_host", "source": "fact", "resource": "", "metadata": {}}]);
    let (status, body) = s
        .call("PUT", "/api/v1/version", tid, Some(json!({"version": version, "resources": [], "unknowns": unknowns})))
        .await;
    assert_eq!(status, 200, "{body}");
    let before = queued().await;
    let (status, _) =
        s.call("PUT", "/api/v1/parameter/db_host", tid, Some(json!({"source": "user", "value": "10.0.0.9"}))).await;
    assert_eq!(status, 200);
    assert!(queued().await > before || before >= 1, "a compile is queued or merged into the waiting one");
    let (_, queue) = s.call("GET", "/api/v1/compilequeue", tid, None).await;
    let _ = queue;
}

#[tokio::test]
async fn asking_for_an_unknown_fact_asks_the_agent_and_records_a_getfact_action() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let tid = Some(env.as_str());
    let version = release(&s, &env, vec![file("/nonexistent-dir-of-the-getfact-test/a", "0", &[])]).await;
    let r = rid("/nonexistent-dir-of-the-getfact-test/a");
    let (status, body) = s.call("GET", &format!("/api/v1/parameter/size?resource_id={}", enc(&r)), tid, None).await;
    assert_eq!(status, 503, "{body}");
    let (status, actions) =
        s.call("GET", "/api/v2/resource_actions?resource_type=fs%3A%3AFile&limit=10", tid, None).await;
    assert_eq!(status, 200, "{actions}");
    let getfact: Vec<&Value> =
        actions["data"].as_array().unwrap().iter().filter(|a| a["action"] == "getfact").collect();
    assert_eq!(getfact.len(), 1, "{actions}");
    assert_eq!(getfact[0]["resource_version_ids"], json!([format!("{r},v={version}")]));
    assert_eq!(getfact[0]["status"], Value::Null);
    assert_eq!(getfact[0]["messages"], json!([]));
    // A limited page links to the older and the newer actions, as Inmanta's does.
    assert!(actions["links"]["next"].as_str().unwrap().contains("last_timestamp="), "{actions}");
    assert!(actions["links"]["prev"].as_str().unwrap().contains("first_timestamp="), "{actions}");
}
