//! The console's server functions. Each one has a fixed endpoint under `/console/fn` and starts
//! with [`services_for`] or [`services_global`], naming the permission label it needs: the signed-in
//! user is checked there, by the same `Principal::authorize` as every REST route, before the
//! orchestrator is handed out.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use crate::model::*;

#[cfg(feature = "ssr")]
pub use backend::*;

#[cfg(feature = "ssr")]
mod backend {
    use std::sync::Arc;

    use leptos::prelude::*;
    use orchestrator::auth::{Access, Clients, Principal};
    use orchestrator::paging::PageRequest;

    use crate::model::{PageInfo, ParameterRow, TableQuery, VersionRow};

    /// What a server function works with.
    pub struct Services {
        pub orchestrator: orchestrator::Orchestrator,
        /// The server's schedulers; absent when the console runs without them (tests).
        pub schedulers: Option<Arc<orchestrator::scheduler::Schedulers>>,
        /// Who is signed in.
        pub caller: Principal,
    }

    /// The signed-in caller: put in the request by the console's session guard (or provided
    /// directly, by tests and benchmarks). Nobody signed in means nothing is allowed.
    pub fn caller() -> Option<Principal> {
        use_context::<Principal>().or_else(|| {
            use_context::<axum::http::request::Parts>().and_then(|parts| parts.extensions.get::<Principal>().cloned())
        })
    }

    fn services(access: Access, env: Option<uuid::Uuid>) -> Result<Services, ServerFnError> {
        let orchestrator = use_context::<orchestrator::Orchestrator>()
            .ok_or_else(|| ServerFnError::new("the console is not connected to an orchestrator"))?;
        let caller = caller().ok_or_else(|| ServerFnError::new("not signed in: log in again"))?;
        caller.authorize(access, env).map_err(|denied| ServerFnError::new(format!("not allowed: {denied}")))?;
        let schedulers = use_context::<Arc<orchestrator::scheduler::Schedulers>>();
        Ok(Services { orchestrator, schedulers, caller })
    }

    /// The entry point of a server function acting in one environment, allowed by `label`.
    pub fn services_for(label: &'static str, env: &str) -> Result<Services, ServerFnError> {
        services(Access::Environment(label, Clients::API), Some(env_id(env)?))
    }

    /// The entry point of a server function that is not about one environment.
    pub fn services_global(label: &'static str) -> Result<Services, ServerFnError> {
        services(Access::Global(label, Clients::API), None)
    }

    pub fn fail(error: impl std::fmt::Display) -> ServerFnError {
        ServerFnError::new(error.to_string())
    }

    pub fn env_id(env: &str) -> Result<uuid::Uuid, ServerFnError> {
        if env.is_empty() {
            return Err(ServerFnError::new("no environment selected: pick one in the environment switcher"));
        }
        env.parse().map_err(|_| ServerFnError::new(format!("{env:?} is not an environment id")))
    }

    pub fn page_request(q: &TableQuery) -> PageRequest {
        PageRequest {
            limit: Some(q.limit.unwrap_or(20).clamp(1, 1000)),
            sort: q.sort.clone().filter(|s| !s.is_empty()),
            start: q.start.clone(),
            end: q.end.clone(),
            first_id: q.first_id.clone(),
            last_id: q.last_id.clone(),
            filters: q.filters.iter().filter(|(_, v)| !v.is_empty()).map(|(k, v)| (k.clone(), v.clone())).collect(),
        }
    }

    pub fn page_info<T>(page: &orchestrator::paging::Page<T>) -> PageInfo {
        PageInfo {
            total: page.metadata.total,
            before: page.metadata.before,
            shown: page.items.len() as u64,
            next: page.links.next.as_deref().map(cursor),
            prev: page.links.prev.as_deref().map(cursor),
        }
    }

    /// The cursor pairs of an API paging link.
    pub fn cursor(link: &str) -> Vec<(String, String)> {
        let query = link.split_once('?').map(|(_, q)| q).unwrap_or("");
        query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .filter(|(k, _)| matches!(*k, "start" | "end" | "first_id" | "last_id"))
            .map(|(k, v)| (k.to_string(), api::url::decode(v)))
            .collect()
    }

    pub fn json_text(value: &serde_json::Value) -> String {
        match value {
            serde_json::Value::String(s) => s.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        }
    }

    pub fn attributes(map: &serde_json::Map<String, serde_json::Value>) -> Vec<(String, String)> {
        map.iter().map(|(k, v)| (k.clone(), json_text(v))).collect()
    }

    pub fn summary(s: &api::resource::ResourceDeploySummary) -> Vec<(String, u64)> {
        let mut out: Vec<(String, u64)> = crate::model::RESOURCE_STATES
            .iter()
            .filter_map(|state| {
                let n = s.by_state.get(&api::ResourceState::parse(state)?)?;
                Some((state.to_string(), *n))
            })
            .collect();
        for (state, n) in &s.by_state {
            if !out.iter().any(|(s, _)| s == state.as_str()) {
                out.push((state.to_string(), *n));
            }
        }
        out
    }

    pub fn status_text<T: serde::Serialize>(status: &T) -> String {
        serde_json::to_value(status).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
    }

    /// A parameter row (facts add their resource id).
    pub fn parameter_row(name: String, value: String, source: String, updated: Option<String>) -> ParameterRow {
        ParameterRow { name, value, source, updated, resource_id: String::new() }
    }

    /// Seconds from `from` to `to` (or to now when `to` is unset).
    pub fn seconds(from: &str, to: Option<&str>) -> Option<f64> {
        let from = orchestrator::store::parse_time(from).ok()?;
        let to = match to {
            Some(t) => orchestrator::store::parse_time(t).ok()?,
            None => orchestrator::store::parse_time(&orchestrator::store::now()).ok()?,
        };
        Some(((to - from).num_milliseconds().max(0)) as f64 / 1000.0)
    }

    /// A compile as the reports page and the dashboard list it.
    pub fn compile_row(c: &api::compile::CompileReport) -> crate::model::CompileRow {
        let requested = c.requested.clone().unwrap_or_default();
        let status = match (&c.started, &c.completed, c.success) {
            (_, Some(_), Some(true)) => "success",
            (_, Some(_), _) => "failed",
            (Some(_), None, _) => "running",
            (None, None, _) => "queued",
        };
        let wait = if requested.is_empty() { None } else { seconds(&requested, c.started.as_deref()) };
        crate::model::CompileRow {
            id: c.id.to_string(),
            status: status.to_string(),
            message: c.metadata.get("message").and_then(|m| m.as_str()).unwrap_or_default().to_string(),
            wait,
            duration: c.started.as_deref().and_then(|s| seconds(s, c.completed.as_deref())),
            requested,
            started: c.started.clone(),
            completed: c.completed.clone(),
            version: c.version,
            do_export: c.do_export,
            force_update: c.force_update,
        }
    }

