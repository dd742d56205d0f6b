//! Resource views, logs, actions, facts, parameters and notifications over a real socket. The
//! deploy results are written through the orchestrator on the server's own database, as the
//! scheduler will.

use crate::common;

use api::client::{ActionQuery, ListQuery};
use api::operations::SetParameter;
use api::resource::{LatestReleasedResource, LogLine};
use api::state::{ActionKind, Change, HandlerStatus};
use api::version::PutVersion;
use api::{Envelope, ResourceId, ResourceState};
use common::{TestServer, refusal, refused};
use orchestrator::resources::FinishedAction;
use orchestrator::{ActionOutcome, Orchestrator};
use serde_json::{Map, Value, json};
use uuid::Uuid;

async fn environment(s: &TestServer) -> Uuid {
    s.new_environment("p", "e").await
}

fn rid(path: &str) -> String {
    format!("fs::File[agent-1,path={path}]")
}

fn file(path: &str, hash: &str, requires: &[&str]) -> Map<String, Value> {
    let resource = json!({
        "id": format!("{},v=0", rid(path)), "path": path, "hash": hash, "permissions": 644, "purged": false,
        "send_event": true, "requires": requires.iter().map(|p| rid(p)).collect::<Vec<_>>(),
    });
    resource.as_object().unwrap().clone()
}

async fn release(s: &TestServer, env: Uuid, resources: Vec<Map<String, Value>>) -> i64 {
    let client = s.client();
    let version = client.reserve_version(env).await.unwrap();
    client.put_version(env, &PutVersion { version, resources, ..Default::default() }).await.unwrap();
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
        timestamp: api::Timestamp::now(),
    }
}

async fn deploy(o: &Orchestrator, env: Uuid, version: i64, path: &str, status: HandlerStatus, msg: &str) {
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
        started: api::Timestamp::now(),
        resource_ids: vec![id],
        outcome,
    };
    o.record_scheduler_batch(env, &[], &[action], &[], None).await.unwrap();
}

fn ids(body: &Value) -> Vec<String> {
    body["data"].as_array().unwrap().iter().map(|r| r["resource_id"].as_str().unwrap().to_string()).collect()
}

fn resource_ids(page: &Envelope<Vec<LatestReleasedResource>>) -> Vec<String> {
    page.data.iter().map(|r| r.resource_id.to_string()).collect()
}

