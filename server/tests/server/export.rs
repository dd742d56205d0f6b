//! `inmanta compile` and `inmanta export` against a real server, then the version, resource and
//! param commands on what was exported.

use crate::common;

use std::path::Path;
use std::process::Command;

use api::client::ListQuery;
use common::{BIN, TestServer};
use serde_json::{Value, json};

fn project(dir: &Path, main: &str) {
    std::fs::write(
        dir.join("project.yml"),
        "name: demo\nmodulepath: libs\ndownloadpath: libs\nrepo: https://github.com/inmanta/\n",
    )
    .unwrap();
    std::fs::write(dir.join("main.cf"), main).unwrap();
}

/// Runs `inmanta ARGS` in `dir`; returns exit code, stdout and stderr.
fn inmanta(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let output = Command::new(BIN).args(args).current_dir(dir).output().expect("run inmanta");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The paths are those of a remote machine (reached over SSH, which these tests never do): the
/// test that reads statuses halts its environment first, so everything stays `available`.
const MODEL: &str = r#"
import fs
import std::testing
import mitogen

host = std::Host(name="web1", os=std::linux, via=mitogen::Ssh(hostname="web1.invalid"))
motd = fs::File(host=host, path="/etc/motd", content="welcome to {{ host.name }}\n")
fs::File(host=host, path="/etc/issue", content="issue\n", requires=[motd])
std::testing::NullResource(name="n1", agentname="internal")
"#;

async fn environment(s: &TestServer) -> String {
    s.new_environment("p", "prod").await.to_string()
}

#[tokio::test]
async fn export_pushes_files_and_a_version_that_the_cli_reads_back() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    // Halted: versions are stored and released, nothing deploys.
    s.client().halt_environment(env.parse().unwrap()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), MODEL);
    let port = s.url.rsplit(':').next().unwrap().to_string();
    std::fs::write(dir.path().join(".inmanta"), s.dot_inmanta(&env)).unwrap();

    let (code, out, err) = inmanta(dir.path(), &["compile"]);
    assert_eq!(code, 0, "{out}{err}");

    let (code, out, err) = inmanta(dir.path(), &["export", "-d"]);
    assert_eq!(code, 0, "{out}{err}");
    let version: i64 = out.trim().parse().unwrap_or_else(|_| panic!("export prints the version, got {out:?}"));
    assert_eq!(version, 1);

    // Files were uploaded: the content of /etc/motd is in the store under its hash.
    let (_, body) = s.call("GET", "/api/v1/version/1", Some(&env), None).await;
    let resources = body["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 3);
    let motd = resources.iter().find(|r| r["resource_id"] == "fs::File[web1,path=/etc/motd]").unwrap();
    let hash = motd["attributes"]["hash"].as_str().unwrap();
    let (status, file) = s.call("GET", &format!("/api/v1/file/{hash}"), None, None).await;
    assert_eq!(status, 200);
    use base64::Engine;
    let content = base64::engine::general_purpose::STANDARD.decode(file["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, b"welcome to web1\n");
    let issue = resources.iter().find(|r| r["resource_id"] == "fs::File[web1,path=/etc/issue]").unwrap();
    // Plain ids, as Inmanta 20.1 answers them.
    assert_eq!(issue["attributes"]["requires"], json!(["fs::File[web1,path=/etc/motd]"]));

    // A second export with the environment given by name; the model changed in one place.
    project(dir.path(), &MODEL.replace("welcome to", "hello from"));
    let (code, out, err) = inmanta(dir.path(), &["export", "-e", "prod"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.trim(), "2");

    let cli = |args: &[&str]| inmanta(dir.path(), &[args, &["--host", "127.0.0.1", "--port", &port]].concat());
    let (code, out, err) = cli(&["version", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("active") && out.contains("retired"), "{out}");
    let (code, out, _) = cli(&["version", "diff", "1", "2"]);
    assert_eq!(code, 0);
    assert!(out.contains("modified fs::File[web1,path=/etc/motd]") && out.contains("hash"), "{out}");
    assert!(!out.contains("/etc/issue"), "unchanged resources are left out: {out}");
    let (code, out, _) = cli(&["resource", "list", "--status", "available"]);
    assert_eq!(code, 0);
    assert_eq!(out.matches("available").count(), 3, "{out}");
    let (code, out, _) = cli(&["resource", "show", "fs::File[web1,path=/etc/issue]"]);
    assert_eq!(code, 0);
    assert!(out.contains("fs::File[web1,path=/etc/motd]: available"), "{out}");
    let (code, out, _) = cli(&["resource", "history", "fs::File[web1,path=/etc/motd]", "--json"]);
    assert_eq!(code, 0);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap().as_array().unwrap().len(), 2, "{out}");
    let (code, _, err) = cli(&["resource", "show", "fs::File[web1,path=/nope]"]);
    assert_eq!(code, 1, "{err}");

    let (code, _, err) = cli(&["param", "set", "--name", "db", "--value", "10.0.0.5"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = cli(&["param", "get", "--name", "db"]);
    assert_eq!((code, out.trim()), (0, "10.0.0.5"));
    let (_, out, _) = cli(&["param", "list"]);
    assert!(out.contains("db") && out.contains("user"), "{out}");
}

#[tokio::test]
async fn export_to_a_json_file_and_compile_errors() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path(), MODEL);
    let (code, out, err) = inmanta(dir.path(), &["export", "-j", "resources.json"]);
    assert_eq!(code, 0, "{out}{err}");
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("resources.json")).unwrap()).unwrap();
    let ids: Vec<&str> = written.as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&"std::testing::NullResource[internal,name=n1],v=0"), "{ids:?}");

    // A model error: non-zero exit, the location and source line on stderr, compile data written.
    project(dir.path(), "x = 1\nx = 2\n");
    let (code, _, err) =
        inmanta(dir.path(), &["compile", "--export-compile-data", "--export-compile-data-file", "cd.json"]);
    assert_ne!(code, 0);
    assert!(err.contains("main.cf:2"), "{err}");
    assert!(err.contains("x = 2"), "the source line is shown: {err}");
    let data: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("cd.json")).unwrap()).unwrap();
    assert_eq!(data["errors"][0]["type"], "inmanta.ast.DoubleSetException", "{data}");

    // No environment anywhere: a usage error that says what to do.
    project(dir.path(), MODEL);
    let (code, _, err) = inmanta(dir.path(), &["export"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("-e"), "{err}");
}

