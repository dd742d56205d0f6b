//! The REST API over a real socket against a started `inmanta server` process.
//! Runs on SQLite, or on PostgreSQL when `INMANTA_TEST_POSTGRES` is set.

use crate::common;

use api::environment::{EnvironmentCreate, EnvironmentModify};
use api::{SettingType, SettingValue};
use common::{TestServer, refusal, refused};
use serde_json::{Value, json};
use uuid::Uuid;

/// A new project's id, as text for the raw calls.
async fn project(s: &TestServer, name: &str) -> String {
    s.client().create_project(name).await.unwrap().id.to_string()
}

/// A new environment's id, as text for the raw calls.
async fn environment(s: &TestServer, project_id: &str, name: &str) -> String {
    let body = EnvironmentCreate { project_id: uuid(project_id), name: name.into(), ..Default::default() };
    s.client().create_environment(&body).await.unwrap().id.to_string()
}

fn uuid(id: &str) -> Uuid {
    id.parse().unwrap()
}

fn message(body: &Value) -> &str {
    body["message"].as_str().unwrap_or_else(|| panic!("error without message: {body}"))
}

#[tokio::test]
async fn health_and_server_status() {
    let s = TestServer::start().await;
    // Inmanta's answer (`data`: null) with our checks beside it.
    let (status, body) = s.call("GET", "/api/v2/health", None, None).await;
    assert_eq!((status, &body["data"]), (200, &Value::Null), "{body}");
    // OK, or a warning when the test machine's disk is almost full.
    assert!(body["status"] == "OK" || body["status"] == "Warning", "{body}");
    let checks: Vec<&str> = body["checks"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(checks, ["database", "database_writable", "disk_space", "scheduler", "scheduler_lease"], "{body}");
    let (status, body) = s.call("GET", "/api/v1/serverstatus", None, None).await;
    assert_eq!(status, 200);
    let data = &body["data"];
    assert_eq!(data["product"], "Inmanta Service Orchestrator");
    // OK, or the same warning as health's when the test machine's disk is almost full.
    assert!(data["status"] == "OK" || data["status"] == "Warning", "{body}");
    let slices: Vec<&str> = data["slices"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert!(slices.contains(&"core.database"), "{slices:?}");
}

#[tokio::test]
async fn projects_v2_lifecycle_and_errors() {
    let s = TestServer::start().await;
    let client = s.client();
    let web = client.create_project("web").await.unwrap();
    assert_eq!(web.name, "web");
    assert!(web.environments.is_empty());
    let id = web.id.to_string();

    let (status, why) = refusal(client.create_project("web").await);
    assert_eq!(status, 409, "duplicate name: {why}");
    assert!(why.contains("already exists"));

    let fixed = "8a0b2a8e-1f40-4a53-9d3a-2d7e0d1e6f00";
    let (status, body) = s.call("PUT", "/api/v2/project", None, Some(json!({"name": "db", "project_id": fixed}))).await;
    assert_eq!((status, body["data"]["id"].as_str()), (200, Some(fixed)));

    // Bad bodies: missing field, wrong type, unknown field, not JSON at all.
    for bad in [json!({}), json!({"name": 3}), json!({"name": "x", "colour": "red"})] {
        let (status, body) = s.call("PUT", "/api/v2/project", None, Some(bad.clone())).await;
        assert_eq!(status, 400, "{bad} -> {body}");
        assert!(message(&body).starts_with("Invalid request"), "{body}");
    }
    let raw = s
        .http
        .put(format!("{}/api/v2/project", s.url))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), 400);
    assert!(raw.json::<Value>().await.unwrap()["message"].is_string());

    let projects = client.projects().await.unwrap();
    let names: Vec<&str> = projects.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["db", "web"], "sorted by name");

    assert_eq!(client.rename_project(uuid(&id), "www").await.unwrap().name, "www");
    assert_eq!(refused(client.rename_project(uuid(&id), "db").await), 409, "rename onto another project's name");

    let unknown = uuid::Uuid::new_v4();
    for (what, answer) in
        [("GET", refusal(client.project(unknown).await)), ("DELETE", refusal(client.delete_project(unknown).await))]
    {
        let (status, why) = answer;
        assert_eq!(status, 404, "{what}: {why}");
        assert!(why.contains(&unknown.to_string()));
    }
    assert_eq!(refused(client.rename_project(unknown, "z").await), 404);
    let (status, body) = s.call("GET", "/api/v2/project/not-a-uuid", None, None).await;
    assert_eq!(status, 400, "{body}");

    environment(&s, &id, "prod").await;
    let (status, why) = refusal(client.delete_project(uuid(&id)).await);
    assert_eq!(status, 409, "project with environments: {why}");
    assert!(why.contains("prod"));
    let project = client.project(uuid(&id)).await.unwrap();
    assert_eq!(project.environments[0].name, "prod", "{project:?}");

    let (status, body) = s.call("DELETE", &format!("/api/v2/project/{fixed}"), None, None).await;
    assert_eq!((status, body), (200, json!({"data": null})));
    assert_eq!(refused(client.project(uuid(fixed)).await), 404);
}