    /// The `server_compile` setting of an environment (its default when unset).
    pub async fn server_compile(o: &orchestrator::Orchestrator, env: uuid::Uuid) -> Result<bool, ServerFnError> {
        let all = o.environment_settings(env).await.map_err(fail)?;
        let name = api::settings::names::SERVER_COMPILE;
        let value = all.settings.get(name).or_else(|| all.definition.get(name).map(|d| &d.default));
        Ok(value.and_then(api::SettingValue::as_bool).unwrap_or(true))
    }

    /// A version as the dashboard and the desired-state page list it.
    pub fn version_row(v: api::version::DesiredStateVersion) -> VersionRow {
        VersionRow {
            version: v.version,
            date: v.date,
            status: status_text(&v.status),
            total: v.total,
            released: v.released,
            message: v
                .labels
                .iter()
                .map(|l| l.message.as_str())
                .filter(|m| !m.is_empty())
                .collect::<Vec<_>>()
                .join("; "),
        }
    }
}

/// The signed-in user's name for the header; `None` when the server runs without auth.
#[server(prefix = "/console/fn", endpoint = "whoami")]
pub async fn whoami() -> Result<Option<String>, ServerFnError> {
    let caller = caller().ok_or_else(|| ServerFnError::new("not signed in: log in again"))?;
    Ok(caller.name().map(str::to_string))
}

/// Every environment, sorted by project name and environment name.
#[server(prefix = "/console/fn", endpoint = "list_environments")]
pub async fn list_environments() -> Result<Vec<EnvironmentSummary>, ServerFnError> {
    let s = services_global("environment.read")?;
    let projects = s.orchestrator.list_projects().await.map_err(fail)?;
    let environments = s.orchestrator.list_environments().await.map_err(fail)?;
    let mut rows: Vec<EnvironmentSummary> = environments
        .into_iter()
        .filter(|env| s.caller.can_see(env.id))
        .map(|env| EnvironmentSummary {
            project_name: projects.iter().find(|p| p.id == env.project_id).map(|p| p.name.clone()).unwrap_or_default(),
            id: env.id.to_string(),
            name: env.name,
            project_id: env.project_id.to_string(),
            halted: env.halted,
        })
        .collect();
    rows.sort_by(|a, b| (&a.project_name, &a.name).cmp(&(&b.project_name, &b.name)));
    Ok(rows)
}

#[server(prefix = "/console/fn", endpoint = "list_projects")]
pub async fn list_projects() -> Result<Vec<ProjectSummary>, ServerFnError> {
    let s = services_global("project.read")?;
    let mut rows: Vec<ProjectSummary> = s
        .orchestrator
        .list_projects()
        .await
        .map_err(fail)?
        .into_iter()
        .map(|p| ProjectSummary { id: p.id.to_string(), name: p.name, environments: p.environments.len() })
        .collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(rows)
}

#[server(prefix = "/console/fn", endpoint = "create_project", input = Json)]
pub async fn create_project(name: String) -> Result<(), ServerFnError> {
    let s = services_global("project.create")?;
    s.orchestrator.create_project(&name, None).await.map_err(fail)?;
    Ok(())
}

#[server(prefix = "/console/fn", endpoint = "rename_project", input = Json)]
pub async fn rename_project(id: String, name: String) -> Result<(), ServerFnError> {
    let s = services_global("project.modify")?;
    let id = id.parse().map_err(|_| ServerFnError::new(format!("{id:?} is not a project id")))?;
    s.orchestrator.modify_project(id, &name).await.map_err(fail)?;
    Ok(())
}

/// Deletes an empty project; one with environments is refused with their names.
#[server(prefix = "/console/fn", endpoint = "delete_project", input = Json)]
pub async fn delete_project(id: String) -> Result<(), ServerFnError> {
    let s = services_global("project.delete")?;
    let id = id.parse().map_err(|_| ServerFnError::new(format!("{id:?} is not a project id")))?;
    s.orchestrator.delete_project(id).await.map_err(fail)
}

