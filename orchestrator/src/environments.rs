//! Environments: one managed infrastructure each, with its settings, versions and agents.

use std::collections::BTreeMap;

use api::environment::{EnvironmentCreate, EnvironmentModify};
use api::{Environment, SettingValue};
use uuid::Uuid;

use crate::projects::project_not_found;
use crate::settings::effective_settings;
use crate::store::{Transaction, now, parse_uuid};
use crate::{Error, Orchestrator, Result};

/// Tables that hold an environment's operational data: what `clear` empties and `delete`
/// removes with the environment. Every environment-scoped table joins this list when it lands.
pub(crate) const ENVIRONMENT_DATA_TABLES: &[&str] = &[
    "compile_report",
    "compile",
    "discovered_resource",
    "dryrun_resource",
    "dryrun",
    "resource_log",
    "resource_action_resource",
    "resource_action",
    "resource_persistent_state",
    "parameter",
    "notification",
    "agent",
    "resource",
    "version_handler",
    "version",
];

#[derive(sqlx::FromRow)]
pub(crate) struct EnvironmentRow {
    id: String,
    name: String,
    project_id: String,
    repo_url: String,
    repo_branch: String,
    pub(crate) settings: String,
    pub(crate) protected_settings: String,
    halted: i64,
    is_marked_for_deletion: i64,
    description: String,
    icon: String,
}

const COLUMNS: &str = "e.id, e.name, e.project_id, e.repo_url, e.repo_branch, e.settings, e.protected_settings, \
                       e.halted, e.is_marked_for_deletion, e.description, e.icon";

impl EnvironmentRow {
    fn into_api(self) -> Result<Environment> {
        Ok(Environment {
            id: parse_uuid(&self.id)?,
            settings: effective_settings(&self.settings)?,
            name: self.name,
            project_id: parse_uuid(&self.project_id)?,
            repo_url: self.repo_url,
            repo_branch: self.repo_branch,
            halted: self.halted != 0,
            is_marked_for_deletion: self.is_marked_for_deletion != 0,
            description: Some(self.description),
            icon: Some(self.icon),
        })
    }
}

/// How much of an environment a caller wants: `details` adds description and icon.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnvironmentQuery {
    pub details: bool,
}

fn strip_details(env: Environment, query: EnvironmentQuery) -> Environment {
    if query.details { env } else { env.without_details() }
}

fn check_repository(repository: &Option<String>, branch: &Option<String>) -> Result<()> {
    if let Some(repository) = repository {
        crate::validate::text("a repository URL", repository, crate::validate::MAX_ID)?;
    }
    if let Some(branch) = branch {
        crate::validate::name("a branch name", branch)?;
    }
    match (repository.as_deref(), branch.as_deref()) {
        (Some(r), None) if !r.is_empty() => {
            Err(Error::BadRequest("repository and branch go together: give a branch with the repository".into()))
        }
        (None, Some(b)) if !b.is_empty() => {
            Err(Error::BadRequest("repository and branch go together: give a repository with the branch".into()))
        }
        _ => Ok(()),
    }
}

const ICON_MIME_TYPES: &[&str] = &["image/png", "image/jpeg", "image/webp", "image/svg+xml"];

fn check_icon(icon: &Option<String>) -> Result<()> {
    match icon.as_deref() {
        None | Some("") => Ok(()),
        Some(icon) => {
            let valid = icon
                .split_once(";base64,")
                .is_some_and(|(mime, data)| ICON_MIME_TYPES.contains(&mime) && !data.is_empty());
            if valid {
                Ok(())
            } else {
                Err(Error::BadRequest(format!(
                    "the icon must be '<mime>;base64,<data>' with mime one of {}",
                    ICON_MIME_TYPES.join(", ")
                )))
            }
        }
    }
}

fn check_name(name: &str) -> Result<&str> {
    crate::projects::non_empty_name(name, "an environment")
}