#[tokio::test]
async fn projects_v1_shapes() {
    let s = TestServer::start().await;
    let (status, body) = s.call("PUT", "/api/v1/project", None, Some(json!({"name": "p1"}))).await;
    assert_eq!(status, 200);
    let id = body["project"]["id"].as_str().unwrap().to_string();
    let env = environment(&s, &id, "e1").await;
    let (_, body) = s.call("GET", "/api/v1/project", None, None).await;
    assert_eq!(body["projects"][0]["environments"], json!([env]), "v1 lists environment ids");
    let (_, body) = s.call("GET", &format!("/api/v1/project/{id}"), None, None).await;
    assert_eq!(body["project"]["name"], "p1");
    let (status, body) = s.call("POST", &format!("/api/v1/project/{id}"), None, Some(json!({"name": "p2"}))).await;
    assert_eq!((status, body["project"]["name"].as_str()), (200, Some("p2")));
    let (status, _) = s.call("DELETE", &format!("/api/v1/project/{id}"), None, None).await;
    assert_eq!(status, 409);
    s.call("DELETE", &format!("/api/v1/environment/{env}"), None, None).await;
    let (status, body) = s.call("DELETE", &format!("/api/v1/project/{id}"), None, None).await;
    assert_eq!((status, body), (200, Value::Null), "v1 delete answers an empty 200");
}

#[tokio::test]
async fn environments_v2_lifecycle_and_errors() {
    let s = TestServer::start().await;
    let p = project(&s, "infra").await;
    let other = project(&s, "apps").await;
    let client = s.client();
    let body = EnvironmentCreate {
        project_id: uuid(&p),
        name: "prod".into(),
        repository: Some("https://git.example/infra.git".into()),
        branch: Some("main".into()),
        description: Some("production".into()),
        ..Default::default()
    };
    let env = client.create_environment(&body).await.unwrap();
    let id = env.id.to_string();
    assert_eq!(env.repo_url, "https://git.example/infra.git");
    assert_eq!(env.repo_branch, "main");
    assert!(!env.halted);
    assert!(!env.is_marked_for_deletion);
    assert_eq!(env.settings["auto_deploy"], SettingValue::Bool(true));
    assert_eq!(env.settings["recompile_backoff"], SettingValue::Float(0.1));
    assert_eq!(env.settings.len(), 15);

    let cases = [
        (json!({"project_id": p, "name": "prod"}), 400, "duplicate name in a project"),
        (json!({"project_id": p, "name": "x", "repository": "r"}), 400, "repository without branch"),
        (json!({"project_id": p, "name": "x", "branch": "b"}), 400, "branch without repository"),
        (json!({"project_id": uuid::Uuid::new_v4(), "name": "x"}), 404, "unknown project"),
        (json!({"project_id": "nope", "name": "x"}), 400, "bad project id"),
        (json!({"project_id": p, "name": ""}), 400, "empty name"),
        (json!({"project_id": p, "name": "x", "icon": "gif;base64,AAA"}), 400, "bad icon"),
        (json!({"project_id": p, "name": "x", "environment_id": id}), 409, "id taken"),
    ];
    for (body, want, why) in cases {
        let (status, answer) = s.call("PUT", "/api/v2/environment", None, Some(body)).await;
        assert_eq!(status, want, "{why}: {answer}");
        message(&answer);
    }
    // The same name in another project is fine.
    let staging = environment(&s, &other, "prod").await;

    let (_, body) = s.call("GET", &format!("/api/v2/environment/{id}"), None, None).await;
    assert_eq!(body["data"]["description"], "", "no details unless asked (Inmanta answers empty strings): {body}");
    let (_, body) = s.call("GET", &format!("/api/v2/environment/{id}?details=true"), None, None).await;
    assert_eq!(body["data"]["description"], "production");
    assert_eq!(refused(client.environment(Uuid::new_v4()).await), 404);

    let envs = client.environments().await.unwrap();
    let order: Vec<(String, &str)> = envs.iter().map(|e| (e.project_id.to_string(), e.name.as_str())).collect();
    assert_eq!(order, [(other.clone(), "prod"), (p.clone(), "prod")], "sorted by project name then name");

    // Rename, move to the other project (clash there), change repository.
    let body = EnvironmentModify {
        name: "production".into(),
        branch: Some("v2".into()),
        repository: Some("r2".into()),
        ..Default::default()
    };
    let renamed = client.modify_environment(uuid(&id), &body).await.unwrap();
    assert_eq!((renamed.name.as_str(), renamed.repo_branch.as_str()), ("production", "v2"));
    let body = EnvironmentModify { name: "production".into(), project_id: Some(uuid(&p)), ..Default::default() };
    assert_eq!(refused(client.modify_environment(uuid(&staging), &body).await), 400, "moving onto a taken name");
    let body = EnvironmentModify { name: "staging".into(), project_id: Some(uuid(&p)), ..Default::default() };
    assert_eq!(client.modify_environment(uuid(&staging), &body).await.unwrap().project_id, uuid(&p));

    let (status, body) = s.call("DELETE", &format!("/api/v2/decommission/{id}"), None, None).await;
    assert_eq!((status, body), (200, json!({"data": null})));
    client.environment(uuid(&id)).await.expect("clear keeps the environment");

    client.delete_environment(uuid(&id)).await.unwrap();
    assert_eq!(refused(client.environment(uuid(&id)).await), 404);
    assert_eq!(refused(client.delete_environment(uuid(&id)).await), 404);
    assert_eq!(refused(client.clear_environment(uuid(&id)).await), 404);
}

