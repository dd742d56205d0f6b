//! Versions of the desired state over a real socket.

mod common;

use common::TestServer;
use serde_json::{Value, json};

/// A halted environment: versions are stored and released, but the server's agents never act on
/// these resources (their paths are the machine's own).
async fn environment(s: &TestServer) -> String {
    let (_, p) = s.call("PUT", "/api/v2/project", None, Some(json!({"name": "p"}))).await;
    let (_, e) =
        s.call("PUT", "/api/v2/environment", None, Some(json!({"project_id": p["data"]["id"], "name": "e"}))).await;
    let env = e["data"]["id"].as_str().unwrap().to_string();
    let (status, _) = s.call("POST", "/api/v2/actions/environment/halt", Some(&env), None).await;
    assert_eq!(status, 200);
    env
}

fn file(path: &str, requires: &[&str]) -> Value {
    json!({
        "id": format!("fs::File[agent-1,path={path}],v=0"),
        "path": path, "hash": "f572d396fae9206628714fb2ce00f72e94f2258f", "permissions": 644,
        "owner": null, "group": null, "purged": false, "send_event": true,
        "requires": requires.iter().map(|p| format!("fs::File[agent-1,path={p}]")).collect::<Vec<_>>(),
    })
}

async fn reserve(s: &TestServer, env: &str) -> i64 {
    let (status, body) = s.call("POST", "/api/v2/reserve_version", Some(env), None).await;
    assert_eq!(status, 200, "{body}");
    body["data"].as_i64().unwrap()
}

async fn put(s: &TestServer, env: &str, version: i64, resources: Vec<Value>, state: Value) -> (u16, Value) {
    let body = json!({
        "version": version, "resources": resources, "resource_state": state, "unknowns": [],
        "resource_sets": {}, "module_version_info": {}, "project_constraints": "",
        "version_info": {"export_metadata": {"message": "Manual compile on the CLI by user", "type": "manual",
                                             "inmanta:compile:state": "success"}},
        "pip_config": {"index-url": null, "extra-index-url": [], "pre": false, "use-system-config": true},
    });
    s.call("PUT", "/api/v1/version", Some(env), Some(body)).await
}

async fn statuses(s: &TestServer, env: &str) -> Vec<(i64, String)> {
    let (_, body) = s.call("GET", "/api/v2/desiredstate", Some(env), None).await;
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["version"].as_i64().unwrap(), v["status"].as_str().unwrap().to_string()))
        .collect()
}

