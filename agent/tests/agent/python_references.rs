//! References of a resource with a Python handler: inmanta-core resolves them in the executor
//! with std's reference classes (inmanta-module-std from the package index, in the test venv of
//! scripts/python-test-venv.sh), the agent answers the fact lookup std's fact reference makes,
//! and the resolved values come back redacted from the handler's logs and changes.

use std::sync::Arc;
use std::time::Duration;

use agent::{FactSource, HandlerStatus, Mode};
use serde_json::{Map, Value, json};

use crate::common::logs;
use crate::python::{resource, run, setup};

const SECRET_VAR: &str = "CARGO_PKG_DESCRIPTION";
const SECRET: &str = env!("CARGO_PKG_DESCRIPTION");

fn replace(rid: &str, reference: &str) -> Value {
    json!({"type": "core::Replace", "args": [
        {"id": rid, "name": "resource", "type": "resource"},
        {"id": reference, "name": "value", "type": "reference"},
        {"name": "destination", "type": "literal", "value": "value"},
    ]})
}

/// A `kvfile::Line` whose `value` comes from `reference`.
fn line(path: &std::path::Path, key: &str, reference: Value) -> agent::ResourceRequest {
    let rid = format!("kvfile::Line[host1,key={key}]");
    let id = reference["id"].as_str().unwrap().to_string();
    resource(
        &format!("{rid},v=1"),
        json!({"path": path.to_str().unwrap(), "key": key, "value": null,
               "references": [reference], "mutators": [replace(&rid, &id)]}),
    )
}

fn environment_reference(variable: &str) -> Value {
    json!({"id": "5a1d8a3c-1c4e-3d38-9e8a-0d6f3c1b2a11", "type": "std::Environment",
           "args": [{"name": "name", "type": "literal", "value": variable}]})
}

struct Facts;

impl FactSource for Facts {
    fn facts(&self, environment: &str, resource_id: &str) -> Result<Map<String, Value>, String> {
        assert_eq!(environment, "6a1f3e5c-0000-4000-8000-000000000001");
        match resource_id {
            "kvfile::Line[host1,key=source]" => Ok(json!({"address": "192.0.2.9"}).as_object().unwrap().clone()),
            _ => Ok(Map::new()),
        }
    }
}

