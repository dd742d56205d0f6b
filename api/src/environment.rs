//! Projects and environments (routes: docs/api.md).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::SettingValue;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub id: Uuid,
    pub name: String,
    pub project_id: Uuid,
    pub repo_url: String,
    pub repo_branch: String,
    pub settings: BTreeMap<String, SettingValue>,
    pub halted: bool,
    pub is_marked_for_deletion: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
}

impl Environment {
    /// The environment as listed without `details`: like Inmanta, the description and icon are
    /// left out of the query and answered as empty strings.
    pub fn without_details(mut self) -> Self {
        self.description = Some(String::new());
        self.icon = Some(String::new());
        self
    }
}

/// The v1 form of an environment: `project` instead of `project_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentV1 {
    pub id: Uuid,
    pub name: String,
    pub project: Uuid,
    pub repo_url: String,
    pub repo_branch: String,
    pub settings: BTreeMap<String, SettingValue>,
    pub halted: bool,
    pub is_marked_for_deletion: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
}

impl From<Environment> for EnvironmentV1 {
    fn from(e: Environment) -> Self {
        EnvironmentV1 {
            id: e.id,
            name: e.name,
            project: e.project_id,
            repo_url: e.repo_url,
            repo_branch: e.repo_branch,
            settings: e.settings,
            halted: e.halted,
            is_marked_for_deletion: e.is_marked_for_deletion,
            description: e.description,
            icon: e.icon,
        }
    }
}

/// A project with its environments, in full (v2 with `environment_details=true`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Project {
    pub id: Uuid,
    pub name: String,
    pub environments: Vec<Environment>,
}

/// A project whose environments are listed by id (v1, and v2 without `environment_details`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectV1 {
    pub id: Uuid,
    pub name: String,
    pub environments: Vec<Uuid>,
}

impl From<&Project> for ProjectV1 {
    fn from(p: &Project) -> Self {
        ProjectV1 { id: p.id, name: p.name.clone(), environments: p.environments.iter().map(|e| e.id).collect() }
    }
}

/// Body of `PUT /api/v1/project` and `PUT /api/v2/project`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectCreate {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<Uuid>,
}

/// Body of `POST /api/v1|v2/project/<id>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectModify {
    pub name: String,
}

/// Body of `PUT /api/v1|v2/environment`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentCreate {
    pub project_id: Uuid,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
}

/// Body of `POST /api/v1|v2/environment/<id>`. Absent fields stay as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentModify {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<Uuid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
}
