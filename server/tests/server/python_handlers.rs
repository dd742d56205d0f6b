//! Python handlers end to end: a version records its modules' Python code (`module_version_info`,
//! files uploaded by sha1, as Inmanta's exporter sends it), and the server's in-process agents and
//! a remote `inmanta agent` deploy `kvfile::Line` (examples/python-handler-module) through the
//! module's own `CRUDHandler`, run by inmanta-core in a Python executor: created, changed by hand
//! and repaired, dry-run, purged. A handler that raises and one that hangs fail their resource
//! with the Python error and the resources after them still deploy.
//! The Python is a cached virtual environment with inmanta-core from the package index
//! (scripts/python-test-venv.sh).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use api::AgentStatus;
use api::client::ListQuery;
use api::resource::DiscoveredResource;
use api::version::PutVersion;
use base64::Engine;
use common::{BIN, TestServer};
use serde_json::{Map, Value, json};
use uuid::Uuid;

pub(crate) fn python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/python-test-venv.sh");
            let out = Command::new(script).output().expect("run python-test-venv.sh");
            assert!(out.status.success(), "python-test-venv.sh: {}", String::from_utf8_lossy(&out.stderr));
            PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
        })
        .clone()
}

pub(crate) async fn start_server() -> TestServer {
    let python = python().display().to_string();
    TestServer::start_with(&[("INMANTA_AGENT_PYTHON", &python), ("INMANTA_AGENT_HANDLER_TIMEOUT", "5")]).await
}

pub(crate) async fn new_environment(s: &TestServer) -> String {
    s.new_environment("p", "e").await.to_string()
}

/// Uploads every Python file of a module's `inmanta_plugins` package and returns its
/// `module_version_info` entry (what Inmanta's exporter does for a module in editable mode).
pub(crate) async fn ship_module(s: &TestServer, name: &str, dir: &Path) -> Value {
    let mut shipped = Vec::new();
    let mut stack = vec![dir.join("inmanta_plugins")];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "py") {
                let content = std::fs::read(&path).unwrap();
                let hash = sha1_smol::Sha1::from(&content).digest().to_string();
                let body = json!({"content": base64::engine::general_purpose::STANDARD.encode(&content)});
                assert_eq!(s.call("PUT", &format!("/api/v1/file/{hash}"), None, Some(body)).await.0, 200);
                let rel = path.strip_prefix(dir).unwrap().to_str().unwrap().to_string();
                shipped.push(json!({"path": rel, "hash_value": hash}));
            }
        }
    }
    json!({"name": name, "version": "1.0.0", "files_in_module": shipped, "requirements": []})
}

async fn modules(s: &TestServer, with_faulty: bool) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut info = Map::new();
    info.insert("kvfile".into(), ship_module(s, "kvfile", &root.join("examples/python-handler-module")).await);
    if with_faulty {
        info.insert("faulty".into(), ship_module(s, "faulty", &root.join("agent/tests/fixtures/faulty")).await);
    }
    Value::Object(info)
}

pub(crate) fn resource(id: String, fields: Value, requires: Vec<String>) -> Value {
    let mut r = json!({
        "id": id, "purged": false, "purge_on_delete": false, "send_event": false, "receive_events": false,
        "report_only": false, "references": [], "mutators": [], "requires": requires,
    });
    r.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
    r
}

fn line(agent: &str, version: i64, conf: &Path, key: &str, value: &str, purged: bool) -> Value {
    resource(
        format!("kvfile::Line[{agent},key={key}],v={version}"),
        json!({"path": conf.display().to_string(), "key": key, "value": value, "purged": purged}),
        vec![],
    )
}

/// Stores a version with `resources(version)` and the modules; auto_deploy releases it.
pub(crate) async fn put_version(
    s: &TestServer,
    env: &str,
    modules: &Value,
    resources: impl Fn(i64) -> Vec<Value>,
) -> i64 {
    let (client, env) = (s.client(), uuid(env));
    let version = client.reserve_version(env).await.unwrap();
    let resources = resources(version).into_iter().map(|r| r.as_object().unwrap().clone()).collect();
    let body = PutVersion { version, resources, module_version_info: Some(modules.clone()), ..Default::default() };
    client.put_version(env, &body).await.unwrap();
    version
}

fn uuid(env: &str) -> Uuid {
    env.parse().unwrap()
}

/// Whether the agent is connected (an error answer counts as not yet).
pub(crate) async fn agent_up(s: &TestServer, env: &str, name: &str) -> bool {
    let agents = s.client().agents(uuid(env), &ListQuery::new().filter("name", name)).await;
    agents.is_ok_and(|page| page.data.first().is_some_and(|a| a.status == AgentStatus::Up))
}

