//! References resolved by the executor before built-in handlers run, and the resolved values kept
//! out of everything a run reports. The secret is a variable of this test process's own
//! environment (cargo sets `CARGO_PKG_DESCRIPTION` when it runs tests), as std's environment
//! reference reads the agent's environment.

use agent::{HandlerStatus, Outcome};
use serde_json::{Value, json};

use crate::common::*;

const SECRET_VAR: &str = "CARGO_PKG_DESCRIPTION";
const SECRET: &str = env!("CARGO_PKG_DESCRIPTION");

fn environment_reference(id: &str, variable: &str) -> Value {
    json!({"id": id, "type": "std::Environment", "args": [{"name": "name", "type": "literal", "value": variable}]})
}

fn replace(rid: &str, reference: &str, destination: &str) -> Value {
    json!({"type": "core::Replace", "args": [
        {"id": rid, "name": "resource", "type": "resource"},
        {"id": reference, "name": "value", "type": "reference"},
        {"name": "destination", "type": "literal", "value": destination},
    ]})
}

/// An `fs::File` as the compiler exports one whose content is a reference: `hash` and `content`
/// null, a mutator into `content`.
fn secret_file(path: &str, references: Value) -> agent::ResourceRequest {
    let rid = format!("fs::File[h,path={path}]");
    let first = references[0]["id"].as_str().unwrap().to_string();
    req(json!({"id": format!("{rid},v=1"), "path": path, "hash": null, "content": null, "permissions": 600,
        "owner": null, "group": null, "purged": false, "references": references,
        "mutators": [replace(&rid, &first, "content")]}))
}

/// Everything a run reports, as text.
fn reported(o: &Outcome) -> String {
    format!("{:?} {:?} {:?}", o.logs, o.changes, o.facts)
}

fn assert_no_secret(o: &Outcome) {
    let text = reported(o);
    assert!(!text.contains(SECRET), "the resolved value leaked: {text}");
    let sha1 = sha1_smol::Sha1::from(SECRET.as_bytes()).digest().to_string();
    assert!(!text.contains(&sha1), "the resolved value's hash leaked: {text}");
}

#[test]
fn file_content_from_an_environment_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let path = s(&tmp.path().join("secret.conf"));
    std::fs::write(&path, "old content\n").unwrap();
    let (ex, _) = executor();
    let r = secret_file(&path, json!([environment_reference("e1", SECRET_VAR)]));

    // A dry run says the content changes, without either value.
    let o = dry(&ex, &r);
    assert_eq!(o.status, HandlerStatus::Dry, "{}", logs(&o));
    assert_eq!(o.changes["hash"].desired, json!(agent::REDACTED_DESIRED), "{:?}", o.changes);
    assert_eq!(o.changes["hash"].current, json!(agent::REDACTED_CURRENT));
    assert!(!o.changes.contains_key("content"), "no unified diff of a secret: {:?}", o.changes);
    assert_no_secret(&o);

    let o = deploy(&ex, &r);
    assert_eq!(o.status, HandlerStatus::Deployed, "{}", logs(&o));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), SECRET);
    assert_eq!(mode_of(std::path::Path::new(&path)), 0o600);
    assert_no_secret(&o);
    assert_eq!(deploy(&ex, &r).change, agent::Change::NoChange, "deployed again: nothing to change");
}

