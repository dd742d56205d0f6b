//! A compile whose server stopped is run again by another server (or the restarted one), unless
//! its export already stored the version: then the compile is finished with that version, so a
//! server dying between the export and the end of the compile does not yield a second version
//! (issue 14). Both databases: on SQLite the "other server" is the restarted one.

use api::environment::EnvironmentCreate;
use api::version::PutVersion;
use orchestrator::Orchestrator;
use orchestrator::compiles::CompileRequest;
use serde_json::json;
use std::time::Duration;
use uuid::Uuid;

async fn setup(dir: &std::path::Path) -> (String, Orchestrator, Uuid) {
    let url = orchestrator::testing::fresh_database_url(dir).await.unwrap();
    let o = Orchestrator::open(&url).await.unwrap();
    let project = o.create_project("p", None).await.unwrap();
    let env = o
        .create_environment(EnvironmentCreate {
            project_id: project.id,
            name: "e".into(),
            repository: Some("file:///nowhere".into()),
            branch: Some("main".into()),
            environment_id: None,
            description: None,
            icon: None,
        })
        .await
        .unwrap();
    (url, o, env.id)
}

/// Stores a version as the export of `compile` does (`None`: a version of another compile).
async fn export(o: &Orchestrator, env: Uuid, compile: Option<Uuid>) -> i64 {
    let version = o.reserve_version(env).await.unwrap();
    let mut metadata = json!({"message": "test", "type": "api"});
    if let Some(id) = compile {
        metadata["inmanta:compile:id"] = json!(id.to_string());
    }
    let req: PutVersion = serde_json::from_value(json!({
        "version": version,
        "resources": [{"id": format!("std::testing::NullResource[a,name=n],v={version}"), "name": "n",
                       "agentname": "a", "purged": false, "send_event": false, "receive_events": false, "requires": []}],
        "version_info": {"export_metadata": metadata},
    }))
    .unwrap();
    o.put_version(env, req).await.unwrap();
    version
}

#[tokio::test]
async fn a_compile_whose_export_stored_its_version_is_finished_not_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let (url, first, env) = setup(dir.path()).await;
    // Another compile's version, exported before: not to be mistaken for this one's.
    export(&first, env, Some(Uuid::new_v4())).await;
    let requested = first.request_compile(env, CompileRequest::default()).await.unwrap();
    let id = requested.id.expect("a queued compile");
    assert!(first.start_compile(id, Duration::from_secs(60)).await.unwrap());
    let version = export(&first, env, Some(id)).await;
    // The server dies here, before it records the end of the compile. Another server (on
    // SQLite, the restarted one) recovers the compile.
    drop(first);
    let second = Orchestrator::open(&url).await.unwrap();
    assert_eq!(second.recover_compiles().await.unwrap(), 1);
    let details = second.compile_details(env, id).await.unwrap();
    assert_eq!(details.report.version, Some(version), "{details:?}");
    assert_eq!(details.report.success, Some(true));
    assert!(details.report.times.completed.is_some());
    assert!(second.runnable_compiles().await.unwrap().is_empty(), "nothing is run again");
}

#[tokio::test]
async fn a_compile_that_stored_nothing_is_run_again() {
    let dir = tempfile::tempdir().unwrap();
    let (url, first, env) = setup(dir.path()).await;
    let id = first.request_compile(env, CompileRequest::default()).await.unwrap().id.expect("a queued compile");
    assert!(first.start_compile(id, Duration::from_secs(60)).await.unwrap());
    // A version of an older compile is there, but none of this one.
    export(&first, env, Some(Uuid::new_v4())).await;
    drop(first);
    let second = Orchestrator::open(&url).await.unwrap();
    assert_eq!(second.recover_compiles().await.unwrap(), 1);
    let details = second.compile_details(env, id).await.unwrap();
    assert!(details.report.times.completed.is_none() && details.report.times.started.is_none(), "{details:?}");
    let runnable = second.runnable_compiles().await.unwrap();
    assert_eq!(runnable.iter().map(|q| q.id).collect::<Vec<_>>(), vec![id]);
}