pub(crate) async fn wait_for(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The resource's status; empty while the server does not know it (yet).
pub(crate) async fn status_of(s: &TestServer, env: &str, rid: &str) -> String {
    let details = s.client().resource(uuid(env), rid).await;
    details.map(|d| d.status.as_str().to_string()).unwrap_or_default()
}

pub(crate) async fn log_messages(s: &TestServer, env: &str, rid: &str) -> Vec<String> {
    let logs = s.client().resource_logs(uuid(env), rid, &ListQuery::new()).await.unwrap();
    logs.data.into_iter().map(|l| l.msg).collect()
}

fn read(conf: &Path) -> String {
    std::fs::read_to_string(conf).unwrap_or_default()
}

#[tokio::test]
async fn the_servers_agents_run_a_modules_crud_handler() {
    let s = start_server().await;
    let env = new_environment(&s).await;
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("app.conf");
    let modules = modules(&s, true).await;

    // Created; the raising and hanging handlers fail only their own resources.
    put_version(&s, &env, &modules, |v| {
        vec![
            line("internal", v, &conf, "port", "8080", false),
            resource(format!("faulty::Raise[internal,name=r],v={v}"), json!({"name": "r"}), vec![]),
            resource(format!("faulty::Hang[internal,name=h],v={v}"), json!({"name": "h"}), vec![]),
            line("internal", v, &conf, "name", "web", false),
        ]
    })
    .await;
    let port = "kvfile::Line[internal,key=port]";
    let name = "kvfile::Line[internal,key=name]";
    let (raise, hang) = ("faulty::Raise[internal,name=r]", "faulty::Hang[internal,name=h]");
    wait_for("every resource to finish", async || {
        status_of(&s, &env, port).await == "deployed"
            && status_of(&s, &env, name).await == "deployed"
            && status_of(&s, &env, raise).await == "failed"
            && status_of(&s, &env, hang).await == "failed"
    })
    .await;
    let mut lines: Vec<&str> = Vec::new();
    let text = read(&conf);
    lines.extend(text.lines());
    lines.sort();
    assert_eq!(lines, ["name=web", "port=8080"]);
    let raised = log_messages(&s, &env, raise).await;
    assert!(raised.iter().any(|m| m.contains("RuntimeError('the disk of r is on fire')")), "{raised:?}");
    let hung = log_messages(&s, &env, hang).await;
    assert!(hung.iter().any(|m| m.contains("did not finish within 5s")), "{hung:?}");
    let created = log_messages(&s, &env, port).await;
    assert!(created.iter().any(|m| m.contains("added port to")), "the handler's own log lines: {created:?}");

    // Changed by hand, repaired by a full deploy.
    std::fs::write(&conf, text.replace("port=8080", "port=1")).unwrap();
    let trigger = json!({"agent_trigger_method": "push_full_deploy", "agents": ["internal"]});
    let (status, body) = s.call("POST", "/api/v1/deploy", Some(&env), Some(trigger)).await;
    assert_eq!(status, 200, "{body}");
    wait_for("the repair", async || read(&conf).contains("port=8080")).await;

    // A candidate version with a new value: the dry run reports it and changes nothing.
    let client = s.client();
    client.set_environment_setting(uuid(&env), "auto_deploy", false).await.unwrap();
    let version = put_version(&s, &env, &modules, |v| {
        vec![line("internal", v, &conf, "port", "9090", false), line("internal", v, &conf, "name", "web", false)]
    })
    .await;
    let dry_run = client.dry_run(uuid(&env), version).await.unwrap();
    let mut report = None;
    wait_for("the dry run report", async || {
        let current = client.dry_run_report(uuid(&env), version, dry_run).await.unwrap();
        let done = current.summary.todo == 0;
        report = Some(current);
        done
    })
    .await;
    let report = report.unwrap();
    let port_diff =
        report.diff.iter().find(|d| d.resource_id.to_string() == port).unwrap_or_else(|| panic!("{report:?}"));
    assert_eq!(port_diff.attributes["value"].from_value, Some(json!("8080")), "{report:?}");
    assert_eq!(port_diff.attributes["value"].to_value, Some(json!("9090")), "{report:?}");
    assert!(read(&conf).contains("port=8080"), "a dry run changes nothing");

    // Purged: the line goes, the other stays.
    client.set_environment_setting(uuid(&env), "auto_deploy", true).await.unwrap();
    put_version(&s, &env, &modules, |v| {
        vec![line("internal", v, &conf, "port", "8080", true), line("internal", v, &conf, "name", "web", false)]
    })
    .await;
    wait_for("the purge", async || read(&conf) == "name=web\n").await;
    wait_for("the purge deployed", async || status_of(&s, &env, port).await == "deployed").await;
    let code = s.state_dir.path().join("python/code");
    assert_eq!(std::fs::read_dir(&code).unwrap().count(), 1, "the version's code laid out once in {code:?}");
}

pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn a_remote_agent_fetches_the_module_code_and_runs_its_handler() {
    let s = start_server().await;
    let env = new_environment(&s).await;
    let port: u16 = s.url.rsplit(':').next().unwrap().parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let conf = dir.path().join("remote.conf");
    let token = s.environment_token(&env, &["agent"]).await;
    let _agent = Killed(
        Command::new(BIN)
            .args(["agent", "--name", "remote1", "-e", &env, "--port", &port.to_string(), "--token", &token])
            .arg("--cache-dir")
            .arg(&cache)
            .env("INMANTA_AGENT_PYTHON", python())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start inmanta agent"),
    );
    wait_for("the agent to connect", async || agent_up(&s, &env, "remote1").await).await;
    let modules = modules(&s, false).await;
    put_version(&s, &env, &modules, |v| vec![line("remote1", v, &conf, "port", "8080", false)]).await;
    wait_for("the remote agent to deploy", async || read(&conf) == "port=8080\n").await;
    let rid = "kvfile::Line[remote1,key=port]";
    wait_for("deployed", async || status_of(&s, &env, rid).await == "deployed").await;
    let code = cache.join("python/code");
    let laid_out: Vec<_> = std::fs::read_dir(&code).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(laid_out.len(), 1, "{laid_out:?}");
    let handler = laid_out[0].join("inmanta_plugins/kvfile/__init__.py");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/python-handler-module");
    assert_eq!(
        std::fs::read(&handler).unwrap(),
        std::fs::read(example.join("inmanta_plugins/kvfile/__init__.py")).unwrap(),
        "fetched from the server's file store"
    );

    // Changed by hand and repaired by the remote agent.
    std::fs::write(&conf, "port=1\n").unwrap();
    let trigger = json!({"agent_trigger_method": "push_full_deploy", "agents": ["remote1"]});
    let (status, body) = s.call("POST", "/api/v1/deploy", Some(&env), Some(trigger)).await;
    assert_eq!(status, 200, "{body}");
    wait_for("the remote repair", async || read(&conf) == "port=8080\n").await;
}

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// `inmanta export` records the module's Python code with the version (`module_version_info`,
/// files uploaded by sha1) and the agents run its handler. Until the compiler exports through the
/// module's `@resource` class, a module.yml `resources:` mapping says how `kvfile::Line` becomes a
/// resource (the same fields the `@resource` declares).
#[tokio::test]
async fn an_export_ships_the_module_code_that_the_agents_run() {
    let s = start_server().await;
    let env = new_environment(&s).await;
    let project = tempfile::tempdir().unwrap();
    let module = project.path().join("libs/kvfile");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/python-handler-module"), &module);
    std::fs::write(
        module.join("module.yml"),
        "name: kvfile\nversion: 1.0.0\nresources:\n  kvfile::Line:\n    agent: host.name\n    id_attribute: key\n    \
         fields: [path, key, value]\n",
    )
    .unwrap();
    std::fs::write(project.path().join("project.yml"), "name: py\nmodulepath: libs\n").unwrap();
    let conf = project.path().join("exported.conf");
    std::fs::write(
        project.path().join("main.cf"),
        format!(
            "import kvfile\nhost = std::Host(name=\"internal\", os=std::linux)\n\
             kvfile::Line(host=host, path=\"{}\", key=\"port\", value=\"8080\")\n",
            conf.display()
        ),
    )
    .unwrap();
    let port = s.url.rsplit(':').next().unwrap().to_string();
    let home = project.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let output = Command::new(BIN)
        .args(["export", "-d", "-e", &env, "--server_address", "127.0.0.1", "--server_port", &port])
        .current_dir(project.path())
        .env("HOME", &home)
        .envs(s.token_env())
        .output()
        .expect("run inmanta export");
    assert!(output.status.success(), "export failed: {}", String::from_utf8_lossy(&output.stderr));
    wait_for("the exported line", async || read(&conf) == "port=8080\n").await;
    let (_, versions) = s.call("GET", "/api/v1/version", Some(&env), None).await;
    let version = versions["versions"][0]["version"].as_i64().unwrap();
    let (_, v) = s.call("GET", &format!("/api/v1/version/{version}"), Some(&env), None).await;
    assert_eq!(v["model"]["version"], version);
    let shipped = std::fs::read(module.join("inmanta_plugins/kvfile/__init__.py")).unwrap();
    let hash = sha1_smol::Sha1::from(&shipped).digest().to_string();
    let (status, _) = s.call("GET", &format!("/api/v1/file/{hash}"), None, None).await;
    assert_eq!(status, 200, "the module's code is in the file store");
}

fn discovery(agent: &str, version: i64, directory: &Path) -> Value {
    let directory = directory.display().to_string();
    resource(
        format!("kvfile::Discovery[{agent},directory={directory}],v={version}"),
        json!({"directory": directory}),
        vec![],
    )
}

async fn discovered(s: &TestServer, env: &str, query: ListQuery) -> Vec<DiscoveredResource> {
    s.client().discovered_resources(uuid(env), &query).await.unwrap().data
}

/// A module's `DiscoveryHandler` (examples/python-handler-module: `kvfile::Discovery` reports the
/// key=value lines of a directory's `*.conf` files) deployed by the server's agents and by a
/// remote agent: what it finds is stored and listed, `managed` where the model has the same line.
#[tokio::test]
async fn discovery_handlers_report_what_they_find_to_the_server() {
    let s = start_server().await;
    let env = new_environment(&s).await;
    let dir = tempfile::tempdir().unwrap();
    let scan = dir.path().join("scan");
    std::fs::create_dir_all(&scan).unwrap();
    std::fs::write(scan.join("app.conf"), "port=8080\nname=web\n# comment\n").unwrap();
    std::fs::write(scan.join("notes.txt"), "ignored=1\n").unwrap();
    let modules = modules(&s, false).await;

    // The server's agent: a line the model manages next to the discovery of its directory.
    put_version(&s, &env, &modules, |v| {
        vec![line("internal", v, &scan.join("app.conf"), "port", "8080", false), discovery("internal", v, &scan)]
    })
    .await;
    let scanner = format!("kvfile::Discovery[internal,directory={}]", scan.display());
    wait_for("the discovery deployed", async || status_of(&s, &env, &scanner).await == "deployed").await;
    wait_for("the line deployed", async || status_of(&s, &env, "kvfile::Line[internal,key=port]").await == "deployed")
        .await;
    let found = discovered(&s, &env, ListQuery::new()).await;
    let ids: Vec<String> = found.iter().map(|d| d.discovered_resource_id.to_string()).collect();
    assert_eq!(ids, ["kvfile::Line[internal,key=name]", "kvfile::Line[internal,key=port]"]);
    let conf = scan.join("app.conf").display().to_string();
    assert_eq!(Value::Object(found[0].values.clone()), json!({"path": conf, "key": "name", "value": "web"}));
    assert_eq!(found[0].discovery_resource_id.to_string(), scanner);
    assert_eq!(found[0].managed_resource_uri, None);
    let port_uri = format!("/api/v2/resource/{}", api::url::encode("kvfile::Line[internal,key=port]"));
    assert_eq!(found[1].managed_resource_uri, Some(port_uri));
    let unmanaged = discovered(&s, &env, ListQuery::new().filter("managed", "false")).await;
    assert_eq!(unmanaged.len(), 1);
    assert_eq!(unmanaged[0].resource_id_value, "name");
    let logs = log_messages(&s, &env, &scanner).await;
    assert!(logs.iter().any(|m| m.contains("found 2 lines in")), "the handler's own log line: {logs:?}");

    // The operator adopts nothing and forgets them.
    let all: Vec<String> = found.iter().map(|d| d.discovered_resource_id.to_string()).collect();
    s.client().delete_discovered_resources(uuid(&env), &all).await.unwrap();
    assert!(discovered(&s, &env, ListQuery::new()).await.is_empty());

    // A remote agent reports through the API with its agent token.
    let port: u16 = s.url.rsplit(':').next().unwrap().parse().unwrap();
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
    std::fs::write(scan.join("more.conf"), "mode=fast\n").unwrap();
    put_version(&s, &env, &modules, |v| vec![discovery("remote1", v, &scan)]).await;
    let remote_scanner = format!("kvfile::Discovery[remote1,directory={}]", scan.display());
    wait_for("the remote discovery", async || status_of(&s, &env, &remote_scanner).await == "deployed").await;
    let found = discovered(&s, &env, ListQuery::new().filter("agent", "remote1").sort("resource_id_value.asc")).await;
    let values: Vec<&str> = found.iter().map(|d| d.resource_id_value.as_str()).collect();
    assert_eq!(values, ["mode", "name", "port"]);
    assert!(found.iter().all(|d| d.discovery_resource_id.to_string() == remote_scanner), "{found:?}");
    assert_eq!(found[0].values["path"], scan.join("more.conf").display().to_string());
}
