//! What the console's server functions share. Each server function lives in the page module that
//! calls it (`pages/<page>.rs`, or `pages/<page>/fns.rs` for a long page); this module holds only
//! what several of them need:
//! - the entry points every server function starts with, [`authorized_for`] and [`authorized_global`],
//!   naming the permission label it needs: the signed-in user is checked there, by the same
//!   `Orchestrator::authorize` as every REST route, before the orchestrator is handed out;
//! - conversions used by several pages: paging ([`page_request`], [`page_info`]), attribute text,
//!   the deploy summary (dashboard and resources), compile rows (dashboard and compile reports) and
//!   version rows (dashboard and desired state);
//! - the server functions called from more than one place: [`list_environments`] (environment
//!   switcher, environments page, users page), [`list_projects`] (projects page, create
//!   environment), [`environment`] (header, halted banner, settings), [`notifications`] and
//!   [`update_notification`] (the bell and the notification center), [`deploy`] (resources and
//!   agents pages).

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use crate::model::*;

#[cfg(feature = "ssr")]
pub use backend::*;

#[cfg(feature = "ssr")]
mod backend {
    use std::sync::Arc;

    use crate::error::ConsoleError;
    use leptos::prelude::*;
    use orchestrator::auth::{Access, Clients, Principal};
    use orchestrator::paging::PageRequest;

    use crate::model::{PageInfo, Paged, TableQuery, VersionRow};

    /// What a server function works with once its caller is allowed to make it.
    pub struct Authorized {
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

    fn authorized(access: Access, env: Option<uuid::Uuid>) -> Result<Authorized, ConsoleError> {
        authorized_call(&orchestrator::auth::policy::Call::new(access, env))
    }

    /// The entry point of a server function that requests a compile: the check the REST API's
    /// `POST /api/v1/notify/<id>` makes.
    pub fn authorized_compile(env: &str, update: bool) -> Result<Authorized, ConsoleError> {
        authorized_call(&orchestrator::auth::policy::Call::compile(env_id(env)?, update))
    }

    fn authorized_call(call: &orchestrator::auth::policy::Call<'_>) -> Result<Authorized, ConsoleError> {
        let orchestrator = use_context::<orchestrator::Orchestrator>()
            .ok_or_else(|| ConsoleError::Failed("the console is not connected to an orchestrator".into()))?;
        let caller = caller().ok_or(ConsoleError::NotSignedIn)?;
        orchestrator.authorize(&caller, call).map_err(|denied| ConsoleError::NotAllowed(denied.to_string()))?;
        let schedulers = use_context::<Arc<orchestrator::scheduler::Schedulers>>();
        Ok(Authorized { orchestrator, schedulers, caller })
    }

    /// The entry point of a server function acting in one environment, allowed by `label`.
    pub fn authorized_for(label: &'static str, env: &str) -> Result<Authorized, ConsoleError> {
        authorized(Access::Environment(label, Clients::API), Some(env_id(env)?))
    }

    /// The entry point of a server function any signed-in user may call (what it returns is
    /// limited to the caller's own).
    pub fn authorized_signed_in() -> Result<Authorized, ConsoleError> {
        authorized(Access::Authenticated(orchestrator::auth::policy::AUTHENTICATED_LABEL, Clients::API), None)
    }

    /// The entry point of a server function that is not about one environment.
    pub fn authorized_global(label: &'static str) -> Result<Authorized, ConsoleError> {
        authorized(Access::Global(label, Clients::API), None)
    }

    /// An orchestrator failure as the browser sees it, of the kind the REST API answers it with
    /// (a value the API refuses with 400 is a refusal here too: issue 47): a refusal in its own
    /// words; a failure on the server's side (the database, stored data) as a fixed message with
    /// the id its detail is logged under.
    pub fn fail(error: orchestrator::Error) -> ConsoleError {
        use orchestrator::Error::*;
        let message = error.client_message();
        match &error {
            BadRequest(_) => ConsoleError::Refused(message),
            NotFound(_) => ConsoleError::NotFound(message),
            Conflict(_) => ConsoleError::Conflict(message),
            Forbidden(_) => ConsoleError::NotAllowed(message),
            LeaseLost(_) => ConsoleError::Unavailable(message),
            Database(_) if error.is_unreachable() => ConsoleError::Unavailable(message),
            Database(_) | Corrupt(_) => ConsoleError::Failed(message),
        }
    }

