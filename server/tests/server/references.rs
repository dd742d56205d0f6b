//! References resolved at deploy (docs/modules.md, "References"): a model keeps a secret as
//! `std::create_environment_reference`, the agent resolves it from its own process environment
//! just before the handler runs, and the value appears in no answer of the API, no log of the
//! server and no byte of its database. Run with `inmanta deploy` (all-in-one) and with a server
//! whose agents run in-process; a fact reference reads the server's fact store.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use api::client::{ActionQuery, ListQuery};
use common::{BIN, TestServer};
use uuid::Uuid;

const SECRET_VAR: &str = "H31_TEST_SECRET";
const TIMEOUT_VAR: &str = "H31_TEST_TIMEOUT";
const UNSET_VAR: &str = "H31_TEST_SURELY_UNSET";

/// A value no test writes anywhere itself, so finding it means it leaked.
fn secret() -> String {
    format!("h31-secret-{}", Uuid::new_v4().simple())
}

fn write_project(dir: &Path, main: &str) {
    std::fs::write(dir.join("project.yml"), "name: refs\nmodulepath: libs\ndownloadpath: libs\n").unwrap();
    std::fs::write(dir.join("main.cf"), main).unwrap();
}

/// A file from an environment reference, a command whose time-out is an int reference of an
/// environment reference, a file from a variable that is not set and a file that requires it.
fn model(root: &Path, extra: &str) -> String {
    let root = root.display();
    format!(
        r#"
import fs
import exec
import mitogen
import std::testing

host = std::Host(name="localhost", os=std::linux, via=mitogen::Local())
dir = fs::Directory(host=host, path="{root}/etc", mode=755)
fs::File(host=host, path="{root}/etc/secret", content=std::create_environment_reference("{SECRET_VAR}"), mode=600, requires=[dir])
exec::Run(host=host, command="touch {root}/etc/ran", creates="{root}/etc/ran", requires=[dir],
          timeout=std::create_int_reference(std::create_environment_reference("{TIMEOUT_VAR}")))
unset = fs::File(host=host, path="{root}/etc/unset", content=std::create_environment_reference("{UNSET_VAR}"), requires=[dir])
fs::File(host=host, path="{root}/etc/after-unset", content="after", requires=[unset])
{extra}
"#
    )
}

/// The files of a SQLite database (with its write-ahead log), or a dump of a PostgreSQL one.
fn database_bytes(url: &str) -> Vec<u8> {
    if let Some(path) = url.strip_prefix("sqlite://") {
        let mut bytes = Vec::new();
        for suffix in ["", "-wal", "-shm", "-journal"] {
            bytes.extend(std::fs::read(format!("{path}{suffix}")).unwrap_or_default());
        }
        assert!(!bytes.is_empty(), "no database at {path}");
        return bytes;
    }
    let dump = Command::new("pg_dump").arg(url).output().expect("pg_dump");
    assert!(dump.status.success(), "{}", String::from_utf8_lossy(&dump.stderr));
    dump.stdout
}

fn assert_absent(haystack: &[u8], secret: &str, where_: &str) {
    let found = haystack.windows(secret.len()).any(|w| w == secret.as_bytes());
    assert!(!found, "the secret value is in {where_}");
}

