//! `inmanta migrate` against the real Inmanta server (inmanta-core 20.1 of the reference install,
//! started by scripts/inmanta-reference.sh): two environments with a released version each, a
//! setting, a parameter and a user with a role are moved into a fresh database; a second run
//! changes nothing; our server started on that database deploys the moved versions without a
//! compile (the files of the model appear, every resource ends deployed). Without the reference
//! server the test fails under CI=true.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::reference::Reference;
use common::{BIN, TestServer};
use serde_json::Value;
use test_support::missing_prerequisite;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn migrate(source: &str, database_url: &str) -> (i32, String) {
    let output = Command::new(BIN)
        .args(["migrate", "--from", source, "--users", "--database-url", database_url])
        .output()
        .expect("run inmanta migrate");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("--- inmanta migrate\n{stdout}{stderr}");
    (output.status.code().unwrap_or(-1), stdout)
}

fn line_with<'a>(out: &'a str, needle: &str) -> &'a str {
    out.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no line with {needle:?} in:\n{out}"))
}

async fn wait_deployed(server: &TestServer, env: &str, managed: &Path, name: &str) {
    let file = managed.join(name).join("motd");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, body) = server.call("GET", "/api/v2/resource", Some(env), None).await;
        assert_eq!(status, 200, "{body}");
        let states: Vec<&str> =
            body["data"].as_array().expect("resources").iter().map(|r| r["status"].as_str().unwrap_or("")).collect();
        if states.len() == 2 && states.iter().all(|s| *s == "deployed") && file.exists() {
            break;
        }
        assert!(Instant::now() < deadline, "{name} not deployed within 60 s: {states:?}; log:\n{}", server.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(std::fs::read_to_string(&file).expect("the moved file"), format!("moved from Inmanta: {name}\n"));
}

#[tokio::test]
async fn migrate_moves_two_environments_from_inmanta_and_deploys_them_without_a_compile() {
    let reference = match Reference::start() {
        Ok(reference) => reference,
        Err(e) => return missing_prerequisite(&e),
    };
    let work = tempfile::tempdir().expect("temp dir");
    let managed = work.path().join("managed");
    std::fs::create_dir_all(work.path().join("projects")).expect("projects dir");
    // The machines' directories exist (fs::File does not create a file's parent).
    for name in ["prod", "test"] {
        std::fs::create_dir_all(managed.join(name)).expect("managed dir");
    }
    let setup = Command::new(reference.python())
        .arg(format!("{ROOT}/scripts/reference/migrate_source.py"))
        .arg(&reference.url)
        .arg(&reference.state)
        .arg(work.path().join("projects"))
        .arg(&managed)
        .output()
        .expect("run migrate_source.py");
    assert!(setup.status.success(), "filling the reference server failed:\n{}", String::from_utf8_lossy(&setup.stderr));
    let source: Value = serde_json::from_slice(&setup.stdout).expect("migrate_source.py prints JSON");
    let env_id = |name: &str| source["environments"][name]["id"].as_str().expect("an environment id").to_string();
    let version = |name: &str| source["environments"][name]["version"].as_i64().expect("a version");
    for name in ["prod", "test"] {
        assert!(!managed.join(name).join("motd").exists(), "the reference server must not deploy the model itself");
    }

    let db_dir = tempfile::tempdir().expect("temp dir");
    let database_url = common::fresh_database(db_dir.path()).await;
    let (code, out) = migrate(&reference.url, &database_url);
    assert_eq!(code, 0, "the first move must move everything");
    for name in ["prod", "test"] {
        assert!(line_with(&out, &format!("environment {name} ({})", env_id(name))).trim_start().starts_with("moved"));
        let line = line_with(&out, &format!("version {} of {name}:", version(name)));
        assert!(line.contains("2 resources, 1 files, released"), "{line}");
        assert!(line_with(&out, &format!("parameter {name}_region of {name}")).trim_start().starts_with("moved"));
        assert!(
            line_with(&out, &format!("setting available_versions_to_keep = 7 of {name}"))
                .trim_start()
                .starts_with("moved")
        );
    }
    assert!(line_with(&out, "user alice").contains("no password yet"));
    assert!(line_with(&out, "role operator of alice in prod").trim_start().starts_with("moved"));

    let (code, again) = migrate(&reference.url, &database_url);
    assert_eq!(code, 0);
    assert!(again.contains("nothing changed: everything was moved already"), "{again}");
    assert!(!again.lines().any(|l| l.trim_start().starts_with("moved")), "{again}");

    // What was moved, as our server serves it; its scheduler deploys the moved versions.
    let o = orchestrator::Orchestrator::open(&database_url).await.expect("open the database");
    let alice = o.user_record("alice").await.expect("read").expect("alice was moved");
    assert!(alice.must_change_password && !alice.is_admin);
    assert!(o.verify_login("alice", "not-a-hash").await.expect("login check").is_none());
    o.store().close().await;
    let server = TestServer::start_on(&database_url, &[("INMANTA_SERVER_AUTH", "false")]).await;
    for name in ["prod", "test"] {
        let env = env_id(name);
        let (_, body) = server.call("GET", &format!("/api/v2/environment/{env}"), None, None).await;
        assert_eq!(body["data"]["repo_url"], format!("https://git.example.com/infra/{name}.git"));
        assert_eq!(body["data"]["repo_branch"], if name == "prod" { "main" } else { "develop" });
        let (_, body) = server.call("GET", "/api/v2/environment_settings/auto_deploy", Some(&env), None).await;
        assert_eq!(body["data"]["settings"]["auto_deploy"], false, "{body}");
        let (_, body) = server.call("GET", &format!("/api/v1/parameter/{name}_region"), Some(&env), None).await;
        assert_eq!(body["parameter"]["value"], format!("eu-{name}"), "{body}");
        wait_deployed(&server, &env, &managed, name).await;
        let (_, body) = server.call("GET", "/api/v2/compilereport", Some(&env), None).await;
        assert_eq!(body["data"].as_array().map(Vec::len), Some(0), "no compile may run: {body}");
        let (_, body) = server.call("GET", "/api/v2/desiredstate", Some(&env), None).await;
        let versions: Vec<i64> =
            body["data"].as_array().expect("versions").iter().filter_map(|v| v["version"].as_i64()).collect();
        assert_eq!(versions, vec![version(name)], "the moved version keeps its number, and no other is made");
    }
}