/// Creates an environment in an existing project (`project_id`) or in a new one (`new_project`).
#[server(prefix = "/console/fn", endpoint = "create_environment", input = Json)]
pub async fn create_environment(
    project_id: String,
    new_project: String,
    name: String,
    repository: String,
    branch: String,
    description: String,
) -> Result<String, ServerFnError> {
    let s = services_global("environment.create")?;
    let o = &s.orchestrator;
    let project = if !new_project.trim().is_empty() {
        o.create_project(new_project.trim(), None).await.map_err(fail)?.id
    } else if !project_id.is_empty() {
        project_id.parse().map_err(|_| ServerFnError::new("pick a project or type the name of a new one"))?
    } else {
        return Err(ServerFnError::new("pick a project or type the name of a new one"));
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
    Ok(env.id.to_string())
}

/// Whether `env` names an environment the caller may read. Unknown and forbidden look alike, so
/// the console's "environment not found" page does not tell which environments exist.
#[server(prefix = "/console/fn", endpoint = "environment_exists", input = Json)]
pub async fn environment_exists(env: String) -> Result<bool, ServerFnError> {
    let Ok(id) = env.parse::<uuid::Uuid>() else { return Ok(false) };
    let Ok(s) = services_for("environment.read", &env) else { return Ok(false) };
    match s.orchestrator.get_environment(id, Default::default()).await {
        Ok(_) => Ok(true),
        Err(orchestrator::Error::NotFound(_)) => Ok(false),
        Err(error) => Err(fail(error)),
    }
}

#[server(prefix = "/console/fn", endpoint = "environment", input = Json)]
pub async fn environment(env: String) -> Result<EnvironmentDetails, ServerFnError> {
    let s = services_for("environment.read", &env)?;
    let id = env_id(&env)?;
    let e = s.orchestrator.get_environment(id, Default::default()).await.map_err(fail)?;
    let project = s.orchestrator.get_project(e.project_id).await.map(|p| p.name).unwrap_or_default();
    Ok(EnvironmentDetails {
        id: e.id.to_string(),
        name: e.name,
        project_id: e.project_id.to_string(),
        project_name: project,
        repo_url: e.repo_url,
        repo_branch: e.repo_branch,
        description: e.description.unwrap_or_default(),
        halted: e.halted,
    })
}

#[server(prefix = "/console/fn", endpoint = "modify_environment", input = Json)]
pub async fn modify_environment(
    env: String,
    name: String,
    repository: String,
    branch: String,
    description: String,
) -> Result<(), ServerFnError> {
    let s = services_for("environment.modify", &env)?;
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

#[server(prefix = "/console/fn", endpoint = "set_halted", input = Json)]
pub async fn set_halted(env: String, halted: bool) -> Result<(), ServerFnError> {
    let s = services_for("environment.halt-resume", &env)?;
    s.orchestrator.set_halted(env_id(&env)?, halted).await.map_err(fail)
}

/// Clears (`delete == false`) or deletes the environment; `confirm` must be its name.
#[server(prefix = "/console/fn", endpoint = "remove_environment", input = Json)]
pub async fn remove_environment(env: String, confirm: String, delete: bool) -> Result<(), ServerFnError> {
    let s = services_for(if delete { "environment.delete" } else { "environment.clear" }, &env)?;
    let id = env_id(&env)?;
    let current = s.orchestrator.get_environment(id, Default::default()).await.map_err(fail)?;
    if current.name != confirm {
        return Err(ServerFnError::new(format!("type the environment's name ({}) to confirm", current.name)));
    }
    if delete {
        s.orchestrator.delete_environment(id).await.map_err(fail)
    } else {
        s.orchestrator.clear_environment(id).await.map_err(fail)
    }
}

#[server(prefix = "/console/fn", endpoint = "settings", input = Json)]
pub async fn settings(env: String) -> Result<Vec<SettingRow>, ServerFnError> {
    let s = services_for("environment.setting.read", &env)?;
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

/// Sets one setting from the text of its input (parsed by the setting's type); `reset` removes
/// the value so the default applies again.
#[server(prefix = "/console/fn", endpoint = "save_setting", input = Json)]
pub async fn save_setting(env: String, name: String, value: String, reset: bool) -> Result<(), ServerFnError> {
    let s = services_for("environment.setting.write", &env)?;
    let id = env_id(&env)?;
    if reset {
        return s.orchestrator.delete_environment_setting(id, &name).await.map_err(fail);
    }
    let all = s.orchestrator.environment_settings(id).await.map_err(fail)?;
    let def = all.definition.get(&name).ok_or_else(|| ServerFnError::new(format!("unknown setting {name}")))?;
    let bad = |what: &str| ServerFnError::new(format!("{name} needs {what}, got {value:?}"));
    let json = match status_text(&def.kind).as_str() {
        "bool" => serde_json::Value::Bool(value.trim().parse().map_err(|_| bad("true or false"))?),
        "int" => serde_json::Value::from(value.trim().parse::<i64>().map_err(|_| bad("a whole number"))?),
        "positive_float" => serde_json::Value::from(value.trim().parse::<f64>().map_err(|_| bad("a positive number"))?),
        "dict" => serde_json::from_str(&value).map_err(|e| bad(&format!("a JSON object ({e})")))?,
        _ => serde_json::Value::String(value),
    };
    s.orchestrator.set_environment_setting(id, &name, &json).await.map_err(fail)
}

#[server(prefix = "/console/fn", endpoint = "dashboard", input = Json)]
pub async fn load_dashboard(env: String) -> Result<Dashboard, ServerFnError> {
    let s = services_for("environment.read", &env)?;
    let id = env_id(&env)?;
    let o = &s.orchestrator;
    let deploy = o.deploy_summary(id).await.map_err(fail)?;
    let agents = o
        .agents(id, &orchestrator::paging::PageRequest { limit: Some(1000), ..Default::default() })
        .await
        .map_err(fail)?;
    let count = |status: &str| agents.items.iter().filter(|a| a.status == status).count() as u64;
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
        agents_up: count("up"),
        agents_down: count("down"),
        agents_paused: count("paused"),
        versions: versions.items.into_iter().map(version_row).collect(),
        compiles: compiles.items.iter().map(compile_row).collect(),
    })
}

#[server(prefix = "/console/fn", endpoint = "versions", input = Json)]
pub async fn versions(query: TableQuery) -> Result<Paged<VersionRow>, ServerFnError> {
    let s = services_for("desired-state.read", &query.env)?;
    let page = s.orchestrator.desired_state_versions(env_id(&query.env)?, &page_request(&query)).await.map_err(fail)?;
    Ok(Paged { page: page_info(&page), rows: page.items.into_iter().map(version_row).collect() })
}

/// Promotes (`delete == false`) or deletes a version.
#[server(prefix = "/console/fn", endpoint = "version_action", input = Json)]
pub async fn version_action(env: String, version: i64, delete: bool) -> Result<(), ServerFnError> {
    let s = services_for("desired-state.write", &env)?;
    let id = env_id(&env)?;
    if delete {
        s.orchestrator.delete_version(id, version).await.map_err(fail)
    } else {
        s.orchestrator.release_version(id, version).await.map(|_| ()).map_err(fail)
    }
}

/// One version for the header of its page: status, date, size and the export's message.
#[server(prefix = "/console/fn", endpoint = "version_summary", input = Json)]
pub async fn version_summary(env: String, version: i64) -> Result<VersionRow, ServerFnError> {
    let s = services_for("desired-state.read", &env)?;
    let m = s.orchestrator.get_version_model(env_id(&env)?, version).await.map_err(fail)?;
    let message = m
        .version_info
        .as_ref()
        .and_then(|i| i.get("export_metadata"))
        .and_then(|e| e.get("message"))
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string();
    Ok(VersionRow {
        version: m.version,
        date: m.date,
        status: m.status.as_ref().map(backend::status_text).unwrap_or_default(),
        total: m.total,
        released: m.released,
        message,
    })
}

#[server(prefix = "/console/fn", endpoint = "version_resources", input = Json)]
pub async fn version_resources(query: TableQuery, version: i64) -> Result<Paged<VersionedResourceRow>, ServerFnError> {
    let s = services_for("desired-state.read", &query.env)?;
    let page =
        s.orchestrator.versioned_resources(env_id(&query.env)?, version, &page_request(&query)).await.map_err(fail)?;
    Ok(Paged {
        page: page_info(&page),
        rows: page
            .items
            .into_iter()
            .map(|r| VersionedResourceRow {
                id: r.resource_id,
                resource_type: r.id_details.resource_type,
                agent: r.id_details.agent,
                value: r.id_details.resource_id_value,
                requires: r.requires.len(),
            })
            .collect(),
    })
}

#[server(prefix = "/console/fn", endpoint = "version_resource", input = Json)]
pub async fn version_resource(env: String, version: i64, rid: String) -> Result<Vec<Attribute>, ServerFnError> {
    let s = services_for("desired-state.read", &env)?;
    let r = s.orchestrator.versioned_resource(env_id(&env)?, version, &rid).await.map_err(fail)?;
    Ok(attributes(&r.attributes))
}

/// The resources that differ between two versions, with unified diffs of changed file contents.
#[server(prefix = "/console/fn", endpoint = "compare_versions", input = Json)]
pub async fn compare_versions(env: String, from: i64, to: i64) -> Result<Vec<ResourceChange>, ServerFnError> {
    let s = services_for("desired-state.read", &env)?;
    let diff = s.orchestrator.diff_versions(env_id(&env)?, from, to).await.map_err(fail)?;
    let mut out = Vec::with_capacity(diff.len());
    for r in diff {
        let mut changes = Vec::new();
        for (name, a) in r.attributes {
            let hash = |v: &Option<serde_json::Value>| v.as_ref().and_then(|v| v.as_str()).unwrap_or("").to_string();
            let file_diff = if name == "hash" {
                s.orchestrator.diff_files(&hash(&a.from_value), &hash(&a.to_value)).await.ok()
            } else {
                None
            };
            changes.push(AttributeChange {
                name,
                from: a.from_value.as_ref().map(json_text).unwrap_or_default(),
                to: a.to_value.as_ref().map(json_text).unwrap_or_default(),
                file_diff,
            });
        }
        out.push(ResourceChange { id: r.resource_id, status: status_text(&r.status), attributes: changes });
    }
    Ok(out)
}

#[server(prefix = "/console/fn", endpoint = "resources", input = Json)]
pub async fn resources(query: TableQuery) -> Result<ResourcesView, ServerFnError> {
    let s = services_for("resource.read", &query.env)?;
    let (page, deploy) =
        s.orchestrator.released_resources(env_id(&query.env)?, &page_request(&query), true).await.map_err(fail)?;
    let deploy = deploy.unwrap_or_default();
    let info = page_info(&page);
    let mut rows = Vec::with_capacity(page.items.len());
    for r in page.items {
        // Only the rows of this page, and only those that are not deployed, cost a query.
        let problem = resource_problem(&s.orchestrator, env_id(&query.env)?, &r.resource_id, r.status.as_str()).await?;
        rows.push(ResourceRow {
            id: r.resource_id,
            resource_type: r.id_details.resource_type,
            agent: r.id_details.agent,
            value: r.id_details.resource_id_value,
            status: r.status.to_string(),
            requires: r.requires.len(),
            problem,
        });
    }
    Ok(ResourcesView { page: info, summary: summary(&deploy), summary_total: deploy.total, rows })
}

/// Why a resource in `status` is not deployed: its last error when it failed, the dependency that
/// blocks it when it waits or was skipped.
#[cfg(feature = "ssr")]
async fn resource_problem(
    o: &orchestrator::Orchestrator,
    env: uuid::Uuid,
    rid: &str,
    status: &str,
) -> Result<Option<Problem>, ServerFnError> {
    match status {
        "failed" | "unavailable" => {
            let req = orchestrator::paging::PageRequest {
                limit: Some(1),
                filters: vec![("minimal_log_level".into(), "ERROR".into())],
                ..Default::default()
            };
            let logs = o.resource_logs(env, rid, &req).await.map_err(fail)?;
            Ok(logs.items.into_iter().next().map(|l| Problem::Error(l.msg)))
        }
        "available" | "skipped" | "skipped_for_undefined" => {
            let details = o.released_resource(env, rid).await.map_err(fail)?;
            let requires: Vec<(String, String)> =
                details.requires_status.into_iter().map(|(r, s)| (r, s.to_string())).collect();
            Ok(Problem::blocked_by(&requires))
        }
        _ => Ok(None),
    }
}

/// Asks the scheduler to deploy (or, with `repair`, repair) the environment, or one agent.
#[server(prefix = "/console/fn", endpoint = "deploy", input = Json)]
pub async fn deploy(env: String, repair: bool, agent: Option<String>) -> Result<usize, ServerFnError> {
    let s = services_for("deploy", &env)?;
    let id = env_id(&env)?;
    let schedulers =
        s.schedulers.ok_or_else(|| ServerFnError::new("this server runs no scheduler: deploys are not available"))?;
    let scope = orchestrator::scheduler::Scope { agents: agent.map(|a| vec![a]), resources: None };
    schedulers.deploy(id, repair, scope).await.map(|ids| ids.len()).map_err(fail)
}

#[server(prefix = "/console/fn", endpoint = "resource_details", input = Json)]
pub async fn load_resource_details(env: String, rid: String) -> Result<ResourceDetails, ServerFnError> {
    let s = services_for("resource.read", &env)?;
    let r = s.orchestrator.released_resource(env_id(&env)?, &rid).await.map_err(fail)?;
    let problem = resource_problem(&s.orchestrator, env_id(&env)?, &rid, r.status.as_str()).await?;
    Ok(ResourceDetails {
        problem,
        id: r.resource_id,
        resource_type: r.resource_type,
        agent: r.agent,
        value: r.id_attribute_value,
        status: r.status.to_string(),
        last_deploy: r.last_deploy,
        first_generated: r.first_generated_time,
        attributes: attributes(&r.attributes),
        requires: r.requires_status.into_iter().map(|(r, s)| (r, s.to_string())).collect(),
    })
}

#[server(prefix = "/console/fn", endpoint = "resource_history", input = Json)]
pub async fn resource_history(env: String, rid: String) -> Result<Vec<HistoryRow>, ServerFnError> {
    let s = services_for("resource.read", &env)?;
    let req = orchestrator::paging::PageRequest { limit: Some(50), ..Default::default() };
    let page = s.orchestrator.resource_history(env_id(&env)?, &rid, &req).await.map_err(fail)?;
    Ok(page
        .items
        .into_iter()
        .map(|h| HistoryRow {
            date: h.date,
            attribute_hash: h.attribute_hash,
            attributes: attributes(&h.attributes),
            requires: h.requires,
        })
        .collect())
}

/// The latest 100 log lines of a resource, at `min_level` or more severe.
#[server(prefix = "/console/fn", endpoint = "resource_logs", input = Json)]
pub async fn resource_logs(env: String, rid: String, min_level: String) -> Result<Vec<LogRow>, ServerFnError> {
    let s = services_for("resource.read", &env)?;
    let mut req = orchestrator::paging::PageRequest { limit: Some(100), ..Default::default() };
    if !min_level.is_empty() {
        req.filters.push(("minimal_log_level".into(), min_level));
    }
    let id = env_id(&env)?;
    let page = s.orchestrator.resource_logs(id, &rid, &req).await.map_err(fail)?;
    // The version of each line's action: one query for the resource's latest actions.
    let actions = orchestrator::resources::ActionQuery {
        resource_id: Some(rid.clone()),
        limit: Some(1000),
        ..Default::default()
    };
    let versions: std::collections::HashMap<uuid::Uuid, i64> = s
        .orchestrator
        .resource_actions(id, &actions)
        .await
        .map_err(fail)?
        .into_iter()
        .map(|a| (a.action_id, a.version))
        .collect();
    Ok(page
        .items
        .into_iter()
        .map(|l| LogRow {
            version: versions.get(&l.action_id).copied(),
            timestamp: l.timestamp,
            action: l.action,
            level: l.level,
            message: l.msg,
        })
        .collect())
}

#[server(prefix = "/console/fn", endpoint = "resource_facts", input = Json)]
pub async fn resource_facts(env: String, rid: String) -> Result<Vec<ParameterRow>, ServerFnError> {
    let s = services_for("fact.read", &env)?;
    let facts = s.orchestrator.resource_facts(env_id(&env)?, &rid).await.map_err(fail)?;
    Ok(facts
        .into_iter()
        .map(|f| ParameterRow {
            name: f.name,
            value: f.value,
            source: f.source,
            updated: f.updated,
            resource_id: f.resource_id,
        })
        .collect())
}

#[server(prefix = "/console/fn", endpoint = "agents", input = Json)]
pub async fn agents(query: TableQuery) -> Result<Paged<AgentRow>, ServerFnError> {
    let s = services_for("agent.read", &query.env)?;
    let page = s.orchestrator.agents(env_id(&query.env)?, &page_request(&query)).await.map_err(fail)?;
    Ok(Paged {
        page: page_info(&page),
        rows: page
            .items
            .into_iter()
            .map(|a| AgentRow {
                name: a.name,
                status: a.status,
                paused: a.paused,
                unpause_on_resume: a.unpause_on_resume,
                last_seen: a.last_failover,
            })
            .collect(),
    })
}

/// pause, unpause, keep_paused_on_resume or unpause_on_resume, for one agent or (empty name) all.
#[server(prefix = "/console/fn", endpoint = "agent_action", input = Json)]
pub async fn agent_action(env: String, agent: String, action: String) -> Result<(), ServerFnError> {
    let s = services_for("agent.pause-resume", &env)?;
    let action = orchestrator::agents::AgentAction::parse(&action).map_err(fail)?;
    let agent = if agent.is_empty() { None } else { Some(agent.as_str()) };
    s.orchestrator.agent_action(env_id(&env)?, agent, action).await.map_err(fail)
}

/// Parameters (`facts == false`) or facts, paged.
#[server(prefix = "/console/fn", endpoint = "parameters", input = Json)]
pub async fn parameters(query: TableQuery, facts: bool) -> Result<Paged<ParameterRow>, ServerFnError> {
    let s = services_for(if facts { "fact.read" } else { "parameter.read" }, &query.env)?;
    let id = env_id(&query.env)?;
    let req = page_request(&query);
    if facts {
        let page = s.orchestrator.facts(id, &req).await.map_err(fail)?;
        Ok(Paged {
            page: page_info(&page),
            rows: page
                .items
                .into_iter()
                .map(|f| ParameterRow {
                    resource_id: f.resource_id,
                    ..parameter_row(f.name, f.value, f.source, f.updated)
                })
                .collect(),
        })
    } else {
        let page = s.orchestrator.parameters(id, &req).await.map_err(fail)?;
        Ok(Paged {
            page: page_info(&page),
            rows: page.items.into_iter().map(|p| parameter_row(p.name, p.value, p.source, p.updated)).collect(),
        })
    }
}

#[server(prefix = "/console/fn", endpoint = "notifications", input = Json)]
pub async fn notifications(query: TableQuery) -> Result<Paged<NotificationRow>, ServerFnError> {
    let s = services_for("notification.read", &query.env)?;
    let mut query = query;
    query.filters.entry("cleared".into()).or_insert_with(|| "false".into());
    let page = s.orchestrator.notifications(env_id(&query.env)?, &page_request(&query)).await.map_err(fail)?;
    Ok(Paged {
        page: page_info(&page),
        rows: page
            .items
            .into_iter()
            .map(|n| NotificationRow {
                id: n.id.to_string(),
                created: n.created,
                title: n.title,
                message: n.message,
                severity: n.severity.as_str().to_string(),
                uri: n.uri,
                read: n.read,
            })
            .collect(),
    })
}

/// Marks one notification (or, with an empty id, every unread one) read/unread or clears it.
#[server(prefix = "/console/fn", endpoint = "update_notification", input = Json)]
pub async fn update_notification(
    env: String,
    id: String,
    read: Option<bool>,
    cleared: Option<bool>,
) -> Result<(), ServerFnError> {
    let s = services_for("notification.write", &env)?;
    let env = env_id(&env)?;
    let update = api::operations::NotificationUpdate { read, cleared };
    let ids: Vec<uuid::Uuid> = if id.is_empty() {
        let req = orchestrator::paging::PageRequest {
            limit: Some(1000),
            filters: vec![("read".into(), "false".into()), ("cleared".into(), "false".into())],
            ..Default::default()
        };
        s.orchestrator.notifications(env, &req).await.map_err(fail)?.items.into_iter().map(|n| n.id).collect()
    } else {
        vec![id.parse().map_err(|_| ServerFnError::new(format!("{id:?} is not a notification id")))?]
    };
    for id in ids {
        s.orchestrator.update_notification(env, id, update.clone()).await.map_err(fail)?;
    }
    Ok(())
}

/// Node size and spacing of the dependency graph (SVG user units).
pub const GRAPH_NODE_WIDTH: f64 = 180.0;
pub const GRAPH_NODE_HEIGHT: f64 = 26.0;
#[cfg(feature = "ssr")]
const GRAPH_COLUMN: f64 = 240.0;
#[cfg(feature = "ssr")]
const GRAPH_ROW: f64 = 36.0;
/// Width to height the wrapped picture aims at (about the graph frame's).
#[cfg(feature = "ssr")]
const GRAPH_ASPECT: f64 = 1.6;
/// Pictures up to this many columns are never wrapped.
#[cfg(feature = "ssr")]
const GRAPH_WRAP_COLUMNS: usize = 12;
/// Space between two bands of a wrapped picture.
#[cfg(feature = "ssr")]
const GRAPH_BAND_GAP: f64 = 60.0;
/// Nodes per column before a depth level wraps into another column.
#[cfg(feature = "ssr")]
const GRAPH_COLUMN_ROWS: usize = 40;
#[cfg(feature = "ssr")]
const GRAPH_MAX_NODES: usize = 5000;
/// Resources read to pick a focused view (failures, a neighbourhood) from.
#[cfg(feature = "ssr")]
const GRAPH_FOCUS_FETCH_MAX: usize = 100_000;

/// The released resources of the environment with their requires, laid out for the graph page:
/// all of them (up to the size limit), only the failures and what they block, or the
/// neighbourhood of one resource (see [`GraphFocus`]).
#[server(prefix = "/console/fn", endpoint = "resource_graph", input = Json)]
pub async fn resource_graph(env: String, focus: GraphFocus) -> Result<Graph, ServerFnError> {
    use std::collections::HashMap;
    let s = services_for("resource.read", &env)?;
    let id = env_id(&env)?;
    // The whole graph is cut at GRAPH_MAX_NODES; a focused view picks from every resource first.
    let fetch_max = if focus.is_all() { GRAPH_MAX_NODES } else { GRAPH_FOCUS_FETCH_MAX };
    let mut rows = Vec::new();
    let mut req = orchestrator::paging::PageRequest {
        limit: Some(1000),
        sort: Some("resource_id.asc".into()),
        filters: vec![("status".into(), "!orphaned".into())],
        ..Default::default()
    };
    let mut total = loop {
        let (page, _) = s.orchestrator.released_resources(id, &req, false).await.map_err(fail)?;
        let total = page.metadata.total;
        let next = page.links.next.clone();
        rows.extend(page.items);
        match next {
            Some(link) if rows.len() < fetch_max => {
                let cursor = cursor(&link);
                let get = |k: &str| cursor.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
                req.start = get("start");
                req.end = get("end");
                req.first_id = get("first_id");
                req.last_id = get("last_id");
            }
            _ => break total,
        }
    };
    let plain = |rid: &str| api::resource::unversioned(rid).to_string();
    if !focus.is_all() {
        let index: HashMap<String, usize> = rows.iter().enumerate().map(|(i, r)| (r.resource_id.clone(), i)).collect();
        let requires: Vec<Vec<usize>> =
            rows.iter().map(|r| r.requires.iter().filter_map(|q| index.get(&plain(q)).copied()).collect()).collect();
        let statuses: Vec<&str> = rows.iter().map(|r| r.status.as_str()).collect();
        let keep = crate::model::graph_focus(&focus, &requires, &statuses, |rid| index.get(rid).copied());
        if !focus.around.is_empty() && !index.contains_key(&focus.around) {
            return Err(ServerFnError::new(format!("{} is not a released resource of this environment", focus.around)));
        }
        let mut i = 0;
        rows.retain(|_| {
            i += 1;
            keep[i - 1]
        });
        total = rows.len() as u64;
    }
    rows.truncate(GRAPH_MAX_NODES);
    let index: HashMap<String, usize> = rows.iter().enumerate().map(|(i, r)| (r.resource_id.clone(), i)).collect();
    let requires: Vec<Vec<usize>> =
        rows.iter().map(|r| r.requires.iter().filter_map(|q| index.get(&plain(q)).copied()).collect()).collect();
    let labels = crate::model::short_labels(
        &rows
            .iter()
            .map(|r| (r.id_details.resource_type.as_str(), r.id_details.resource_id_value.as_str()))
            .collect::<Vec<_>>(),
    );
    // Depth along requires (longest path from a resource that requires nothing), iteratively.
    let mut depth = vec![0usize; rows.len()];
    for _ in 0..rows.len().min(64) {
        let mut changed = false;
        for (i, reqs) in requires.iter().enumerate() {
            let d = reqs.iter().map(|r| depth[*r] + 1).max().unwrap_or(0);
            if d > depth[i] {
                depth[i] = d;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let levels = depth.iter().max().map(|d| d + 1).unwrap_or(0);
    let mut column_of_level = vec![0usize; levels + 1];
    let mut counts = vec![0usize; levels];
    for d in &depth {
        counts[*d] += 1;
    }
    for level in 0..levels {
        column_of_level[level + 1] = column_of_level[level] + counts[level].div_ceil(GRAPH_COLUMN_ROWS).max(1);
    }
    // Column and row of each node; long chains give many narrow columns.
    let mut seen = vec![0usize; levels];
    let mut places = Vec::with_capacity(rows.len());
    let mut max_rows = 0;
    for d in &depth {
        let n = seen[*d];
        seen[*d] += 1;
        places.push((column_of_level[*d] + n / GRAPH_COLUMN_ROWS, n % GRAPH_COLUMN_ROWS));
        max_rows = max_rows.max(n % GRAPH_COLUMN_ROWS + 1);
    }
    // A very wide picture is wrapped into bands of columns stacked downwards, so that it keeps
    // roughly the frame's proportions and a thousand resources stay readable when fitted.
    let columns = column_of_level[levels].max(1);
    let band_height = max_rows as f64 * GRAPH_ROW + GRAPH_BAND_GAP;
    let per_band = if columns <= GRAPH_WRAP_COLUMNS {
        columns
    } else {
        ((GRAPH_ASPECT * columns as f64 * band_height / GRAPH_COLUMN).sqrt().ceil() as usize)
            .clamp(GRAPH_WRAP_COLUMNS, columns)
    };
    let bands = columns.div_ceil(per_band);
    let nodes = rows
        .iter()
        .zip(&places)
        .zip(labels)
        .map(|((r, (column, row)), label)| GraphNode {
            id: r.resource_id.clone(),
            label,
            status: r.status.to_string(),
            x: 20.0 + (column % per_band) as f64 * GRAPH_COLUMN,
            y: 20.0 + (column / per_band) as f64 * band_height + *row as f64 * GRAPH_ROW,
        })
        .collect();
    let edges = requires.iter().enumerate().flat_map(|(i, reqs)| reqs.iter().map(move |r| (*r, i))).collect();
    Ok(Graph {
        width: 40.0 + per_band.min(columns) as f64 * GRAPH_COLUMN,
        height: 40.0 + bands as f64 * band_height - GRAPH_BAND_GAP,
        nodes,
        edges,
        truncated: total.saturating_sub(rows.len() as u64),
    })
}

/// Compile reports, newest first. `filter.status` (queued, running, success, failed) becomes the
/// API's `started` / `completed` / `success` filters.
#[server(prefix = "/console/fn", endpoint = "compile_reports", input = Json)]
pub async fn compile_reports(query: TableQuery) -> Result<Paged<CompileRow>, ServerFnError> {
    let s = services_for("compile-report.read", &query.env)?;
    let id = env_id(&query.env)?;
    let mut query = query;
    let status = query.filters.remove("status").unwrap_or_default();
    let extra: &[(&str, &str)] = match status.as_str() {
        "" => &[],
        "queued" => &[("started", "false")],
        "running" => &[("started", "true"), ("completed", "false")],
        "success" => &[("success", "true")],
        "failed" => &[("success", "false")],
        other => {
            return Err(ServerFnError::new(format!(
                "{other:?} is not a compile status: use queued, running, success or failed"
            )));
        }
    };
    let mut req = page_request(&query);
    req.filters.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let page = s.orchestrator.compile_reports(id, &req).await.map_err(fail)?;
    Ok(Paged { page: page_info(&page), rows: page.items.iter().map(compile_row).collect() })
}

/// Whether the environment compiles on the server (`server_compile`): the Recompile menu is
/// disabled otherwise.
#[server(prefix = "/console/fn", endpoint = "server_compile_enabled", input = Json)]
pub async fn server_compile_enabled(env: String) -> Result<bool, ServerFnError> {
    let s = services_for("environment.setting.read", &env)?;
    server_compile(&s.orchestrator, env_id(&env)?).await
}

/// Queues a compile of the environment (`update`: pull the repository and update modules first).
/// Returns what the operator should read: the queued compile, or why nothing was queued.
#[server(prefix = "/console/fn", endpoint = "recompile", input = Json)]
pub async fn recompile(env: String, update: bool) -> Result<String, ServerFnError> {
    let s = services_for(if update { "compiler.execute.update" } else { "compiler.execute" }, &env)?;
    let id = env_id(&env)?;
    if !server_compile(&s.orchestrator, id).await? {
        return Err(ServerFnError::new(
            "server compiles are off for this environment: turn on the server_compile setting first",
        ));
    }
    let message =
        if update { "Update project and recompile from the web console" } else { "Recompile from the web console" };
    let requested = s
        .orchestrator
        .request_compile(
            id,
            orchestrator::compiles::CompileRequest {
                force_update: update,
                metadata: serde_json::json!({"type": "console", "message": message}),
                ..Default::default()
            },
        )
        .await
        .map_err(fail)?;
    match requested.id {
        Some(_) if requested.merged => Ok("Joined a compile that was already waiting.".into()),
        Some(_) => Ok("Compile queued.".into()),
        None => Err(ServerFnError::new(requested.warnings.join("; "))),
    }
}

/// One compile with its stages and errors.
#[server(prefix = "/console/fn", endpoint = "compile_details", input = Json)]
pub async fn compile_details(env: String, id: String) -> Result<CompileDetailsView, ServerFnError> {
    let s = services_for("compile-report.read", &env)?;
    let env = env_id(&env)?;
    let id: uuid::Uuid = id.parse().map_err(|_| ServerFnError::new(format!("{id:?} is not a compile id")))?;
    let d = s.orchestrator.compile_details(env, id).await.map_err(fail)?;
    let errors = d
        .compile_data
        .as_ref()
        .and_then(|data| data["errors"].as_array())
        .map(|errors| {
            errors
                .iter()
                .map(|e| {
                    let location = &e["location"];
                    CompileError {
                        kind: e["type"].as_str().unwrap_or_default().to_string(),
                        message: e["message"].as_str().unwrap_or_default().to_string(),
                        file: location["uri"].as_str().or_else(|| location["file"].as_str()).map(str::to_string),
                        line: location["range"]["start"]["line"]
                            .as_i64()
                            .or_else(|| location["lnr"].as_i64())
                            .map(|l| l + 1),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let stages = d
        .reports
        .unwrap_or_default()
        .into_iter()
        .map(|stage| CompileStageRow {
            duration: seconds(&stage.started, stage.completed.as_deref()),
            name: stage.name,
            command: stage.command,
            started: stage.started,
            completed: stage.completed,
            returncode: stage.returncode,
            stdout: stage.outstream,
            stderr: stage.errstream,
        })
        .collect();
    Ok(CompileDetailsView {
        compile: compile_row(&d.report),
        trigger: d.report.metadata.get("type").and_then(|t| t.as_str()).unwrap_or_default().to_string(),
        failed_message: d.report.failed_compile_message.clone().filter(|m| !m.is_empty()),
        environment_variables: d.report.environment_variables.into_iter().collect(),
        errors,
        stages,
    })
}

/// The dry runs of a version (newest first) and the report of `report` (default: the newest).
#[server(prefix = "/console/fn", endpoint = "compliance", input = Json)]
pub async fn compliance(env: String, version: i64, report: String) -> Result<ComplianceView, ServerFnError> {
    let s = services_for("dryrun.read", &env)?;
    let id = env_id(&env)?;
    let o = &s.orchestrator;
    let environment = o.get_environment(id, Default::default()).await.map_err(fail)?;
    o.get_version_model(id, version).await.map_err(fail)?;
    let runs = o.dryruns(id, Some(version)).await.map_err(fail)?;
    let row = |d: &api::version::DryRun| DryRunRow {
        id: d.id.to_string(),
        date: d.date.clone().unwrap_or_default(),
        total: d.total,
        todo: d.todo,
    };
    let reports: Vec<DryRunRow> = runs.iter().map(row).collect();
    let selected = if report.is_empty() {
        runs.first()
    } else {
        let wanted = runs.iter().find(|d| d.id.to_string() == report);
        Some(wanted.ok_or_else(|| ServerFnError::new(format!("version {version} has no dry run {report}")))?)
    };
    let mut changes = Vec::new();
    if let Some(selected) = selected {
        let report = o.dryrun_report(id, selected.id).await.map_err(fail)?;
        for r in report.diff {
            let attributes = r
                .attributes
                .into_iter()
                .map(|(name, a)| {
                    // File contents: a unified diff reads better than two long strings.
                    let file_diff = (name == "content").then(|| {
                        orchestrator::unified_diff(&a.from_value_compare, &a.to_value_compare, "current", "desired")
                    });
                    AttributeChange {
                        from: a.from_value.as_ref().map(json_text).unwrap_or_default(),
                        to: a.to_value.as_ref().map(json_text).unwrap_or_default(),
                        name,
                        file_diff,
                    }
                })
                .collect();
            changes.push(ResourceChange { id: r.resource_id, status: status_text(&r.status), attributes });
        }
    }
    Ok(ComplianceView { selected: selected.map(row), reports, changes, halted: environment.halted })
}

/// Starts a dry run of `version`; returns its id.
#[server(prefix = "/console/fn", endpoint = "dry_run", input = Json)]
pub async fn dry_run(env: String, version: i64) -> Result<String, ServerFnError> {
    let s = services_for("dryrun.write", &env)?;
    let id = env_id(&env)?;
    let schedulers =
        s.schedulers.ok_or_else(|| ServerFnError::new("this server runs no scheduler: dry runs are not available"))?;
    schedulers.dry_run(id, version).await.map(|id| id.to_string()).map_err(fail)
}

/// The server's status, as `GET /api/v1/serverstatus` reports it.
#[server(prefix = "/console/fn", endpoint = "server_status", input = Json)]
pub async fn load_server_status() -> Result<ServerStatus, ServerFnError> {
    let s = services_global("status.read")?;
    let status = s.orchestrator.server_status(s.schedulers.as_deref()).await;
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let database = status.slices.iter().find(|slice| slice.name == "core.database");
    let uptime = status
        .slices
        .iter()
        .find(|slice| slice.name == "core.server")
        .and_then(|slice| slice.status["uptime"].as_u64())
        .unwrap_or(0);
    Ok(ServerStatus {
        product: status.product.clone(),
        edition: status.edition.clone(),
        version: status.version.clone(),
        status: status_text(&status.status),
        database: database.and_then(|d| d.status["database"].as_str()).unwrap_or("unknown").to_string(),
        database_status: database.map(|d| status_text(&d.reported_status)).unwrap_or_default(),
        database_version: database.and_then(|d| d.status["version"].as_str()).map(str::to_string),
        uptime,
        components: status
            .slices
            .iter()
            .map(|slice| ComponentStatus {
                name: slice.name.clone(),
                status: status_text(&slice.reported_status),
                message: slice.message.clone(),
                details: slice
                    .status
                    .as_object()
                    .map(|m| m.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), text(v))).collect())
                    .unwrap_or_default(),
            })
            .collect(),
    })
}

/// Every user with their roles, and what the page needs to assign roles. Only admins read users.
#[server(prefix = "/console/fn", endpoint = "users", input = Json)]
pub async fn users() -> Result<UsersView, ServerFnError> {
    let s = services_global("user.read")?;
    services_global("role-assignment.read")?;
    let environments = list_environments().await?;
    let name_of = |id: &str| {
        environments
            .iter()
            .find(|e| e.id == id)
            .map(|e| format!("{} / {}", e.project_name, e.name))
            .unwrap_or_else(|| id.to_string())
    };
    let users = s
        .orchestrator
        .list_users()
        .await
        .map_err(fail)?
        .into_iter()
        .map(|u| {
            let mut roles: Vec<RoleRow> = u
                .roles
                .iter()
                .flat_map(|(env, roles)| {
                    let env = env.to_string();
                    roles.iter().map(move |role| (env.clone(), role.clone()))
                })
                .map(|(env, role)| RoleRow { env_name: name_of(&env), env, role })
                .collect();
            roles.sort_by(|a, b| (&a.env_name, &a.role).cmp(&(&b.env_name, &b.role)));
            UserRow {
                username: u.user.username,
                is_admin: u.user.is_admin,
                password_change_required: u.user.password_change_required,
                roles,
            }
        })
        .collect();
    let roles = s.orchestrator.list_roles().await.map_err(fail)?;
    Ok(UsersView { users, environments, roles, me: s.caller.name().map(str::to_string) })
}

/// Adds a user; the password must follow the policy (12 to 128 characters, three kinds).
#[server(prefix = "/console/fn", endpoint = "add_user", input = Json)]
pub async fn add_user(username: String, password: String, is_admin: bool) -> Result<(), ServerFnError> {
    let s = services_global("user.write")?;
    if is_admin {
        services_global("role.is-admin")?;
    }
    s.orchestrator.create_user(&username, &password, is_admin, false).await.map_err(fail)?;
    Ok(())
}

/// Deletes a user; `confirm` must be the user's name. The last admin cannot be deleted.
#[server(prefix = "/console/fn", endpoint = "delete_user", input = Json)]
pub async fn delete_user(username: String, confirm: String) -> Result<(), ServerFnError> {
    let s = services_global("user.write")?;
    if confirm != username {
        return Err(ServerFnError::new(format!("confirm with the user's name ({username})")));
    }
    s.orchestrator.delete_user(&username).await.map_err(fail)
}

/// Makes a user admin or not; the last admin stays one.
#[server(prefix = "/console/fn", endpoint = "set_admin", input = Json)]
pub async fn set_admin(username: String, is_admin: bool) -> Result<(), ServerFnError> {
    let s = services_global("role.is-admin")?;
    s.orchestrator.set_is_admin(&username, is_admin).await.map_err(fail)
}

/// Sets another user's password (an admin's action: the current password is not asked).
#[server(prefix = "/console/fn", endpoint = "set_user_password", input = Json)]
pub async fn set_user_password(username: String, password: String) -> Result<(), ServerFnError> {
    let s = services_global("user.write")?;
    s.orchestrator.set_password(&username, &password, None).await.map_err(fail)
}

/// Gives (`assign`) or takes away a role of a user in an environment.
#[server(prefix = "/console/fn", endpoint = "role_assignment", input = Json)]
pub async fn role_assignment(username: String, env: String, role: String, assign: bool) -> Result<(), ServerFnError> {
    let s = services_global("role-assignment.write")?;
    if username.is_empty() {
        return Err(ServerFnError::new("pick a user"));
    }
    if role.is_empty() {
        return Err(ServerFnError::new("pick a role"));
    }
    let id = env_id(&env).map_err(|_| ServerFnError::new("pick an environment"))?;
    if assign {
        s.orchestrator.assign_role(&username, id, &role).await.map_err(fail)
    } else {
        s.orchestrator.unassign_role(&username, id, &role).await.map_err(fail)
    }
}

/// The environment's tokens, newest first (never the tokens themselves).
#[server(prefix = "/console/fn", endpoint = "tokens", input = Json)]
pub async fn tokens(env: String) -> Result<Vec<TokenRow>, ServerFnError> {
    let s = services_for("token", &env)?;
    let time = orchestrator::store::format_time;
    Ok(s.orchestrator
        .environment_tokens(env_id(&env)?)
        .await
        .map_err(fail)?
        .into_iter()
        .map(|t| TokenRow {
            jti: t.jti,
            client_types: t.client_types.iter().map(|c| c.as_str().to_string()).collect(),
            created_by: t.created_by,
            issued: time(t.issued_at),
            expires: t.expires_at.map(time),
            last_used: t.last_used.map(time),
            revoked: t.revoked_at.map(time),
        })
        .collect())
}

/// Creates an environment token for `client_types` (api, agent, compiler) that expires after
/// `expire_days` (never when `None`). The token is returned once and never shown again.
#[server(prefix = "/console/fn", endpoint = "generate_token", input = Json)]
pub async fn generate_token(
    env: String,
    client_types: Vec<String>,
    expire_days: Option<u32>,
) -> Result<String, ServerFnError> {
    let s = services_for("token", &env)?;
    let id = env_id(&env)?;
    let authenticator = use_context::<orchestrator::auth::tokens::Authenticator>()
        .ok_or_else(|| ServerFnError::new("this server cannot issue tokens (no authenticator)"))?;
    let mut clients = Vec::new();
    for name in &client_types {
        clients.push(
            api::auth::ClientType::parse(name).ok_or_else(|| {
                ServerFnError::new(format!("unknown client type {name:?}: use api, agent or compiler"))
            })?,
        );
    }
    if clients.is_empty() {
        return Err(ServerFnError::new("tick at least one client type: api, agent or compiler"));
    }
    if expire_days == Some(0) {
        return Err(ServerFnError::new("a token must live at least one day (or never expire)"));
    }
    let expire = expire_days.map(|d| i64::from(d) * 86_400);
    authenticator
        .create_environment_token(&s.orchestrator, id, &clients, false, expire, s.caller.name())
        .await
        .map_err(fail)
}

/// Revokes a token: it is refused from then on.
#[server(prefix = "/console/fn", endpoint = "revoke_token", input = Json)]
pub async fn revoke_token(env: String, jti: String) -> Result<(), ServerFnError> {
    let s = services_for("token", &env)?;
    s.orchestrator.revoke_environment_token(env_id(&env)?, &jti).await.map_err(fail)
}
