//! fs::File, fs::Directory, fs::Symlink and NullResource against real files in temp dirs.

use std::os::unix::fs::PermissionsExt;

use agent::{Change, HandlerStatus};
use serde_json::json;

use crate::common::*;

#[test]
fn file_create_nochange_update_dryrun_purge() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("motd");
    let (ex, files) = executor();
    let h1 = files.add("hello\nworld\n");
    let file = |hash: &str, perms: u32, purged: bool| {
        req(json!({
            "id": format!("fs::File[h1,path={}],v=1", s(&path)),
            "path": s(&path), "hash": hash, "permissions": perms, "owner": null, "group": null,
            "purged": purged, "via": {"method_name": "local", "name": ""}, "send_event": true,
        }))
    };

    // Create.
    let o = deploy(&ex, &file(&h1, 640, false));
    assert_eq!(o.status, HandlerStatus::Deployed, "{}", logs(&o));
    assert_eq!(o.change, Change::Created);
    assert_eq!(o.changes["purged"].current, json!(true));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\nworld\n");
    assert_eq!(mode_of(&path), 0o640);

    // The second run changes nothing.
    let o = deploy(&ex, &file(&h1, 640, false));
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::NoChange), "{}", logs(&o));
    assert!(o.changes.is_empty());

    // Dry run of new content and mode reports both and touches nothing.
    let h2 = files.add("hello\nthere\n");
    let o = dry(&ex, &file(&h2, 600, false));
    assert_eq!((o.status, o.change), (HandlerStatus::Dry, Change::NoChange));
    assert_eq!(o.changes["hash"].current, json!(h1));
    assert_eq!(o.changes["hash"].desired, json!(h2));
    assert_eq!(o.changes["permissions"].current, json!(640));
    assert_eq!(o.changes["permissions"].desired, json!(600));
    let diff = o.logs.iter().find_map(|l| l.kwargs.get("diff")).expect("a unified diff in the log");
    assert!(diff.as_str().unwrap().contains("-world\n+there"), "{diff}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\nworld\n");
    assert_eq!(mode_of(&path), 0o640);

    // Update.
    let o = deploy(&ex, &file(&h2, 600, false));
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::Updated), "{}", logs(&o));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello\nthere\n");
    assert_eq!(mode_of(&path), 0o600);

    // Permissions changed by hand are repaired without rewriting the content.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let o = deploy(&ex, &file(&h2, 600, false));
    assert_eq!(o.change, Change::Updated);
    assert_eq!(o.changes.keys().collect::<Vec<_>>(), vec!["permissions"]);
    assert_eq!(mode_of(&path), 0o600);

    // Purge, then purging again is a no-op.
    let o = dry(&ex, &file(&h2, 600, true));
    assert_eq!(o.changes["purged"].desired, json!(true));
    assert!(path.exists());
    let o = deploy(&ex, &file(&h2, 600, true));
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::Purged), "{}", logs(&o));
    assert!(!path.exists());
    let o = deploy(&ex, &file(&h2, 600, true));
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::NoChange));
}

#[test]
fn file_owner_group_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("f");
    let (ex, files) = executor();
    let h = files.add("x");
    let me = std::process::Command::new("id").arg("-un").output().unwrap();
    let me = String::from_utf8(me.stdout).unwrap().trim().to_string();
    let grp = std::process::Command::new("id").arg("-gn").output().unwrap();
    let grp = String::from_utf8(grp.stdout).unwrap().trim().to_string();
    let file = |owner: &str, hash: &str, p: &str| {
        req(json!({"id": format!("fs::File[h,path={p}],v=1"), "path": p, "hash": hash,
            "permissions": null, "owner": owner, "group": grp, "purged": false}))
    };
    let o = deploy(&ex, &file(&me, &h, &s(&path)));
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::Created), "{}", logs(&o));
    let o = deploy(&ex, &file(&me, &h, &s(&path)));
    assert_eq!(o.change, Change::NoChange, "{:?}", o.changes);

    // An owner that does not exist fails with an error line.
    let o = deploy(&ex, &file("no-such-user-xyz", &h, &s(&path)));
    assert_eq!(o.status, HandlerStatus::Failed);
    // Inmanta's wording: the exception named in the line (issue 46)
    assert!(logs(&o).contains("ERROR: An error occurred during deployment of fs::File["), "{}", logs(&o));
    assert!(logs(&o).contains("no passwd entry named \"no-such-user-xyz\""), "{}", logs(&o));

    // A missing parent directory and a hash the file store lacks both fail.
    let o = deploy(&ex, &file(&me, &h, &s(&tmp.path().join("nope/f"))));
    assert_eq!(o.status, HandlerStatus::Failed, "{}", logs(&o));
    let o = deploy(&ex, &file(&me, "0000000000000000000000000000000000000000", &s(&tmp.path().join("g"))));
    assert_eq!(o.status, HandlerStatus::Failed);
    assert!(logs(&o).contains("cannot fetch file"), "{}", logs(&o));

    // A directory where the file should be.
    std::fs::create_dir(tmp.path().join("d")).unwrap();
    let o = deploy(&ex, &file(&me, &h, &s(&tmp.path().join("d"))));
    assert_eq!(o.status, HandlerStatus::Failed);
    assert!(logs(&o).contains("is not a regular file"), "{}", logs(&o));
}