#[test]
fn inmanta_deploy_resolves_references_and_keeps_the_values_out() {
    let project = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let secret = secret();
    write_project(project.path(), &model(root.path(), ""));
    let deploy = |args: &[&str]| {
        let output = Command::new(BIN)
            .args(args)
            .current_dir(project.path())
            .env(SECRET_VAR, &secret)
            .env(TIMEOUT_VAR, "20")
            .env_remove(UNSET_VAR)
            .env("RUST_LOG", "debug")
            .output()
            .expect("run inmanta");
        (output.status.code().unwrap_or(-1), output.stdout, output.stderr)
    };

    let (code, out, err) = deploy(&["deploy", "--verbose"]);
    let text = format!("{}{}", String::from_utf8_lossy(&out), String::from_utf8_lossy(&err));
    assert_eq!(code, 1, "one resource fails: {text}");
    let etc = root.path().join("etc");
    assert_eq!(std::fs::read_to_string(etc.join("secret")).unwrap(), secret);
    assert!(etc.join("ran").exists(), "the command ran with its int-reference time-out: {text}");
    assert!(!etc.join("unset").exists() && !etc.join("after-unset").exists());
    assert!(text.contains(&format!("Environment variable {UNSET_VAR} is not set")), "{text}");
    let after = text.lines().find(|l| l.contains("/etc/after-unset")).unwrap_or_default();
    assert!(after.contains("skipped"), "the dependent of the failed resource is skipped: {text}");
    assert_absent(&out, &secret, "the output of inmanta deploy");
    assert_absent(&err, &secret, "the log of inmanta deploy");

    // A dry run after a hand edit: the content changes, and the report does not say what to.
    std::fs::write(etc.join("secret"), "edited by hand").unwrap();
    let (_, out, err) = deploy(&["deploy", "--dry-run", "--json"]);
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains(agent::REDACTED_DESIRED), "the changed secret is shown redacted: {text}");
    assert!(!text.contains("edited by hand"), "not even the current content of a secret file: {text}");
    assert_absent(&out, &secret, "the dry run's output");
    assert_absent(&err, &secret, "the dry run's log");

    let db = project.path().join("data/deploy/inmanta.db");
    assert_absent(&database_bytes(&format!("sqlite://{}", db.display())), &secret, "the deploy's database");
}

/// Issue 47: a second `inmanta deploy` resolves every reference again, so a variable unset since
/// the first run fails the resource that reads it, even though the model did not change.
#[test]
fn inmanta_deploy_again_resolves_references_again() {
    let project = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let secret = secret();
    let main = format!(
        r#"
import fs
import mitogen

host = std::Host(name="localhost", os=std::linux, via=mitogen::Local())
fs::File(host=host, path="{}/secret", content=std::create_environment_reference("{SECRET_VAR}"), mode=600)
"#,
        root.path().display()
    );
    write_project(project.path(), &main);
    let deploy = |value: Option<&str>| {
        let mut command = Command::new(BIN);
        command.arg("deploy").current_dir(project.path());
        match value {
            Some(value) => command.env(SECRET_VAR, value),
            None => command.env_remove(SECRET_VAR),
        };
        let output = command.output().expect("run inmanta");
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        (output.status.code().unwrap_or(-1), text)
    };
    let (code, text) = deploy(Some(&secret));
    assert_eq!(code, 0, "{text}");
    assert_eq!(std::fs::read_to_string(root.path().join("secret")).unwrap(), secret);

    let (code, text) = deploy(None);
    assert_eq!(code, 1, "the reference cannot be resolved any more: {text}");
    assert!(text.contains(&format!("Environment variable {SECRET_VAR} is not set")), "{text}");
    assert_absent(text.as_bytes(), &secret, "the output of the second run");
}

/// `inmanta deploy` compiles for its embedded environment: a fact reference names that
/// environment (not the nil one) and reads the fact from the embedded store.
#[tokio::test]
async fn inmanta_deploy_reads_facts_of_its_embedded_environment() {
    let project = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("address");
    let source = "std::testing::NullResource[localhost,name=source]";
    write_project(
        project.path(),
        &format!(
            r#"
import fs
import mitogen
import std::testing

host = std::Host(name="localhost", os=std::linux, via=mitogen::Local())
source = std::testing::NullResource(name="source", agentname="localhost")
fs::File(host=host, path="{}", content=std::create_fact_reference(source, "address"))
std::print(std::environment())
"#,
            out.display()
        ),
    );
    let deploy = || {
        let output = Command::new(BIN).arg("deploy").current_dir(project.path()).output().expect("run inmanta");
        let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        (output.status.code().unwrap_or(-1), text)
    };
    // No fact yet: the file fails, naming the fact.
    let (code, text) = deploy();
    assert_eq!(code, 1, "{text}");
    assert!(text.contains(&format!("Didn't find fact `address` for resource `{source}`")), "{text}");

    // The fact, stored in the embedded environment the way a handler's report would store it.
    let db = project.path().join("data/deploy/inmanta.db");
    let store = orchestrator::Orchestrator::open(&format!("sqlite://{}", db.display())).await.unwrap();
    let env = store.list_environments().await.unwrap().into_iter().find(|e| e.name == "refs").unwrap().id;
    let fact = orchestrator::parameters::NewParameter {
        name: "address".into(),
        source: "fact".into(),
        value: "203.0.113.5".into(),
        resource_id: Some(source.into()),
        metadata: None,
        expires: Some(false),
        recompile: false,
    };
    store.set_parameter(env, fact).await.unwrap();
    drop(store);

    let (code, text) = deploy();
    assert_eq!(code, 0, "{text}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "203.0.113.5");
    assert!(text.contains(&env.to_string()), "std::environment() is the embedded environment: {text}");
}

/// Waits until nothing is deploying or waiting; returns each resource's id and status.
async fn settle(s: &TestServer, env: Uuid, total: usize) -> Vec<(String, String)> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, status) = s.call("GET", "/api/v2/scheduler_status", Some(&env.to_string()), None).await;
        let list = s.client().resources(env, &ListQuery::new().filter("status", "!orphaned")).await.unwrap().data;
        let items: Vec<(String, String)> =
            list.iter().map(|r| (r.resource_id.to_string(), r.status.as_str().to_string())).collect();
        let busy = status["data"]["scheduled"].as_u64() != Some(0) || status["data"]["running"].as_u64() != Some(0);
        let moving = items.iter().any(|(_, st)| st == "deploying" || st == "available");
        if items.len() == total && !busy && !moving {
            return items;
        }
        assert!(Instant::now() < deadline, "deploy did not settle: {status} {items:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn status_of<'a>(items: &'a [(String, String)], suffix: &str) -> &'a str {
    items.iter().find(|(id, _)| id.ends_with(suffix)).map(|(_, st)| st.as_str()).unwrap_or("missing")
}

