//! Access policies (`[server] authorization-provider = policy-engine`, docs/security.md): a real
//! server deciding users' calls with a Rego policy file, and the `inmanta policy-engine`
//! commands. That the built-in policy decides as the legacy rules do, for every role and label,
//! is a unit test of orchestrator/src/auth/policy.rs.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{BIN, TestServer, client_with, fresh_database};
use serde_json::{Value, json};

/// A policy file in a directory of its own (the server's state directory is made at start).
fn policy_file(rego: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("policy.rego");
    std::fs::write(&path, rego).expect("write the policy");
    (dir, path.display().to_string())
}

async fn start_with_policy(path: &str) -> TestServer {
    TestServer::start_with(&[
        ("INMANTA_SERVER_AUTHORIZATION_PROVIDER", "policy-engine"),
        ("INMANTA_POLICY_ENGINE_POLICY_FILE", path),
    ])
    .await
}

/// A user without any role, logged in; their token.
async fn user_without_roles(s: &TestServer, name: &str) -> String {
    let client = s.client();
    client.create_user(name, "A-long-password-1").await.expect("create the user");
    client.login(name, "A-long-password-1").await.expect("log in").token
}

async fn call_as(s: &TestServer, token: &str, method: &str, path: &str, tid: Option<&str>) -> (u16, Value) {
    send_as(s, token, method, path, tid, None).await
}