#[tokio::test]
async fn environments_v1_shapes() {
    let s = TestServer::start().await;
    let p = project(&s, "p").await;
    let (status, body) = s
        .call(
            "PUT",
            "/api/v1/environment",
            None,
            Some(json!({"project_id": p, "name": "dev", "repository": "r", "branch": "b"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["environment"]["project"], p.as_str(), "v1 says project, not project_id");
    assert!(body["environment"].get("project_id").is_none());
    let id = body["environment"]["id"].as_str().unwrap().to_string();
    let (_, body) = s.call("GET", "/api/v1/environment", None, None).await;
    assert_eq!(body["environments"][0]["name"], "dev");
    let (_, body) = s.call("GET", &format!("/api/v1/environment/{id}"), None, None).await;
    assert_eq!(body["environment"]["repo_url"], "r");
    let (status, body) =
        s.call("POST", &format!("/api/v1/environment/{id}"), None, Some(json!({"name": "dev2"}))).await;
    assert_eq!((status, body["environment"]["name"].as_str()), (200, Some("dev2")));
    assert_eq!(body["environment"]["repo_url"], "r", "absent fields are kept");
    let (status, body) = s.call("DELETE", &format!("/api/v1/decommission/{id}"), None, None).await;
    assert_eq!((status, body), (200, Value::Null));
    let (status, body) = s.call("DELETE", &format!("/api/v1/environment/{id}"), None, None).await;
    assert_eq!((status, body), (200, Value::Null));
}

#[tokio::test]
async fn protected_environment_cannot_be_cleared_or_deleted() {
    let s = TestServer::start().await;
    let p = project(&s, "p").await;
    let id = environment(&s, &p, "prod").await;
    let client = s.client();
    client.set_environment_setting(uuid(&id), "protected_environment", true).await.unwrap();
    for path in [
        format!("/api/v2/environment/{id}"),
        format!("/api/v1/environment/{id}"),
        format!("/api/v2/decommission/{id}"),
        format!("/api/v1/decommission/{id}"),
    ] {
        let (status, body) = s.call("DELETE", &path, None, None).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert!(message(&body).contains("protected"));
    }
    client.environment(uuid(&id)).await.expect("still there");
    client.delete_environment_setting(uuid(&id), "protected_environment").await.unwrap();
    client.delete_environment(uuid(&id)).await.expect("deletable once unprotected");
}

#[tokio::test]
async fn halt_and_resume_take_the_environment_from_the_header() {
    let s = TestServer::start().await;
    let p = project(&s, "p").await;
    let id = environment(&s, &p, "prod").await;
    let (status, body) = s.call("POST", "/api/v2/actions/environment/halt", None, None).await;
    assert_eq!(status, 400, "missing header: {body}");
    assert!(message(&body).contains("X-Inmanta-tid"));
    let (status, _) = s.call("POST", "/api/v2/actions/environment/halt", Some("garbage"), None).await;
    assert_eq!(status, 400);
    let unknown = uuid::Uuid::new_v4().to_string();
    let (status, _) = s.call("POST", "/api/v2/actions/environment/halt", Some(&unknown), None).await;
    assert_eq!(status, 404);

    let response = s
        .http
        .post(format!("{}/api/v2/actions/environment/halt", s.url))
        .header("X-Inmanta-tid", &id)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers().get("x-inmanta-tid").unwrap(), id.as_str(), "tid echoed");
    let client = s.client();
    assert!(client.environment(uuid(&id)).await.unwrap().halted);
    client.resume_environment(uuid(&id)).await.unwrap();
    assert!(!client.environment(uuid(&id)).await.unwrap().halted);
}

#[tokio::test]
async fn settings_v2_with_definitions_types_and_protection() {
    let s = TestServer::start().await;
    let p = project(&s, "p").await;
    let id = environment(&s, &p, "prod").await;
    let env = Some(id.as_str());
    let client = s.client();

    let all = client.environment_settings(uuid(&id)).await.unwrap();
    let definition = &all.definition;
    assert_eq!(definition.len(), 15);
    assert_eq!(definition["auto_deploy"].kind, SettingType::Bool);
    assert_eq!(definition["auto_deploy"].default, SettingValue::Bool(true));
    assert_eq!(definition["recompile_backoff"].kind, SettingType::PositiveFloat);
    assert!(definition["reset_deploy_progress_on_start"].agent_restart);
    assert_eq!(all.settings["available_versions_to_keep"], SettingValue::Int(100));

    let server = &s;
    let set = move |name: &str, value: Value| {
        let path = format!("/api/v2/environment_settings/{name}");
        async move { server.call("POST", &path, env, Some(json!({"value": value}))).await }
    };
    assert_eq!(set("auto_deploy", json!(false)).await.0, 200);
    assert_eq!(set("available_versions_to_keep", json!("5")).await.0, 200, "numeric strings are accepted");
    assert_eq!(set("autostart_agent_deploy_interval", json!(30)).await.0, 200);
    let (status, body) = set("auto_deploy", json!("perhaps")).await;
    assert_eq!(status, 400, "{body}");
    assert!(message(&body).contains("auto_deploy"));
    assert_eq!(set("available_versions_to_keep", json!(-3)).await.0, 400);
    assert_eq!(set("recompile_backoff", json!(-1.0)).await.0, 400);
    let (status, body) = set("autostart_agent_deploy_interval", json!("90000")).await;
    assert_eq!(status, 400, "deploy interval above the repair interval: {body}");
    assert_eq!(set("no_such_setting", json!(1)).await.0, 404);
    assert_eq!(set("push_on_auto_deploy", json!(true)).await.0, 404, "removed settings are unknown");
    let (status, _) = s.call("POST", "/api/v2/environment_settings/auto_deploy", env, Some(json!({}))).await;
    assert_eq!(status, 400, "no value");
    let (status, _) = s.call("GET", "/api/v2/environment_settings", None, None).await;
    assert_eq!(status, 400, "no environment header");

    let one = client.environment_setting(uuid(&id), "auto_deploy").await.unwrap();
    assert_eq!(one.settings, [("auto_deploy".to_string(), SettingValue::Bool(false))].into());
    // As Inmanta: one value, every definition.
    assert_eq!(one.definition.len(), api::settings::definitions().len());
    assert_eq!(one.definition["auto_deploy"].protected_by, None);
    let one = client.environment_setting(uuid(&id), "available_versions_to_keep").await.unwrap();
    assert_eq!(one.settings["available_versions_to_keep"], SettingValue::Int(5));
    assert_eq!(refused(client.environment_setting(uuid(&id), "bogus").await), 404);

    client.delete_environment_setting(uuid(&id), "auto_deploy").await.unwrap();
    let one = client.environment_setting(uuid(&id), "auto_deploy").await.unwrap();
    assert_eq!(one.settings["auto_deploy"], SettingValue::Bool(true), "back to the default");

    // project.yml protection: set by the compiler (its client type only).
    let protect_body =
        json!({"settings": {"auto_deploy": false, "server_compile": false}, "protected_by": "project.yml"});
    let (status, body) =
        s.call("POST", "/api/v2/protected_environment_settings", env, Some(protect_body.clone())).await;
    assert_eq!(status, 403, "users may not: {body}");
    let compiler = common::client_with(Some(&s.environment_token(&id, &["compiler"]).await));
    let protect = |settings: Value| {
        compiler
            .post(format!("{}/api/v2/protected_environment_settings", s.url))
            .header("X-Inmanta-tid", &id)
            .json(&settings)
            .send()
    };
    assert_eq!(protect(protect_body.clone()).await.unwrap().status(), 200);
    let (status, body) = set("auto_deploy", json!(true)).await;
    assert_eq!(status, 403, "{body}");
    assert!(message(&body).contains("project.yml"));
    assert_eq!(s.call("DELETE", "/api/v2/environment_settings/auto_deploy", env, None).await.0, 403);
    let all = client.environment_settings(uuid(&id)).await.unwrap();
    assert_eq!(all.settings["server_compile"], SettingValue::Bool(false));
    assert!(all.definition["auto_deploy"].protected);
    assert_eq!(all.definition["auto_deploy"].protected_by.as_deref(), Some("project.yml"));
    assert!(!all.definition["auto_full_compile"].protected);
    // A later export that no longer sets server_compile releases it.
    let later = json!({"settings": {"auto_deploy": false}, "protected_by": "project.yml"});
    assert_eq!(protect(later).await.unwrap().status(), 200);
    assert_eq!(set("server_compile", json!(true)).await.0, 200);
}

#[tokio::test]
async fn settings_v1_shapes() {
    let s = TestServer::start().await;
    let p = project(&s, "p").await;
    let id = environment(&s, &p, "prod").await;
    let env = Some(id.as_str());
    let (_, body) = s.call("GET", "/api/v1/environment_settings", env, None).await;
    assert_eq!(body["settings"]["notification_retention"], 365);
    assert_eq!(body["metadata"]["notification_retention"]["type"], "int");
    let (status, body) =
        s.call("POST", "/api/v1/environment_settings/notification_retention", env, Some(json!({"value": 30}))).await;
    assert_eq!((status, body), (200, Value::Null));
    let (_, body) = s.call("GET", "/api/v1/environment_settings/notification_retention", env, None).await;
    assert_eq!(body["value"], 30);
    assert!(body["metadata"]["notification_retention"].is_object());
    let (status, _) =
        s.call("POST", "/api/v1/environment_settings/notification_retention", env, Some(json!({"value": "x"}))).await;
    assert_eq!(status, 400);
    let (status, _) = s.call("DELETE", "/api/v1/environment_settings/notification_retention", env, None).await;
    assert_eq!(status, 200);
    let (_, body) = s.call("GET", "/api/v1/environment_settings/notification_retention", env, None).await;
    assert_eq!(body["value"], 365);
}

#[tokio::test]
async fn every_error_is_json() {
    let s = TestServer::start_with(&[("INMANTA_SERVER_MAX_REQUEST_BODY_SIZE", "2048")]).await;
    let (status, body) = s.call("GET", "/api/v2/nothing/here", None, None).await;
    assert_eq!(status, 404);
    assert!(message(&body).contains("/api/v2/nothing/here"));
    let (status, body) = s.call("PATCH", "/api/v2/project", None, Some(json!({}))).await;
    assert_eq!(status, 405, "{body}");
    message(&body);
    let big = "x".repeat(4096);
    let (status, body) = s.call("PUT", "/api/v2/project", None, Some(json!({"name": big}))).await;
    assert_eq!(status, 413, "{body}");
    assert!(message(&body).contains("max-request-body-size"));
}

#[tokio::test]
async fn gzip_request_bodies_are_accepted() {
    use std::io::Write;
    let s = TestServer::start().await;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(br#"{"name": "zipped"}"#).unwrap();
    let response = s
        .http
        .put(format!("{}/api/v2/project", s.url))
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .body(encoder.finish().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.json::<Value>().await.unwrap()["data"]["name"], "zipped");
}

#[tokio::test]
async fn sigkill_loses_nothing_acknowledged() {
    let mut s = TestServer::start().await;
    let p = project(&s, "durable").await;
    let id = environment(&s, &p, "prod").await;
    s.client().set_environment_setting(uuid(&id), "auto_deploy", false).await.unwrap();
    s.client().halt_environment(uuid(&id)).await.unwrap();
    s.kill_and_restart();
    let env = s.client().environment(uuid(&id)).await.unwrap();
    assert_eq!(env.name, "prod");
    assert!(env.halted);
    assert_eq!(env.settings["auto_deploy"], SettingValue::Bool(false));
    assert_eq!(s.client().project(uuid(&p)).await.unwrap().name, "durable");
}

#[tokio::test]
async fn sigterm_stops_the_server_cleanly() {
    let mut s = TestServer::start().await;
    project(&s, "p").await;
    let status = s.terminate();
    assert!(status.success(), "exit status {status:?}");
}