#[tokio::test]
async fn an_example_project_exports_with_partial_sets_and_the_cli_reads_it() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/webfleet");
    let port = s.url.rsplit(':').next().unwrap().to_string();
    let token = s.token.clone().unwrap_or_default();
    let target = [
        "-e",
        env.as_str(),
        "--server_address",
        "127.0.0.1",
        "--server_port",
        port.as_str(),
        "--token",
        token.as_str(),
    ];
    let (code, out, err) = inmanta(&example, &[&["export", "-d"][..], &target[..]].concat());
    assert_eq!(code, 0, "{out}{err}");
    let version: i64 = out.trim().parse().unwrap_or_else(|_| panic!("a version number, got {out:?}"));
    let (_, body) = s.call("GET", &format!("/api/v1/version/{version}"), Some(&env), None).await;
    assert_eq!(body["model"]["released"], true);
    let total = body["resources"].as_array().unwrap().len();
    assert!(total > 5, "the web fleet has files and directories: {total}");
    let (_, files) = s
        .call(
            "POST",
            "/api/v1/file",
            None,
            Some(json!({"files": body["resources"].as_array().unwrap().iter()
        .filter_map(|r| r["attributes"]["hash"].as_str()).collect::<Vec<_>>()})),
        )
        .await;
    assert_eq!(files["files"], json!([]), "every file content was uploaded");

    // A partial export replaces one resource set; --delete-resource-set drops another.
    let dir = tempfile::tempdir().unwrap();
    project(
        dir.path(),
        r#"
import std::testing
a = std::testing::NullResource(name="a1", agentname="internal")
std::ResourceSet(name="set-a", resources=[a])
b = std::testing::NullResource(name="b1", agentname="internal")
std::ResourceSet(name="set-b", resources=[b])
"#,
    );
    let (code, out, err) = inmanta(dir.path(), &[&["export"][..], &target[..]].concat());
    assert_eq!(code, 0, "{out}{err}");
    project(
        dir.path(),
        r#"
import std::testing
a = std::testing::NullResource(name="a2", agentname="internal")
std::ResourceSet(name="set-a", resources=[a])
"#,
    );
    let args = [&["export", "--partial", "--delete-resource-set", "set-b"][..], &target[..]].concat();
    let (code, out, err) = inmanta(dir.path(), &args);
    assert_eq!(code, 0, "{out}{err}");
    let partial: i64 = out.trim().parse().unwrap();
    let (_, body) = s.call("GET", &format!("/api/v1/version/{partial}"), Some(&env), None).await;
    let ids: Vec<&str> =
        body["resources"].as_array().unwrap().iter().map(|r| r["resource_id"].as_str().unwrap()).collect();
    assert_eq!(ids, vec!["std::testing::NullResource[internal,name=a2]"], "set-a replaced, set-b removed");
    let (code, _, err) = inmanta(dir.path(), &[&["export", "--delete-resource-set", "x"][..], &target[..]].concat());
    assert_eq!(code, 2, "--delete-resource-set needs --partial: {err}");
}

