//! The server functions of the dashboard, create-environment and settings pages (the settings
//! page's configuration and tokens tabs included).

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;

#[cfg(feature = "ssr")]
use crate::fns::{
    authorized_for, authorized_global, compile_row, env_id, fail, status_text, summary, token_row, version_row,
};

use crate::model::{Dashboard, SettingRow, TokenRow};

/// Creates an environment in an existing project (`project_id`) or in a new one (`new_project`).
/// Also posted as a plain form (no wasm): the new environment's dashboard is shown next.
#[server(prefix = "/console/fn", endpoint = "create_environment")]
pub async fn create_environment(
    project_id: String,
    new_project: String,
    name: String,
    repository: String,
    branch: String,
    description: String,
) -> Result<String, ConsoleError> {
    let s = authorized_global("environment.create")?;
    let o = &s.orchestrator;
    let project = if !new_project.trim().is_empty() {
        o.create_project(new_project.trim(), None).await.map_err(fail)?.id
    } else if !project_id.is_empty() {
        project_id.parse().map_err(|_| ConsoleError::refused("pick a project or type the name of a new one"))?
    } else {
        return Err(ConsoleError::refused("pick a project or type the name of a new one"));
    };
    let non_empty = |s: String| if s.trim().is_empty() { None } else { Some(s.trim().to_string()) };
    let repository = non_empty(repository);
    // A branch only means something with a repository.
    let branch = if repository.is_some() { non_empty(branch) } else { None };
    let env = o
        .create_environment(api::environment::EnvironmentCreate {
            project_id: project,
            name: name.trim().to_string(),
            repository,
            branch,
            description: non_empty(description),
            ..Default::default()
        })
        .await
        .map_err(fail)?;
    crate::components::show_next(&crate::routes::DASHBOARD.of(&env.id.to_string()));
    Ok(env.id.to_string())
}

/// Also posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "modify_environment")]
pub async fn modify_environment(
    env: String,
    name: String,
    repository: String,
    branch: String,
    description: String,
) -> Result<(), ConsoleError> {
    let s = authorized_for("environment.modify", &env)?;
    let (repository, branch) = (repository.trim().to_string(), branch.trim().to_string());
    let branch = if repository.is_empty() { String::new() } else { branch };
    s.orchestrator
        .modify_environment(
            env_id(&env)?,
            api::environment::EnvironmentModify {
                name: name.trim().to_string(),
                repository: Some(repository),
                branch: Some(branch),
                description: Some(description),
                ..Default::default()
            },
        )
        .await
        .map_err(fail)?;
    Ok(())
}

/// Clears (`delete == false`) or deletes the environment; `confirm` must be its name. Also posted
/// as a plain form (no wasm): after a delete, the list of environments is shown next.
#[server(prefix = "/console/fn", endpoint = "remove_environment")]
pub async fn remove_environment(env: String, confirm: String, delete: bool) -> Result<(), ConsoleError> {
    let s = authorized_for(if delete { "environment.delete" } else { "environment.clear" }, &env)?;
    let id = env_id(&env)?;
    let current = s.orchestrator.get_environment(id, Default::default()).await.map_err(fail)?;
    if current.name != confirm {
        return Err(ConsoleError::refused(format!("type the environment's name ({}) to confirm", current.name)));
    }
    if delete {
        s.orchestrator.delete_environment(id).await.map_err(fail)?;
        crate::components::show_next(crate::BASE);
        Ok(())
    } else {
        s.orchestrator.clear_environment(id).await.map_err(fail)
    }
}

#[server(prefix = "/console/fn", endpoint = "settings", input = Json)]
pub async fn settings(env: String) -> Result<Vec<SettingRow>, ConsoleError> {
    let s = authorized_for("environment.setting.read", &env)?;
    let all = s.orchestrator.environment_settings(env_id(&env)?).await.map_err(fail)?;
    let text = |v: &api::settings::SettingValue| match v {
        api::settings::SettingValue::Dict(d) => {
            serde_json::to_string_pretty(&serde_json::Value::Object(d.clone())).unwrap_or_default()
        }
        other => other.to_string(),
    };
    Ok(all
        .definition
        .iter()
        .map(|(name, def)| {
            let value = all.settings.get(name);
            SettingRow {
                name: name.clone(),
                kind: status_text(&def.kind),
                value: text(value.unwrap_or(&def.default)),
                default: text(&def.default),
                // The settings call fills in every default: a value equal to its default is not a change.
                is_default: value.is_none_or(|v| *v == def.default),
                doc: def.doc.clone(),
                allowed_values: def.allowed_values.clone().unwrap_or_default(),
                protected_by: if def.protected { Some(def.protected_by.clone().unwrap_or_default()) } else { None },
            }
        })
        .collect())
}

