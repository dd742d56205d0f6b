//! Projects: named groups of environments.

use api::{Environment, Project};
use uuid::Uuid;

use crate::store::parse_uuid;
use crate::{Error, Orchestrator, Result};

fn check_name(name: &str) -> Result<&str> {
    non_empty_name(name, "a project")
}

/// Names are trimmed; an empty one is refused with a message naming what needs it.
pub(crate) fn non_empty_name<'a>(name: &'a str, what: &str) -> Result<&'a str> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::BadRequest(format!("{what} needs a non-empty name")));
    }
    crate::validate::name(&format!("the name of {what}"), name)?;
    Ok(name)
}

impl Orchestrator {
    pub async fn create_project(&self, name: &str, project_id: Option<Uuid>) -> Result<Project> {
        let name = check_name(name)?;
        let id = project_id.unwrap_or_else(Uuid::new_v4);
        let mut tx = self.store.begin_write().await?;
        let clash: Option<(String, String)> = sqlx::query_as("SELECT id, name FROM project WHERE id = $1 OR name = $2")
            .bind(id.to_string())
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?;
        if let Some((other_id, other_name)) = clash {
            return Err(if other_name == name {
                Error::Conflict(format!("a project named {name:?} already exists (id {other_id})"))
            } else {
                Error::Conflict(format!("a project with id {id} already exists"))
            });
        }
        sqlx::query("INSERT INTO project (id, name) VALUES ($1, $2)")
            .bind(id.to_string())
            .bind(name)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(Project { id, name: name.to_string(), environments: vec![] })
    }

    pub async fn modify_project(&self, id: Uuid, name: &str) -> Result<Project> {
        let name = check_name(name)?;
        let mut tx = self.store.begin_write().await?;
        let clash: Option<String> = sqlx::query_scalar("SELECT id FROM project WHERE name = $1 AND id <> $2")
            .bind(name)
            .bind(id.to_string())
            .fetch_optional(&mut *tx)
            .await?;
        if clash.is_some() {
            return Err(Error::Conflict(format!("a project named {name:?} already exists")));
        }
        let done = sqlx::query("UPDATE project SET name = $1 WHERE id = $2")
            .bind(name)
            .bind(id.to_string())
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(project_not_found(id));
        }
        tx.commit().await?;
        self.get_project(id).await
    }

    /// Deletes an empty project; a project with environments is a conflict (delete those first).
    pub async fn delete_project(&self, id: Uuid) -> Result<()> {
        let mut tx = self.store.begin_write().await?;
        let exists: Option<String> = sqlx::query_scalar("SELECT id FROM project WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_none() {
            return Err(project_not_found(id));
        }
        let envs: Vec<String> = sqlx::query_scalar("SELECT name FROM environment WHERE project_id = $1 ORDER BY name")
            .bind(id.to_string())
            .fetch_all(&mut *tx)
            .await?;
        if !envs.is_empty() {
            return Err(Error::Conflict(format!(
                "project {id} still has environments ({}); delete them first",
                envs.join(", ")
            )));
        }
        sqlx::query("DELETE FROM project WHERE id = $1").bind(id.to_string()).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Every project sorted by name, each with its environments sorted by name.
    pub async fn list_projects(&self) -> Result<Vec<Project>> {
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT id, name FROM project ORDER BY name").fetch_all(self.store.pool()).await?;
        let environments = self.list_environments().await?;
        rows.into_iter().map(|(id, name)| Ok(assemble(parse_uuid(&id)?, name, &environments))).collect()
    }

    pub async fn get_project(&self, id: Uuid) -> Result<Project> {
        let name: Option<String> = sqlx::query_scalar("SELECT name FROM project WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(self.store.pool())
            .await?;
        let name = name.ok_or_else(|| project_not_found(id))?;
        let environments = self.project_environments(id).await?;
        Ok(assemble(id, name, &environments))
    }
}

fn assemble(id: Uuid, name: String, environments: &[Environment]) -> Project {
    let mut environments: Vec<Environment> = environments.iter().filter(|e| e.project_id == id).cloned().collect();
    environments.sort_by(|a, b| a.name.cmp(&b.name));
    Project { id, name, environments }
}

pub(crate) fn project_not_found(id: Uuid) -> Error {
    Error::NotFound(format!("project with id {id} does not exist"))
}
