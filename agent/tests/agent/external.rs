//! The external handler protocol, through the example module's handler (docs/handlers.md).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use agent::{Change, HandlerStatus};
use serde_json::json;

use crate::common::*;

fn example_handler() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/handlers/keyvalue/handlers/keyvalue__Line")
}

#[test]
fn deploys_through_the_example_keyvalue_handler() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("app.conf");
    std::fs::write(&conf, "# settings\nother=1\n").unwrap();
    let (mut ex, _) = executor();
    ex.register_external("keyvalue::Line", example_handler());
    assert!(ex.handles("keyvalue::Line"));
    let line = |value: &str, purged: bool| {
        req(json!({"id": "keyvalue::Line[h,key=port],v=1", "path": s(&conf), "key": "port", "value": value,
            "purged": purged, "send_event": true}))
    };

    let o = dry(&ex, &line("8080", false));
    assert_eq!(o.status, HandlerStatus::Dry, "{}", logs(&o));
    assert_eq!(o.changes["purged"].current, json!(true));
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), "# settings\nother=1\n");

    let o = deploy(&ex, &line("8080", false));
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::Created), "{}", logs(&o));
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), "# settings\nother=1\nport=8080\n");
    assert!(logs(&o).contains("INFO: set port in"), "{}", logs(&o));

    let o = deploy(&ex, &line("8080", false));
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::NoChange), "{}", logs(&o));

    let o = dry(&ex, &line("9090", false));
    assert_eq!(o.changes["value"].current, json!("8080"));
    assert_eq!(o.changes["value"].desired, json!("9090"));
    let o = deploy(&ex, &line("9090", false));
    assert_eq!(o.change, Change::Updated, "{}", logs(&o));
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), "# settings\nother=1\nport=9090\n");

    assert_eq!(ex.facts(&line("9090", false)).unwrap()["line_count"], json!(3));

    let o = deploy(&ex, &line("9090", true));
    assert_eq!(o.change, Change::Purged, "{}", logs(&o));
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), "# settings\nother=1\n");
}

fn script(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("handler.sh");
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn whole_run_handlers_and_broken_handlers() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut ex, _) = executor();
    let r = req(json!({"id": "demo::Thing[h,name=a],v=1", "name": "a"}));

    // A handler that answers `read` with unsupported gets one deploy / dry_run request.
    let p = script(
        tmp.path(),
        r#"req=$(cat)
case "$req" in
  *'"action":"read"'*) echo '{"unsupported": true}' ;;
  *'"action":"dry_run"'*) echo '{"changes": {"state": {"current": "off", "desired": "on"}}}' ;;
  *'"action":"deploy"'*) echo '{"change": "updated", "changes": {"state": {"current": "off", "desired": "on"}}, "logs": [{"level": "warning", "msg": "switched on"}]}' ;;
esac"#,
    );
    ex.register_external("demo::Thing", p);
    let o = dry(&ex, &r);
    assert_eq!(o.status, HandlerStatus::Dry);
    assert_eq!(o.changes["state"].desired, json!("on"));
    let o = deploy(&ex, &r);
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::Updated), "{}", logs(&o));
    assert!(logs(&o).contains("WARNING: switched on"));

    // Errors, skips, bad JSON and non-zero exits.
    for (body, status, text) in [
        (r#"echo '{"error": "device offline"}'"#, HandlerStatus::Failed, "device offline"),
        (r#"echo '{"skip": "maintenance window"}'"#, HandlerStatus::Skipped, "maintenance window"),
        ("echo not json", HandlerStatus::Failed, "invalid JSON"),
        ("echo boom >&2; exit 2", HandlerStatus::Failed, "boom"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        ex.register_external("demo::Thing", script(dir.path(), body));
        let o = deploy(&ex, &r);
        assert_eq!(o.status, status, "{body}: {}", logs(&o));
        assert!(logs(&o).contains(text), "{body}: {}", logs(&o));
    }
    ex.register_external("demo::Thing", tmp.path().join("missing"));
    assert_eq!(deploy(&ex, &r).status, HandlerStatus::Failed);
}

/// A version ships the example handler by hash: the executor fetches it from the file source,
/// keeps it executable in its cache, runs it (deploy and dry run alike) and never prefers it over
/// a built-in handler.
#[test]
fn runs_the_handler_a_version_ships() {
    let tmp = tempfile::tempdir().unwrap();
    let conf = tmp.path().join("app.conf");
    let cache = tmp.path().join("handlers");
    let files = std::sync::Arc::new(MemFiles::default());
    let hash = files.add(&std::fs::read_to_string(example_handler()).unwrap());
    let ex = agent::Executor::new(files.clone()).with_shipped_handlers(cache.clone());
    let line = req(json!({"id": "keyvalue::Line[h,key=port],v=3", "path": s(&conf), "key": "port", "value": "80",
        "purged": false, "send_event": true}));
    let events = agent::Events::default();

    let o = ex.execute_with(&line, Some(&hash), agent::Mode::DryRun, &events);
    assert_eq!(o.status, HandlerStatus::Dry, "{}", logs(&o));
    assert!(!conf.exists(), "a dry run changes nothing");
    let o = ex.execute_with(&line, Some(&hash), agent::Mode::Deploy, &events);
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::Created), "{}", logs(&o));
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), "port=80\n");
    assert_eq!(mode_of(&cache.join(&hash)), 0o755);

    // Without a shipped handler the message says how a module provides one.
    let o = ex.execute_with(&line, None, agent::Mode::Deploy, &events);
    assert_eq!(o.status, HandlerStatus::Unavailable);
    assert!(logs(&o).contains("keyvalue::Line") && logs(&o).contains("handlers/keyvalue__Line"), "{}", logs(&o));
    // A hash the file store does not have.
    let o = ex.execute_with(&line, Some(&"0".repeat(40)), agent::Mode::Deploy, &events);
    assert_eq!(o.status, HandlerStatus::Unavailable);
    assert!(logs(&o).contains("cannot fetch the shipped handler"), "{}", logs(&o));

    // Built-in handlers win: a shipped executable for fs::File is never run.
    let target = tmp.path().join("plain.txt");
    let content = files.add("built in\n");
    let file = req(json!({"id": format!("fs::File[h,path={}],v=3", s(&target)), "path": s(&target), "hash": content,
        "permissions": null, "owner": null, "group": null, "purged": false}));
    let o = ex.execute_with(&file, Some(&hash), agent::Mode::Deploy, &events);
    assert_eq!(o.status, HandlerStatus::Deployed, "{}", logs(&o));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "built in\n");

    // An executor without a cache directory refuses shipped handlers with a reason.
    let plain = agent::Executor::new(files.clone());
    let o = plain.execute_with(&line, Some(&hash), agent::Mode::Deploy, &events);
    assert_eq!(o.status, HandlerStatus::Unavailable);
    assert!(logs(&o).contains("no directory to keep shipped handlers"), "{}", logs(&o));
}
