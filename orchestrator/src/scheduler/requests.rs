//! Deploys and repairs asked through a server that does not run the environment's scheduler
//! (several servers, docs/ha.md): stored in `scheduler_request` for the owner, which takes
//! them when notified or at its next lease tick.

use tokio::sync::oneshot;
use uuid::Uuid;

use super::command::Command;
use super::model::{Resource, choose};
use super::registry::Schedulers;
use super::task::Scope;
use crate::store::now;
use crate::{Event, Result};

impl Schedulers {
    /// Stores a deploy or repair for the owner and answers with the resources it will take, as
    /// the database knows them.
    pub(super) async fn forward_deploy(&self, env: Uuid, repair: bool, scope: Scope) -> Result<Vec<String>> {
        let resources: Vec<Resource> =
            self.orchestrator.released_intents(env).await?.into_iter().map(Resource::from_intent).collect();
        let chosen = choose(resources.iter(), repair, &scope);
        let request = serde_json::json!({"repair": repair, "agents": scope.agents, "resources": scope.resources});
        let mut tx = self.orchestrator.store().begin_write().await?;
        sqlx::query("INSERT INTO scheduler_request (id, environment, requested, request) VALUES ($1, $2, $3, $4)")
            .bind(Uuid::new_v4().to_string())
            .bind(env.to_string())
            .bind(now())
            .bind(request.to_string())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.orchestrator.publish(Event::SchedulerRequest { env });
        Ok(chosen.iter().map(|rid| rid.to_string()).collect())
    }

    /// Hands the deploys and repairs other servers stored for `env` to its scheduler, if this
    /// server runs it.
    pub(crate) async fn take_requests(&self, env: Uuid) {
        if self.owned.is_none() || !self.owns(env) {
            return;
        }
        let taken: std::result::Result<Vec<String>, sqlx::Error> =
            sqlx::query_scalar("DELETE FROM scheduler_request WHERE environment = $1 RETURNING request")
                .bind(env.to_string())
                .fetch_all(self.orchestrator.store().pool())
                .await;
        let requests = match taken {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(%env, error = %e, "cannot read the deploy requests of other servers");
                return;
            }
        };
        for text in requests {
            let Ok(request) = serde_json::from_str::<serde_json::Value>(&text) else { continue };
            let list = |key: &str| {
                request[key].as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
            };
            let scope = Scope { agents: list("agents"), resources: list("resources") };
            let (reply, _) = oneshot::channel();
            let repair = request["repair"].as_bool().unwrap_or(false);
            self.send(env, Command::Deploy { repair, scope, reply }, true);
        }
    }
}