impl Orchestrator {
    pub async fn create_environment(&self, req: EnvironmentCreate) -> Result<Environment> {
        let name = check_name(&req.name)?;
        check_repository(&req.repository, &req.branch)?;
        check_icon(&req.icon)?;
        if let Some(description) = &req.description {
            crate::validate::text("a description", description, crate::validate::MAX_ID)?;
        }
        let id = req.environment_id.unwrap_or_else(Uuid::new_v4);
        let mut tx = self.store.begin_write().await?;
        let project: Option<String> = sqlx::query_scalar("SELECT id FROM project WHERE id = $1")
            .bind(req.project_id.to_string())
            .fetch_optional(&mut *tx)
            .await?;
        if project.is_none() {
            return Err(project_not_found(req.project_id));
        }
        ensure_unique_name(&mut tx, req.project_id, name, None).await?;
        let taken: Option<String> = sqlx::query_scalar("SELECT id FROM environment WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(&mut *tx)
            .await?;
        if taken.is_some() {
            return Err(Error::Conflict(format!("an environment with id {id} already exists")));
        }
        sqlx::query(
            "INSERT INTO environment (id, name, project_id, repo_url, repo_branch, description, icon, created) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(id.to_string())
        .bind(name)
        .bind(req.project_id.to_string())
        .bind(req.repository.unwrap_or_default())
        .bind(req.branch.unwrap_or_default())
        .bind(req.description.unwrap_or_default())
        .bind(req.icon.unwrap_or_default())
        .bind(now())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        self.get_environment(id, EnvironmentQuery { details: true }).await
    }

    pub async fn modify_environment(&self, id: Uuid, req: EnvironmentModify) -> Result<Environment> {
        let name = check_name(&req.name)?;
        check_repository(&req.repository, &req.branch)?;
        check_icon(&req.icon)?;
        if let Some(description) = &req.description {
            crate::validate::text("a description", description, crate::validate::MAX_ID)?;
        }
        let mut tx = self.store.begin_write().await?;
        let current = fetch_row(&mut tx, id).await?;
        let project_id = match req.project_id {
            Some(project_id) => {
                let exists: Option<String> = sqlx::query_scalar("SELECT id FROM project WHERE id = $1")
                    .bind(project_id.to_string())
                    .fetch_optional(&mut *tx)
                    .await?;
                if exists.is_none() {
                    return Err(project_not_found(project_id));
                }
                project_id
            }
            None => parse_uuid(&current.project_id)?,
        };
        ensure_unique_name(&mut tx, project_id, name, Some(id)).await?;
        sqlx::query(
            "UPDATE environment SET name = $1, project_id = $2, repo_url = $3, repo_branch = $4, \
             description = $5, icon = $6 WHERE id = $7",
        )
        .bind(name)
        .bind(project_id.to_string())
        .bind(req.repository.unwrap_or(current.repo_url))
        .bind(req.branch.unwrap_or(current.repo_branch))
        .bind(req.description.unwrap_or(current.description))
        .bind(req.icon.unwrap_or(current.icon))
        .bind(id.to_string())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        self.get_environment(id, EnvironmentQuery { details: true }).await
    }

    pub async fn get_environment(&self, id: Uuid, query: EnvironmentQuery) -> Result<Environment> {
        let row: Option<EnvironmentRow> =
            sqlx::query_as(&format!("SELECT {COLUMNS} FROM environment e WHERE e.id = $1"))
                .bind(id.to_string())
                .fetch_optional(self.store.pool())
                .await?;
        let row = row.ok_or_else(|| environment_not_found(id))?;
        Ok(strip_details(row.into_api()?, query))
    }

    /// Every environment, sorted by project name, environment name and id, with details.
    pub async fn list_environments(&self) -> Result<Vec<Environment>> {
        let rows: Vec<EnvironmentRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM environment e JOIN project p ON p.id = e.project_id ORDER BY p.name, e.name, e.id"
        ))
        .fetch_all(self.store.pool())
        .await?;
        rows.into_iter().map(EnvironmentRow::into_api).collect()
    }