#[tokio::test]
async fn resource_list_details_history_logs_and_actions() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let env_id = env.to_string();
    let tid = Some(env_id.as_str());
    let client = s.client();
    // Halted: the server's own agents stay out; this test writes deploy results itself.
    client.halt_environment(env).await.unwrap();
    let v1 = release(&s, env, vec![file("/a", "1", &[]), file("/b", "1", &["/a"]), file("/c", "1", &[])]).await;

    let (status, body) = s.call("GET", "/api/v2/resource?deploy_summary=true&sort=resource_id.asc", tid, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(ids(&body), vec![rid("/a"), rid("/b"), rid("/c")]);
    assert_eq!(body["data"][1]["requires"], json!([format!("{},v={v1}", rid("/a"))]));
    assert_eq!(body["data"][0]["status"], "available");
    assert_eq!(body["metadata"]["deploy_summary"]["total"], 3);
    assert_eq!(body["metadata"]["deploy_summary"]["by_state"]["available"], 3);
    assert_eq!(body["metadata"]["total"], 3);
    // Inmanta's links name deploy_summary as Python prints a bool, after the filters.
    assert_eq!(body["links"]["self"], "/api/v2/resource?limit=1000&sort=resource_id.asc&deploy_summary=True");
    let (_, body) = s.call("GET", "/api/v2/resource?filter.agent=internal", tid, None).await;
    assert_eq!(
        body["links"]["self"],
        "/api/v2/resource?limit=1000&sort=resource_type.desc&filter.agent=internal&deploy_summary=False"
    );

    let page = client.resources(env, &ListQuery::new().limit(2).sort("resource_id.asc")).await.unwrap();
    assert_eq!(resource_ids(&page).len(), 2);
    let next = page.links.and_then(|l| l.next).expect("a next link");
    let rest = client.page(&next, Some(env)).await.unwrap();
    assert_eq!(resource_ids(&rest), vec![rid("/c")]);

    for bad in ["sort=color.asc", "filter.colour=red", "limit=5000", "deploy_summary=maybe"] {
        let (status, body) = s.call("GET", &format!("/api/v2/resource?{bad}"), tid, None).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body["message"].as_str().is_some());
    }
    assert_eq!(s.call("GET", "/api/v2/resource", None, None).await.0, 400, "the environment header is required");

    let o = Orchestrator::open(&s.database_url).await.unwrap();
    deploy(&o, env, v1, "/a", HandlerStatus::Deployed, "file written").await;
    deploy(&o, env, v1, "/b", HandlerStatus::Failed, "disk full").await;

    let failed = client.resources(env, &ListQuery::new().filter("status", "failed")).await.unwrap();
    assert_eq!(resource_ids(&failed), vec![rid("/b")]);
    let unknown = Uuid::new_v4().to_string();
    let (status, body) = s.call("GET", "/api/v2/resource", Some(unknown.as_str()), None).await;
    assert_eq!(status, 404, "an unknown environment: {body}");
    let query = ListQuery::new().filter("status", "!failed").filter("resource_id_value", "/a");
    let others = client.resources(env, &query).await.unwrap();
    assert_eq!(resource_ids(&others), vec![rid("/a")]);

    let details = client.resource(env, &rid("/b")).await.unwrap();
    assert_eq!(details.status, ResourceState::Failed);
    assert_eq!(details.requires_status[&ResourceId::parse(&rid("/a")).unwrap()], ResourceState::Deployed);
    assert_eq!(details.attributes["hash"], "1");
    assert_eq!(refused(client.resource(env, &rid("/zz")).await), 404);
    // A malformed id is refused naming the id and the form a resource id takes.
    let (status, message) = refusal(client.resource(env, "not-an-id").await);
    assert_eq!(status, 400, "{message}");
    assert!(message.contains(r#"invalid resource id "not-an-id""#), "{message}");
    assert!(message.contains("<namespace>::<Type>[<agent>,<attribute>=<value>]"), "{message}");

    let logs = client.resource_logs(env, &rid("/b"), &ListQuery::new()).await.unwrap();
    // The deploy's two lines and the line of the `store` action of the version that brought it.
    let messages: Vec<&str> = logs.data.iter().map(|l| l.msg.as_str()).collect();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert_eq!(messages.iter().filter(|m| m.starts_with("Successfully stored version")).count(), 1, "{messages:?}");
    let errors =
        client.resource_logs(env, &rid("/b"), &ListQuery::new().filter("minimal_log_level", "ERROR")).await.unwrap();
    assert_eq!(errors.data[0].msg, "disk full");
    assert_eq!(errors.data[0].action, "deploy");
    let found = client.resource_logs(env, &rid("/b"), &ListQuery::new().filter("message", "DISK")).await.unwrap();
    assert_eq!(found.data.len(), 1, "message filter is case-insensitive");

    let query = ActionQuery { log_severity: Some("ERROR".into()), ..Default::default() };
    let actions = client.resource_actions(env, &query).await.unwrap().data;
    assert_eq!(actions.len(), 1, "{actions:?}");
    assert_eq!(actions[0].status, Some(HandlerStatus::Failed));
    let query = ActionQuery { exclude_changes: vec!["nochange".into()], ..Default::default() };
    let created = client.resource_actions(env, &query).await.unwrap().data;
    assert_eq!(created[0].resource_version_ids, vec![ResourceId::parse(&rid("/a")).unwrap().versioned(v1 as u64)]);
    let query = ActionQuery { attribute: Some("path".into()), ..Default::default() };
    assert_eq!(refused(client.resource_actions(env, &query).await), 400);

    let rvid = format!("{},v={v1}", rid("/a"));
    let (status, v1_resource) = s.call("GET", &format!("/api/v1/resource/{}?logs=true", enc(&rvid)), tid, None).await;
    assert_eq!(status, 200, "{v1_resource}");
    assert_eq!(v1_resource["resource"]["resource_id"], rid("/a"));
    // Its deploy and the `store` action of its version, as Inmanta answers.
    let kinds: Vec<&str> =
        v1_resource["logs"].as_array().unwrap().iter().map(|a| a["action"].as_str().unwrap()).collect();
    assert_eq!(kinds, vec!["deploy", "store"], "{v1_resource}");
    assert_eq!(s.call("GET", &format!("/api/v1/resource/{}", enc(&rid("/a"))), tid, None).await.0, 400);

    // Identical lists sent together share reads (rest/shared_reads.rs): each still sees what
    // was written before it was sent.
    let together =
        (0..20).map(|_| s.call("GET", "/api/v2/resource?filter.status=deployed&sort=resource_id.asc", tid, None));
    for (status, body) in futures_util::future::join_all(together).await {
        assert_eq!((status, ids(&body)), (200, vec![rid("/a")]), "{body}");
    }
    deploy(&o, env, v1, "/c", HandlerStatus::Deployed, "file written").await;
    let together =
        (0..20).map(|_| s.call("GET", "/api/v2/resource?filter.status=deployed&sort=resource_id.asc", tid, None));
    for (status, body) in futures_util::future::join_all(together).await {
        assert_eq!((status, ids(&body)), (200, vec![rid("/a"), rid("/c")]), "{body}");
    }

    // /a changes, /c goes away: history gets a second entry, /c becomes an orphan.
    release(&s, env, vec![file("/a", "2", &[]), file("/b", "1", &["/a"])]).await;
    let history = client.resource_history(env, &rid("/a"), &ListQuery::new()).await.unwrap().data;
    let hashes: Vec<&Value> = history.iter().map(|h| &h.attributes["hash"]).collect();
    assert_eq!(hashes, vec![&json!("2"), &json!("1")]);
    let list = client.resources(env, &ListQuery::new().filter("status", "orphaned")).await.unwrap();
    assert_eq!(resource_ids(&list), vec![rid("/c")]);
    let a = client.resource(env, &rid("/a")).await.unwrap();
    assert_eq!(a.status, ResourceState::Available, "a changed intent is to be deployed again");

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
    let env_id = env.to_string();
    let tid = Some(env_id.as_str());
    let client = s.client();

    let body = SetParameter { source: "user".into(), value: json!("10.0.0.1"), ..Default::default() };
    let parameter = client.set_parameter(env, "db_host", &body).await.unwrap();
    assert_eq!(parameter.value, "10.0.0.1");
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
    let body =
        SetParameter { source: "fact".into(), value: json!("42"), resource_id: Some(r.clone()), ..Default::default() };
    let fact = client.set_fact(env, "size", &body).await.unwrap();
    assert!(fact.expires);
    let body = SetParameter { source: "fact".into(), value: json!("1"), ..Default::default() };
    assert_eq!(refused(client.set_fact(env, "size", &body).await), 400);
    client.parameter(env, "size", Some(&r)).await.unwrap();

    let (_, facts) = s.call("GET", &format!("/api/v2/resource/{}/facts", enc(&r)), tid, None).await;
    assert_eq!(facts["data"].as_array().unwrap().len(), 1);
    let fact_id = facts["data"][0]["id"].as_str().unwrap();
    let (status, _) = s.call("GET", &format!("/api/v2/resource/{}/facts/{fact_id}", enc(&r)), tid, None).await;
    assert_eq!(status, 200);
    let all = client.facts(env, &ListQuery::new().filter("name", "siz")).await.unwrap();
    assert_eq!(all.data.len(), 1);
    let params = client.parameters(env, &ListQuery::new().sort("name.asc")).await.unwrap();
    assert_eq!(params.data.len(), 1, "facts are not parameters: {params:?}");

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
    let env_id = env.to_string();
    let tid = Some(env_id.as_str());
    let client = s.client();
    let queued = async || client.compile_reports(env, &ListQuery::new()).await.unwrap().data.len();
    // A plain parameter: nothing to compile.
    let body = SetParameter { source: "user".into(), value: json!("1"), ..Default::default() };
    client.set_parameter(env, "plain", &body).await.unwrap();
    assert_eq!(queued().await, 0);
    // recompile=true asks for one.
    let body = SetParameter { source: "user".into(), value: json!("2"), recompile: true, ..Default::default() };
    client.set_parameter(env, "plain", &body).await.unwrap();
    assert_eq!(queued().await, 1);
    let reports = client.compile_reports(env, &ListQuery::new()).await.unwrap().data;
    assert!(reports[0].metadata["message"].as_str().unwrap().contains("plain"), "{reports:?}");

    // A value the last compile waited on (an unknown of the latest version) asks for one too.
    let version = client.reserve_version(env).await.unwrap();
    let unknowns = vec![json!({"parameter": "db_host", "source": "fact", "resource": "", "metadata": {}})];
    client.put_version(env, &PutVersion { version, unknowns, ..Default::default() }).await.unwrap();
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
    let env_id = env.to_string();
    let tid = Some(env_id.as_str());
    let version = release(&s, env, vec![file("/nonexistent-dir-of-the-getfact-test/a", "0", &[])]).await;
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
