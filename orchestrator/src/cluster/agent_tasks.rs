//! Tasks for remote agents across servers: the scheduler's server stores a task for an agent
//! whose session another server holds; that server claims it, passes it to the agent and stores
//! the outcome; the scheduler's server reads it back. Results survive the death of either side:
//! a task claimed by a dead server is claimed again by the server the agent reconnects to.

use uuid::Uuid;

use super::LIVE_SERVERS;
use crate::store::{now, parse_uuid};
use crate::{Orchestrator, Result};

impl Orchestrator {
    /// Stores a task (JSON) for `agent`, handed out under lease `epoch`; returns its id.
    pub async fn queue_agent_task(&self, env: Uuid, agent: &str, epoch: i64, task: String) -> Result<Uuid> {
        let id = Uuid::new_v4();
        sqlx::query(
            "INSERT INTO agent_task (id, environment, agent, epoch, task, created) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(id.to_string())
        .bind(env.to_string())
        .bind(agent.to_string())
        .bind(epoch)
        .bind(task)
        .bind(now())
        .execute(self.store.pool())
        .await?;
        self.publish(crate::Event::AgentTask { env });
        Ok(id)
    }

    /// The outcome (JSON) of task `id` once its agent answered; the task is then forgotten.
    pub async fn take_agent_task_outcome(&self, id: Uuid) -> Result<Option<String>> {
        let outcome: Option<Option<String>> = sqlx::query_scalar("SELECT outcome FROM agent_task WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(self.store.pool())
            .await?;
        let outcome = outcome.flatten();
        if outcome.is_some() {
            sqlx::query("DELETE FROM agent_task WHERE id = $1").bind(id.to_string()).execute(self.store.pool()).await?;
        }
        Ok(outcome)
    }

    /// Claims the open tasks of `agent` for this server (its session is here): those nobody
    /// claimed or whose claimer is dead, of the current lease epoch. Returns (id, task JSON).
    pub async fn claim_agent_tasks(&self, env: Uuid, agent: &str) -> Result<Vec<(Uuid, String)>> {
        let rows: Vec<(String, String)> = sqlx::query_as(&format!(
            "UPDATE agent_task SET claimed_by = $3 WHERE environment = $1 AND agent = $2 AND outcome IS NULL \
             AND (claimed_by IS NULL OR (claimed_by <> $3 AND claimed_by NOT IN ({LIVE_SERVERS}))) \
             AND epoch = (SELECT l.epoch FROM scheduler_lease l WHERE l.environment = agent_task.environment) \
             RETURNING id, task"
        ))
        .bind(env.to_string())
        .bind(agent.to_string())
        .bind(self.instance().to_string())
        .fetch_all(self.store.pool())
        .await?;
        rows.into_iter().map(|(id, task)| Ok((parse_uuid(&id)?, task))).collect()
    }

    /// Stores the outcome (JSON) of a task this server passed on.
    pub async fn finish_agent_task(&self, id: Uuid, outcome: String) -> Result<()> {
        sqlx::query("UPDATE agent_task SET outcome = $1 WHERE id = $2 AND claimed_by = $3")
            .bind(outcome)
            .bind(id.to_string())
            .bind(self.instance().to_string())
            .execute(self.store.pool())
            .await?;
        Ok(())
    }
}