async fn send_as(
    s: &TestServer,
    token: &str,
    method: &str,
    path: &str,
    tid: Option<&str>,
    body: Option<&Value>,
) -> (u16, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
    let mut request = client_with(Some(token)).request(method, format!("{}{path}", s.url));
    if let Some(tid) = tid {
        request = request.header("X-Inmanta-tid", tid);
    }
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_custom_policy_grants_a_user_without_roles_read_on_one_endpoint() {
    let (_dir, path) = policy_file(
        r#"package policy

roles := ["auditor"]

default allow := false

allow if input.token["urn:inmanta:is_admin"] == true

# Rita has no role anywhere, yet reads the resources of any environment.
allow if {
    input.request.endpoint_id == "GET /api/v2/resource"
    input.token.sub == "rita"
    data.endpoints[input.request.endpoint_id].read_only
}
"#,
    );
    let s = start_with_policy(&path).await;
    let env = s.new_environment("p", "e").await.to_string();
    let rita = user_without_roles(&s, "rita").await;
    // The roles the policy lists are created at start.
    let (_, roles) = s.call("GET", "/api/v2/role", None, None).await;
    assert!(roles["data"].as_array().is_some_and(|r| r.iter().any(|r| r == "auditor")), "{roles}");

    let (status, body) = call_as(&s, &rita, "GET", "/api/v2/resource", Some(&env)).await;
    assert_eq!(status, 200, "the policy lets her read resources: {body}");
    assert!(body["data"].is_array(), "{body}");

    // Nothing else: the next read is refused with a JSON message naming what is missing.
    let (status, body) = call_as(&s, &rita, "GET", "/api/v2/agents", Some(&env)).await;
    assert_eq!(status, 403, "{body}");
    let message = body["message"].as_str().expect("a JSON message");
    assert!(message.contains("access policy") && message.contains("GET /api/v2/agents"), "{message}");
    assert!(message.contains("agent.read") && message.contains(&path), "{message}");

    // Under the legacy rules the same user reads nothing of the environment.
    let legacy = TestServer::start().await;
    let env = legacy.new_environment("p", "e").await.to_string();
    let rita = user_without_roles(&legacy, "rita").await;
    assert_eq!(call_as(&legacy, &rita, "GET", "/api/v2/resource", Some(&env)).await.0, 403);
}

#[tokio::test]
async fn a_custom_policy_can_deny_an_admin_a_write() {
    let (_dir, path) = policy_file(
        r#"package policy

default allow := false

# Admins may do anything but halt or resume an environment.
allow if {
    input.token["urn:inmanta:is_admin"] == true
    not halting
}

halting if data.endpoints[input.request.endpoint_id].auth_label == "environment.halt-resume"
"#,
    );
    let s = start_with_policy(&path).await;
    let env = s.new_environment("p", "e").await;
    let (status, body) = s.call("POST", "/api/v2/actions/environment/halt", Some(&env.to_string()), None).await;
    assert_eq!(status, 403, "{body}");
    let message = body["message"].as_str().expect("a JSON message");
    assert!(message.contains("POST /api/v2/actions/environment/halt"), "{message}");
    assert!(message.contains("environment.halt-resume") && message.contains(&env.to_string()), "{message}");
    // The admin's other calls go through, and the environment was not halted.
    let (status, body) = s.call("GET", &format!("/api/v2/environment/{env}"), None, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["halted"], false, "{body}");

    // Tokens of agents and the compiler follow the legacy rules whatever the policy says.
    let agent = s.environment_token(&env.to_string(), &["agent"]).await;
    let (status, body) = call_as(&s, &agent, "GET", "/api/v2/environment_settings", Some(&env.to_string())).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = call_as(&s, &agent, "GET", "/api/v2/resource", Some(&env.to_string())).await;
    assert_eq!(status, 403, "an API-only endpoint stays closed to an agent token: {body}");
}

#[tokio::test]
async fn a_policy_decides_on_a_field_of_the_body() {
    let (_dir, path) = policy_file(
        r#"package policy

default allow := false

allow if input.token["urn:inmanta:is_admin"] == true

# Carl may turn auto_deploy off, never on: the setting is the path's `id`, the value the body's.
allow if {
    input.request.endpoint_id == "POST /api/v2/environment_settings/<id>"
    input.token.sub == "carl"
    input.request.parameters.id == "auto_deploy"
    input.request.parameters.value == false
}

# And read resources five at a time: the query's `limit` is a number, as the endpoint reads it.
allow if {
    input.request.endpoint_id == "GET /api/v2/resource"
    input.token.sub == "carl"
    input.request.parameters.limit == 5
}
"#,
    );
    let s = start_with_policy(&path).await;
    let env = s.new_environment("p", "e").await.to_string();
    let carl = user_without_roles(&s, "carl").await;
    let setting = "/api/v2/environment_settings/auto_deploy";
    let (status, body) = send_as(&s, &carl, "POST", setting, Some(&env), Some(&json!({"value": true}))).await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = send_as(&s, &carl, "POST", setting, Some(&env), Some(&json!({"value": false}))).await;
    assert_eq!(status, 200, "the body's value is false: {body}");
    let (_, answer) = s.call("GET", setting, Some(&env), None).await;
    assert_eq!(answer["data"]["settings"]["auto_deploy"], false, "{answer}");
    // A query parameter of the same name does not stand in for the body's field, which is the
    // value the server sets.
    let (status, body) =
        send_as(&s, &carl, "POST", &format!("{setting}?value=false"), Some(&env), Some(&json!({"value": true}))).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(call_as(&s, &carl, "GET", "/api/v2/resource?limit=5", Some(&env)).await.0, 200);
    assert_eq!(call_as(&s, &carl, "GET", "/api/v2/resource?limit=6", Some(&env)).await.0, 403);
}

/// Inmanta 20.1's own `default_policy.rego`, read from the reference install at test time.
fn inmanta_default_policy() -> Option<String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/inmanta-reference.sh");
    let locate = "import inmanta.protocol.auth as a, os; print(os.path.join(os.path.dirname(a.__file__), 'default_policy.rego'))";
    let found =
        Command::new(script).args(["python", "-c", locate]).output().map_err(|e| e.to_string()).and_then(|out| {
            let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
            match out.status.success() && std::path::Path::new(&path).is_file() {
                true => Ok(path),
                false => Err(String::from_utf8_lossy(&out.stderr).to_string()),
            }
        });
    test_support::require("the reference install of Inmanta 20.1 (scripts/inmanta-reference.sh install)", found)
}

