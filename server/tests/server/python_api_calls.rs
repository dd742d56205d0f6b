//! Python handlers that call the server's API themselves (`self.get_client()`, docs/modules.md):
//! the handlers of server/tests/fixtures/apicall set a parameter and read it back, read an
//! environment setting, and make calls the server refuses. The server's in-process agents, a
//! remote `inmanta agent` and `inmanta deploy` send them as the agent, in the agent's
//! environment: a parameter lands on the server, another environment's tid is refused with 403,
//! and a refused or failed call fails its resource with the server's message.

use std::path::Path;
use std::process::{Command, Stdio};

use common::{BIN, TestServer};
use serde_json::{Map, Value, json};

use super::common;
use super::python_handlers::{
    Killed, agent_up, copy_dir, log_messages, new_environment, put_version, python, resource, ship_module,
    start_server, status_of, wait_for,
};

async fn modules(s: &TestServer) -> Value {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/apicall");
    let mut info = Map::new();
    info.insert("apicall".into(), ship_module(s, "apicall", &fixture).await);
    Value::Object(info)
}

/// A parameter the handler keeps at `value` in the agent's environment (or in `environment`).
fn param(agent: &str, version: i64, name: &str, value: &str, environment: Option<&str>) -> Value {
    resource(
        format!("apicall::Param[{agent},name={name}],v={version}"),
        json!({"name": name, "value": value, "environment": environment}),
        vec![],
    )
}

/// One call of `method` with `arguments` (the tid is the agent's environment).
fn call(agent: &str, version: i64, name: &str, method: &str, arguments: Value) -> Value {
    resource(
        format!("apicall::Call[{agent},name={name}],v={version}"),
        json!({"name": name, "method": method, "arguments": arguments}),
        vec![],
    )
}

/// The parameter's value on the server; `None` when it has none.
async fn parameter(s: &TestServer, env: &str, name: &str) -> Option<String> {
    let (status, body) = s.call("GET", &format!("/api/v1/parameter/{name}"), Some(env), None).await;
    match status {
        200 => Some(body["parameter"]["value"].as_str().unwrap_or_else(|| panic!("{body}")).to_string()),
        404 => None,
        _ => panic!("GET parameter {name}: {status} {body}"),
    }
}

async fn finished(s: &TestServer, env: &str, expected: &[(&str, &str)]) {
    wait_for("every resource to finish", async || {
        for (rid, status) in expected {
            if status_of(s, env, rid).await != *status {
                return false;
            }
        }
        true
    })
    .await;
}

async fn logged(s: &TestServer, env: &str, rid: &str, text: &str) {
    let logs = log_messages(s, env, rid).await;
    assert!(logs.iter().any(|m| m.contains(text)), "{rid} logged no {text:?}: {logs:#?}");
}