#[tokio::test]
async fn concurrent_exports_and_releases_stay_consistent() {
    let s = TestServer::start().await;
    let env = environment(&s).await;
    let http = common::client_with(s.token.as_deref());
    let mut tasks = tokio::task::JoinSet::new();
    for writer in 0..8 {
        let (http, url, env) = (http.clone(), s.url.clone(), env.clone());
        tasks.spawn(async move {
            let call = |method: reqwest::Method, path: String, body: Option<Value>| {
                let mut request = http.request(method, format!("{url}{path}")).header("X-Inmanta-tid", env.clone());
                if let Some(body) = body {
                    request = request.json(&body);
                }
                async move {
                    let response = request.send().await.unwrap();
                    let status = response.status().as_u16();
                    (status, response.json::<Value>().await.unwrap_or(Value::Null))
                }
            };
            let (_, reserved) = call(reqwest::Method::POST, "/api/v2/reserve_version".into(), None).await;
            let version = reserved["data"].as_i64().unwrap();
            let resources: Vec<Value> = (0..200)
                .map(|i| {
                    json!({"id": format!("std::testing::NullResource[w{writer},name=r{i}],v={version}"),
                    "name": format!("r{i}"), "agentname": format!("w{writer}"), "purged": false,
                    "send_event": false, "receive_events": false, "requires": []})
                })
                .collect();
            let (status, body) = call(
                reqwest::Method::PUT,
                "/api/v1/version".into(),
                Some(json!({"version": version, "resources": resources})),
            )
            .await;
            assert_eq!(status, 200, "{body}");
            // Some explicit releases race with auto_deploy: 200 or 409, never anything else.
            let (status, _) = call(reqwest::Method::POST, format!("/api/v1/version/{version}"), Some(json!({}))).await;
            assert!(status == 200 || status == 409, "release answered {status}");
            version
        });
    }
    let mut versions = Vec::new();
    while let Some(done) = tasks.join_next().await {
        versions.push(done.unwrap());
    }
    versions.sort();
    versions.dedup();
    assert_eq!(versions.len(), 8, "no duplicate version numbers: {versions:?}");
    let (_, list) = s.call("GET", "/api/v1/version", Some(&env), None).await;
    for model in list["versions"].as_array().unwrap() {
        assert_eq!(model["total"], 200, "no half-stored version: {model}");
    }
    // Inmanta's v1 versions have no status; the v2 listing has.
    let (client, env_id) = (s.client(), env.parse().unwrap());
    let listed = client.desired_state(env_id, &ListQuery::new().filter("status", "active")).await.unwrap();
    let active: Vec<i64> = listed.data.iter().map(|m| m.version).collect();
    assert_eq!(active, vec![*versions.last().unwrap()], "the newest version is the active one");
    // The resource view is the active version plus orphans of older ones, nothing in between.
    assert_eq!(client.deploy_summary(env_id).await.unwrap().total, 200);
    let view = client.resources(env_id, &ListQuery::new().limit(1000)).await.unwrap();
    // Orphans are the resources of versions that were released once; a version that lost the
    // race to a newer one was never released and left nothing behind.
    let released = list["versions"].as_array().unwrap().iter().filter(|m| m["released"] == true).count();
    assert_eq!(view.metadata.unwrap()["total"], 200 * released as u64);
}
