//! exec::Run with real processes.

use std::time::Instant;

use agent::{Change, Events, HandlerStatus, Mode};
use serde_json::{Value, json};

use crate::common::*;

fn run(extra: Value) -> agent::ResourceRequest {
    let mut r = json!({"id": "exec::Run[h,command=x],v=1", "creates": "", "cwd": "", "environment": {},
        "onlyif": "", "path": "", "reload": "", "reload_only": false, "returns": [0], "timeout": 30,
        "unless": "", "skip_on_fail": false, "send_event": true, "receive_events": true});
    for (k, v) in extra.as_object().unwrap() {
        r[k] = v.clone();
    }
    req(r)
}

#[test]
fn runs_unless_creates_exists() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = s(&tmp.path().join("marker"));
    let (ex, _) = executor();
    let r = run(json!({"command": format!("touch {marker}"), "creates": marker}));

    let o = dry(&ex, &r);
    assert_eq!(o.status, HandlerStatus::Dry);
    assert_eq!(o.changes["command"].desired, json!(format!("touch {marker}")));
    assert!(!tmp.path().join("marker").exists(), "a dry run must not run the command");

    let o = deploy(&ex, &r);
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::Updated), "{}", logs(&o));
    assert!(tmp.path().join("marker").exists());
    let o = deploy(&ex, &r);
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::NoChange), "{}", logs(&o));
}

#[test]
fn unless_and_onlyif_guard_the_command() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let (ex, _) = executor();
    let cmd = format!("touch {}", s(&out));
    assert_eq!(deploy(&ex, &run(json!({"command": cmd, "unless": "true"}))).change, Change::NoChange);
    assert_eq!(deploy(&ex, &run(json!({"command": cmd, "onlyif": "false"}))).change, Change::NoChange);
    assert!(!out.exists());
    let o = deploy(&ex, &run(json!({"command": cmd, "unless": "false", "onlyif": "true"})));
    assert_eq!(o.change, Change::Updated, "{}", logs(&o));
    assert!(out.exists());
}

#[test]
fn return_codes_skip_on_fail_and_output() {
    let (ex, _) = executor();
    let o = deploy(&ex, &run(json!({"command": "sh -c 'echo out; echo err >&2; exit 3'", "returns": [0, 3]})));
    assert_eq!(o.status, HandlerStatus::Deployed, "{}", logs(&o));
    let line = o.logs.iter().find(|l| l.kwargs.contains_key("stdout")).unwrap();
    assert_eq!(line.kwargs["stdout"], json!("out\n"));
    assert_eq!(line.kwargs["stderr"], json!("err\n"));
    assert_eq!(line.kwargs["returncode"], json!(3));

    let o = deploy(&ex, &run(json!({"command": "sh -c 'exit 1'"})));
    assert_eq!(o.status, HandlerStatus::Failed);
    assert!(logs(&o).contains("failed with exit code 1"), "{}", logs(&o));
    let o = deploy(&ex, &run(json!({"command": "sh -c 'exit 1'", "skip_on_fail": true})));
    assert_eq!(o.status, HandlerStatus::Skipped);

    let o = deploy(&ex, &run(json!({"command": "/no/such/program"})));
    assert_eq!(o.status, HandlerStatus::Failed);
    let o = deploy(&ex, &run(json!({"command": "echo 'unterminated"})));
    assert_eq!(o.status, HandlerStatus::Failed);
    assert!(logs(&o).contains("cannot split command"), "{}", logs(&o));
}

#[test]
fn timeout_kills_the_command() {
    let (ex, _) = executor();
    let start = Instant::now();
    let o = deploy(&ex, &run(json!({"command": "sh -c 'sleep 10; sleep 10'", "timeout": 0.3})));
    assert_eq!(o.status, HandlerStatus::Failed);
    assert!(logs(&o).contains("timed out after 0.3 s"), "{}", logs(&o));
    assert!(start.elapsed().as_secs() < 5, "took {:?}", start.elapsed());
}

#[test]
fn cwd_environment_and_quoting() {
    let tmp = tempfile::tempdir().unwrap();
    let (ex, _) = executor();
    let r = run(json!({"command": r#"sh -c "printf '%s|%s' \"$GREETING\" 'a b' > out.txt""#,
        "cwd": s(tmp.path()), "environment": {"GREETING": "hi there"}}));
    let o = deploy(&ex, &r);
    assert_eq!(o.status, HandlerStatus::Deployed, "{}", logs(&o));
    assert_eq!(std::fs::read_to_string(tmp.path().join("out.txt")).unwrap(), "hi there|a b");
}

#[test]
fn reload_runs_on_dependency_events() {
    let tmp = tempfile::tempdir().unwrap();
    let log = s(&tmp.path().join("log"));
    let (ex, _) = executor();
    let changed = Events { dependency_changed: true };
    let r = run(json!({"command": format!("sh -c 'echo run >> {log}'"),
        "reload": format!("sh -c 'echo reload >> {log}'"), "reload_only": true}));
    // reload_only: nothing without an event.
    assert_eq!(deploy(&ex, &r).change, Change::NoChange);
    assert!(!tmp.path().join("log").exists());
    let o = ex.execute(&r, Mode::Deploy, &changed);
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::Updated), "{}", logs(&o));
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "reload\n");
    // A dry run with an event reports the reload.
    let o = ex.execute(&r, Mode::DryRun, &changed);
    assert!(o.changes.contains_key("reload"));

    // Without a reload command, an event runs the command itself, once.
    let r = run(json!({"command": format!("sh -c 'echo run >> {log}'"), "unless": "true"}));
    ex.execute(&r, Mode::Deploy, &changed);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "reload\nrun\n");
    // receive_events=false ignores the event.
    let r = run(json!({"command": format!("sh -c 'echo run >> {log}'"), "unless": "true", "receive_events": false}));
    assert_eq!(ex.execute(&r, Mode::Deploy, &changed).change, Change::NoChange);
}