#[tokio::test]
async fn a_server_deploys_references_and_shows_no_value() {
    let secret = secret();
    let keys = tempfile::tempdir().unwrap();
    // a second secret, kept encrypted in the model and decrypted by the module's own class
    let age_plaintext = self::secret();
    let Some((identity, ciphertext)) = age_secret(keys.path(), &age_plaintext) else { return };
    let other_keys = tempfile::tempdir().unwrap();
    let (wrong_identity, _) = age_secret(other_keys.path(), "unused").unwrap();
    let python = test_python();
    let s = TestServer::start_with(&[
        (SECRET_VAR, secret.as_str()),
        (TIMEOUT_VAR, "20"),
        ("RUST_LOG", "debug"),
        ("INMANTA_AGENT_PYTHON", python.as_str()),
    ])
    .await;
    let env = s.new_environment("p", "refs").await;
    let client = s.client();
    // The hand edit below must wait for the dry run, not be repaired at once.
    client.set_environment_setting(env, "realtime_repair", false).await.unwrap();
    let project = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join(".inmanta"), s.dot_inmanta(&env.to_string())).unwrap();

    // A fact of another resource, read by a fact reference at deploy time.
    let source = "std::testing::NullResource[localhost,name=source]";
    let fact = api::operations::SetParameter {
        source: "fact".into(),
        value: "192.0.2.44".into(),
        resource_id: Some(source.into()),
        metadata: None,
        recompile: false,
        expires: Some(false),
    };
    client.set_fact(env, "address", &fact).await.unwrap();
    let root_text = root.path().display().to_string();
    let extra = format!(
        "source = std::testing::NullResource(name=\"source\", agentname=\"localhost\")\n\
         fs::File(host=host, path=\"{root_text}/etc/address\", content=std::create_fact_reference(source, \"address\"), requires=[dir])\n\
         fs::File(host=host, path=\"{root_text}/etc/missing-fact\", content=std::create_fact_reference(source, \"nope\"), requires=[dir])\n\
         import agesecret\n\
         import files\n\
         fs::File(host=host, path=\"{root_text}/etc/decrypted\", content=agesecret::decrypt(\"\"\"{ciphertext}\"\"\", \"{}\"), mode=600, requires=[dir])\n\
         wrong = fs::File(host=host, path=\"{root_text}/etc/wrong-key\", content=agesecret::decrypt(\"\"\"{ciphertext}\"\"\", \"{}\"), requires=[dir])\n\
         fs::File(host=host, path=\"{root_text}/etc/after-wrong\", content=\"after\", requires=[wrong])\n\
         fs::File(host=host, path=\"{root_text}/etc/no-key\", content=agesecret::decrypt(\"\"\"{ciphertext}\"\"\", \"{root_text}/missing-identity.txt\"), requires=[dir])\n\
         fs::File(host=host, path=\"{root_text}/etc/text\", content=files::create_text_reference(\"a text kept in the file store\"), requires=[dir])\n\
         fs::File(host=host, path=\"{root_text}/etc/file-content\", content=files::create_text_file_content_reference(\"source://agesecret/template.txt\"), requires=[dir])\n",
        identity.display(),
        wrong_identity.display(),
    );
    write_project(project.path(), &model(root.path(), &extra));
    add_agesecret(project.path());
    add_template(project.path());
    let export = Command::new(BIN)
        .arg("export")
        .current_dir(project.path())
        .envs(s.token_env())
        .env("INMANTA_COMPILER_PYTHON", &python)
        .output()
        .unwrap();
    assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));

    let items = settle(&s, env, 14).await;
    let etc = root.path().join("etc");
    // the module's own reference class, and the files module's references through the file store
    let read = |name: &str| std::fs::read_to_string(etc.join(name)).unwrap_or_default();
    assert_eq!(read("decrypted"), age_plaintext, "{items:?}\n{}", s.log());
    assert_eq!(read("text"), "a text kept in the file store", "{items:?}");
    assert_eq!(read("file-content"), TEMPLATE, "{items:?}");
    assert_eq!(status_of(&items, "/etc/secret]"), "deployed", "{items:?}\n{}", s.log());
    assert_eq!(std::fs::read_to_string(etc.join("secret")).unwrap(), secret);
    assert!(etc.join("ran").exists(), "{items:?}");
    assert_eq!(status_of(&items, "/etc/unset]"), "failed", "{items:?}");
    assert_eq!(status_of(&items, "/etc/after-unset]"), "skipped", "{items:?}");
    let address_logs = serde_json::to_string(
        &client
            .resource_logs(env, &format!("fs::File[localhost,path={root_text}/etc/address]"), &ListQuery::new())
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(status_of(&items, "/etc/address]"), "deployed", "{address_logs}");
    assert_eq!(std::fs::read_to_string(etc.join("address")).unwrap(), "192.0.2.44");
    assert_eq!(status_of(&items, "/etc/missing-fact]"), "failed", "{items:?}");

    let rid = |suffix: &str| format!("fs::File[localhost,path={root_text}/etc/{suffix}]");
    let logs_of = |suffix: &str| {
        let (client, rid) = (s.client(), rid(suffix));
        async move { serde_json::to_string(&client.resource_logs(env, &rid, &ListQuery::new()).await.unwrap()).unwrap() }
    };
    let unset_logs = logs_of("unset").await;
    assert!(unset_logs.contains(&format!("Environment variable {UNSET_VAR} is not set")), "{unset_logs}");
    let missing = logs_of("missing-fact").await;
    assert!(
        missing.contains("Didn't find fact `nope` for resource `std::testing::NullResource[localhost,name=source]`"),
        "{missing}"
    );

    // A dry run of the same version after a hand edit says the secret file changes, not to what.
    std::fs::write(etc.join("secret"), "edited by hand").unwrap();
    let versions = client.desired_state(env, &ListQuery::new()).await.unwrap().data;
    let latest = versions.iter().map(|v| v.version).max().unwrap();
    let id = client.dry_run(env, latest).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let report = loop {
        let report = client.dry_run_report(env, latest, id).await.unwrap();
        if report.summary.todo == 0 {
            break report;
        }
        assert!(Instant::now() < deadline, "dry run did not finish");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let diff = report.diff.iter().find(|d| d.resource_id.to_string().ends_with("/etc/secret]")).unwrap();
    assert_eq!(diff.status.as_str(), "modified", "{diff:?}");
    let hash = &diff.attributes["hash"];
    assert_eq!(
        (hash.from_value_compare.as_str(), hash.to_value_compare.as_str()),
        (agent::REDACTED_CURRENT, agent::REDACTED_DESIRED)
    );

    // The CLI shows the referenced attribute as its reference, not as `null` and not its value.
    let show = Command::new(BIN)
        .args(["resource", "show", &rid("secret")])
        .current_dir(project.path())
        .envs(s.token_env())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(show.status.success(), "{shown}{}", String::from_utf8_lossy(&show.stderr));
    assert!(shown.contains(&format!("content = <reference std::Environment(name={SECRET_VAR})>")), "{shown}");
    assert_absent(&show.stdout, &secret, "inmanta resource show");

    // The console's resource page (rendered by the server) shows the reference, not the value.
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let login = http
        .post(format!("{}/console/login", s.url))
        .form(&[("username", common::ADMIN), ("password", common::ADMIN_PASSWORD), ("next", "/console/")])
        .send()
        .await
        .unwrap();
    let session = login.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    let page = http
        .get(format!("{}/console/resources/details", s.url))
        .query(&[("env", env.to_string()), ("rid", rid("secret"))])
        .header("cookie", &session)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains(&format!("&lt;reference std::Environment(name={SECRET_VAR})&gt;")), "{page}");
    assert_absent(page.as_bytes(), &secret, "the console's resource page");

    // Every answer about these resources, the server's log and its database: no secret.
    let mut answers = serde_json::to_string(&report).unwrap();
    answers += &serde_json::to_string(&client.resources(env, &ListQuery::new()).await.unwrap()).unwrap();
    answers += &serde_json::to_string(&client.resource_actions(env, &ActionQuery::default()).await.unwrap()).unwrap();
    answers += &serde_json::to_string(&client.version(env, latest).await.unwrap()).unwrap();
    // A wrong age identity and a missing one fail their file with age's reason; the dependent is
    // skipped, the others deployed.
    assert_eq!(status_of(&items, "/etc/wrong-key]"), "failed", "{items:?}");
    assert_eq!(status_of(&items, "/etc/after-wrong]"), "skipped", "{items:?}");
    assert_eq!(status_of(&items, "/etc/no-key]"), "failed", "{items:?}");
    let wrong_logs = logs_of("wrong-key").await;
    assert!(wrong_logs.contains("agesecret::Decrypt") && wrong_logs.contains("no identity matched"), "{wrong_logs}");
    let no_key_logs = logs_of("no-key").await;
    assert!(no_key_logs.contains("no such file"), "{no_key_logs}");
    for suffix in ["secret", "unset", "address", "missing-fact", "decrypted", "wrong-key", "no-key"] {
        answers += &serde_json::to_string(&client.resource(env, &rid(suffix)).await.unwrap()).unwrap();
        answers += &logs_of(suffix).await;
        answers +=
            &serde_json::to_string(&client.resource_history(env, &rid(suffix), &ListQuery::new()).await.unwrap())
                .unwrap();
    }
    let (_, notifications) = s.call("GET", "/api/v2/notification", Some(&env.to_string()), None).await;
    answers += &notifications.to_string();
    assert!(answers.contains(&rid("secret")), "the answers are about the resources");
    assert!(s.log().contains("DEBUG") || s.log().contains("debug"), "the server logged at debug level");
    for value in [&secret, &age_plaintext] {
        assert_absent(answers.as_bytes(), value, "the API's answers");
        assert_absent(page.as_bytes(), value, "the console's resource page");
        assert_absent(s.log().as_bytes(), value, "the server's log");
        assert_absent(&database_bytes(&s.database_url), value, "the server's database");
    }
}

