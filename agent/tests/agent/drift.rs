//! The drift watcher against real files.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use agent::{DriftWatcher, ResourceRequest, watch_paths};
use api::ResourceId;
use serde_json::json;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::common::*;

fn next(rx: &mut UnboundedReceiver<ResourceId>, within: Duration) -> Option<ResourceId> {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if let Ok(rid) = rx.try_recv() {
            return Some(rid);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

fn rid(path: &str) -> ResourceId {
    ResourceId::parse_versioned(&format!("fs::File[h,path={path}]")).unwrap().0
}

#[test]
fn reports_changes_to_watched_files_quickly() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a.conf");
    let b = tmp.path().join("b.conf");
    std::fs::write(&a, "1").unwrap();
    std::fs::write(&b, "1").unwrap();
    let (w, mut rx) = DriftWatcher::new().unwrap();
    let (ra, rb) = (rid(&s(&a)), rid(&s(&b)));
    w.watch(&ra, std::slice::from_ref(&a)).unwrap();
    w.watch(&rb, std::slice::from_ref(&b)).unwrap();
    std::thread::sleep(Duration::from_millis(300));

    // A modification is reported within a second, once.
    let start = Instant::now();
    std::fs::write(&a, "2").unwrap();
    assert_eq!(next(&mut rx, Duration::from_secs(1)), Some(ra.clone()));
    assert!(start.elapsed() < Duration::from_secs(1));
    // Debounced: normally once; a late event of the same write may repeat `a`, never report `b`.
    while let Some(again) = next(&mut rx, Duration::from_millis(300)) {
        assert_eq!(again, ra);
    }

    // Deleting is drift too.
    std::fs::remove_file(&b).unwrap();
    assert_eq!(next(&mut rx, Duration::from_secs(1)), Some(rb.clone()));

    // Our own writes while suspended are ignored.
    {
        let _g = w.suspend(&ra);
        std::fs::write(&a, "3").unwrap();
    }
    assert_eq!(next(&mut rx, Duration::from_millis(400)), None);

    // Unwatched paths are not reported; other files in the directory never are.
    w.unwatch(&ra);
    std::fs::write(&a, "4").unwrap();
    std::fs::write(tmp.path().join("unrelated"), "x").unwrap();
    assert_eq!(next(&mut rx, Duration::from_millis(400)), None);
    assert_eq!(w.watched(), vec![rb]);
}

/// Events are matched to resources through an index of the watched paths: a path watched by
/// two resources stays watched for the one left when the other stops, and a path no longer
/// watched by anyone is not reported.
#[test]
fn a_path_watched_twice_is_reported_for_whoever_still_watches_it() {
    let tmp = tempfile::tempdir().unwrap();
    let shared = tmp.path().join("shared.conf");
    std::fs::write(&shared, "1").unwrap();
    let (w, mut rx) = DriftWatcher::new().unwrap();
    let (first, second) =
        (rid(&s(&shared)), ResourceId::parse_versioned(&format!("fs::File[h2,path={}]", s(&shared))).unwrap().0);
    w.watch(&first, std::slice::from_ref(&shared)).unwrap();
    w.watch(&second, std::slice::from_ref(&shared)).unwrap();
    // Watching again replaces what was watched, it does not add a second entry.
    w.watch(&first, std::slice::from_ref(&shared)).unwrap();
    w.unwatch(&first);
    std::thread::sleep(Duration::from_millis(300));

    std::fs::write(&shared, "2").unwrap();
    assert_eq!(next(&mut rx, Duration::from_secs(1)), Some(second.clone()));
    while let Some(again) = next(&mut rx, Duration::from_millis(300)) {
        assert_eq!(again, second, "only the resource still watching the path is reported");
    }

    w.unwatch(&second);
    std::fs::write(&shared, "3").unwrap();
    assert_eq!(next(&mut rx, Duration::from_millis(400)), None);
    assert!(w.watched().is_empty());
}

#[test]
fn watch_paths_only_for_local_fs_resources() {
    let r = |v: serde_json::Value| ResourceRequest::from_json(&v).unwrap();
    assert_eq!(
        watch_paths(&r(json!({"id": "fs::File[h,path=/etc/motd],v=1", "path": "/etc/motd",
            "via": {"method_name": "local", "name": ""}}))),
        vec![PathBuf::from("/etc/motd")]
    );
    assert_eq!(
        watch_paths(&r(json!({"id": "fs::Symlink[h,dst=/l],v=1", "src": "/x", "dst": "/l"}))),
        vec![PathBuf::from("/l")]
    );
    assert!(
        watch_paths(&r(json!({"id": "fs::File[h,path=/a],v=1", "path": "/a",
            "via": {"method_name": "ssh", "hostname": "h"}})))
        .is_empty()
    );
    assert!(watch_paths(&r(json!({"id": "exec::Run[h,command=x],v=1", "command": "x"}))).is_empty());
}

#[test]
fn drift_is_seen_and_repaired() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("managed.conf");
    let (ex, files) = executor();
    let hash = files.add("desired\n");
    let r = req(json!({"id": format!("fs::File[h,path={}],v=1", s(&path)), "path": s(&path), "hash": hash,
        "permissions": 644, "purged": false}));
    let (w, mut rx) = DriftWatcher::new().unwrap();

    // Deploy with the watch suspended, as the scheduler does, then watch the paths.
    {
        let _g = w.suspend(&r.id);
        assert_eq!(deploy(&ex, &r).change, agent::Change::Created);
    }
    w.watch(&r.id, &watch_paths(&r)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(next(&mut rx, Duration::from_millis(100)), None, "our own write is not drift");

    // Someone edits the file: reported, and one run repairs it.
    let start = Instant::now();
    std::fs::write(&path, "edited by hand\n").unwrap();
    let drifted = next(&mut rx, Duration::from_secs(1)).expect("drift reported");
    assert_eq!(drifted, r.id);
    {
        let _g = w.suspend(&r.id);
        assert_eq!(deploy(&ex, &r).change, agent::Change::Updated);
    }
    assert!(start.elapsed() < Duration::from_secs(1), "repaired after {:?}", start.elapsed());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "desired\n");
    assert_eq!(next(&mut rx, Duration::from_millis(400)), None, "the repair is not drift");
}