    /// The last version number handed out in an environment (0 before the first).
    pub async fn environment_last_version(&self, id: Uuid) -> Result<i64> {
        let row = sqlx::query("SELECT last_version FROM environment WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(self.store.pool())
            .await?;
        let row = row.ok_or_else(|| environment_not_found(id))?;
        Ok(sqlx::Row::try_get::<i64, _>(&row, "last_version")?)
    }

    pub(crate) async fn project_environments(&self, project_id: Uuid) -> Result<Vec<Environment>> {
        let rows: Vec<EnvironmentRow> =
            sqlx::query_as(&format!("SELECT {COLUMNS} FROM environment e WHERE e.project_id = $1 ORDER BY e.name"))
                .bind(project_id.to_string())
                .fetch_all(self.store.pool())
                .await?;
        rows.into_iter().map(EnvironmentRow::into_api).collect()
    }

    /// Deletes the environment with all its data. Refused while `protected_environment` is on.
    pub async fn delete_environment(&self, id: Uuid) -> Result<()> {
        let mut tx = self.store.begin_write().await?;
        let row = fetch_row(&mut tx, id).await?;
        refuse_when_protected(&row, "deleted")?;
        clear_data(&mut tx, id).await?;
        sqlx::query("DELETE FROM environment WHERE id = $1").bind(id.to_string()).execute(&mut *tx).await?;
        tx.commit().await?;
        self.publish(crate::Event::EnvironmentDeleted { env: id });
        Ok(())
    }

    /// Removes everything the environment has (versions, resources, agents, compiles, ...) but
    /// keeps the environment itself and its settings. Refused while `protected_environment` is on.
    pub async fn clear_environment(&self, id: Uuid) -> Result<()> {
        let mut tx = self.store.begin_write().await?;
        let row = fetch_row(&mut tx, id).await?;
        refuse_when_protected(&row, "cleared")?;
        clear_data(&mut tx, id).await?;
        tx.commit().await?;
        // The scheduler drops what it knew along with the data.
        self.publish(crate::Event::EnvironmentDeleted { env: id });
        Ok(())
    }

    pub async fn set_halted(&self, id: Uuid, halted: bool) -> Result<()> {
        let done = sqlx::query("UPDATE environment SET halted = $1 WHERE id = $2")
            .bind(i64::from(halted))
            .bind(id.to_string())
            .execute(self.store.pool())
            .await?;
        if done.rows_affected() == 0 {
            return Err(environment_not_found(id));
        }
        self.pause_for_halt(id, halted).await?;
        self.publish(crate::Event::Halted { env: id, halted });
        Ok(())
    }

    /// The environment's explicit settings as stored, for the settings service.
    pub(crate) async fn environment_row(&self, tx: &mut Transaction, id: Uuid) -> Result<EnvironmentRow> {
        fetch_row(tx, id).await
    }
}

async fn fetch_row(tx: &mut Transaction, id: Uuid) -> Result<EnvironmentRow> {
    let row: Option<EnvironmentRow> = sqlx::query_as(&format!("SELECT {COLUMNS} FROM environment e WHERE e.id = $1"))
        .bind(id.to_string())
        .fetch_optional(&mut **tx)
        .await?;
    row.ok_or_else(|| environment_not_found(id))
}

async fn ensure_unique_name(tx: &mut Transaction, project_id: Uuid, name: &str, except: Option<Uuid>) -> Result<()> {
    let clash: Option<String> =
        sqlx::query_scalar("SELECT id FROM environment WHERE project_id = $1 AND name = $2 AND id <> $3")
            .bind(project_id.to_string())
            .bind(name)
            .bind(except.map(|e| e.to_string()).unwrap_or_default())
            .fetch_optional(&mut **tx)
            .await?;
    match clash {
        Some(other) => Err(Error::BadRequest(format!(
            "project {project_id} already has an environment named {name:?} (id {other})"
        ))),
        None => Ok(()),
    }
}

fn refuse_when_protected(row: &EnvironmentRow, what: &str) -> Result<()> {
    let explicit: BTreeMap<String, SettingValue> =
        serde_json::from_str(&row.settings).map_err(|e| Error::Corrupt(format!("environment settings: {e}")))?;
    if explicit.get(api::settings::names::PROTECTED_ENVIRONMENT).and_then(SettingValue::as_bool) == Some(true) {
        return Err(Error::Forbidden(format!(
            "environment {} is protected and cannot be {what}; set protected_environment to false first",
            row.name
        )));
    }
    Ok(())
}

async fn clear_data(tx: &mut Transaction, id: Uuid) -> Result<()> {
    for table in ENVIRONMENT_DATA_TABLES {
        sqlx::query(&format!("DELETE FROM {table} WHERE environment = $1"))
            .bind(id.to_string())
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

pub(crate) fn environment_not_found(id: Uuid) -> Error {
    Error::NotFound(format!("environment with id {id} does not exist"))
}
