//! Agents of an environment (routes: docs/api.md): listed, paused and unpaused;
//! the scheduler reads the pause state and marks agents up while it serves them.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::paging::{Column, ColumnKind, Filter, FilterKind, Order, Page, PageRequest, Source, View, fetch_page};
use crate::store::{Transaction, now};
use crate::{Error, Orchestrator, Result};

const STATUS_SQL: &str = "(CASE WHEN a.paused = 1 THEN 'paused' WHEN a.up = 1 THEN 'up' ELSE 'down' END)";

/// `GET /api/v2/agents`.
pub const AGENT_VIEW: View = View {
    sort_columns: &[
        Column { name: "name", sql: "a.name", kind: ColumnKind::Text },
        Column { name: "process_name", sql: "a.name", kind: ColumnKind::Text },
        Column { name: "paused", sql: "a.paused", kind: ColumnKind::Int },
        Column { name: "status", sql: STATUS_SQL, kind: ColumnKind::Text },
    ],
    default_sort: ("name", Order::Asc),
    filters: &[
        Filter { name: "name", sql: "a.name", kind: FilterKind::Partial },
        Filter { name: "process_name", sql: "a.name", kind: FilterKind::Partial },
        Filter {
            name: "status",
            sql: STATUS_SQL,
            kind: FilterKind::Choice { negatable: false, values: api::AgentStatus::NAMES },
        },
    ],
    id_sql: "a.name",
    id_kind: ColumnKind::Text,
};

/// An agent on the wire, as `GET /api/v2/agents` answers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, sqlx::FromRow)]
pub struct AgentRow {
    pub name: String,
    pub paused: i64,
    pub unpause_on_resume: Option<i64>,
    pub status: String,
    pub last_seen: Option<String>,
}

/// An agent as listed: the wire form and when the server last saw it (for the console; Inmanta
/// 20.1's agent has no such field).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentListing {
    pub agent: api::operations::Agent,
    pub last_seen: Option<String>,
}

/// `POST /api/v2/agent/<name>/<action>` and `/api/v2/agents/<action>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentAction {
    Pause,
    Unpause,
    KeepPausedOnResume,
    UnpauseOnResume,
}

impl AgentAction {
    pub fn parse(text: &str) -> Result<AgentAction> {
        Ok(match text {
            "pause" => AgentAction::Pause,
            "unpause" => AgentAction::Unpause,
            "keep_paused_on_resume" => AgentAction::KeepPausedOnResume,
            "unpause_on_resume" => AgentAction::UnpauseOnResume,
            other => {
                return Err(Error::BadRequest(format!(
                    "unknown agent action {other:?}; expected pause, unpause, keep_paused_on_resume or unpause_on_resume"
                )));
            }
        })
    }
}

/// Every agent named by a released version exists as a row.
pub(crate) async fn register_agents(tx: &mut Transaction, env: Uuid, version: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO agent (environment, name) SELECT DISTINCT environment, agent FROM resource \
         WHERE environment = $1 AND version = $2 ON CONFLICT (environment, name) DO NOTHING",
    )
    .bind(env.to_string())
    .bind(version)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

impl Orchestrator {
    pub async fn agents(&self, env: Uuid, req: &PageRequest) -> Result<Page<AgentListing>> {
        self.ensure_environment(env).await?;
        let binds = [env.to_string()];
        let select = format!("a.name, a.paused, a.unpause_on_resume, {STATUS_SQL} AS status, a.last_seen");
        let page: Page<AgentRow> = fetch_page(
            &self.store,
            &AGENT_VIEW,
            req,
            Source {
                select: &select,
                from: "agent a",
                scope: "a.environment = $1",
                scope_binds: &binds,
                base_path: "/api/v2/agents",
            },
        )
        .await?;
        page.try_map(|a| {
            Ok(AgentListing {
                agent: api::operations::Agent {
                    environment: env,
                    // Inmanta 20.1 names no process: its agents run inside the scheduler, as ours do.
                    process_name: None,
                    name: a.name,
                    paused: a.paused != 0,
                    process_id: None,
                    unpause_on_resume: a.unpause_on_resume.map(|v| v != 0),
                    status: a.status.parse().map_err(|e| Error::Corrupt(format!("agent status: {e}")))?,
                },
                last_seen: a.last_seen,
            })
        })
    }