/// A remote `inmanta agent` resolves references with its own process environment (the server
/// has no such variable) and reads facts through the server's API with its agent token.
#[tokio::test]
async fn a_remote_agent_resolves_with_its_own_environment_and_the_servers_facts() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let s = TestServer::start_with(&[("INMANTA_SERVER_BIND_PORT", &port)]).await;
    let env = s.new_environment("p", "remote").await;
    let client = s.client();
    let fact = api::operations::SetParameter {
        source: "fact".into(),
        value: "198.51.100.7".into(),
        resource_id: Some("std::testing::NullResource[remote1,name=source]".into()),
        metadata: None,
        recompile: false,
        expires: Some(false),
    };
    client.set_fact(env, "address", &fact).await.unwrap();

    let secret = secret();
    let dir = tempfile::tempdir().unwrap();
    let age_plaintext = self::secret();
    let Some((identity, ciphertext)) = age_secret(dir.path(), &age_plaintext) else { return };
    let python = test_python();
    let token = s.environment_token(&env.to_string(), &["agent"]).await;
    let mut agent = Command::new(BIN)
        .args(["agent", "--name", "remote1", "-e", &env.to_string(), "--port", &port, "--token", &token, "--cache-dir"])
        .arg(dir.path().join("cache"))
        .env(SECRET_VAR, &secret)
        .env(TIMEOUT_VAR, "20")
        .env("INMANTA_AGENT_PYTHON", &python)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start inmanta agent");

    let project = tempfile::tempdir().unwrap();
    let root = dir.path().display();
    std::fs::write(project.path().join(".inmanta"), s.dot_inmanta(&env.to_string())).unwrap();
    write_project(
        project.path(),
        &format!(
            r#"
import fs
import exec
import mitogen
import std::testing
import agesecret
import files

host = std::Host(name="remote1", os=std::linux, via=mitogen::Local())
source = std::testing::NullResource(name="source", agentname="remote1")
fs::File(host=host, path="{root}/secret", content=std::create_environment_reference("{SECRET_VAR}"))
fs::File(host=host, path="{root}/address", content=std::create_fact_reference(source, "address"))
exec::Run(host=host, command="touch {root}/ran", creates="{root}/ran",
          timeout=std::create_int_reference(std::create_environment_reference("{TIMEOUT_VAR}")))
fs::File(host=host, path="{root}/decrypted", content=agesecret::decrypt("""{ciphertext}""", "{identity}"), mode=600)
fs::File(host=host, path="{root}/text", content=files::create_text_reference("a text kept in the file store"))
fs::File(host=host, path="{root}/file-content", content=files::create_text_file_content_reference("source://agesecret/template.txt"))
"#,
            identity = identity.display(),
        ),
    );
    add_agesecret(project.path());
    add_template(project.path());
    let export = Command::new(BIN)
        .arg("export")
        .current_dir(project.path())
        .envs(s.token_env())
        .env("INMANTA_COMPILER_PYTHON", &python)
        .output()
        .unwrap();
    assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));
    let items = settle(&s, env, 7).await;
    let _ = agent.kill();
    let _ = agent.wait();
    assert!(items.iter().all(|(_, st)| st == "deployed"), "{items:?}");
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap_or_default();
    assert_eq!(read("secret"), secret);
    assert_eq!(read("address"), "198.51.100.7");
    assert!(dir.path().join("ran").exists(), "the command ran with its int-reference time-out");
    assert_eq!(read("decrypted"), age_plaintext);
    assert_eq!(read("text"), "a text kept in the file store");
    assert_eq!(read("file-content"), TEMPLATE);
    let actions = serde_json::to_string(&client.resource_actions(env, &ActionQuery::default()).await.unwrap()).unwrap();
    for value in [&secret, &age_plaintext] {
        assert_absent(actions.as_bytes(), value, "the actions the remote agent reported");
        assert_absent(&database_bytes(&s.database_url), value, "the server's database");
    }
}

