//! Support for tests that need a real database: SQLite in a directory, or a fresh PostgreSQL
//! database when `INMANTA_TEST_POSTGRES` holds an admin URL such as
//! `postgres://postgres@127.0.0.1:5432/postgres`.

use std::path::Path;

use crate::Result;

/// The URL of an empty database for one test.
pub async fn fresh_database_url(dir: &Path) -> Result<String> {
    match std::env::var("INMANTA_TEST_POSTGRES") {
        Ok(admin) if !admin.is_empty() => {
            sqlx::any::install_default_drivers();
            let name = format!("inmanta_test_{}", uuid::Uuid::new_v4().simple());
            let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect(&admin).await?;
            sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut conn).await?;
            let base = admin.rsplit_once('/').map(|(base, _)| base).unwrap_or(&admin);
            Ok(format!("{base}/{name}"))
        }
        _ => Ok(format!("sqlite://{}", dir.join("inmanta.db").display())),
    }
}

/// An orchestrator on a fresh database in `dir` ([`fresh_database_url`]) holding the project and
/// environment of [`new_environment`]: what most tests start from. The orchestrator and the
/// environment's id.
pub async fn setup(dir: &Path) -> Result<(crate::Orchestrator, uuid::Uuid)> {
    let o = crate::Orchestrator::open(&fresh_database_url(dir).await?).await?;
    let env = new_environment(&o).await?;
    Ok((o, env))
}

/// A project `p` with an environment `e` in it: the environment's id.
pub async fn new_environment(o: &crate::Orchestrator) -> Result<uuid::Uuid> {
    let project = o.create_project("p", None).await?.id;
    let environment =
        api::environment::EnvironmentCreate { project_id: project, name: "e".into(), ..Default::default() };
    Ok(o.create_environment(environment).await?.id)
}

/// Stores a version holding one `std::testing::NullResource` of agent `a` (released at once:
/// `auto_deploy` is on by default); its resource id and the version.
pub async fn store_one_null_resource(o: &crate::Orchestrator, env: uuid::Uuid) -> Result<(&'static str, i64)> {
    let rid = "std::testing::NullResource[a,name=x]";
    let resource = serde_json::json!({
        "id": api::resource::versioned_id(rid, 0), "name": "x", "agentname": "a", "send_event": false,
        "purged": false, "requires": [],
    });
    let version = o.reserve_version(env).await?;
    let resources = vec![resource.as_object().cloned().unwrap_or_default()];
    o.put_version(env, api::version::PutVersion { version, resources, ..Default::default() }).await?;
    Ok((rid, version))
}

impl crate::Orchestrator {
    /// Stores finished actions as a scheduler batch of only results: how tests set up a
    /// resource's history without a scheduler.
    pub async fn record_actions(&self, env: uuid::Uuid, actions: &[crate::resources::FinishedAction]) -> Result<()> {
        self.record_scheduler_batch(env, &[], actions, &[], None).await
    }

    /// Marks resources deploying as a scheduler batch does when it hands them to agents.
    pub async fn mark_deploying(&self, env: uuid::Uuid, resource_ids: &[String]) -> Result<()> {
        self.record_scheduler_batch(env, resource_ids, &[], &[], None).await
    }
}

impl crate::Orchestrator {
    /// Resource type -> sha1 of the executable that the version ships for it (docs/handlers.md).
    pub async fn version_handlers(
        &self,
        env: uuid::Uuid,
        version: i64,
    ) -> Result<std::collections::BTreeMap<String, String>> {
        let mut tx = self.store().pool().begin().await?;
        let handlers = crate::versions::handlers_of(&mut tx, env, version).await?;
        tx.rollback().await?;
        Ok(handlers)
    }
}