#[test]
fn python_handlers_get_resolved_references_and_report_no_value() {
    let mut s = setup(&["kvfile"], &["std"], Duration::from_secs(120));
    s.executor = s.executor.with_facts(Arc::new(Facts));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.conf");
    std::fs::write(&file, "token=old\n").unwrap();

    // An update: the handler logs its changes, which hold the secret; it comes back redacted.
    let token = line(&file, "token", environment_reference(SECRET_VAR));
    let out = run(&s, &token, Mode::DryRun);
    assert_eq!(out.status, HandlerStatus::Dry, "{}", logs(&out));
    assert_eq!(out.changes["value"].desired, json!(agent::REDACTED_DESIRED), "{:?}", out.changes);
    let out = run(&s, &token, Mode::Deploy);
    assert_eq!(out.status, HandlerStatus::Deployed, "{}", logs(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("token={SECRET}\n"));
    let reported = format!("{:?} {:?} {:?}", out.logs, out.changes, out.facts);
    assert!(reported.contains("set token in"), "{reported}");
    assert!(!reported.contains(SECRET), "the resolved value leaked: {reported}");

    // std's fact reference asks the server (here: the agent's fact source) for the fact.
    let fact = json!({"id": "7f0c5d9e-2b1a-3c4d-8e9f-112233445566", "type": "std::FactReference", "args": [
        {"name": "environment", "type": "literal", "value": "6a1f3e5c-0000-4000-8000-000000000001"},
        {"name": "resource_id", "type": "literal", "value": "kvfile::Line[host1,key=source]"},
        {"name": "fact_name", "type": "literal", "value": "address"},
        {"name": "mocked_facts", "type": "literal", "value": null},
    ]});
    let out = run(&s, &line(&file, "address", fact), Mode::Deploy);
    assert_eq!(out.status, HandlerStatus::Deployed, "{}", logs(&out));
    assert!(std::fs::read_to_string(&file).unwrap().contains("address=192.0.2.9\n"));

    // A variable that is not set fails the resource, naming it.
    let out = run(&s, &line(&file, "unset", environment_reference("H31_SURELY_NOT_SET_ANYWHERE")), Mode::Deploy);
    assert_eq!(out.status, HandlerStatus::Failed, "{}", logs(&out));
    assert!(logs(&out).contains("Environment variable H31_SURELY_NOT_SET_ANYWHERE is not set"), "{}", logs(&out));
    assert!(!std::fs::read_to_string(&file).unwrap().contains("unset="));
}

/// An age identity and a value encrypted to it, made with Debian's `age` (scripts/lib.sh
/// installs it); `None` when it is missing (reported by `test_support`).
pub fn age_secret(dir: &std::path::Path, plaintext: &str) -> Option<(std::path::PathBuf, String)> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let key = dir.join("age-identity.txt");
    match Command::new("age-keygen").arg("-o").arg(&key).output() {
        Ok(out) => assert!(out.status.success(), "age-keygen: {}", String::from_utf8_lossy(&out.stderr)),
        Err(e) => {
            test_support::missing_prerequisite(format!("age (Debian package age; scripts/lib.sh ensure_age): {e}"));
            return None;
        }
    }
    let public = Command::new("age-keygen").arg("-y").arg(&key).output().unwrap();
    let recipient = String::from_utf8(public.stdout).unwrap();
    let mut age = Command::new("age")
        .args(["--encrypt", "--armor", "--recipient", recipient.trim()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    age.stdin.take().unwrap().write_all(plaintext.as_bytes()).unwrap();
    let out = age.wait_with_output().unwrap();
    assert!(out.status.success());
    Some((key, String::from_utf8(out.stdout).unwrap()))
}

/// An `fs::File` (built-in handler) whose content is a module's own reference type, resolved by
/// the module's Python class in the version's Python executor.
fn age_file(path: &std::path::Path, ciphertext: &str, identity: &std::path::Path) -> agent::ResourceRequest {
    let rid = format!("fs::File[host1,path={}]", path.display());
    crate::common::req(json!({
        "id": format!("{rid},v=1"), "path": path.to_str().unwrap(), "hash": null, "content": null,
        "permissions": 600, "owner": null, "group": null, "purged": false,
        "references": [{"id": "0b7f5a10-3c2d-3e4f-9a8b-7c6d5e4f3a21", "type": "agesecret::Decrypt", "args": [
            {"name": "ciphertext", "type": "literal", "value": ciphertext},
            {"name": "identity_file", "type": "literal", "value": identity.to_str().unwrap()},
        ]}],
        "mutators": [{"type": "core::Replace", "args": [
            {"id": rid, "name": "resource", "type": "resource"},
            {"id": "0b7f5a10-3c2d-3e4f-9a8b-7c6d5e4f3a21", "name": "value", "type": "reference"},
            {"name": "destination", "type": "literal", "value": "content"},
        ]}],
    }))
}

#[test]
fn built_in_handlers_get_a_modules_own_reference_resolved_by_its_python_class() {
    let dir = tempfile::tempdir().unwrap();
    let Some((identity, ciphertext)) = age_secret(dir.path(), SECRET) else { return };
    let s = setup(&["agesecret"], &[], Duration::from_secs(120));
    let file = dir.path().join("decrypted.conf");
    std::fs::write(&file, "old\n").unwrap();

    let out = run(&s, &age_file(&file, &ciphertext, &identity), Mode::DryRun);
    assert_eq!(out.status, HandlerStatus::Dry, "{}", logs(&out));
    assert_eq!(out.changes["hash"].desired, json!(agent::REDACTED_DESIRED), "{:?}", out.changes);
    let out = run(&s, &age_file(&file, &ciphertext, &identity), Mode::Deploy);
    assert_eq!(out.status, HandlerStatus::Deployed, "{}", logs(&out));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), SECRET);
    let reported = format!("{:?} {:?} {:?}", out.logs, out.changes, out.facts);
    assert!(!reported.contains(SECRET), "the resolved value leaked: {reported}");

    // A wrong key and a missing key file: the resource fails, naming the reference's reason.
    let other_dir = dir.path().join("other");
    std::fs::create_dir_all(&other_dir).unwrap();
    let (other, _) = age_secret(&other_dir, "unused").unwrap();
    let never = dir.path().join("never.conf");
    for (identity, reason) in [(other, "no identity matched"), (dir.path().join("missing.txt"), "no such file")] {
        let out = run(&s, &age_file(&never, &ciphertext, &identity), Mode::Deploy);
        assert_eq!(out.status, HandlerStatus::Failed, "{}", logs(&out));
        assert!(logs(&out).contains("age could not decrypt"), "{}", logs(&out));
        let named = "reference agesecret::Decrypt 0b7f5a10-3c2d-3e4f-9a8b-7c6d5e4f3a21: ValueError";
        assert!(logs(&out).contains(named), "{}", logs(&out));
        assert!(logs(&out).to_lowercase().contains(reason), "{}", logs(&out));
        assert!(!logs(&out).contains(SECRET));
        assert!(!never.exists());
    }
}
