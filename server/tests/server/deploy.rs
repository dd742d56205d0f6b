//! Export a model to a real server and watch the scheduler deploy it with the built-in handlers:
//! real files in a temp dir, a failing `exec::Run` and its recovery, user deploys and agents.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use api::AgentStatus;
use api::client::{ActionQuery, ListQuery};
use api::state::ActionKind;
use common::{BIN, TestServer, refused};
use serde_json::{Value, json};
use uuid::Uuid;

fn write_project(dir: &Path, main: &str) {
    std::fs::write(dir.join("project.yml"), "name: deploydemo\nmodulepath: libs\ndownloadpath: libs\n").unwrap();
    std::fs::write(dir.join("main.cf"), main).unwrap();
}

fn export(dir: &Path) {
    let output = Command::new(BIN).args(["export"]).current_dir(dir).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

fn model(root: &Path, motd: &str, command: &str) -> String {
    let root = root.display();
    format!(
        r#"
import fs
import exec
import mitogen

host = std::Host(name="localhost", os=std::linux, via=mitogen::Local())
dir = fs::Directory(host=host, path="{root}/etc", mode=755)
motd = fs::File(host=host, path="{root}/etc/motd", content="{motd}", mode=644, requires=[dir])
fs::File(host=host, path="{root}/etc/issue", content="issue", requires=[dir])
check = exec::Run(host=host, command="{command}")
fs::File(host=host, path="{root}/etc/after-check", content="checked", requires=[check, dir])
"#
    )
}

/// Writes `.inmanta` so that `inmanta export` in `project` goes to this server and environment;
/// returns the server's port.
fn point_at(project: &Path, s: &TestServer, env: &str) -> String {
    let port = s.url.rsplit(':').next().unwrap().to_string();
    std::fs::write(project.join(".inmanta"), s.dot_inmanta(env)).unwrap();
    port
}

/// A new environment's id, as text for `.inmanta` and the CLI.
async fn environment(s: &TestServer) -> String {
    s.new_environment("p", "e").await.to_string()
}

fn id(env: &str) -> Uuid {
    env.parse().unwrap()
}

/// Statuses of every resource once nothing is deploying or waiting any more.
async fn settle(s: &TestServer, env: &str, expect_total: usize) -> Vec<(String, String)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, status) = s.call("GET", "/api/v2/scheduler_status", Some(env), None).await;
        let query = ListQuery::new().sort("resource_id.asc").filter("status", "!orphaned");
        let list = s.client().resources(id(env), &query).await.unwrap().data;
        let items: Vec<(String, String)> =
            list.iter().map(|r| (r.id_details.resource_id_value.clone(), r.status.as_str().to_string())).collect();
        let busy = status["data"]["scheduled"].as_u64() != Some(0) || status["data"]["running"].as_u64() != Some(0);
        let moving = items.iter().any(|(_, st)| st == "deploying" || st == "available");
        if items.len() == expect_total && !busy && !moving {
            return items;
        }
        assert!(Instant::now() < deadline, "deploy did not settle: {status} {items:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn status_of<'a>(items: &'a [(String, String)], suffix: &str) -> &'a str {
    items
        .iter()
        .find(|(v, _)| v.ends_with(suffix))
        .map(|(_, s)| s.as_str())
        .unwrap_or_else(|| panic!("{suffix} in {items:?}"))
}

async fn deploy_count(s: &TestServer, env: &str, path_suffix: &str) -> usize {
    let actions = s.client().resource_actions(id(env), &ActionQuery::default()).await.unwrap().data;
    actions
        .iter()
        .filter(|a| a.action == ActionKind::Deploy && a.resource_version_ids[0].to_string().contains(path_suffix))
        .count()
}

