//! The autonomous server: compiles from real git repositories (bare repositories served over
//! `file://`), the compile queue, reports, notifications, time limits and restarts.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use api::client::ListQuery;
use api::compile::{CompileDetails, NotifyChange};
use api::environment::{EnvironmentCreate, EnvironmentModify};
use common::{TestServer, refused};
use serde_json::{Value, json};
use uuid::Uuid;

/// Runs git in `dir` with a fixed identity; panics when it fails.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run git");
    assert!(
        output.status.success(),
        "git {args:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A bare repository `<name>.git` in `root` and a working clone of it; returns (url, work dir).
fn repository(root: &Path, name: &str) -> (String, PathBuf) {
    let bare = root.join(format!("{name}.git"));
    std::fs::create_dir_all(&bare).unwrap();
    git(&bare, &["init", "--bare", "--quiet"]);
    let work = root.join(format!("{name}-work"));
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "--quiet"]);
    git(&work, &["checkout", "--quiet", "-B", "main"]);
    let url = format!("file://{}", bare.display());
    git(&work, &["remote", "add", "origin", &url]);
    (url, work)
}

/// Writes `files` into `work`, commits and pushes the current branch.
fn commit_and_push(work: &Path, files: &[(&str, &str)], message: &str) {
    for (path, content) in files {
        let path = work.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    git(work, &["add", "--all"]);
    git(work, &["commit", "--quiet", "-m", message]);
    let branch = git(work, &["rev-parse", "--abbrev-ref", "HEAD"]);
    git(work, &["push", "--quiet", "origin", branch.trim()]);
}

fn project_yml(repo: &str, requires: &[&str]) -> String {
    let mut text = format!("name: autonomous\nmodulepath: libs\ndownloadpath: libs\nrepo: \"{repo}\"\n");
    if !requires.is_empty() {
        text.push_str("requires:\n");
        for r in requires {
            text.push_str(&format!("  - {r}\n"));
        }
    }
    text
}

/// A model that writes one file (`<root>/motd`) whose content tells which commit it came from.
fn model(root: &Path, content: &str) -> String {
    format!(
        r#"
import fs
import greeting
import mitogen

host = std::Host(name="localhost", os=std::linux, via=mitogen::Local())
word = greeting::word
fs::File(host=host, path="{}/motd", content="{content} {{{{ word }}}}", mode=644)
"#,
        root.display()
    )
}

async fn environment(s: &TestServer, repo: &str, branch: &str) -> Uuid {
    let client = s.client();
    let project = client.create_project("p").await.unwrap();
    let body = EnvironmentCreate {
        project_id: project.id,
        name: "auto".into(),
        repository: Some(repo.into()),
        branch: Some(branch.into()),
        ..Default::default()
    };
    client.create_environment(&body).await.unwrap().id
}

/// The compile's details once it finished.
async fn finished(s: &TestServer, env: Uuid, id: Uuid, within: Duration) -> CompileDetails {
    let deadline = Instant::now() + within;
    loop {
        let details = s.client().compile_report(env, id).await.unwrap();
        if details.report.times.completed.is_some() {
            return details;
        }
        assert!(Instant::now() < deadline, "compile {id} did not finish in time: {details:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn request(s: &TestServer, env: Uuid) -> Uuid {
    let answer = s.client().notify(env, &NotifyChange { update: true, ..Default::default() }).await.unwrap();
    answer.compile_id.expect("a queued compile")
}

fn stage_names(details: &CompileDetails) -> Vec<String> {
    details.reports.as_ref().unwrap().iter().map(|r| r.name.clone()).collect()
}

/// Waits until `path` holds `content`.
async fn file_becomes(path: &Path, content: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if std::fs::read_to_string(path).ok().as_deref() == Some(content) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} never became {content:?}, it is {:?}",
            path.display(),
            std::fs::read_to_string(path).ok()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn active_version(s: &TestServer, env: Uuid) -> i64 {
    let versions = s.client().desired_state(env, &ListQuery::new().filter("status", "active")).await.unwrap();
    versions.data.first().map_or(0, |v| v.version)
}

/// A module repository `greeting` with tags 1.0.0, 1.2.0 and 2.0.0; `word` tells which.
fn module_repository(root: &Path) -> String {
    let (_, work) = repository(root, "greeting");
    for tag in ["1.0.0", "1.2.0", "2.0.0"] {
        commit_and_push(
            &work,
            &[("module.yml", "name: greeting\nversion: 1.0.0\n"), ("model/_init.cf", &format!("word = \"{tag}\"\n"))],
            tag,
        );
        git(&work, &["tag", tag]);
    }
    git(&work, &["push", "--quiet", "origin", "--tags"]);
    format!("file://{}/{{}}.git", root.display())
}

#[tokio::test]
async fn compiles_from_git_fail_recover_switch_branch_and_follow_a_force_push() {
    let s = TestServer::start().await;
    let repos = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let motd = out.path().join("motd");
    let module_repo = module_repository(repos.path());
    let (url, work) = repository(repos.path(), "project");
    let yml = project_yml(&module_repo, &["greeting ~= 1.0"]);
    commit_and_push(&work, &[("project.yml", &yml), ("main.cf", &model(out.path(), "first"))], "first");
    let env = environment(&s, &url, "main").await;
    let client = s.client();

    // The webhook form: GET with update=true.
    let (status, body) = s.call("GET", &format!("/api/v1/notify/{env}?update=true"), None, None).await;
    assert_eq!(status, 200, "{body}");
    let id: Uuid = body["compile_id"].as_str().unwrap().parse().unwrap();
    let details = finished(&s, env, id, Duration::from_secs(120)).await;
    assert_eq!(details.report.success, Some(true), "{details:#?}");
    assert_eq!(details.report.version, Some(1));
    assert_eq!(
        stage_names(&details),
        ["Init", "Cloning repository", "Installing modules", "Recompiling configuration model"]
    );
    let reports = details.reports.as_ref().unwrap();
    let install = &reports[2];
    assert!(install.outstream.contains("module greeting at 1.2.0"), "{install:#?}");
    for stage in reports {
        assert_eq!(stage.returncode, Some(0), "{stage:#?}");
        assert!(stage.completed.is_some());
    }
    // auto_deploy released it and the agent wrote the file (module 1.2.0: newest that ~= 1.0 allows).
    file_becomes(&motd, "first 1.2.0").await;
    assert_eq!(active_version(&s, env).await, 1);
    let (status, _) = s.call("HEAD", &format!("/api/v1/notify/{env}"), None, None).await;
    assert_eq!(status, 204, "not compiling any more");

    // A commit that breaks the model: the compile fails with the error and its location, a
    // notification says so, and version 1 keeps running.
    commit_and_push(
        &work,
        &[("main.cf", "import fs\n\nx = fs::File(\n    nonsense=1\n)\ny = undefined_name\n")],
        "broken",
    );
    let id = request(&s, env).await;
    let details = finished(&s, env, id, Duration::from_secs(60)).await;
    assert_eq!(details.report.success, Some(false), "{details:#?}");
    assert!(details.report.version.is_none());
    let compile_data = details.compile_data.clone().unwrap_or_default();
    let errors = &compile_data.errors;
    assert!(!errors.is_empty(), "{details:#?}");
    let location = errors[0].location.as_ref().expect("a location");
    assert!(location.uri.ends_with("main.cf"), "{errors:#?}");
    assert!(location.range.start.line >= 2, "{errors:#?}");
    let last = details.reports.as_ref().unwrap().last().unwrap().clone();
    assert_eq!(last.name, "Recompiling configuration model");
    assert_ne!(last.returncode, Some(0));
    assert!(!last.errstream.is_empty());
    let env_id = env.to_string();
    let (_, v2) = s.call("GET", &format!("/api/v2/compiledata/{id}"), Some(&env_id), None).await;
    assert_eq!(v2["data"], serde_json::to_value(&compile_data).unwrap());
    let (_, notes) = s.call("GET", "/api/v2/notification", Some(&env_id), None).await;
    let id_text = id.to_string();
    let note =
        notes["data"].as_array().unwrap().iter().find(|n| n["compile_id"] == id_text.as_str()).expect("notification");
    // Inmanta 20.1's words and link (notificationservice.py): the web console turns this path
    // into a link to its report page; the request asked for no message of its own.
    assert_eq!(note["title"], "Compilation failed");
    assert_eq!(note["message"], "An exporting compile has failed");
    assert_eq!(note["severity"], "error");
    assert_eq!(note["uri"], format!("/api/v2/compilereport/{id}"));
    let (_, report) = s.call("GET", &format!("/api/v2/compilereport/{id}"), Some(&env_id), None).await;
    assert_eq!(report["data"]["failed_compile_message"], Value::Null, "{report}");
    assert_eq!(report["data"]["notify_failed_compile"], Value::Null, "{report}");
    assert_eq!(active_version(&s, env).await, 1, "the previous version keeps running");
    assert_eq!(std::fs::read_to_string(&motd).unwrap(), "first 1.2.0");

    // A fix: it recovers.
    commit_and_push(&work, &[("main.cf", &model(out.path(), "fixed"))], "fixed");
    let id = request(&s, env).await;
    let details = finished(&s, env, id, Duration::from_secs(60)).await;
    assert_eq!(details.report.success, Some(true), "{details:#?}");
    assert_eq!(details.report.version, Some(2));
    assert_eq!(
        stage_names(&details),
        ["Init", "Fetching changes", "Pulling updates", "Updating modules", "Recompiling configuration model"]
    );
    file_becomes(&motd, "fixed 1.2.0").await;

    // Switch the environment to another branch.
    git(&work, &["checkout", "--quiet", "-b", "other"]);
    commit_and_push(&work, &[("main.cf", &model(out.path(), "other"))], "other branch");
    let body = EnvironmentModify {
        name: "auto".into(),
        repository: Some(url.clone()),
        branch: Some("other".into()),
        ..Default::default()
    };
    client.modify_environment(env, &body).await.unwrap();
    let id = request(&s, env).await;
    let details = finished(&s, env, id, Duration::from_secs(60)).await;
    assert_eq!(details.report.success, Some(true), "{details:#?}");
    let names = stage_names(&details);
    assert!(names.contains(&"Switching branch from main to other".to_string()), "{names:?}");
    assert!(names.contains(&"Installing modules".to_string()), "{names:?}");
    file_becomes(&motd, "other 1.2.0").await;

    // Rewrite the history of the branch and force-push it: the checkout follows.
    std::fs::write(work.join("main.cf"), model(out.path(), "rewritten")).unwrap();
    git(&work, &["commit", "--quiet", "--all", "--amend", "-m", "rewritten"]);
    git(&work, &["push", "--quiet", "--force", "origin", "other"]);
    let id = request(&s, env).await;
    let details = finished(&s, env, id, Duration::from_secs(60)).await;
    assert_eq!(details.report.success, Some(true), "{details:#?}");
    let pull = details.reports.as_ref().unwrap().iter().find(|r| r.name == "Pulling updates").unwrap();
    assert!(pull.outstream.contains("rewritten history"), "{pull:#?}");
    file_becomes(&motd, "rewritten 1.2.0").await;

    // The reports: v2 paged with filters, v1, and the CLI.
    let all = client.compile_reports(env, &ListQuery::new().limit(2)).await.unwrap();
    assert_eq!(all.data.len(), 2);
    assert_eq!(all.metadata.as_ref().unwrap()["total"], 5);
    assert!(all.links.as_ref().unwrap().next.is_some());
    let failed = client.compile_reports(env, &ListQuery::new().filter("success", "false")).await.unwrap();
    assert_eq!(failed.data.len(), 1);
    let query = ListQuery::new().filter("completed", "true").sort("requested.asc");
    let done = client.compile_reports(env, &query).await.unwrap();
    assert_eq!(done.data[0].version, Some(1));
    assert_eq!(refused(client.compile_reports(env, &ListQuery::new().filter("bogus", "1")).await), 400);
    let (_, v1) = s.call("GET", "/api/v1/compilereport?limit=3", Some(&env_id), None).await;
    assert_eq!(v1["reports"].as_array().unwrap().len(), 3);
    let (_, one) = s.call("GET", &format!("/api/v1/compilereport/{id}"), Some(&env_id), None).await;
    assert_eq!(one["report"]["id"], id.to_string());
    let (_, queue) = s.call("GET", "/api/v1/compilequeue", Some(&env_id), None).await;
    assert_eq!(queue["queue"], json!([]));

    let (code, out, err) = s.cli(&["compile", "list", "-e", &env_id]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("failed") && out.contains("success"), "{out}");
    let (code, out, err) = s.cli(&["compile", "show", "-e", &env_id, &id.to_string()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("== Pulling updates"), "{out}");
    let (code, out, err) = s.cli(&["compile", "request", "-e", &env_id, "-m", "from the cli", "--wait"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("from the cli") && out.contains("success"), "{out}");
    let (code, out, err) = s.cli(&["environment", "recompile", "auto", "--no-update", "--wait"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains("Pulling updates"), "no update, no pull: {out}");
}

#[tokio::test]
async fn compile_endpoints_reject_bad_requests() {
    let s = TestServer::start().await;
    let client = s.client();
    let unknown = uuid_v4();
    let (status, message) = common::refusal(client.notify(unknown.parse().unwrap(), &NotifyChange::default()).await);
    assert_eq!(status, 404, "{message}");
    let (status, body) = s.call("POST", "/api/v1/notify/not-a-uuid", None, Some(json!({}))).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = s.call("GET", "/api/v1/compilequeue", None, None).await;
    assert_eq!(status, 400, "{body}");
    let env = s.new_environment("p", "e").await;
    let env_id = env.to_string();
    let (status, body) = s.call("POST", &format!("/api/v1/notify/{env}"), None, Some(json!({"bogus": 1}))).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(refused(client.compile_report(env, unknown.parse().unwrap()).await), 404);
    let (status, body) = s.call("GET", &format!("/api/v2/compiledata/{unknown}"), Some(&env_id), None).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(refused(client.compile_reports(env, &ListQuery::new().limit(5000)).await), 400);

    // Without a repository the compile fails in Init and says why.
    let answer = client.notify(env, &NotifyChange::default()).await.unwrap();
    let id = answer.compile_id.unwrap();
    let details = finished(&s, env, id, Duration::from_secs(30)).await;
    assert_eq!(details.report.success, Some(false));
    assert!(details.reports.as_ref().unwrap()[0].errstream.contains("no repository"), "{details:#?}");

    // A halted environment keeps its requests queued; they run after resume.
    client.halt_environment(env).await.unwrap();
    let id = client.notify(env, &NotifyChange::default()).await.unwrap().compile_id.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (_, queue) = s.call("GET", "/api/v1/compilequeue", Some(&env_id), None).await;
    assert_eq!(queue["queue"].as_array().unwrap().len(), 1, "{queue:#}");
    assert_eq!(queue["queue"][0]["id"], id.to_string());
    assert!(queue["queue"][0]["started"].is_null(), "{queue:#}");
    client.resume_environment(env).await.unwrap();
    finished(&s, env, id, Duration::from_secs(30)).await;

    // auto_full_compile: a cron expression (here with seconds: every second) queues compiles.
    client.set_environment_setting(env, "auto_full_compile", "* * * * * * *").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let all = client.compile_reports(env, &ListQuery::new()).await.unwrap().data;
        if all.iter().any(|c| c.metadata["type"] == "schedule") {
            break;
        }
        assert!(Instant::now() < deadline, "auto_full_compile never requested a compile: {all:#?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    client.delete_environment_setting(env, "auto_full_compile").await.unwrap();

    // server_compile off: nothing is queued, the answer warns.
    client.set_environment_setting(env, "server_compile", false).await.unwrap();
    let answer = client.notify(env, &NotifyChange::default()).await.unwrap();
    assert!(answer.compile_id.is_none(), "{answer:?}");
    assert!(answer.warnings()[0].contains("server compile is disabled"), "{answer:?}");

    // Clearing the environment removes its compiles and their stages.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, queue) = s.call("GET", "/api/v1/compilequeue", Some(&env_id), None).await;
        if queue["queue"] == json!([]) {
            break;
        }
        assert!(Instant::now() < deadline, "the queue never emptied: {queue:#}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(!client.compile_reports(env, &ListQuery::new()).await.unwrap().data.is_empty());
    client.clear_environment(env).await.unwrap();
    assert_eq!(client.compile_reports(env, &ListQuery::new()).await.unwrap().data, []);
}

fn uuid_v4() -> String {
    // Any well-formed id that no environment has.
    "6f2c1a52-3c1e-4a55-9a41-7d0c0f7e2b11".to_string()
}

/// A model whose compile takes a few seconds: many instances, one resource.
fn slow_model(items: u32) -> String {
    format!(
        r#"
import std::testing
entity Item:
    int x
end
implement Item using std::none
for i in std::sequence({items}):
    Item(x=i)
end
std::testing::NullResource(name="slow", agentname="internal")
"#
    )
}

#[tokio::test]
async fn a_burst_of_requests_runs_few_compiles_one_at_a_time_and_survives_a_kill() {
    let mut s = TestServer::start().await;
    let repos = tempfile::tempdir().unwrap();
    let (url, work) = repository(repos.path(), "burst");
    commit_and_push(&work, &[("project.yml", &project_yml("", &[])), ("main.cf", &slow_model(100_000))], "slow");
    let env = environment(&s, &url, "main").await;

    let mut ids = std::collections::BTreeSet::new();
    for _ in 0..10 {
        ids.insert(request(&s, env).await);
    }
    assert!(ids.len() <= 2, "ten requests in a burst merge into at most two compiles: {ids:?}");
    for id in &ids {
        let details = finished(&s, env, *id, Duration::from_secs(120)).await;
        assert_eq!(details.report.success, Some(true), "{details:#?}");
    }
    let compiles = s.client().compile_reports(env, &ListQuery::new().sort("requested.asc")).await.unwrap().data;
    assert_eq!(compiles.len(), ids.len());
    for pair in compiles.windows(2) {
        assert!(
            pair[1].times.started.unwrap() >= pair[0].times.completed.unwrap(),
            "two compiles overlapped: {pair:#?}"
        );
    }

    // Kill the server while it compiles: after the restart the queue finishes.
    commit_and_push(&work, &[("main.cf", &slow_model(400_000))], "slower");
    let id = request(&s, env).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let details = s.client().compile_report(env, id).await.unwrap();
        if stage_names(&details).contains(&"Recompiling configuration model".to_string()) {
            assert!(details.report.times.completed.is_none(), "the compile was too fast to interrupt: {details:#?}");
            break;
        }
        assert!(Instant::now() < deadline, "the compile never reached the compiler");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, _) = s.call("HEAD", &format!("/api/v1/notify/{env}"), None, None).await;
    let details = s.client().compile_report(env, id).await.unwrap();
    assert_eq!(status, 200, "compiling: {details:#?}");
    s.kill_and_restart();
    let details = finished(&s, env, id, Duration::from_secs(120)).await;
    assert_eq!(details.report.success, Some(true), "{details:#?}");
    assert_eq!(stage_names(&details).iter().filter(|n| *n == "Init").count(), 1, "stages start over: {details:#?}");
    let version = details.report.version.unwrap();
    assert!(version >= 2, "{details:#?}");
}

#[tokio::test]
async fn a_compile_over_its_time_limit_or_crashing_fails_with_its_output() {
    let s = TestServer::start_with(&[("INMANTA_SERVER_COMPILE_TIMEOUT", "2")]).await;
    let repos = tempfile::tempdir().unwrap();
    let (url, work) = repository(repos.path(), "slow");
    commit_and_push(&work, &[("project.yml", &project_yml("", &[])), ("main.cf", &slow_model(1_000_000))], "slow");
    let env = environment(&s, &url, "main").await;
    let env_id = env.to_string();
    let id = request(&s, env).await;
    let details = finished(&s, env, id, Duration::from_secs(60)).await;
    assert_eq!(details.report.success, Some(false), "{details:#?}");
    let last = details.reports.as_ref().unwrap().last().unwrap().clone();
    assert_eq!(last.name, "Recompiling configuration model");
    assert!(last.returncode.is_none(), "{last:#?}");
    assert!(last.errstream.contains("time limit"), "{last:#?}");
    let (_, notes) = s.call("GET", "/api/v2/notification", Some(&env_id), None).await;
    let id_text = id.to_string();
    assert!(notes["data"].as_array().unwrap().iter().any(|n| n["compile_id"] == id_text.as_str()), "{notes:#}");

    // The server is still there, and a compile whose process dies is reported failed too.
    commit_and_push(&work, &[("main.cf", &slow_model(900_000))], "still slow");
    let id = request(&s, env).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let child = loop {
        let details = s.client().compile_report(env, id).await.unwrap();
        if stage_names(&details).contains(&"Recompiling configuration model".to_string())
            && let Some(pid) = s.pid().and_then(children).and_then(|c| c.into_iter().next())
        {
            break pid;
        }
        assert!(Instant::now() < deadline, "the compile never reached the compiler");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    Command::new("kill").args(["-KILL", &child.to_string()]).status().unwrap();
    let details = finished(&s, env, id, Duration::from_secs(30)).await;
    assert_eq!(details.report.success, Some(false), "{details:#?}");
    let last = details.reports.as_ref().unwrap().last().unwrap().clone();
    assert!(last.errstream.contains("killed by a signal"), "{last:#?}");
    s.client().server_status().await.expect("the server is still up");
}

/// The child processes of `pid` (Linux).
fn children(pid: u32) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).ok()? {
        let text = std::fs::read_to_string(task.ok()?.path().join("children")).unwrap_or_default();
        out.extend(text.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
    }
    (!out.is_empty()).then_some(out)
}

/// `a0` of 1 KiB doubled by `+` at each of 40 statements: 1 TiB at the end, unless stopped.
fn doubling_model() -> String {
    let mut model = format!("a0 = \"{}\"\n", "a".repeat(1024));
    for i in 1..=40 {
        model.push_str(&format!("a{i} = a{} + a{}\n", i - 1, i - 1));
    }
    model
}

#[tokio::test]
async fn a_model_whose_values_double_fails_with_a_readable_report_and_the_server_lives() {
    let s = TestServer::start_with(&[("INMANTA_SERVER_COMPILE_MEMORY_LIMIT", &(1u64 << 30).to_string())]).await;
    let repos = tempfile::tempdir().unwrap();
    let (url, work) = repository(repos.path(), "doubling");
    commit_and_push(&work, &[("project.yml", &project_yml("", &[])), ("main.cf", &doubling_model())], "doubling");
    let env = environment(&s, &url, "main").await;
    let compile_with = async |variables: &[(&str, &str)]| {
        let env_vars = variables.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let change = NotifyChange { update: true, env: Some(env_vars), ..Default::default() };
        let id = s.client().notify(env, &change).await.unwrap().compile_id.expect("a queued compile");
        finished(&s, env, id, Duration::from_secs(120)).await
    };

    // The compiler's budget stops it: a model error at the statement, in the report and its data.
    let details = compile_with(&[("INMANTA_COMPILER_MAX_MEMORY", "64M")]).await;
    assert_eq!(details.report.success, Some(false), "{details:#?}");
    let error = &details.compile_data.as_ref().expect("compile data").errors[0];
    assert!(error.message.contains("past the compile's memory budget of 64 MiB"), "{error:#?}");
    // a1..a14 count 64 MiB - 4 KiB (a string counts twice its length): a15 is refused
    let line = error.location.as_ref().map(|l| l.range.start.line);
    assert_eq!(line, Some(15), "a15 = a14 + a14, 0-based: {error:#?}");
    let last = details.reports.as_ref().unwrap().last().unwrap().clone();
    assert_eq!(last.returncode, Some(1), "{last:#?}");
    assert!(last.errstream.contains("16 | a15 = a14 + a14"), "{last:#?}");
    assert!(last.errstream.len() < 10_000, "a short report: {} bytes", last.errstream.len());

    // Without the budget, the address-space limit stops the process, and the report says so.
    let details = compile_with(&[("INMANTA_COMPILER_MAX_MEMORY", "64G")]).await;
    assert_eq!(details.report.success, Some(false), "{details:#?}");
    let last = details.reports.as_ref().unwrap().last().unwrap().clone();
    assert!(last.returncode.is_none(), "{last:#?}");
    assert!(
        last.errstream
            .contains("ran out of memory at its limit of 1024 MiB of address space ([server] compile-memory-limit)"),
        "{last:#?}"
    );
    s.client().server_status().await.expect("the server is still up");
}

#[tokio::test]
async fn a_reinstall_compile_starts_from_a_fresh_checkout_and_a_new_virtual_environment() {
    // The web console's "Cleanup project & recompile": Inmanta removes the project directory
    // (its venv `.env` inside) before the compile (`reinstall_project_and_venv`).
    let s = TestServer::start().await;
    let repos = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let module_repo = module_repository(repos.path());
    let (url, work) = repository(repos.path(), "project");
    let yml = project_yml(&module_repo, &["greeting ~= 1.0"]);
    commit_and_push(&work, &[("project.yml", &yml), ("main.cf", &model(out.path(), "first"))], "first");
    let env = environment(&s, &url, "main").await;
    let id = request(&s, env).await;
    assert_eq!(finished(&s, env, id, Duration::from_secs(120)).await.report.success, Some(true));
    let checkout = s.state_dir.path().join("compiles").join(env.to_string());
    let leftover = checkout.join(".env").join("leftover");
    std::fs::create_dir_all(leftover.parent().unwrap()).unwrap();
    std::fs::write(&leftover, "from an earlier install").unwrap();

    // Without reinstall the checkout is kept.
    let id = request(&s, env).await;
    let details = finished(&s, env, id, Duration::from_secs(120)).await;
    assert_eq!(details.report.success, Some(true), "{details:#?}");
    assert!(leftover.exists());
    assert!(!stage_names(&details).contains(&"Cloning repository".to_string()), "{details:#?}");

    let body = NotifyChange { update: true, reinstall: true, ..Default::default() };
    let id = s.client().notify(env, &body).await.unwrap().compile_id.unwrap();
    let details = finished(&s, env, id, Duration::from_secs(120)).await;
    assert_eq!(details.report.success, Some(true), "{details:#?}");
    assert!(!leftover.exists(), "the old virtual environment is gone");
    assert!(stage_names(&details).contains(&"Cloning repository".to_string()), "{details:#?}");
    let init = &details.reports.as_ref().unwrap()[0];
    assert!(init.outstream.contains("Removing project and venv directory"), "{init:#?}");
}