/// An age identity and `plaintext` encrypted to it, with Debian's `age` (scripts/lib.sh installs
/// it); `None` when it is missing (reported by `test_support`).
fn age_secret(dir: &Path, plaintext: &str) -> Option<(std::path::PathBuf, String)> {
    use std::io::Write as _;
    let key = dir.join("age-identity.txt");
    match Command::new("age-keygen").arg("-o").arg(&key).output() {
        Ok(out) => assert!(out.status.success(), "age-keygen: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => {
            test_support::missing_prerequisite(format!("age (Debian package age; scripts/lib.sh ensure_age): {e}"));
            return None;
        }
    }
    let recipient = String::from_utf8(Command::new("age-keygen").arg("-y").arg(&key).output().unwrap().stdout).unwrap();
    let mut age = Command::new("age")
        .args(["--encrypt", "--armor", "--recipient", recipient.trim()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    age.stdin.take().unwrap().write_all(plaintext.as_bytes()).unwrap();
    let out = age.wait_with_output().unwrap();
    assert!(out.status.success());
    Some((key, String::from_utf8(out.stdout).unwrap()))
}

/// The Python of scripts/python-test-venv.sh (inmanta-core 20.1), for the compile and the agents.
fn test_python() -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/python-test-venv.sh");
    let out = Command::new(script).output().expect("run python-test-venv.sh");
    assert!(out.status.success(), "python-test-venv.sh: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The agesecret module of the compiler's reference tests (a `@reference` class decrypting with
/// age), copied into `project`'s module path.
fn add_agesecret(project: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../compiler/tests/python/references/libs/agesecret");
    for file in ["module.yml", "model/_init.cf", "plugins/__init__.py"] {
        let to = project.join("libs/agesecret").join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from.join(file), to).unwrap();
    }
}

/// The content of the agesecret module's `files/template.txt`, which the file-content reference
/// reads at compile time (through `source://`).
const TEMPLATE: &str = "content of a file of the project\n";

fn add_template(project: &Path) {
    let template = project.join("libs/agesecret/files/template.txt");
    std::fs::create_dir_all(template.parent().unwrap()).unwrap();
    std::fs::write(&template, TEMPLATE).unwrap();
}

/// `inmanta deploy` of `fs::File`s whose content is a module's own reference type: the built-in
/// file handler gets the value the module's Python class decrypts with age; a wrong identity and
/// a missing one fail their file (naming the reason), its dependent is skipped, the rest deploy.
/// The `files` module's text and file-content references (from the package index) resolve the
/// same way, reading the file store.
#[test]
fn inmanta_deploy_decrypts_with_a_modules_own_reference_class() {
    let project = tempfile::tempdir().unwrap();
    let root = tempfile::tempdir().unwrap();
    let secret = secret();
    let Some((identity, ciphertext)) = age_secret(root.path(), &secret) else { return };
    let other = root.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let (wrong, _) = age_secret(&other, "unused").unwrap();
    add_agesecret(project.path());
    // read at compile time, through `config`'s `source://` paths (a module's files/ directory)
    let template = project.path().join("libs/agesecret/files/template.txt");
    std::fs::create_dir_all(template.parent().unwrap()).unwrap();
    std::fs::write(&template, "content of a file of the project\n").unwrap();
    let r = root.path().display();
    write_project(
        project.path(),
        &format!(
            r#"
import fs
import mitogen
import agesecret

host = std::Host(name="localhost", os=std::linux, via=mitogen::Local())
ciphertext = """{ciphertext}"""
fs::File(host=host, path="{r}/decrypted", content=agesecret::decrypt(ciphertext, "{}"), mode=600)
wrong = fs::File(host=host, path="{r}/wrong-key", content=agesecret::decrypt(ciphertext, "{}"))
fs::File(host=host, path="{r}/after-wrong", content="after", requires=[wrong])
fs::File(host=host, path="{r}/no-key", content=agesecret::decrypt(ciphertext, "{r}/missing-identity.txt"))

import files
fs::File(host=host, path="{r}/text", content=files::create_text_reference("a long text, kept in the file store"))
fs::File(host=host, path="{r}/file-content", content=files::create_text_file_content_reference("source://agesecret/template.txt"))
"#,
            identity.display(),
            wrong.display(),
        ),
    );
    std::fs::write(project.path().join("project.yml"), "name: agerefs\nmodulepath: libs\n").unwrap();
    let python = test_python();
    let output = Command::new(BIN)
        .args(["deploy", "--verbose"])
        .current_dir(project.path())
        .env("INMANTA_COMPILER_PYTHON", &python)
        .env("INMANTA_AGENT_PYTHON", &python)
        .env("RUST_LOG", "debug")
        .output()
        .expect("run inmanta");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(1), "two files fail: {text}");
    assert_eq!(std::fs::read_to_string(root.path().join("decrypted")).unwrap_or_default(), secret, "{text}");
    // The files module's references: the text and the file's content, through the file store.
    let read = |name: &str| std::fs::read_to_string(root.path().join(name)).unwrap_or_default();
    assert_eq!(read("text"), "a long text, kept in the file store", "{text}");
    assert_eq!(read("file-content"), "content of a file of the project\n", "{text}");
    for absent in ["wrong-key", "after-wrong", "no-key"] {
        assert!(!root.path().join(absent).exists(), "{absent}: {text}");
    }
    let line = |suffix: &str| text.lines().filter(|l| l.contains(suffix)).collect::<Vec<_>>().join("\n");
    assert!(line("/wrong-key]").contains("age could not decrypt"), "{text}");
    assert!(line("/wrong-key]").contains("no identity matched"), "{text}");
    assert!(line("/no-key]").contains("no such file"), "{text}");
    assert!(line("/after-wrong]").contains("skipped"), "{text}");
    assert_absent(&output.stdout, &secret, "the output of inmanta deploy");
    assert_absent(&output.stderr, &secret, "the log of inmanta deploy");
    let db = project.path().join("data/deploy/inmanta.db");
    assert_absent(&database_bytes(&format!("sqlite://{}", db.display())), &secret, "the deploy's database");
}