#[test]
fn int_reference_of_an_environment_reference_and_a_nested_destination() {
    let tmp = tempfile::tempdir().unwrap();
    let out = s(&tmp.path().join("out"));
    let rid = "exec::Run[h,command=sh]";
    // The command prints the secret it gets in its environment and fails: the log line of the
    // failure carries its stdout, which must come back redacted.
    let command = format!("sh -c 'echo \"$TOKEN\" > {out}; echo \"token is $TOKEN\"; exit 3'");
    let r = req(json!({"id": format!("{rid},v=1"), "command": command, "creates": "", "cwd": "",
        "environment": {"TOKEN": null}, "onlyif": "", "path": "", "reload": "", "reload_only": false,
        "returns": [0], "timeout": null, "unless": "", "skip_on_fail": false,
        "references": [
            environment_reference("e1", SECRET_VAR),
            {"id": "i1", "type": "std::IntReference", "args": [{"name": "value", "type": "literal", "value": " 20 "}]},
        ],
        "mutators": [replace(rid, "i1", "timeout"), replace(rid, "e1", "environment.TOKEN")]}));
    let o = deploy(&ex_default(), &r);
    assert_eq!(o.status, HandlerStatus::Failed, "{}", logs(&o));
    assert_eq!(std::fs::read_to_string(&out).unwrap().trim_end(), SECRET, "the command got the resolved value");
    let stdout = o.logs.iter().find_map(|l| l.kwargs.get("stdout")).expect("the failure logs stdout");
    assert_eq!(stdout, &json!("token is ***\n"), "{}", reported(&o));
    assert_no_secret(&o);
}

fn ex_default() -> agent::Executor {
    executor().0
}

#[test]
fn unresolvable_references_fail_the_resource_naming_the_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let path = s(&tmp.path().join("never"));
    let (ex, _) = executor();

    let unset = secret_file(&path, json!([environment_reference("e1", "H31_SURELY_NOT_SET_ANYWHERE")]));
    for o in [deploy(&ex, &unset), dry(&ex, &unset)] {
        assert_eq!(o.status, HandlerStatus::Failed);
        let text = logs(&o);
        assert!(text.contains("Environment variable H31_SURELY_NOT_SET_ANYWHERE is not set"), "{text}");
        assert!(text.contains("std::Environment(name=H31_SURELY_NOT_SET_ANYWHERE)"), "{text}");
    }
    assert!(!std::path::Path::new(&path).exists());

    // A module's own Python reference type: built-in handlers cannot resolve it.
    let module = secret_file(&path, json!([{"id": "m1", "type": "vault::Secret", "args": []}]));
    let o = deploy(&ex, &module);
    assert_eq!(o.status, HandlerStatus::Failed);
    assert!(logs(&o).contains("has type vault::Secret"), "{}", logs(&o));

    // Not an int: the message says why without the value.
    let rid = "std::testing::NullResource[h,name=n]";
    let not_int = req(json!({"id": format!("{rid},v=1"), "name": "n", "agentname": "h", "fail": false,
        "purged": false, "int_value": null,
        "references": [
            environment_reference("e1", SECRET_VAR),
            {"id": "i1", "type": "std::IntReference", "args": [{"name": "value", "type": "reference", "id": "e1"}]},
        ],
        "mutators": [replace(rid, "i1", "int_value")]}));
    let o = deploy(&ex, &not_int);
    assert_eq!(o.status, HandlerStatus::Failed);
    assert!(logs(&o).contains("not an integer"), "{}", logs(&o));
    assert_no_secret(&o);
}

#[test]
fn facts_are_read_from_the_fact_source() {
    struct Facts;
    impl agent::FactSource for Facts {
        fn facts(&self, env: &str, rid: &str) -> Result<serde_json::Map<String, Value>, String> {
            assert_eq!((env, rid), ("env-1", "std::testing::NullResource[h,name=src]"));
            Ok(json!({"address": "192.0.2.10"}).as_object().unwrap().clone())
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = s(&tmp.path().join("address"));
    let (ex, _) = executor();
    let ex = ex.with_facts(std::sync::Arc::new(Facts));
    let fact = json!([{"id": "f1", "type": "std::FactReference", "args": [
        {"name": "environment", "type": "literal", "value": "env-1"},
        {"name": "resource_id", "type": "literal", "value": "std::testing::NullResource[h,name=src]"},
        {"name": "fact_name", "type": "literal", "value": "address"},
        {"name": "mocked_facts", "type": "literal", "value": null},
    ]}]);
    let o = deploy(&ex, &secret_file(&path, fact));
    assert_eq!(o.status, HandlerStatus::Deployed, "{}", logs(&o));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "192.0.2.10");
}