#[tokio::test]
async fn store_release_and_statuses() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let unknown = uuid::Uuid::new_v4().to_string();
    assert_eq!(s.call("POST", "/api/v2/reserve_version", Some(&unknown), None).await.0, 404);

    let v1 = reserve(&s, &env).await;
    assert_eq!(v1, 1);
    let (status, body) = put(&s, &env, v1, vec![file("/a", &[]), file("/b", &["/a"])], json!({})).await;
    assert_eq!((status, body), (200, Value::Null));
    assert_eq!(statuses(&s, &env).await, [(1, "active".to_string())], "auto_deploy releases");

    s.call("POST", "/api/v2/environment_settings/auto_deploy", Some(&env), Some(json!({"value": false}))).await;
    let v2 = reserve(&s, &env).await;
    let v3 = reserve(&s, &env).await;
    assert_eq!(put(&s, &env, v2, vec![file("/a", &[])], json!({})).await.0, 200);
    assert_eq!(put(&s, &env, v3, vec![file("/a", &[]), file("/c", &[])], json!({})).await.0, 200);
    assert_eq!(
        statuses(&s, &env).await,
        [(3, "candidate".to_string()), (2, "candidate".to_string()), (1, "active".to_string())]
    );

    // Release 3 with Inmanta's own request body; 2 is then a skipped candidate.
    let (status, body) = s
        .call(
            "POST",
            "/api/v1/version/3",
            Some(&env),
            Some(json!({"id": 3, "push": true, "agent_trigger_method": "push_incremental_deploy"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["model"]["released"], true);
    assert_eq!(body["model"]["total"], 2);
    assert_eq!(
        statuses(&s, &env).await,
        [(3, "active".to_string()), (2, "skipped_candidate".to_string()), (1, "retired".to_string())]
    );
    let (status, body) = s.call("POST", "/api/v1/version/3", Some(&env), Some(json!({}))).await;
    assert_eq!(status, 409, "already released: {body}");
    assert!(body["message"].as_str().unwrap().contains("already released"));
    let (status, _) = s.call("POST", "/api/v2/desiredstate/2/promote", Some(&env), None).await;
    assert_eq!(status, 409, "older than the released version");
    assert_eq!(s.call("POST", "/api/v2/desiredstate/9/promote", Some(&env), None).await.0, 404);

    // Labels come from the export metadata.
    let (_, body) = s.call("GET", "/api/v2/desiredstate?limit=1", Some(&env), None).await;
    assert_eq!(body["data"][0]["labels"], json!([{"name": "manual", "message": "Manual compile on the CLI by user"}]));
    assert_eq!(body["metadata"], json!({"total": 3, "before": 0, "after": 2, "page_size": 1}));
    let next = body["links"]["next"].as_str().unwrap().to_string();
    assert_eq!(next, "/api/v2/desiredstate?limit=1&sort=version.desc&end=3&last_id=3");
    let (_, body) = s.call("GET", &next, Some(&env), None).await;
    assert_eq!(body["data"][0]["version"], 2);
    let (_, body) =
        s.call("GET", "/api/v2/desiredstate?filter.status=retired&filter.status=active", Some(&env), None).await;
    assert_eq!(body["data"].as_array().unwrap().len(), 2);
    let (_, body) = s.call("GET", "/api/v2/desiredstate?filter.version=ge:2&sort=version.asc", Some(&env), None).await;
    let versions: Vec<i64> = body["data"].as_array().unwrap().iter().map(|v| v["version"].as_i64().unwrap()).collect();
    assert_eq!(versions, [2, 3]);
    assert_eq!(s.call("GET", "/api/v2/desiredstate?sort=date.asc", Some(&env), None).await.0, 400);

    // v1 list and get.
    let (_, body) = s.call("GET", "/api/v1/version?start=1&limit=1", Some(&env), None).await;
    assert_eq!((body["count"].as_i64(), body["versions"][0]["version"].as_i64()), (Some(3), Some(2)));
    assert_eq!(s.call("GET", "/api/v1/version?start=1", Some(&env), None).await.0, 400);
    let (_, body) = s.call("GET", "/api/v1/version/3", Some(&env), None).await;
    let ids: Vec<&str> =
        body["resources"].as_array().unwrap().iter().map(|r| r["resource_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["fs::File[agent-1,path=/a]", "fs::File[agent-1,path=/c]"]);
    // Inmanta's v1 resource form.
    assert_eq!(body["resources"][0]["is_undefined"], false);
    assert!(body["resources"][0]["attribute_hash"].is_string(), "{body}");
    assert_eq!(body["resources"][0]["attributes"]["permissions"], 644);

    // Delete: not the active one; others go.
    let (status, body) = s.call("DELETE", "/api/v1/version/3", Some(&env), None).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(s.call("DELETE", "/api/v1/version/1", Some(&env), None).await.0, 200);
    assert_eq!(s.call("DELETE", "/api/v1/version/1", Some(&env), None).await.0, 404);

    // Clearing the environment removes its versions.
    s.call("DELETE", &format!("/api/v2/decommission/{env}"), None, None).await;
    assert!(statuses(&s, &env).await.is_empty());
}

#[tokio::test]
async fn put_version_validates_everything() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let v = reserve(&s, &env).await;
    let cases = [
        (vec![file("/a", &["/missing"])], json!({}), "not in version"),
        (vec![file("/a", &["/b"]), file("/b", &["/c"]), file("/c", &["/a"])], json!({}), "cycle"),
        (vec![file("/a", &[]), file("/a", &[])], json!({}), "twice"),
        (vec![json!({"id": "File[a]"})], json!({}), "invalid resource id"),
        (vec![json!({"id": "fs::File[a,path=/x],v=7"})], json!({}), "carries version 7"),
        (vec![json!({"path": "/x"})], json!({}), "no \"id\""),
        (vec![file("/a", &[])], json!({"fs::File[agent-1,path=/zzz]": "available"}), "not in the version"),
        (vec![file("/a", &[])], json!({"fs::File[agent-1,path=/a]": "sleepy"}), "not a state"),
    ];
    for (resources, state, expected) in cases {
        let (status, body) = put(&s, &env, v, resources, state).await;
        assert_eq!(status, 400, "{expected}: {body}");
        let message = body["message"].as_str().unwrap();
        assert!(message.contains(expected), "{expected:?} not in {message:?}");
    }
    let (status, body) = put(&s, &env, v + 5, vec![file("/a", &[])], json!({})).await;
    assert_eq!(status, 400, "not reserved: {body}");
    assert!(statuses(&s, &env).await.is_empty(), "nothing half-stored");

    // Undefined resources and what depends on them.
    let (status, body) = put(
        &s,
        &env,
        v,
        vec![file("/a", &[]), file("/b", &["/a"]), file("/c", &["/b"]), file("/d", &[])],
        json!({"fs::File[agent-1,path=/a]": "undefined"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (_, body) = s.call("GET", &format!("/api/v1/version/{v}"), Some(&env), None).await;
    assert_eq!(body["model"]["undeployable"], json!(["fs::File[agent-1,path=/a]"]));
    assert_eq!(
        body["model"]["skipped_for_undeployable"],
        json!(["fs::File[agent-1,path=/b]", "fs::File[agent-1,path=/c]"])
    );
    let (status, _) = put(&s, &env, v, vec![file("/a", &[])], json!({})).await;
    assert_eq!(status, 409, "a version is stored once");
}

#[tokio::test]
async fn resources_of_a_version_and_diffs() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let v1 = reserve(&s, &env).await;
    let mut changed = file("/b", &["/a"]);
    put(&s, &env, v1, vec![file("/a", &[]), file("/b", &["/a"]), file("/gone", &[])], json!({})).await;
    changed["permissions"] = json!(600);
    let v2 = reserve(&s, &env).await;
    put(&s, &env, v2, vec![file("/a", &[]), changed, file("/new", &[])], json!({})).await;

    let (status, body) =
        s.call("GET", &format!("/api/v2/desiredstate/{v2}?limit=2&sort=resource_id_value.asc"), Some(&env), None).await;
    assert_eq!(status, 200, "{body}");
    let ids: Vec<&str> = body["data"].as_array().unwrap().iter().map(|r| r["resource_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["fs::File[agent-1,path=/a]", "fs::File[agent-1,path=/b]"]);
    assert_eq!(body["data"][1]["requires"], json!(["fs::File[agent-1,path=/a],v=2"]));
    assert_eq!(body["data"][1]["id_details"]["resource_id_value"], "/b");
    assert_eq!(body["metadata"]["total"], 3);
    let (_, next) = s.call("GET", body["links"]["next"].as_str().unwrap(), Some(&env), None).await;
    assert_eq!(next["data"][0]["resource_id"], "fs::File[agent-1,path=/new]");
    let (_, body) =
        s.call("GET", &format!("/api/v2/desiredstate/{v2}?filter.resource_id_value=NEW"), Some(&env), None).await;
    assert_eq!(body["data"].as_array().unwrap().len(), 1);
    assert_eq!(s.call("GET", "/api/v2/desiredstate/99", Some(&env), None).await.0, 404);

    let rid = "fs%3A%3AFile%5Bagent-1%2Cpath%3D%2Fb%5D";
    let (status, body) = s.call("GET", &format!("/api/v2/desiredstate/{v2}/resource/{rid}"), Some(&env), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["attributes"]["permissions"], 600);
    assert_eq!(body["data"]["id_attribute"], "path");
    assert_eq!(body["data"]["resource_version_id"], "fs::File[agent-1,path=/b],v=2");
    assert_eq!(s.call("GET", &format!("/api/v2/desiredstate/{v2}/resource/nonsense"), Some(&env), None).await.0, 400);
    let gone = "fs%3A%3AFile%5Bagent-1%2Cpath%3D%2Fgone%5D";
    assert_eq!(s.call("GET", &format!("/api/v2/desiredstate/{v2}/resource/{gone}"), Some(&env), None).await.0, 404);

    let (status, body) = s.call("GET", &format!("/api/v2/desiredstate/diff/{v1}/{v2}"), Some(&env), None).await;
    assert_eq!(status, 200, "{body}");
    let summary: Vec<(&str, &str)> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["resource_id"].as_str().unwrap(), d["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        summary,
        [
            ("fs::File[agent-1,path=/b]", "modified"),
            ("fs::File[agent-1,path=/gone]", "deleted"),
            ("fs::File[agent-1,path=/new]", "added"),
        ],
        "unchanged /a is left out"
    );
    let permissions = &body["data"][0]["attributes"]["permissions"];
    assert_eq!((permissions["from_value"].as_i64(), permissions["to_value"].as_i64()), (Some(644), Some(600)));
    assert_eq!(body["data"][0]["attributes"].as_object().unwrap().len(), 1);
    assert_eq!(s.call("GET", &format!("/api/v2/desiredstate/diff/{v1}/77"), Some(&env), None).await.0, 404);
}

#[tokio::test]
async fn old_versions_are_removed_beyond_available_versions_to_keep() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    s.call("POST", "/api/v2/environment_settings/available_versions_to_keep", Some(&env), Some(json!({"value": 2})))
        .await;
    let first = reserve(&s, &env).await;
    put(&s, &env, first, vec![file("/a", &[])], json!({})).await;
    s.call("POST", "/api/v2/environment_settings/auto_deploy", Some(&env), Some(json!({"value": false}))).await;
    for _ in 0..4 {
        let v = reserve(&s, &env).await;
        assert_eq!(put(&s, &env, v, vec![file("/a", &[])], json!({})).await.0, 200);
    }
    let kept: Vec<i64> = statuses(&s, &env).await.into_iter().map(|(v, _)| v).collect();
    assert_eq!(kept, [5, 4, 1], "the two newest plus the active one");
}

fn in_set(path: &str, hash: &str, requires: &[&str]) -> Value {
    let mut r = file(path, requires);
    r["hash"] = json!(hash);
    r
}

async fn version_ids(s: &TestServer, env: &str, version: i64) -> Vec<(String, String)> {
    let (_, body) = s.call("GET", &format!("/api/v1/version/{version}"), Some(env), None).await;
    let mut out: Vec<(String, String)> = body["resources"]
        .as_array()
        .unwrap()
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
    let tid = Some(env.as_str());
    let rid = |p: &str| format!("fs::File[agent-1,path={p}]");
    let partial = |resources: Vec<Value>, sets: Value, removed: Vec<&str>| {
        json!({"resources": resources, "resource_sets": sets, "removed_resource_sets": removed,
               "resource_state": {}, "unknowns": [], "version_info": null})
    };

    // No base version yet.
    let (status, body) = s.call("PUT", "/api/v2/version/partial", tid, Some(partial(vec![], json!({}), vec![]))).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["message"].as_str().unwrap().contains("full model"));

    let v1 = reserve(&s, &env).await;
    let full = json!({
        "version": v1,
        "resources": [in_set("/shared", "s", &[]), in_set("/a1", "1", &["/shared"]), in_set("/b1", "1", &[])],
        "resource_sets": {rid("/a1"): "set-a", rid("/b1"): "set-b", rid("/shared"): null},
    });
    assert_eq!(s.call("PUT", "/api/v1/version", tid, Some(full)).await.0, 200);

    // Replace set-a: /a1 goes, /a2 comes; set-b and the shared resource stay.
    let body = partial(vec![in_set("/a2", "2", &["/shared"])], json!({rid("/a2"): "set-a"}), vec![]);
    let (status, answer) = s.call("PUT", "/api/v2/version/partial", tid, Some(body)).await;
    assert_eq!(status, 200, "{answer}");
    let v2 = answer["data"].as_i64().unwrap();
    assert_eq!(v2, v1 + 1);
    assert_eq!(
        version_ids(&s, &env, v2).await,
        vec![(rid("/a2"), "2".into()), (rid("/b1"), "1".into()), (rid("/shared"), "s".into())]
    );
    let (_, model) = s.call("GET", &format!("/api/v1/version/{v2}"), tid, None).await;
    assert_eq!(model["model"]["partial_base"], v1);

    // Remove set-b.
    let (status, answer) =
        s.call("PUT", "/api/v2/version/partial", tid, Some(partial(vec![], json!({}), vec!["set-b"]))).await;
    assert_eq!(status, 200, "{answer}");
    let v3 = answer["data"].as_i64().unwrap();
    assert_eq!(version_ids(&s, &env, v3).await, vec![(rid("/a2"), "2".into()), (rid("/shared"), "s".into())]);

    // Errors: versioned ids, a shared resource that differs, moving between sets, a dangling
    // requires, handler code changes. None of them creates a version.
    let mut versioned = in_set("/c", "c", &[]);
    versioned["id"] = json!(format!("{},v=7", rid("/c")));
    let bad = [
        partial(vec![versioned], json!({rid("/c"): "set-c"}), vec![]),
        partial(vec![in_set("/shared", "changed", &[])], json!({}), vec![]),
        partial(vec![in_set("/a2", "2", &[])], json!({rid("/a2"): "set-c"}), vec![]),
        partial(vec![in_set("/c", "c", &["/gone"])], json!({rid("/c"): "set-c"}), vec![]),
        partial(vec![], json!({}), vec!["set-a", "set-x"])
            .as_object()
            .map(|o| {
                let mut o = o.clone();
                o.insert("resources".into(), json!([in_set("/x", "x", &[])]));
                o.insert("resource_sets".into(), json!({rid("/x"): "set-a"}));
                Value::Object(o)
            })
            .unwrap(),
    ];
    for body in bad {
        let (status, answer) = s.call("PUT", "/api/v2/version/partial", tid, Some(body.clone())).await;
        assert_eq!(status, 400, "{body} -> {answer}");
        assert!(answer["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    let (status, answer) =
        s.call("PUT", "/api/v2/version/partial", tid, Some(json!({"resources": [], "oops": 1}))).await;
    assert_eq!(status, 400, "{answer}");

    // Handler code: a change needs allow_handler_code_update.
    let mut with_code = partial(vec![], json!({}), vec![]);
    with_code["module_version_info"] = json!({"fs": {"name": "fs", "version": "1.0.0"}});
    let (status, _) = s.call("PUT", "/api/v2/version/partial", tid, Some(with_code.clone())).await;
    assert_eq!(status, 200, "a module new to the environment is fine");
    with_code["module_version_info"] = json!({"fs": {"name": "fs", "version": "2.0.0"}});
    let (status, answer) = s.call("PUT", "/api/v2/version/partial", tid, Some(with_code.clone())).await;
    assert_eq!(status, 400, "{answer}");
    with_code["allow_handler_code_update"] = json!(true);
    let (status, answer) = s.call("PUT", "/api/v2/version/partial", tid, Some(with_code)).await;
    assert_eq!(status, 200, "{answer}");
}

/// `GET /api/v1/version/<v>` streams its resources a page at a time: every one arrives once, in
/// id order, across page boundaries, and the body is one JSON document.
#[tokio::test]
async fn a_whole_version_streams_every_resource_once() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let version = reserve(&s, &env).await;
    let n = 2345;
    let resources: Vec<Value> = (0..n).map(|i| file(&format!("/f{i:05}"), &[])).collect();
    let (status, body) = put(&s, &env, version, resources, json!({})).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = s.call("GET", &format!("/api/v1/version/{version}"), Some(&env), None).await;
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