/// With Inmanta's own default policy as the policy file, each of Inmanta's default roles gets
/// what that policy grants it on Inmanta (read from its rules: the label sets per role, the
/// read-only server-wide endpoints for everyone, noc's compile without `update`).
#[tokio::test]
async fn inmanta_s_default_policy_grants_its_roles_what_it_grants_on_inmanta() {
    let Some(path) = inmanta_default_policy() else { return };
    let s = start_with_policy(&path).await;
    let env = s.new_environment("p", "e").await.to_string();
    const ROLES: [&str; 5] = ["read-only", "noc", "operator", "environment-admin", "environment-expert-admin"];
    let mut users = vec![("nobody", user_without_roles(&s, "nobody").await)];
    for role in ROLES {
        let name = format!("user-{role}");
        let token = user_without_roles(&s, &name).await;
        let assign = json!({"environment": env, "role": role});
        let (status, body) = s.call("POST", &format!("/api/v2/role_assignment/{name}"), None, Some(assign)).await;
        assert_eq!(status, 200, "{body}");
        users.push((role, token));
    }
    let everyone: &[&str] =
        &["nobody", "read-only", "noc", "operator", "environment-admin", "environment-expert-admin"];
    let readers: &[&str] = &ROLES;
    let noc_and_admins: &[&str] = &["noc", "environment-admin", "environment-expert-admin"];
    let admins: &[&str] = &["environment-admin", "environment-expert-admin"];
    let experts: &[&str] = &["environment-expert-admin"];
    let no_one: &[&str] = &[];
    let missing = uuid::Uuid::new_v4();
    let notify = format!("/api/v1/notify/{env}");
    // (method, path, body, the roles allowed)
    let calls: Vec<(&str, String, Option<Value>, &[&str])> = vec![
        ("GET", "/api/v2/resource".into(), None, readers),
        ("GET", "/api/v2/agents".into(), None, readers),
        ("GET", "/api/v2/environment_settings".into(), None, readers),
        // Read-only server-wide endpoints are open to every signed-in user, users' list included.
        ("GET", "/api/v2/project".into(), None, everyone),
        ("GET", "/api/v2/user".into(), None, everyone),
        ("GET", "/api/v2/current_user".into(), None, everyone),
        ("GET", "/api/v2/role".into(), None, everyone),
        // Reading tokens is `token`: expert admins only, although it only reads.
        ("GET", "/api/v2/environment_auth".into(), None, experts),
        ("PATCH", format!("/api/v2/notification/{missing}"), Some(json!({"read": true})), noc_and_admins),
        ("POST", "/api/v2/environment_settings/auto_deploy".into(), Some(json!({"value": false})), admins),
        // No role writes parameters in Inmanta's default policy.
        ("PUT", "/api/v2/parameters/p1".into(), Some(json!({"value": "v", "source": "user"})), no_one),
        ("POST", "/api/v2/role".into(), Some(json!({"name": "newrole"})), no_one),
        // noc compiles without `update` only; `update` is true when not given.
        ("POST", notify.clone(), Some(json!({"update": false})), noc_and_admins),
        ("POST", notify.clone(), Some(json!({})), admins),
        ("GET", format!("{notify}?update=false"), None, noc_and_admins),
        ("GET", notify.clone(), None, admins),
        ("DELETE", format!("/api/v2/environment_auth/{missing}"), None, experts),
    ];
    let mut failures = Vec::new();
    for (method, path, body, allowed) in &calls {
        for (who, token) in &users {
            let (status, answer) = send_as(&s, token, method, path, Some(&env), body.as_ref()).await;
            let expected = allowed.contains(who);
            if (status == 403) == expected {
                failures.push(format!(
                    "{who}: {method} {path} -> {status} {answer} (expected {})",
                    if expected { "allowed" } else { "403" }
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} decisions differ from Inmanta's default policy:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Starts `inmanta server` with `env` and waits for it to exit; its exit status and stderr.
async fn start_expecting_failure(env: &[(&str, &str)]) -> (std::process::ExitStatus, String) {
    let state_dir = tempfile::tempdir().expect("temp dir");
    let database_url = fresh_database(state_dir.path()).await;
    let mut child = Command::new(BIN)
        .args(["server", "--bind-port", "0", "--database-url", &database_url, "--state-dir"])
        .arg(state_dir.path())
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start inmanta server");
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the server kept running with a broken access policy");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut stderr).expect("read stderr");
    (status, stderr)
}

#[tokio::test]
async fn a_broken_policy_file_stops_the_start_naming_its_line_and_column() {
    let (_dir, path) =
        policy_file("package policy\n\ndefault allow := false\n\nallow if {\n    input.token.sub ==\n}\n");
    let (status, stderr) = start_expecting_failure(&[
        ("INMANTA_SERVER_AUTHORIZATION_PROVIDER", "policy-engine"),
        ("INMANTA_POLICY_ENGINE_POLICY_FILE", &path),
    ])
    .await;
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("access policy"), "{stderr}");
    // file:line:column of the error, as regorus reports it.
    assert!(stderr.contains(&format!("{path}:6:")) || stderr.contains(&format!("{path}:7:")), "{stderr}");

    // A policy file that is not there is named too.
    let missing = format!("{path}.missing");
    let (status, stderr) = start_expecting_failure(&[
        ("INMANTA_SERVER_AUTHORIZATION_PROVIDER", "policy-engine"),
        ("INMANTA_POLICY_ENGINE_POLICY_FILE", &missing),
    ])
    .await;
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains(&missing), "{stderr}");

    // And so is a provider this server does not know.
    let (status, stderr) = start_expecting_failure(&[("INMANTA_SERVER_AUTHORIZATION_PROVIDER", "opa")]).await;
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("legacy or policy-engine"), "{stderr}");
}

fn inmanta(args: &[&str]) -> String {
    let output = Command::new(BIN).args(args).output().expect("run inmanta");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("UTF-8")
}

#[test]
fn print_endpoint_data_prints_what_inmanta_prints() {
    let text = inmanta(&["policy-engine", "print-endpoint-data"]);
    assert!(text.starts_with("{\n    \"endpoints\": {\n"), "indented by four spaces, as Inmanta's: {text:.200}");
    let data: Value = serde_json::from_str(&text).expect("JSON");
    let endpoints = data["endpoints"].as_object().expect("an endpoints object");
    assert!(endpoints.len() > 100, "every endpoint: {}", endpoints.len());
    for (id, endpoint) in endpoints {
        let keys: Vec<&str> = endpoint.as_object().expect("an object").keys().map(String::as_str).collect();
        assert_eq!(keys, ["auth_label", "client_types", "environment_param", "read_only"], "{id}");
        let types = endpoint["client_types"].as_array().expect("a list");
        assert!(types.iter().all(|t| ["api", "agent", "compiler"].contains(&t.as_str().unwrap_or_default())), "{id}");
        assert!(endpoint["auth_label"].is_string() && endpoint["read_only"].is_boolean(), "{id}");
        assert!(endpoint["environment_param"].is_string() || endpoint["environment_param"].is_null(), "{id}");
    }
    // Endpoints Inmanta has too, with Inmanta's ids and metadata.
    assert_eq!(
        endpoints["GET /api/v2/resource"],
        json!({"auth_label": "resource.read", "client_types": ["api"], "environment_param": "X-Inmanta-tid", "read_only": true})
    );
    assert_eq!(endpoints["POST /api/v1/notify/<id>"]["environment_param"], "id");
    assert_eq!(endpoints["POST /api/v1/notify/<id>"]["auth_label"], "compiler.execute");
    let password = &endpoints["PATCH /api/v2/user/<username>/password"];
    assert_eq!(password["auth_label"], "user.change-password");
    assert_eq!(password["environment_param"], Value::Null);
    assert_eq!(password["read_only"], false);
    // No entry for what needs no credentials (login, health), as in Inmanta.
    assert!(!endpoints.contains_key("POST /api/v2/login"));
    // The console's checks have entries of their own.
    assert_eq!(endpoints["console deploy in environment"]["environment_param"], "environment");
}

#[test]
fn print_default_policy_prints_the_built_in_policy() {
    let text = inmanta(&["policy-engine", "print-default-policy"]);
    assert!(text.contains("package policy") && text.contains("default allow := false"), "{text}");
    assert_eq!(text, include_str!("../../../orchestrator/src/auth/default_policy.rego"));
}
