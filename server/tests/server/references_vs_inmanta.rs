//! The references project of references.rs deployed by the real Inmanta 20.1 and by ours: the
//! same files (path, content, mode) and the same state for every resource. The real server
//! (scripts/inmanta-reference-files.sh: the reference install plus the `files` module) compiles
//! and exports it with its own `inmanta export`, and its scheduler and agents deploy it with the
//! environment variables the references read; ours does the same into another directory.
//! Resources that cannot resolve their reference (a variable that is not set, a missing fact, a
//! wrong or missing age key) fail on both with the same reason; Inmanta words the line around the
//! reason its own way (see [`reason`]). Without the reference install the test fails under CI=true.

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use api::client::ListQuery;
use common::reference::Reference;
use common::{BIN, TestServer};
use serde_json::Value;
use test_support::missing_prerequisite;
use uuid::Uuid;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
const SECRET_VAR: &str = "H31_TEST_SECRET";
const TIMEOUT_VAR: &str = "H31_TEST_TIMEOUT";
const UNSET_VAR: &str = "H31_TEST_SURELY_UNSET";
const SOURCE: &str = "std::testing::NullResource[localhost,name=source]";
const ADDRESS: &str = "192.0.2.44";
const TEMPLATE: &str = "content of a file of the project\n";

/// The age identity, a second identity the ciphertext was not encrypted to, and the ciphertext.
struct AgeKeys {
    identity: PathBuf,
    wrong: PathBuf,
    ciphertext: String,
}

fn age_keys(dir: &Path, plaintext: &str) -> Result<AgeKeys, String> {
    use std::io::Write as _;
    let keygen = |name: &str| -> Result<PathBuf, String> {
        let key = dir.join(name);
        let out = Command::new("age-keygen").arg("-o").arg(&key).output().map_err(|e| format!("age-keygen: {e}"))?;
        assert!(out.status.success(), "age-keygen: {}", String::from_utf8_lossy(&out.stderr));
        Ok(key)
    };
    let (identity, wrong) = (keygen("identity.txt")?, keygen("wrong.txt")?);
    let recipient = Command::new("age-keygen").arg("-y").arg(&identity).output().unwrap().stdout;
    let mut age = Command::new("age")
        .args(["--encrypt", "--armor", "--recipient", String::from_utf8(recipient).unwrap().trim()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("age: {e}"))?;
    age.stdin.take().unwrap().write_all(plaintext.as_bytes()).unwrap();
    let out = age.wait_with_output().unwrap();
    assert!(out.status.success());
    Ok(AgeKeys { identity, wrong, ciphertext: String::from_utf8(out.stdout).unwrap() })
}

/// The project, with its managed files under `root`: every reference kind, and a resource per way
/// a reference fails, each with a dependent where Inmanta skips one.
fn write_project(project: &Path, root: &Path, keys: &AgeKeys) {
    let r = root.display();
    let (identity, wrong, ciphertext) = (keys.identity.display(), keys.wrong.display(), &keys.ciphertext);
    let main = format!(
        r#"import fs
import exec
import mitogen
import std::testing
import agesecret
import files

host = std::Host(name="localhost", os=std::linux, via=mitogen::Local())
dir = fs::Directory(host=host, path="{r}/etc", mode=755)
fs::File(host=host, path="{r}/etc/secret", content=std::create_environment_reference("{SECRET_VAR}"), mode=600, requires=[dir])
exec::Run(host=host, command="touch {r}/etc/ran", creates="{r}/etc/ran", requires=[dir],
          timeout=std::create_int_reference(std::create_environment_reference("{TIMEOUT_VAR}")))
unset = fs::File(host=host, path="{r}/etc/unset", content=std::create_environment_reference("{UNSET_VAR}"), requires=[dir])
fs::File(host=host, path="{r}/etc/after-unset", content="after", requires=[unset])
source = std::testing::NullResource(name="source", agentname="localhost")
fs::File(host=host, path="{r}/etc/address", content=std::create_fact_reference(source, "address"), requires=[dir])
fs::File(host=host, path="{r}/etc/missing-fact", content=std::create_fact_reference(source, "nope"), requires=[dir])
fs::File(host=host, path="{r}/etc/decrypted", content=agesecret::decrypt("""{ciphertext}""", "{identity}"), mode=600, requires=[dir])
wrong = fs::File(host=host, path="{r}/etc/wrong-key", content=agesecret::decrypt("""{ciphertext}""", "{wrong}"), requires=[dir])
fs::File(host=host, path="{r}/etc/after-wrong", content="after", requires=[wrong])
fs::File(host=host, path="{r}/etc/no-key", content=agesecret::decrypt("""{ciphertext}""", "{r}/missing-identity.txt"), requires=[dir])
fs::File(host=host, path="{r}/etc/text", content=files::create_text_reference("a text kept in the file store"), requires=[dir])
fs::File(host=host, path="{r}/etc/file-content", content=files::create_text_file_content_reference("source://agesecret/template.txt"), requires=[dir])
"#
    );
    std::fs::write(project.join("main.cf"), main).unwrap();
    // `use_system_config`: Inmanta's pip finds the modules where the reference venv has them
    std::fs::write(
        project.join("project.yml"),
        "name: refs\nmodulepath: libs\ndownloadpath: libs\npip:\n  use_system_config: true\n",
    )
    .unwrap();
    let from = Path::new(ROOT).join("compiler/tests/python/references/libs/agesecret");
    for file in ["module.yml", "model/_init.cf", "plugins/__init__.py"] {
        let to = project.join("libs/agesecret").join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from.join(file), to).unwrap();
    }
    std::fs::create_dir_all(project.join("libs/agesecret/files")).unwrap();
    std::fs::write(project.join("libs/agesecret/files/template.txt"), TEMPLATE).unwrap();
}