    /// Names of the paused agents of an environment.
    pub async fn paused_agents(&self, env: Uuid) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar("SELECT name FROM agent WHERE environment = $1 AND paused = 1")
            .bind(env.to_string())
            .fetch_all(self.store.pool())
            .await?)
    }

    /// Applies an agent action to one agent (`Some(name)`) or to all of them.
    pub async fn agent_action(&self, env: Uuid, agent: Option<&str>, action: AgentAction) -> Result<()> {
        let settings_row = self.get_environment(env, Default::default()).await?;
        let halted = settings_row.halted;
        match action {
            AgentAction::Pause | AgentAction::Unpause if halted => {
                return Err(Error::Forbidden(
                    "the environment is halted: agents cannot be paused or unpaused until it is resumed; \
                     use keep_paused_on_resume or unpause_on_resume"
                        .into(),
                ));
            }
            AgentAction::KeepPausedOnResume | AgentAction::UnpauseOnResume if !halted => {
                return Err(Error::BadRequest(format!(
                    "{} only applies while the environment is halted",
                    if action == AgentAction::KeepPausedOnResume {
                        "keep_paused_on_resume"
                    } else {
                        "unpause_on_resume"
                    }
                )));
            }
            _ => {}
        }
        let (column, value) = match action {
            AgentAction::Pause => ("paused", 1),
            AgentAction::Unpause => ("paused", 0),
            AgentAction::KeepPausedOnResume => ("unpause_on_resume", 0),
            AgentAction::UnpauseOnResume => ("unpause_on_resume", 1),
        };
        let mut tx = self.store.begin_write().await?;
        let done = match agent {
            Some(name) => {
                sqlx::query(&format!("UPDATE agent SET {column} = $1 WHERE environment = $2 AND name = $3"))
                    .bind(value)
                    .bind(env.to_string())
                    .bind(name.to_string())
                    .execute(&mut *tx)
                    .await?
            }
            None => {
                sqlx::query(&format!("UPDATE agent SET {column} = $1 WHERE environment = $2"))
                    .bind(value)
                    .bind(env.to_string())
                    .execute(&mut *tx)
                    .await?
            }
        };
        if let Some(name) = agent
            && done.rows_affected() == 0
        {
            return Err(Error::NotFound(format!("agent {name} does not exist in environment {env}")));
        }
        tx.commit().await?;
        self.publish(crate::Event::SettingsChanged { env });
        Ok(())
    }

    /// Halting pauses every agent; resuming unpauses those marked `unpause_on_resume` (by
    /// default all of them that were running when halted).
    pub(crate) async fn pause_for_halt(&self, env: Uuid, halt: bool) -> Result<()> {
        let mut tx = self.store.begin_write().await?;
        if halt {
            sqlx::query("UPDATE agent SET unpause_on_resume = 1 - paused, paused = 1 WHERE environment = $1")
                .bind(env.to_string())
                .execute(&mut *tx)
                .await?;
        } else {
            sqlx::query(
                "UPDATE agent SET paused = CASE WHEN unpause_on_resume = 1 THEN 0 ELSE paused END, \
                 unpause_on_resume = NULL WHERE environment = $1",
            )
            .bind(env.to_string())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The scheduler marks the agents it serves as up (or all down when it stops).
    pub async fn mark_agents_up(&self, env: Uuid, up: bool, fence: Option<&crate::cluster::Fence>) -> Result<()> {
        let mut tx = self.store.begin_write().await?;
        sqlx::query("UPDATE agent SET up = $1, last_seen = $2 WHERE environment = $3 AND remote = 0")
            .bind(i64::from(up))
            .bind(now())
            .bind(env.to_string())
            .execute(&mut *tx)
            .await?;
        self.store.commit_fenced(tx, fence).await
    }

    /// An `inmanta agent` process connected (or left) for this agent name.
    pub async fn mark_remote_agent(&self, env: Uuid, name: &str, up: bool) -> Result<()> {
        let mut tx = self.store.begin_write().await?;
        sqlx::query(
            "INSERT INTO agent (environment, name, remote, up, last_seen) VALUES ($1, $2, 1, $3, $4) \
             ON CONFLICT (environment, name) DO UPDATE SET remote = 1, up = excluded.up, last_seen = excluded.last_seen",
        )
        .bind(env.to_string())
        .bind(name.to_string())
        .bind(i64::from(up))
        .bind(now())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Agent names served by remote processes, over all environments.
    pub async fn remote_agents(&self) -> Result<Vec<(Uuid, String)>> {
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT environment, name FROM agent WHERE remote = 1").fetch_all(self.store.pool()).await?;
        rows.into_iter().map(|(env, name)| Ok((crate::store::parse_uuid(&env)?, name))).collect()
    }

    /// At server start nothing serves any agent yet.
    pub async fn mark_all_agents_down(&self) -> Result<()> {
        let mut tx = self.store.begin_write().await?;
        sqlx::query("UPDATE agent SET up = 0").execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }
}