#[test]
fn report_only_reports_non_compliance_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("f");
    std::fs::write(&path, "old").unwrap();
    let (ex, files) = executor();
    let h = files.add("new");
    let r = req(json!({"id": format!("fs::File[h,path={}],v=1", s(&path)), "path": s(&path), "hash": h,
        "purged": false, "report_only": true}));
    let o = deploy(&ex, &r);
    assert_eq!((o.status, o.change), (HandlerStatus::NonCompliant, Change::NoChange));
    assert!(o.changes.contains_key("hash"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
}

#[test]
fn directory_lifecycle() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("d");
    let (ex, _) = executor();
    let dir = |perms: u32, purged: bool| {
        req(json!({"id": format!("fs::Directory[h,path={}],v=1", s(&path)), "path": s(&path),
            "permissions": perms, "owner": null, "group": null, "purged": purged}))
    };
    let o = deploy(&ex, &dir(750, false));
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::Created), "{}", logs(&o));
    assert!(path.is_dir());
    assert_eq!(mode_of(&path), 0o750);
    assert_eq!(deploy(&ex, &dir(750, false)).change, Change::NoChange);

    let o = dry(&ex, &dir(700, false));
    assert_eq!(o.changes["permissions"].current, json!(750));
    assert_eq!(mode_of(&path), 0o750);
    assert_eq!(deploy(&ex, &dir(700, false)).change, Change::Updated);
    assert_eq!(mode_of(&path), 0o700);

    std::fs::write(path.join("inside"), "x").unwrap();
    let o = deploy(&ex, &dir(700, true));
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::Purged), "{}", logs(&o));
    assert!(!path.exists());
}

#[test]
fn symlink_lifecycle() {
    let tmp = tempfile::tempdir().unwrap();
    let dst = tmp.path().join("link");
    let (ex, _) = executor();
    let link = |src: &str, purged: bool| {
        req(json!({"id": format!("fs::Symlink[h,dst={}],v=1", s(&dst)), "src": src, "dst": s(&dst),
            "purged": purged}))
    };
    let o = deploy(&ex, &link("/etc/hostname", false));
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::Created), "{}", logs(&o));
    assert_eq!(std::fs::read_link(&dst).unwrap().to_str().unwrap(), "/etc/hostname");
    assert_eq!(deploy(&ex, &link("/etc/hostname", false)).change, Change::NoChange);

    let o = dry(&ex, &link("/etc/passwd", false));
    assert_eq!(o.changes["src"].current, json!("/etc/hostname"));
    assert_eq!(std::fs::read_link(&dst).unwrap().to_str().unwrap(), "/etc/hostname");
    assert_eq!(deploy(&ex, &link("/etc/passwd", false)).change, Change::Updated);
    assert_eq!(std::fs::read_link(&dst).unwrap().to_str().unwrap(), "/etc/passwd");

    assert_eq!(deploy(&ex, &link("/etc/passwd", true)).change, Change::Purged);
    assert!(std::fs::symlink_metadata(&dst).is_err());

    std::fs::write(&dst, "a plain file").unwrap();
    let o = deploy(&ex, &link("/etc/passwd", false));
    assert_eq!(o.status, HandlerStatus::Failed);
    assert!(logs(&o).contains("is not a symlink"), "{}", logs(&o));
}

#[test]
fn null_resource_unknown_types_and_bad_via() {
    let (ex, _) = executor();
    let null = |fail: bool| {
        req(json!({"id": "std::testing::NullResource[internal,name=a],v=2", "name": "a",
            "agentname": "internal", "fail": fail, "value": "", "int_value": 0, "purged": false}))
    };
    let o = deploy(&ex, &null(false));
    assert_eq!((o.status, o.change), (HandlerStatus::Deployed, Change::NoChange));
    assert_eq!(dry(&ex, &null(false)).status, HandlerStatus::Dry);
    let o = deploy(&ex, &null(true));
    assert_eq!(o.status, HandlerStatus::Failed);
    assert_eq!(o.logs.last().unwrap().level, "ERROR");

    assert!(ex.handles("fs::File") && !ex.handles("x::Y"));
    let o = deploy(&ex, &req(json!({"id": "x::Y[a,name=b],v=1"})));
    assert_eq!(o.status, HandlerStatus::Unavailable);
    assert!(logs(&o).contains("no handler for resource type x::Y"));

    let o = deploy(
        &ex,
        &req(json!({"id": "fs::Directory[a,path=/tmp],v=1", "path": "/tmp", "via": {"method_name": "docker"}})),
    );
    assert_eq!(o.status, HandlerStatus::Unavailable);
    assert!(logs(&o).contains("unsupported `via` method"), "{}", logs(&o));
    assert_eq!(ex.facts(&null(false)).unwrap(), serde_json::Map::new());
}

struct Panics;

impl agent::Handler for Panics {
    fn run(&self, _: &mut agent::HandlerContext<'_>, _: &agent::ResourceRequest) -> Result<(), agent::HandlerError> {
        panic!("bug in a handler")
    }
}

#[test]
fn a_panicking_handler_fails_the_resource() {
    let (mut ex, _) = executor();
    ex.register("demo::Panics", std::sync::Arc::new(Panics));
    let o = deploy(&ex, &req(json!({"id": "demo::Panics[a,name=b],v=1"})));
    assert_eq!(o.status, HandlerStatus::Failed);
    assert!(logs(&o).contains("the handler panicked: bug in a handler"), "{}", logs(&o));
}