#[tokio::test]
async fn exported_files_are_deployed_failures_skip_and_recover() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let project = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    point_at(project.path(), &s, &env);

    write_project(project.path(), &model(root.path(), "hello", "/bin/false"));
    export(project.path());
    let items = settle(&s, &env, 5).await;
    assert_eq!(status_of(&items, "/etc"), "deployed", "{items:?}");
    assert_eq!(status_of(&items, "/etc/motd"), "deployed");
    assert_eq!(status_of(&items, "/etc/issue"), "deployed");
    assert_eq!(status_of(&items, "/bin/false"), "failed");
    assert_eq!(status_of(&items, "/etc/after-check"), "skipped", "a failed requirement skips its dependents");
    let etc = root.path().join("etc");
    assert_eq!(std::fs::read_to_string(etc.join("motd")).unwrap(), "hello");
    assert!(!etc.join("after-check").exists());
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(etc.join("motd")).unwrap().permissions().mode() & 0o777, 0o644);

    let (_, notes) = s.call("GET", "/api/v2/notification", Some(&env), None).await;
    assert!(
        notes["data"].as_array().unwrap().iter().any(|n| n["message"].as_str().unwrap().contains("/bin/false")),
        "{notes}"
    );

    // Change one file and fix the command: only the changed resources run, and the recovered
    // command unblocks its dependent.
    let issue_runs = deploy_count(&s, &env, "/etc/issue").await;
    write_project(project.path(), &model(root.path(), "hello again", "/bin/true"));
    export(project.path());
    let items = settle(&s, &env, 5).await;
    assert!(items.iter().all(|(_, st)| st == "deployed"), "{items:?}");
    assert_eq!(std::fs::read_to_string(etc.join("motd")).unwrap(), "hello again");
    assert_eq!(std::fs::read_to_string(etc.join("after-check")).unwrap(), "checked");
    assert_eq!(deploy_count(&s, &env, "/etc/issue").await, issue_runs, "an unchanged resource is not redeployed");

    // Drift: a file changed by hand is put back at once, without waiting for a repair.
    std::fs::write(etc.join("motd"), "tampered").unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::fs::read_to_string(etc.join("motd")).unwrap() != "hello again" {
        assert!(Instant::now() < deadline, "the hand-edited file was not repaired within 5 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // A repair on request also puts back what was changed (here with realtime repair off).
    let client = s.client();
    client.set_environment_setting(id(&env), "realtime_repair", false).await.unwrap();
    let (status, _) = s.call("POST", "/api/v1/deploy", Some(&env), Some(json!({"agents": ["localhost"]}))).await;
    assert_eq!(status, 200);
    settle(&s, &env, 5).await;
    std::fs::write(etc.join("issue"), "tampered").unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(std::fs::read_to_string(etc.join("issue")).unwrap(), "tampered", "realtime repair is off");
    let (status, body) =
        s.call("POST", "/api/v1/deploy", Some(&env), Some(json!({"agents": ["localhost", "nope"]}))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["agents"], json!(["localhost"]));
    settle(&s, &env, 5).await;
    assert_eq!(std::fs::read_to_string(etc.join("issue")).unwrap(), "issue");

    // Agents: listed up; a paused agent is listed paused.
    let agents = client.agents(id(&env), &ListQuery::new()).await.unwrap().data;
    assert_eq!(agents[0].name, "localhost");
    assert_eq!(agents[0].status, AgentStatus::Up);
    client.pause_agent(id(&env), Some("localhost")).await.unwrap();
    let agents = client.agents(id(&env), &ListQuery::new().filter("status", "paused")).await.unwrap().data;
    assert_eq!(agents.len(), 1);
    assert_eq!(s.call("POST", "/api/v2/agent/localhost/fly", Some(&env), None).await.0, 400);
    assert_eq!(refused(client.pause_agent(id(&env), Some("ghost")).await), 404);
    client.unpause_agent(id(&env), None).await.unwrap();

    // deploy_filtered schedules the matching resources only.
    let filter = json!({"filter": {"resourceType": {"eq": "fs::File"}, "resourceIdValue": {"contains": "motd"}}});
    let (status, body) = s.call("POST", "/api/v2/deploy_filtered", Some(&env), Some(filter)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"].as_array().unwrap().len(), 1, "{body}");
    let (status, _) =
        s.call("POST", "/api/v2/deploy_filtered", Some(&env), Some(json!({"filter": {"isOrphan": true}}))).await;
    assert_eq!(status, 400);
    let (status, _) =
        s.call("POST", "/api/v1/deploy", Some(&env), Some(json!({"agent_trigger_method": "push_everything"}))).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn deploy_needs_a_released_version_and_a_running_environment() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    assert_eq!(s.call("POST", "/api/v1/deploy", Some(&env), None).await.0, 404);
    s.client().halt_environment(id(&env)).await.unwrap();
    let (status, body) = s.call("GET", "/api/v2/scheduler_status", Some(&env), None).await;
    assert_eq!(status, 404, "{body}");
    let _: Value = body;
}

fn inmanta_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let output = Command::new(BIN).args(args).current_dir(dir).output().expect("run inmanta");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn inmanta_deploy_all_in_one() {
    let project = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write_project(project.path(), &model(root.path(), "hello", "/bin/true"));
    let (code, out, err) = inmanta_in(project.path(), &["deploy"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("5 of 5 resources deployed, 5 changed"), "{err}");
    assert_eq!(std::fs::read_to_string(root.path().join("etc/motd")).unwrap(), "hello");
    assert!(project.path().join("data/deploy/inmanta.db").exists());

    // Run twice: the second run repairs every resource but no file drifted, so only the
    // command (which runs on every deploy) is changed and listed; --verbose lists every resource.
    let (code, out, err) = inmanta_in(project.path(), &["deploy"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("1 changed"), "{err}");
    assert!(out.contains("exec::Run"), "the command ran again: {out}");
    assert!(!out.contains("/etc/motd"), "only failed and changed resources are listed: {out}");
    let (code, out, err) = inmanta_in(project.path(), &["deploy", "--verbose"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("/etc/motd") && out.contains("/etc/issue"), "--verbose lists every resource: {out}");

    // --dry-run reports a hand edit without touching it.
    std::fs::write(root.path().join("etc/issue"), "edited").unwrap();
    let (code, out, err) = inmanta_in(project.path(), &["deploy", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().any(|l| l.contains("/etc/issue") && l.contains("changes")), "{out}");
    assert_eq!(std::fs::read_to_string(root.path().join("etc/issue")).unwrap(), "edited");

    // A failing command: exit code 1 and the error in the summary.
    write_project(project.path(), &model(root.path(), "hello", "/bin/false"));
    let (code, out, err) = inmanta_in(project.path(), &["deploy"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("failed") && out.contains("skipped"), "{out}");

    // A broken model: the compile error with its location, non-zero exit.
    std::fs::write(project.path().join("main.cf"), "import fs\nx = 1\nx = 2\n").unwrap();
    let (code, _, err) = inmanta_in(project.path(), &["deploy"]);
    assert_ne!(code, 0);
    assert!(err.contains("main.cf:3"), "{err}");
}

/// Issue 47: a second `inmanta deploy` after hand edits puts the machine back as the model says
/// and reports each restored resource as changed, and its dry run shows the drift first.
#[test]
fn inmanta_deploy_again_repairs_what_drifted() {
    let project = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    write_project(project.path(), &model(root.path(), "hello", "/bin/true"));
    let (code, out, err) = inmanta_in(project.path(), &["deploy"]);
    assert_eq!(code, 0, "{out}{err}");
    let etc = root.path().join("etc");
    std::fs::remove_file(etc.join("motd")).unwrap();
    std::fs::write(etc.join("issue"), "edited by hand").unwrap();

    let (code, out, err) = inmanta_in(project.path(), &["deploy", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    for file in ["/etc/motd", "/etc/issue"] {
        assert!(out.lines().any(|l| l.contains(file) && l.contains("changes")), "{file} drifted: {out}");
    }
    assert!(!etc.join("motd").exists(), "a dry run changes nothing");

    let (code, out, err) = inmanta_in(project.path(), &["deploy"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(std::fs::read_to_string(etc.join("motd")).unwrap(), "hello", "{out}{err}");
    assert_eq!(std::fs::read_to_string(etc.join("issue")).unwrap(), "issue", "{out}{err}");
    // The two files, and the command, which runs on every deploy.
    assert!(err.contains("5 of 5 resources deployed, 3 changed"), "{err}");
    for file in ["/etc/motd", "/etc/issue"] {
        assert!(out.lines().any(|l| l.contains(file)), "{file} is listed as changed: {out}");
    }
    assert!(!out.contains("after-check"), "what did not drift is not listed: {out}");

    // No file drifted since: a third run changes only the command.
    let (code, out, err) = inmanta_in(project.path(), &["deploy"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("5 of 5 resources deployed, 1 changed"), "{err}");
    assert!(!out.contains("/etc/"), "{out}");
}

#[tokio::test]
async fn dry_runs_report_what_would_change_without_changing_it() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let tid = Some(env.as_str());
    let client = s.client();
    let env_id = id(&env);
    let project = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let port = point_at(project.path(), &s, &env);
    for (name, value) in [("realtime_repair", false), ("auto_deploy", true)] {
        client.set_environment_setting(env_id, name, value).await.unwrap();
    }
    write_project(project.path(), &model(root.path(), "hello", "/bin/true"));
    export(project.path());
    settle(&s, &env, 5).await;

    // The next version is stored but not released; one file is edited by hand meanwhile.
    client.set_environment_setting(env_id, "auto_deploy", false).await.unwrap();
    let mut main = model(root.path(), "hello", "/bin/true");
    main.push_str(&format!(
        "fs::File(host=host, path=\"{}/etc/new\", content=\"new\", requires=[dir])\n",
        root.path().display()
    ));
    write_project(project.path(), &main);
    export(project.path());
    std::fs::write(root.path().join("etc/issue"), "edited by hand").unwrap();

    let id = client.dry_run(env_id, 2).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let report = loop {
        let report = client.dry_run_report(env_id, 2, id).await.unwrap();
        if report.summary.todo == 0 {
            break report;
        }
        assert!(Instant::now() < deadline, "dry run did not finish: {report:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let diff_of = |suffix: &str| report.diff.iter().find(|d| d.resource_id.to_string().ends_with(suffix)).unwrap();
    let status_of = |suffix: &str| diff_of(suffix).status.as_str();
    assert_eq!(report.summary.total, 6);
    assert_eq!(status_of("/etc/new]"), "added", "{report:?}");
    assert_eq!(status_of("/etc/issue]"), "modified", "{report:?}");
    assert_eq!(status_of("/etc/motd]"), "unmodified", "{report:?}");
    let issue = diff_of("/etc/issue]");
    assert!(issue.attributes["hash"].from_value.as_ref().is_some_and(Value::is_string), "{issue:?}");
    // File contents are in the report, so the change reads as a unified diff.
    assert_eq!(issue.attributes["content"].from_value_compare, "edited by hand", "{issue:?}");
    assert_eq!(issue.attributes["content"].to_value_compare, "issue", "{issue:?}");
    let out = Command::new(BIN)
        .args(["dryrun", "show", "2", &id.to_string(), "--port", &port])
        .current_dir(project.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("-edited by hand") && text.contains("+issue"), "{text}");
    assert!(!root.path().join("etc/new").exists(), "a dry run changes nothing");
    assert_eq!(std::fs::read_to_string(root.path().join("etc/issue")).unwrap(), "edited by hand");

    let list = client.dry_runs(env_id, 2).await.unwrap();
    assert_eq!(list[0].id, id);
    let (_, v1) = s.call("GET", &format!("/api/v1/dryrun/{id}"), tid, None).await;
    assert_eq!(v1["dryrun"]["resources"].as_object().unwrap().len(), 6);
    assert_eq!(refused(client.dry_run(env_id, 99).await), 404);
    assert_eq!(refused(client.dry_run_report(env_id, 2, Uuid::new_v4()).await), 404);

    // A paused agent's resources are reported as agent_down; the CLI waits and prints.
    client.pause_agent(env_id, Some("localhost")).await.unwrap();
    let out = Command::new(BIN)
        .args(["dryrun", "create", "2", "--port", &port])
        .current_dir(project.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text.matches("agent_down").count(), 6, "{text}");

    client.halt_environment(env_id).await.unwrap();
    assert_eq!(refused(client.dry_run(env_id, 2).await), 409);
}

#[tokio::test]
async fn agent_and_monitor_commands() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let project = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let port = point_at(project.path(), &s, &env);
    write_project(project.path(), &model(root.path(), "hello", "/bin/true"));
    export(project.path());
    let cli = |args: &[&str]| inmanta_in(project.path(), &[args, &["--port", &port]].concat());
    let (code, out, err) = cli(&["monitor"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("5/5 deployed"), "{out}");
    let (code, out, _) = cli(&["agent", "list"]);
    assert_eq!(code, 0);
    assert!(out.contains("localhost") && out.contains("up"), "{out}");
    assert_eq!(cli(&["agent", "pause", "--agent", "localhost"]).0, 0);
    let (_, out, _) = cli(&["agent", "list"]);
    assert!(out.contains("paused"), "{out}");
    assert_eq!(cli(&["agent", "unpause", "--all"]).0, 0);
    let (_, out, _) = cli(&["agent", "list", "--json"]);
    assert!(out.contains("\"up\""), "{out}");
    let (code, _, err) = cli(&["agent", "pause", "--agent", "ghost"]);
    assert_eq!(code, 1, "{err}");
}