#[tokio::test]
async fn handlers_of_the_servers_agents_call_the_api_as_their_agent() {
    let s = start_server().await;
    let env = new_environment(&s).await;
    let other = s.new_environment("q", "other").await.to_string();
    let modules = modules(&s).await;
    put_version(&s, &env, &modules, |v| {
        vec![
            param("internal", v, "color", "blue", None),
            param("internal", v, "stolen", "x", Some(&other)),
            call("internal", v, "setting", "get_setting", json!({"id": "auto_deploy"})),
            call("internal", v, "versions", "list_versions", json!({})),
            call("internal", v, "missing", "get_param", json!({"id": "nothing-here"})),
        ]
    })
    .await;
    let color = "apicall::Param[internal,name=color]";
    let stolen = "apicall::Param[internal,name=stolen]";
    let setting = "apicall::Call[internal,name=setting]";
    let versions = "apicall::Call[internal,name=versions]";
    let missing = "apicall::Call[internal,name=missing]";
    finished(
        &s,
        &env,
        &[(color, "deployed"), (setting, "deployed"), (stolen, "failed"), (versions, "failed"), (missing, "failed")],
    )
    .await;

    // Set on the server, and read back by the handler.
    assert_eq!(parameter(&s, &env, "color").await.as_deref(), Some("blue"));
    logged(&s, &env, color, "read back blue").await;
    // The environment's own setting, read as the agent.
    logged(&s, &env, setting, "get_setting answered 200").await;
    logged(&s, &env, setting, r#""value": true}"#).await;

    // Another environment's tid: refused before it reaches the server, nothing written there.
    logged(&s, &env, stolen, "answered 403").await;
    logged(&s, &env, stolen, &format!("cannot act on environment {other}")).await;
    assert_eq!(parameter(&s, &other, "stolen").await, None);
    assert_eq!(parameter(&s, &env, "stolen").await, None);

    // What an agent token may not do is refused by the server, with its reason.
    logged(&s, &env, versions, "list_versions answered 403").await;
    logged(&s, &env, versions, "a token for agent may not call this endpoint").await;
    // An error answer fails the resource with the server's message.
    logged(&s, &env, missing, "get_param answered 404").await;

    // A new value is written again by the next deploy.
    put_version(&s, &env, &modules, |v| vec![param("internal", v, "color", "green", None)]).await;
    wait_for("the new value", async || parameter(&s, &env, "color").await.as_deref() == Some("green")).await;
}

#[tokio::test]
async fn handlers_of_a_remote_agent_call_the_api_with_its_token() {
    let s = start_server().await;
    let env = new_environment(&s).await;
    let other = s.new_environment("q", "other").await.to_string();
    let port: u16 = s.url.rsplit(':').next().unwrap().parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let token = s.environment_token(&env, &["agent"]).await;
    let _agent = Killed(
        Command::new(BIN)
            .args(["agent", "--name", "remote1", "-e", &env, "--port", &port.to_string(), "--token", &token])
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .env("INMANTA_AGENT_PYTHON", python())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start inmanta agent"),
    );
    wait_for("the agent to connect", async || agent_up(&s, &env, "remote1").await).await;
    let modules = modules(&s).await;
    put_version(&s, &env, &modules, |v| {
        vec![
            param("remote1", v, "size", "large", None),
            param("remote1", v, "stolen", "x", Some(&other)),
            call("remote1", v, "versions", "list_versions", json!({})),
        ]
    })
    .await;
    let size = "apicall::Param[remote1,name=size]";
    let stolen = "apicall::Param[remote1,name=stolen]";
    let versions = "apicall::Call[remote1,name=versions]";
    finished(&s, &env, &[(size, "deployed"), (stolen, "failed"), (versions, "failed")]).await;
    assert_eq!(parameter(&s, &env, "size").await.as_deref(), Some("large"));
    logged(&s, &env, size, "read back large").await;
    logged(&s, &env, stolen, &format!("cannot act on environment {other}")).await;
    assert_eq!(parameter(&s, &other, "stolen").await, None);
    logged(&s, &env, versions, "a token for agent may not call this endpoint").await;
}

/// `inmanta deploy` (all-in-one): the embedded server answers a handler's API calls through its
/// own router, which listens nowhere, as the agent of its environment.
#[test]
fn inmanta_deploy_answers_the_api_calls_of_handlers() {
    let project = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/apicall");
    // As a v1 module: its model, and its Python as `plugins/`.
    let module = project.path().join("libs/apicall");
    copy_dir(&fixture.join("model"), &module.join("model"));
    std::fs::copy(fixture.join("module.yml"), module.join("module.yml")).unwrap();
    std::fs::create_dir_all(module.join("plugins")).unwrap();
    std::fs::copy(fixture.join("inmanta_plugins/apicall/__init__.py"), module.join("plugins/__init__.py")).unwrap();
    std::fs::write(project.path().join("project.yml"), "name: apideploy\nmodulepath: libs\n").unwrap();
    std::fs::write(
        project.path().join("main.cf"),
        "import apicall\n\
         color = apicall::Param(name=\"color\", value=\"blue\")\n\
         apicall::Call(name=\"check\", method=\"get_param\", arguments={\"id\": \"color\"}, requires=[color])\n\
         apicall::Call(name=\"versions\", method=\"list_versions\")\n",
    )
    .unwrap();
    let output = Command::new(BIN)
        .args(["deploy", "--verbose"])
        .current_dir(project.path())
        .env("INMANTA_COMPILER_PYTHON", python())
        .env("INMANTA_AGENT_PYTHON", python())
        .output()
        .expect("run inmanta deploy");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(1), "one resource fails: {text}");
    let line =
        |name: &str| text.lines().filter(|l| l.contains(&format!("name={name}]"))).collect::<Vec<_>>().join("\n");
    assert!(line("versions").contains("list_versions answered 403"), "{text}");
    // The parameter was set, and read back by the resource that requires it.
    assert!(!text.contains("get_param answered"), "{text}");
    assert!(!text.contains("set_param answered"), "{text}");
    assert!(!line("check").is_empty() && !line("check").contains("fail"), "{text}");
}