/// Every path under `root` (relative, `ROOT` itself left out: a temporary directory) with its
/// mode and, for a file, its content.
fn tree(root: &Path) -> BTreeMap<String, (u32, Option<String>)> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, (u32, Option<String>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let relative = path.strip_prefix(root).unwrap().display().to_string();
            let content = meta.is_file().then(|| std::fs::read_to_string(&path).unwrap());
            out.insert(relative, (meta.permissions().mode() & 0o7777, content));
            if meta.is_dir() {
                walk(root, &path, out);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// The reason Inmanta's failure line gives, as its handler raised it: from `An error occurred
/// during deployment of ID (exception: LookupError('REASON')` the first line of REASON (Python's
/// repr escapes line breaks; age adds a second line pointing to its bug tracker).
fn reason(inmanta_message: &str) -> Option<String> {
    let exception = inmanta_message.split_once("(exception: ")?.1;
    let (_, quoted) = exception.split_once('(')?;
    let quote = quoted.chars().next()?;
    let inner = &quoted[1..];
    let end = [inner.find("\\n"), inner.rfind(&format!("{quote})"))].into_iter().flatten().min()?;
    Some(inner[..end].to_string())
}

/// Our resources' states and log messages once nothing deploys or waits any more.
async fn settle(s: &TestServer, env: Uuid, total: usize) -> BTreeMap<String, (String, Vec<String>)> {
    let deadline = Instant::now() + Duration::from_secs(120);
    let client = s.client();
    loop {
        let (_, status) = s.call("GET", "/api/v2/scheduler_status", Some(&env.to_string()), None).await;
        let list = client.resources(env, &ListQuery::new().filter("status", "!orphaned")).await.unwrap().data;
        let busy = status["data"]["scheduled"].as_u64() != Some(0) || status["data"]["running"].as_u64() != Some(0);
        let moving = list.iter().any(|r| matches!(r.status.as_str(), "deploying" | "available"));
        if list.len() == total && !busy && !moving {
            let mut out = BTreeMap::new();
            for r in list {
                let rid = r.resource_id.to_string();
                let logs = client.resource_logs(env, &rid, &ListQuery::new()).await.unwrap().data;
                out.insert(rid, (r.status.as_str().to_string(), logs.into_iter().map(|l| l.msg).collect()));
            }
            return out;
        }
        assert!(Instant::now() < deadline, "our deploy did not settle: {status} {list:?}\n{}", s.log());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn references_deploy_the_same_files_as_the_real_inmanta() {
    let started = Instant::now();
    let work = tempfile::tempdir().unwrap();
    let secret = format!("h31-secret-{}", Uuid::new_v4().simple());
    let age_plaintext = format!("h31-age-{}", Uuid::new_v4().simple());
    let keys = match age_keys(work.path(), &age_plaintext) {
        Ok(keys) => keys,
        Err(e) => return missing_prerequisite(format!("age (Debian package age, scripts/lib.sh): {e}")),
    };
    // What the references read: the agents' process environment (the reference server forks its
    // agents, which inherit it; ours run in-process), and a fact set through the API.
    let variables = [(SECRET_VAR, secret.as_str()), (TIMEOUT_VAR, "20")];
    let reference = match Reference::start_with("inmanta-reference-files.sh", &variables) {
        Ok(reference) => reference,
        Err(e) => return missing_prerequisite(&e),
    };
    assert!(std::env::var_os(UNSET_VAR).is_none(), "{UNSET_VAR} must not be set for this test");

    // The real Inmanta.
    let (inmanta_project, inmanta_root) = (work.path().join("inmanta-project"), work.path().join("inmanta-root"));
    std::fs::create_dir_all(&inmanta_project).unwrap();
    std::fs::create_dir_all(&inmanta_root).unwrap();
    write_project(&inmanta_project, &inmanta_root, &keys);
    let facts = serde_json::json!([{"resource_id": SOURCE, "name": "address", "value": ADDRESS}]);
    let deployed = Command::new(reference.python())
        .arg(format!("{ROOT}/scripts/reference/references_deploy.py"))
        .arg(&reference.url)
        .arg(&inmanta_project)
        .arg(facts.to_string())
        .output()
        .expect("run references_deploy.py");
    assert!(
        deployed.status.success(),
        "the real Inmanta did not deploy:\n{}",
        String::from_utf8_lossy(&deployed.stderr)
    );
    let inmanta: Value = serde_json::from_slice(&deployed.stdout).expect("references_deploy.py prints JSON");
    let inmanta_took = started.elapsed();

    // Ours, with the same Python (inmanta-core 20.1 and the same module versions) for the
    // compiler's plugins and the agent's Python code.
    let python = reference.python().display().to_string();
    let s = TestServer::start_with(&[variables[0], variables[1], ("INMANTA_AGENT_PYTHON", python.as_str())]).await;
    let env = s.new_environment("p", "refs").await;
    let fact = api::operations::SetParameter {
        source: "fact".into(),
        value: ADDRESS.into(),
        resource_id: Some(SOURCE.into()),
        metadata: None,
        recompile: false,
        expires: Some(false),
    };
    s.client().set_fact(env, "address", &fact).await.unwrap();
    let (our_project, our_root) = (work.path().join("our-project"), work.path().join("our-root"));
    std::fs::create_dir_all(&our_project).unwrap();
    std::fs::create_dir_all(&our_root).unwrap();
    write_project(&our_project, &our_root, &keys);
    std::fs::write(our_project.join(".inmanta"), s.dot_inmanta(&env.to_string())).unwrap();
    let export = Command::new(BIN)
        .arg("export")
        .current_dir(&our_project)
        .envs(s.token_env())
        .env("INMANTA_COMPILER_PYTHON", &python)
        .output()
        .unwrap();
    assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));
    let inmanta_resources = inmanta["resources"].as_object().expect("Inmanta's resources");
    let ours = settle(&s, env, inmanta_resources.len()).await;

    // Every resource in the same state, the root directory aside.
    let normalize = |text: &str, root: &Path| text.replace(&root.display().to_string(), "ROOT");
    let inmanta_states: BTreeMap<String, String> = inmanta_resources
        .iter()
        .map(|(id, r)| (normalize(id, &inmanta_root), r["status"].as_str().unwrap_or_default().to_string()))
        .collect();
    let our_states: BTreeMap<String, String> =
        ours.iter().map(|(id, (status, _))| (normalize(id, &our_root), status.clone())).collect();
    assert_eq!(our_states, inmanta_states, "ours (left) and Inmanta's (right) states\n{}", s.log());
    let failed = inmanta_states.values().filter(|st| *st == "failed").count();
    assert_eq!(failed, 4, "unset variable, missing fact, wrong key, missing key: {inmanta_states:?}");

    // A failed resource fails with the reason Inmanta's handler gave.
    for (id, r) in inmanta_resources {
        if r["status"] != "failed" {
            continue;
        }
        let messages: Vec<&str> = r["messages"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let why = messages.iter().find_map(|m| reason(m)).unwrap_or_else(|| panic!("no reason for {id}: {messages:?}"));
        let why = normalize(&why, &inmanta_root);
        let our_id = id.replace(&inmanta_root.display().to_string(), &our_root.display().to_string());
        let our_messages = &ours[&our_id].1;
        let ours_with_why = our_messages.iter().find(|m| normalize(m, &our_root).contains(&why));
        let Some(our_line) = ours_with_why else {
            panic!("{id} fails on Inmanta with {why:?}; our messages: {our_messages:?}")
        };
        let inmanta_line = messages.iter().find(|m| reason(m).is_some()).unwrap();
        println!("{}\n  Inmanta: {inmanta_line}\n  ours:    {our_line}", normalize(id, &inmanta_root));
    }

    // The same files: path, content and mode.
    let inmanta_files = tree(&inmanta_root);
    assert!(inmanta_files.len() >= 7, "the real Inmanta deployed its files: {inmanta_files:?}");
    assert_eq!(inmanta_files["etc/secret"], (0o600, Some(secret.clone())));
    assert_eq!(inmanta_files["etc/decrypted"], (0o600, Some(age_plaintext.clone())));
    assert_eq!(tree(&our_root), inmanta_files, "ours (left) and Inmanta's (right) files");
    println!("the real Inmanta took {inmanta_took:?}, both {:?}", started.elapsed());
}