/// Sets one setting from the text of its input; the orchestrator parses and checks it by the
/// setting's type (as for `inmanta environment setting set`). `reset` removes the value so the
/// default applies again. Also posted as a plain form (no wasm), where an unticked checkbox sends
/// no `value` at all: no value is `false`.
#[server(prefix = "/console/fn", endpoint = "save_setting")]
pub async fn save_setting(env: String, name: String, value: Option<String>, reset: bool) -> Result<(), ConsoleError> {
    let s = authorized_for("environment.setting.write", &env)?;
    let id = env_id(&env)?;
    if reset {
        return s.orchestrator.delete_environment_setting(id, &name).await.map_err(fail);
    }
    let value = value.unwrap_or_else(|| false.to_string());
    s.orchestrator.set_environment_setting(id, &name, &serde_json::Value::String(value)).await.map_err(fail)
}

#[server(prefix = "/console/fn", endpoint = "dashboard", input = Json)]
pub async fn load_dashboard(env: String) -> Result<Dashboard, ConsoleError> {
    let s = authorized_for("environment.read", &env)?;
    let id = env_id(&env)?;
    let o = &s.orchestrator;
    let deploy = o.deploy_summary(id).await.map_err(fail)?;
    let agents = o
        .agents(id, &orchestrator::paging::PageRequest { limit: Some(1000), ..Default::default() })
        .await
        .map_err(fail)?;
    let count = |status: api::AgentStatus| agents.items.iter().filter(|a| a.agent.status == status).count() as u64;
    let versions = o
        .desired_state_versions(id, &orchestrator::paging::PageRequest { limit: Some(5), ..Default::default() })
        .await
        .map_err(fail)?;
    let compiles = o
        .compile_reports(id, &orchestrator::paging::PageRequest { limit: Some(5), ..Default::default() })
        .await
        .map_err(fail)?;
    Ok(Dashboard {
        summary: summary(&deploy),
        summary_total: deploy.total,
        agents_up: count(api::AgentStatus::Up),
        agents_down: count(api::AgentStatus::Down),
        agents_paused: count(api::AgentStatus::Paused),
        versions: versions.items.into_iter().map(version_row).collect(),
        compiles: compiles.items.iter().map(compile_row).collect(),
    })
}

/// The environment's tokens, newest first (never the tokens themselves).
#[server(prefix = "/console/fn", endpoint = "tokens", input = Json)]
pub async fn tokens(env: String) -> Result<Vec<TokenRow>, ConsoleError> {
    let s = authorized_for("token", &env)?;
    Ok(s.orchestrator.environment_tokens(env_id(&env)?).await.map_err(fail)?.iter().map(token_row).collect())
}

/// Creates an environment token for `client_types` (api, agent, compiler) that expires after
/// `expire_days` (never when `None`). The token is returned once and never shown again.
#[server(prefix = "/console/fn", endpoint = "generate_token", input = Json)]
pub async fn generate_token(
    env: String,
    client_types: Vec<String>,
    expire_days: Option<u32>,
) -> Result<String, ConsoleError> {
    let s = authorized_for("token", &env)?;
    let id = env_id(&env)?;
    let authenticator = use_context::<orchestrator::auth::tokens::Authenticator>()
        .ok_or_else(|| ConsoleError::Unavailable("this server cannot issue tokens (no authenticator)".into()))?;
    let mut clients = Vec::new();
    for name in &client_types {
        clients.push(api::auth::ClientType::parse(name).ok_or_else(|| {
            ConsoleError::refused(format!("unknown client type {name:?}: use api, agent or compiler"))
        })?);
    }
    if clients.is_empty() {
        return Err(ConsoleError::refused("tick at least one client type: api, agent or compiler"));
    }
    if expire_days == Some(0) {
        return Err(ConsoleError::refused("a token must live at least one day (or never expire)"));
    }
    let expire = expire_days.map(|d| i64::from(d) * 86_400);
    authenticator
        .create_environment_token(&s.orchestrator, id, &clients, false, expire, s.caller.name())
        .await
        .map_err(fail)
}

/// Revokes a token: it is refused from then on. Also posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "revoke_token")]
pub async fn revoke_token(env: String, jti: String) -> Result<(), ConsoleError> {
    let s = authorized_for("token", &env)?;
    s.orchestrator.revoke_environment_token(env_id(&env)?, &jti).await.map_err(fail)
}
