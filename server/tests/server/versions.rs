//! Versions of the desired state over a real socket.

use crate::common;

use std::collections::BTreeMap;

use api::ResourceVersionId;
use api::client::{ClientError, ListQuery};
use api::state::ResourceDiffStatus;
use api::version::{PutPartial, PutVersion};
use common::{TestServer, refusal, refused};
use serde_json::{Map, Value, json};
use uuid::Uuid;

/// A halted environment: versions are stored and released, but the server's agents never act on
/// these resources (their paths are the machine's own).
async fn environment(s: &TestServer) -> Uuid {
    let env = s.new_environment("p", "e").await;
    s.client().halt_environment(env).await.unwrap();
    env
}

fn file(path: &str, requires: &[&str]) -> Map<String, Value> {
    object(json!({
        "id": format!("fs::File[agent-1,path={path}],v=0"),
        "path": path, "hash": "f572d396fae9206628714fb2ce00f72e94f2258f", "permissions": 644,
        "owner": null, "group": null, "purged": false, "send_event": true,
        "requires": requires.iter().map(|p| format!("fs::File[agent-1,path={p}]")).collect::<Vec<_>>(),
    }))
}

fn object(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

async fn reserve(s: &TestServer, env: Uuid) -> i64 {
    s.client().reserve_version(env).await.unwrap()
}

/// A version as Inmanta's exporter sends it.
fn version_body(version: i64, resources: Vec<Map<String, Value>>, state: &[(&str, &str)]) -> PutVersion {
    PutVersion {
        version,
        resources,
        resource_state: state.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        module_version_info: Some(json!({})),
        project_constraints: Some(String::new()),
        version_info: Some(json!({"export_metadata": {"message": "Manual compile on the CLI by user",
                                                      "type": "manual", "inmanta:compile:state": "success"}})),
        pip_config: Some(json!({"index-url": null, "extra-index-url": [], "pre": false, "use-system-config": true})),
        ..Default::default()
    }
}

async fn put(
    s: &TestServer,
    env: Uuid,
    version: i64,
    resources: Vec<Map<String, Value>>,
    state: &[(&str, &str)],
) -> Result<(), ClientError> {
    s.client().put_version(env, &version_body(version, resources, state)).await
}

async fn statuses(s: &TestServer, env: Uuid) -> Vec<(i64, String)> {
    let versions = s.client().desired_state(env, &ListQuery::new()).await.unwrap().data;
    versions.iter().map(|v| (v.version, json!(v.status).as_str().unwrap().to_string())).collect()
}

#[tokio::test]
async fn store_release_and_statuses() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let env_id = env.to_string();
    let client = s.client();
    assert_eq!(refused(client.reserve_version(Uuid::new_v4()).await), 404);

    let v1 = reserve(&s, env).await;
    assert_eq!(v1, 1);
    // The v1 answer is an empty 200.
    let body = version_body(v1, vec![file("/a", &[]), file("/b", &["/a"])], &[]);
    let (status, body) = s.call("PUT", "/api/v1/version", Some(&env_id), Some(json!(body))).await;
    assert_eq!((status, body), (200, Value::Null));
    assert_eq!(statuses(&s, env).await, [(1, "active".to_string())], "auto_deploy releases");

    client.set_environment_setting(env, "auto_deploy", false).await.unwrap();
    let v2 = reserve(&s, env).await;
    let v3 = reserve(&s, env).await;
    put(&s, env, v2, vec![file("/a", &[])], &[]).await.unwrap();
    put(&s, env, v3, vec![file("/a", &[]), file("/c", &[])], &[]).await.unwrap();
    assert_eq!(
        statuses(&s, env).await,
        [(3, "candidate".to_string()), (2, "candidate".to_string()), (1, "active".to_string())]
    );

    // Release 3 with Inmanta's own request body; 2 is then a skipped candidate.
    let (status, body) = s
        .call(
            "POST",
            "/api/v1/version/3",
            Some(&env_id),
            Some(json!({"id": 3, "push": true, "agent_trigger_method": "push_incremental_deploy"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["model"]["released"], true);
    assert_eq!(body["model"]["total"], 2);
    assert_eq!(
        statuses(&s, env).await,
        [(3, "active".to_string()), (2, "skipped_candidate".to_string()), (1, "retired".to_string())]
    );
    let (status, message) = refusal(client.release_version(env, 3, false).await);
    assert_eq!(status, 409, "already released: {message}");
    assert!(message.contains("already released"));
    let (status, _) = s.call("POST", "/api/v2/desiredstate/2/promote", Some(&env_id), None).await;
    assert_eq!(status, 409, "older than the released version");
    assert_eq!(s.call("POST", "/api/v2/desiredstate/9/promote", Some(&env_id), None).await.0, 404);

    // Labels come from the export metadata.
    let (_, body) = s.call("GET", "/api/v2/desiredstate?limit=1", Some(&env_id), None).await;
    assert_eq!(body["data"][0]["labels"], json!([{"name": "manual", "message": "Manual compile on the CLI by user"}]));
    assert_eq!(body["metadata"], json!({"total": 3, "before": 0, "after": 2, "page_size": 1}));
    let next = body["links"]["next"].as_str().unwrap().to_string();
    assert_eq!(next, "/api/v2/desiredstate?limit=1&sort=version.desc&end=3&last_id=3");
    let page = client.page::<api::version::DesiredStateVersion>(&next, Some(env)).await.unwrap();
    assert_eq!(page.data[0].version, 2);
    let query = ListQuery::new().filter("status", "retired").filter("status", "active");
    assert_eq!(client.desired_state(env, &query).await.unwrap().data.len(), 2);
    let query = ListQuery::new().filter("version", "ge:2").sort("version.asc");
    let versions: Vec<i64> = client.desired_state(env, &query).await.unwrap().data.iter().map(|v| v.version).collect();
    assert_eq!(versions, [2, 3]);
    assert_eq!(refused(client.desired_state(env, &ListQuery::new().sort("date.asc")).await), 400);

    // v1 list and get.
    let (_, body) = s.call("GET", "/api/v1/version?start=1&limit=1", Some(&env_id), None).await;
    assert_eq!((body["count"].as_i64(), body["versions"][0]["version"].as_i64()), (Some(3), Some(2)));
    assert_eq!(s.call("GET", "/api/v1/version?start=1", Some(&env_id), None).await.0, 400);
    let (_, body) = s.call("GET", "/api/v1/version/3", Some(&env_id), None).await;
    let ids: Vec<&str> =
        body["resources"].as_array().unwrap().iter().map(|r| r["resource_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["fs::File[agent-1,path=/a]", "fs::File[agent-1,path=/c]"]);
    // Inmanta's v1 resource form.
    assert_eq!(body["resources"][0]["is_undefined"], false);
    assert!(body["resources"][0]["attribute_hash"].is_string(), "{body}");
    assert_eq!(body["resources"][0]["attributes"]["permissions"], 644);

    // Delete: not the active one; others go.
    assert_eq!(refused(client.delete_version(env, 3).await), 400);
    client.delete_version(env, 1).await.unwrap();
    assert_eq!(refused(client.delete_version(env, 1).await), 404);

    // Clearing the environment removes its versions.
    client.clear_environment(env).await.unwrap();
    assert!(statuses(&s, env).await.is_empty());
}

#[tokio::test]
async fn put_version_validates_everything() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let v = reserve(&s, env).await;
    let none: &[(&str, &str)] = &[];
    let cases = [
        (vec![file("/a", &["/missing"])], none, "not in version"),
        (vec![file("/a", &["/b"]), file("/b", &["/c"]), file("/c", &["/a"])], none, "cycle"),
        (vec![file("/a", &[]), file("/a", &[])], none, "twice"),
        (vec![object(json!({"id": "File[a]"}))], none, "invalid resource id"),
        (vec![object(json!({"id": "fs::File[a,path=/x],v=7"}))], none, "carries version 7"),
        (vec![object(json!({"path": "/x"}))], none, "no \"id\""),
        (vec![file("/a", &[])], &[("fs::File[agent-1,path=/zzz]", "available")], "not in the version"),
        (vec![file("/a", &[])], &[("fs::File[agent-1,path=/a]", "sleepy")], "not a state"),
    ];
    for (resources, state, expected) in cases {
        let (status, message) = refusal(put(&s, env, v, resources, state).await);
        assert_eq!(status, 400, "{expected}: {message}");
        assert!(message.contains(expected), "{expected:?} not in {message:?}");
    }
    let (status, message) = refusal(put(&s, env, v + 5, vec![file("/a", &[])], &[]).await);
    assert_eq!(status, 400, "not reserved: {message}");
    assert!(statuses(&s, env).await.is_empty(), "nothing half-stored");

    // Undefined resources and what depends on them.
    put(
        &s,
        env,
        v,
        vec![file("/a", &[]), file("/b", &["/a"]), file("/c", &["/b"]), file("/d", &[])],
        &[("fs::File[agent-1,path=/a]", "undefined")],
    )
    .await
    .unwrap();
    let model = s.client().version(env, v).await.unwrap().model;
    let texts = |ids: &[api::ResourceId]| ids.iter().map(ToString::to_string).collect::<Vec<_>>();
    assert_eq!(texts(&model.undeployable), ["fs::File[agent-1,path=/a]"]);
    assert_eq!(texts(&model.skipped_for_undeployable), ["fs::File[agent-1,path=/b]", "fs::File[agent-1,path=/c]"]);
    assert_eq!(refused(put(&s, env, v, vec![file("/a", &[])], &[]).await), 409, "a version is stored once");
}

#[tokio::test]
async fn resources_of_a_version_and_diffs() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let client = s.client();
    let v1 = reserve(&s, env).await;
    let mut changed = file("/b", &["/a"]);
    put(&s, env, v1, vec![file("/a", &[]), file("/b", &["/a"]), file("/gone", &[])], &[]).await.unwrap();
    changed["permissions"] = json!(600);
    let v2 = reserve(&s, env).await;
    put(&s, env, v2, vec![file("/a", &[]), changed, file("/new", &[])], &[]).await.unwrap();

    let query = ListQuery::new().limit(2).sort("resource_id_value.asc");
    let page = client.version_resources(env, v2, &query).await.unwrap();
    let ids: Vec<String> = page.data.iter().map(|r| r.resource_id.to_string()).collect();
    assert_eq!(ids, ["fs::File[agent-1,path=/a]", "fs::File[agent-1,path=/b]"]);
    assert_eq!(page.data[1].requires, [ResourceVersionId::parse("fs::File[agent-1,path=/a],v=2").unwrap()]);
    assert_eq!(page.data[1].id_details.resource_id_value, "/b");
    assert_eq!(page.metadata.as_ref().unwrap()["total"], 3);
    let next = page.links.and_then(|l| l.next).unwrap();
    let next = client.page::<api::version::VersionedResource>(&next, Some(env)).await.unwrap();
    assert_eq!(next.data[0].resource_id.to_string(), "fs::File[agent-1,path=/new]");
    let query = ListQuery::new().filter("resource_id_value", "NEW");
    assert_eq!(client.version_resources(env, v2, &query).await.unwrap().data.len(), 1);
    assert_eq!(refused(client.version_resources(env, 99, &ListQuery::new()).await), 404);

    let resource = client.version_resource(env, v2, "fs::File[agent-1,path=/b]").await.unwrap();
    assert_eq!(resource.attributes["permissions"], 600);
    assert_eq!(resource.id_attribute, "path");
    assert_eq!(resource.resource_version_id.to_string(), "fs::File[agent-1,path=/b],v=2");
    assert_eq!(refused(client.version_resource(env, v2, "nonsense").await), 400);
    assert_eq!(refused(client.version_resource(env, v2, "fs::File[agent-1,path=/gone]").await), 404);

    let diffs = client.version_diff(env, v1, v2).await.unwrap();
    let summary: Vec<(String, ResourceDiffStatus)> =
        diffs.iter().map(|d| (d.resource_id.to_string(), d.status)).collect();
    assert_eq!(
        summary,
        [
            ("fs::File[agent-1,path=/b]".to_string(), ResourceDiffStatus::Modified),
            ("fs::File[agent-1,path=/gone]".to_string(), ResourceDiffStatus::Deleted),
            ("fs::File[agent-1,path=/new]".to_string(), ResourceDiffStatus::Added),
        ],
        "unchanged /a is left out"
    );
    let permissions = &diffs[0].attributes["permissions"];
    let values = (
        permissions.from_value.as_ref().and_then(Value::as_i64),
        permissions.to_value.as_ref().and_then(Value::as_i64),
    );
    assert_eq!(values, (Some(644), Some(600)));
    assert_eq!(diffs[0].attributes.len(), 1);
    assert_eq!(refused(client.version_diff(env, v1, 77).await), 404);
}

#[tokio::test]
async fn old_versions_are_removed_beyond_available_versions_to_keep() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let client = s.client();
    client.set_environment_setting(env, "available_versions_to_keep", 2).await.unwrap();
    let first = reserve(&s, env).await;
    put(&s, env, first, vec![file("/a", &[])], &[]).await.unwrap();
    client.set_environment_setting(env, "auto_deploy", false).await.unwrap();
    for _ in 0..4 {
        let v = reserve(&s, env).await;
        put(&s, env, v, vec![file("/a", &[])], &[]).await.unwrap();
    }
    let kept: Vec<i64> = statuses(&s, env).await.into_iter().map(|(v, _)| v).collect();
    assert_eq!(kept, [5, 4, 1], "the two newest plus the active one");
}

fn in_set(path: &str, hash: &str, requires: &[&str]) -> Map<String, Value> {
    let mut r = file(path, requires);
    r["hash"] = json!(hash);
    r
}

async fn version_ids(s: &TestServer, env: Uuid, version: i64) -> Vec<(String, String)> {
    let resources = s.client().version(env, version).await.unwrap().resources;
    let mut out: Vec<(String, String)> = resources
        .iter()
        .map(|r| {
            (r["resource_id"].as_str().unwrap().to_string(), r["attributes"]["hash"].as_str().unwrap().to_string())
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn partial_exports_replace_sets_and_keep_the_rest() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let env_id = env.to_string();
    let tid = Some(env_id.as_str());
    let client = s.client();
    let rid = |p: &str| format!("fs::File[agent-1,path={p}]");
    let sets = |pairs: &[(String, Option<&str>)]| -> BTreeMap<String, Option<String>> {
        pairs.iter().map(|(k, v)| (k.clone(), v.map(str::to_string))).collect()
    };
    let partial = |resources: Vec<Map<String, Value>>, resource_sets, removed: Vec<&str>| PutPartial {
        resources,
        resource_sets,
        removed_resource_sets: removed.into_iter().map(str::to_string).collect(),
        ..Default::default()
    };

    // No base version yet.
    let (status, message) = refusal(client.put_partial(env, &partial(vec![], sets(&[]), vec![])).await);
    assert_eq!(status, 400, "{message}");
    assert!(message.contains("full model"));

    let v1 = reserve(&s, env).await;
    let full = PutVersion {
        version: v1,
        resources: vec![in_set("/shared", "s", &[]), in_set("/a1", "1", &["/shared"]), in_set("/b1", "1", &[])],
        resource_sets: sets(&[(rid("/a1"), Some("set-a")), (rid("/b1"), Some("set-b")), (rid("/shared"), None)]),
        ..Default::default()
    };
    client.put_version(env, &full).await.unwrap();

    // Replace set-a: /a1 goes, /a2 comes; set-b and the shared resource stay.
    let body = partial(vec![in_set("/a2", "2", &["/shared"])], sets(&[(rid("/a2"), Some("set-a"))]), vec![]);
    let v2 = client.put_partial(env, &body).await.unwrap();
    assert_eq!(v2, v1 + 1);
    assert_eq!(
        version_ids(&s, env, v2).await,
        vec![(rid("/a2"), "2".into()), (rid("/b1"), "1".into()), (rid("/shared"), "s".into())]
    );
    let model = client.version(env, v2).await.unwrap().model;
    assert_eq!(model.partial_base, Some(v1));

    // Remove set-b.
    let v3 = client.put_partial(env, &partial(vec![], sets(&[]), vec!["set-b"])).await.unwrap();
    assert_eq!(version_ids(&s, env, v3).await, vec![(rid("/a2"), "2".into()), (rid("/shared"), "s".into())]);

    // Errors: versioned ids, a shared resource that differs, moving between sets, a dangling
    // requires, handler code changes. None of them creates a version.
    let mut versioned = in_set("/c", "c", &[]);
    versioned["id"] = json!(format!("{},v=7", rid("/c")));
    let bad = [
        partial(vec![versioned], sets(&[(rid("/c"), Some("set-c"))]), vec![]),
        partial(vec![in_set("/shared", "changed", &[])], sets(&[]), vec![]),
        partial(vec![in_set("/a2", "2", &[])], sets(&[(rid("/a2"), Some("set-c"))]), vec![]),
        partial(vec![in_set("/c", "c", &["/gone"])], sets(&[(rid("/c"), Some("set-c"))]), vec![]),
        partial(vec![in_set("/x", "x", &[])], sets(&[(rid("/x"), Some("set-a"))]), vec!["set-a", "set-x"]),
    ];
    for body in bad {
        let (status, message) = refusal(client.put_partial(env, &body).await);
        assert_eq!(status, 400, "{body:?} -> {message}");
        assert!(!message.is_empty());
    }
    let (status, answer) =
        s.call("PUT", "/api/v2/version/partial", tid, Some(json!({"resources": [], "oops": 1}))).await;
    assert_eq!(status, 400, "{answer}");

    // Handler code: a change needs allow_handler_code_update.
    let mut with_code = partial(vec![], sets(&[]), vec![]);
    with_code.module_version_info = Some(json!({"fs": {"name": "fs", "version": "1.0.0"}}));
    client.put_partial(env, &with_code).await.expect("a module new to the environment is fine");
    with_code.module_version_info = Some(json!({"fs": {"name": "fs", "version": "2.0.0"}}));
    assert_eq!(refused(client.put_partial(env, &with_code).await), 400);
    with_code.allow_handler_code_update = true;
    client.put_partial(env, &with_code).await.unwrap();
}

/// `GET /api/v1/version/<v>` streams its resources a page at a time: every one arrives once, in
/// id order, across page boundaries, and the body is one JSON document.
#[tokio::test]
async fn a_whole_version_streams_every_resource_once() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let env_id = env.to_string();
    let version = reserve(&s, env).await;
    let n = 2345;
    let resources: Vec<Map<String, Value>> = (0..n).map(|i| file(&format!("/f{i:05}"), &[])).collect();
    put(&s, env, version, resources, &[]).await.unwrap();
    let (status, body) = s.call("GET", &format!("/api/v1/version/{version}"), Some(&env_id), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["model"]["version"], version);
    assert_eq!(body["model"]["total"], n);
    assert_eq!(body["unknowns"], json!([]));
    let ids: Vec<&str> =
        body["resources"].as_array().unwrap().iter().map(|r| r["resource_id"].as_str().unwrap()).collect();
    let expected: Vec<String> = (0..n).map(|i| format!("fs::File[agent-1,path=/f{i:05}]")).collect();
    assert_eq!(ids, expected);
    assert_eq!(body["resources"][1500]["attributes"]["path"], "/f01500");
}
