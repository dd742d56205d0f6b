//! Shipped handlers (docs/handlers.md): the resource type -> executable mapping a version carries,
//! validated against the file store, inherited by partial versions and deleted with its version.
//! Runs on SQLite, or PostgreSQL when `INMANTA_TEST_POSTGRES` holds an admin URL.

use std::collections::BTreeMap;

use api::version::{PutPartial, PutVersion};
use orchestrator::{Error, Orchestrator};
use serde_json::json;

use crate::common::setup;

async fn upload(o: &Orchestrator, content: &str) -> String {
    let hash = sha1_smol::Sha1::from(content.as_bytes()).digest().to_string();
    o.upload_file(&hash, content.as_bytes()).await.unwrap();
    hash
}

fn line(key: &str) -> serde_json::Map<String, serde_json::Value> {
    json!({
        "id": format!("keyvalue::Line[h,key={key}],v=0"), "path": "/tmp/x.conf", "key": key, "value": "1",
        "purged": false, "send_event": true, "requires": [],
    })
    .as_object()
    .cloned()
    .unwrap()
}

fn mapping(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(t, h)| (t.to_string(), h.to_string())).collect()
}

fn partial(key: &str, set: &str, handlers: BTreeMap<String, String>) -> PutPartial {
    PutPartial {
        resources: vec![line(key)],
        resource_sets: BTreeMap::from([(format!("keyvalue::Line[h,key={key}]"), Some(set.to_string()))]),
        handlers,
        ..Default::default()
    }
}

#[tokio::test]
async fn a_version_keeps_its_shipped_handlers_and_partials_inherit_them() {
    let (o, env, _dir) = setup().await;
    let line_v1 = upload(&o, "#!/bin/sh\necho '{}'\n").await;
    let line_v2 = upload(&o, "#!/bin/sh\necho '{\"exists\": false}'\n").await;
    let thing = upload(&o, "#!/bin/sh\necho thing\n").await;

    let v1 = o.reserve_version(env).await.unwrap();
    let req = PutVersion {
        version: v1,
        resources: vec![line("a")],
        resource_sets: BTreeMap::from([("keyvalue::Line[h,key=a]".to_string(), Some("a".to_string()))]),
        handlers: mapping(&[("keyvalue::Line", &line_v1)]),
        ..Default::default()
    };
    o.put_version(env, req).await.unwrap();
    assert_eq!(o.version_handlers(env, v1).await.unwrap(), mapping(&[("keyvalue::Line", &line_v1)]));
    assert_eq!(o.shipped_handler(env, v1, "keyvalue::Line").await.unwrap(), Some(line_v1.clone()));
    assert_eq!(o.shipped_handler(env, v1, "fs::File").await.unwrap(), None);

    // A partial adds a handler for a new type and keeps the base's.
    let v2 = o.put_partial(env, partial("b", "b", mapping(&[("demo::Thing", &thing)]))).await.unwrap().version;
    assert_eq!(
        o.version_handlers(env, v2).await.unwrap(),
        mapping(&[("keyvalue::Line", &line_v1), ("demo::Thing", &thing)])
    );
    // Without new handlers it inherits them all.
    let v3 = o.put_partial(env, partial("c", "c", BTreeMap::new())).await.unwrap().version;
    assert_eq!(o.version_handlers(env, v3).await.unwrap(), o.version_handlers(env, v2).await.unwrap());

    // Replacing the code of a type the base handles needs allow_handler_code_update.
    let err = o.put_partial(env, partial("d", "d", mapping(&[("keyvalue::Line", &line_v2)]))).await.unwrap_err();
    assert!(
        matches!(&err, Error::BadRequest(m) if m.contains("keyvalue::Line") && m.contains("allow_handler_code_update")),
        "{err}"
    );
    let mut allowed = partial("d", "d", mapping(&[("keyvalue::Line", &line_v2)]));
    allowed.allow_handler_code_update = true;
    let v4 = o.put_partial(env, allowed).await.unwrap().version;
    assert_eq!(
        o.version_handlers(env, v4).await.unwrap(),
        mapping(&[("keyvalue::Line", &line_v2), ("demo::Thing", &thing)])
    );
    assert_eq!(o.shipped_handler(env, v1, "keyvalue::Line").await.unwrap(), Some(line_v1.clone()), "v1 unchanged");

    // Deleted with its version.
    o.delete_version(env, v1).await.unwrap();
    assert!(o.version_handlers(env, v1).await.unwrap().is_empty());
    assert_eq!(o.version_handlers(env, v2).await.unwrap().len(), 2);

    // Clearing the environment removes every mapping.
    o.clear_environment(env).await.unwrap();
    assert!(o.version_handlers(env, v4).await.unwrap().is_empty());
}

#[tokio::test]
async fn shipped_handlers_must_name_a_type_and_an_uploaded_file() {
    let (o, env, _dir) = setup().await;
    let stored = upload(&o, "#!/bin/sh\n").await;
    let missing = "0123456789abcdef0123456789abcdef01234567";
    let cases = [
        (mapping(&[("keyvalue::Line", missing)]), "not in the file store"),
        (mapping(&[("keyvalue::Line", "nothex")]), "sha1"),
        (mapping(&[("Line", &stored)]), "not a resource type"),
    ];
    for (handlers, expected) in cases {
        let version = o.reserve_version(env).await.unwrap();
        let req = PutVersion { version, resources: vec![line("a")], handlers: handlers.clone(), ..Default::default() };
        let err = o.put_version(env, req).await.unwrap_err();
        assert!(matches!(&err, Error::BadRequest(m) if m.contains(expected)), "{handlers:?}: {err}");
        assert!(o.version_handlers(env, version).await.unwrap().is_empty(), "nothing stored for a refused version");
    }
}