    pub fn env_id(env: &str) -> Result<uuid::Uuid, ConsoleError> {
        if env.is_empty() {
            return Err(ConsoleError::refused("no environment selected: pick one in the environment switcher"));
        }
        env.parse().map_err(|_| ConsoleError::refused(format!("{env:?} is not an environment id")))
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

    /// One page of an API list as a table's rows: its paging facts, and `row` of each item.
    pub fn paged<T, R>(page: orchestrator::paging::Page<T>, row: impl FnMut(T) -> R) -> Paged<R> {
        Paged { page: page_info(&page), rows: page.items.into_iter().map(row).collect() }
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

    /// An attribute filled from a reference at deploy shows the reference (`<reference
    /// std::Environment(name=X)>`), never `null`: the value itself is only known to the agent.
    pub fn attributes(map: &serde_json::Map<String, serde_json::Value>) -> Vec<(String, String)> {
        let referenced = api::references::referenced_attributes(map);
        map.iter().map(|(k, v)| (k.clone(), api::references::shown_value(v, referenced.get(k), json_text))).collect()
    }

    pub fn summary(s: &api::resource::ResourceDeploySummary) -> Vec<(api::ResourceState, u64)> {
        let mut out: Vec<(api::ResourceState, u64)> =
            crate::model::RESOURCE_STATES.iter().filter_map(|state| Some((*state, *s.by_state.get(state)?))).collect();
        for (state, n) in &s.by_state {
            if !out.iter().any(|(s, _)| s == state) {
                out.push((*state, *n));
            }
        }
        out
    }

    pub fn status_text<T: serde::Serialize>(status: &T) -> String {
        serde_json::to_value(status).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
    }

    /// Seconds from `from` to `to` (or to now when `to` is unset), never negative.
    pub fn seconds(from: api::Timestamp, to: Option<api::Timestamp>) -> f64 {
        from.seconds_until(to.unwrap_or_else(api::Timestamp::now)).max(0.0)
    }

    /// A compile as the reports page and the dashboard list it.
    pub fn compile_row(c: &api::compile::CompileReport) -> crate::model::CompileRow {
        let requested = c.times.requested.map(|t| t.to_string()).unwrap_or_default();
        let wait = c.times.requested.map(|r| seconds(r, c.times.started));
        crate::model::CompileRow {
            id: c.id.to_string(),
            status: c.status(),
            message: c.metadata.get("message").and_then(|m| m.as_str()).unwrap_or_default().to_string(),
            wait,
            duration: c.times.started.map(|s| seconds(s, c.times.completed)),
            requested,
            started: c.times.started.map(|t| t.to_string()),
            completed: c.times.completed.map(|t| t.to_string()),
            version: c.version,
            do_export: c.do_export,
            force_update: c.force_update,
        }
    }

    /// A registered token as the environment's tokens tab and the users page list it.
    pub fn token_row(t: &api::auth::Token) -> crate::model::TokenRow {
        let time = orchestrator::store::format_time;
        crate::model::TokenRow {
            jti: t.jti.clone(),
            client_types: t.client_types.iter().map(|c| c.as_str().to_string()).collect(),
            created_by: t.created_by.clone(),
            issued: time(t.issued_at),
            expires: t.expires_at.map(time),
            last_used: t.last_used.map(time),
            revoked: t.revoked_at.map(time),
        }
    }

    /// A fact as the facts page and a resource's facts tab list it.
    pub fn fact_row(f: api::operations::Fact) -> crate::model::ParameterRow {
        crate::model::ParameterRow {
            name: f.name,
            value: f.value,
            source: f.source,
            updated: f.updated.map(|t| t.to_string()),
            resource_id: f.resource_id,
        }
    }

    /// A version as the dashboard and the desired-state page list it.
    pub fn version_row(v: api::version::DesiredStateVersion) -> VersionRow {
        VersionRow {
            version: v.version,
            date: v.date.to_string(),
            status: v.status,
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

/// Every environment, sorted by project name and environment name.
#[server(prefix = "/console/fn", endpoint = "list_environments")]
pub async fn list_environments() -> Result<Vec<EnvironmentSummary>, ConsoleError> {
    let s = authorized_global("environment.read")?;
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
pub async fn list_projects() -> Result<Vec<ProjectSummary>, ConsoleError> {
    let s = authorized_global("project.read")?;
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

#[server(prefix = "/console/fn", endpoint = "environment", input = Json)]
pub async fn environment(env: String) -> Result<EnvironmentDetails, ConsoleError> {
    let s = authorized_for("environment.read", &env)?;
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

#[server(prefix = "/console/fn", endpoint = "notifications", input = Json)]
pub async fn notifications(query: TableQuery) -> Result<Paged<NotificationRow>, ConsoleError> {
    let s = authorized_for("notification.read", &query.env)?;
    let mut query = query;
    query.filters.entry("cleared".into()).or_insert_with(|| "false".into());
    let page = s.orchestrator.notifications(env_id(&query.env)?, &page_request(&query)).await.map_err(fail)?;
    Ok(paged(page, |n| NotificationRow {
        id: n.id.to_string(),
        created: n.created,
        title: n.title,
        message: n.message,
        severity: n.severity.as_str().to_string(),
        uri: n.uri,
        read: n.read,
    }))
}

/// Marks one notification (or, with an empty id, every unread one) read/unread or clears it.
/// Also posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "update_notification")]
pub async fn update_notification(
    env: String,
    id: String,
    read: Option<bool>,
    cleared: Option<bool>,
) -> Result<(), ConsoleError> {
    let s = authorized_for("notification.write", &env)?;
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
        vec![id.parse().map_err(|_| ConsoleError::refused(format!("{id:?} is not a notification id")))?]
    };
    for id in ids {
        s.orchestrator.update_notification(env, id, update.clone()).await.map_err(fail)?;
    }
    Ok(())
}

/// Asks the scheduler to deploy (or, with `repair`, repair) the environment, or one agent. Also
/// posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "deploy")]
pub async fn deploy(env: String, repair: bool, agent: Option<String>) -> Result<usize, ConsoleError> {
    let s = authorized_for("deploy", &env)?;
    let id = env_id(&env)?;
    let schedulers = s
        .schedulers
        .ok_or_else(|| ConsoleError::Unavailable("this server runs no scheduler: deploys are not available".into()))?;
    let scope = orchestrator::scheduler::Scope { agents: agent.map(|a| vec![a]), resources: None };
    schedulers.deploy(id, repair, scope).await.map(|ids| ids.len()).map_err(fail)
}
