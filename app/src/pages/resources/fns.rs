//! The server functions of the resources pages.

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;

#[cfg(feature = "ssr")]
use crate::fns::{attributes, authorized_for, env_id, fact_row, fail, page_info, page_request, summary};
use crate::model::{HistoryRow, LogRow, ParameterRow, ResourceDetails, ResourceId, ResourcesView, TableQuery};
#[cfg(feature = "ssr")]
use crate::model::{Problem, ResourceRow, ResourceState};

#[server(prefix = "/console/fn", endpoint = "resources", input = Json)]
pub async fn resources(query: TableQuery) -> Result<ResourcesView, ConsoleError> {
    let s = authorized_for("resource.read", &query.env)?;
    let env = env_id(&query.env)?;
    let (page, deploy) = s.orchestrator.released_resources(env, &page_request(&query), true).await.map_err(fail)?;
    let deploy = deploy.unwrap_or_default();
    let info = page_info(&page);
    let shown: Vec<(&ResourceId, ResourceState)> = page.items.iter().map(|r| (&r.resource_id, r.status)).collect();
    let mut problems = problems(&s.orchestrator, env, &shown).await?;
    let rows = page
        .items
        .into_iter()
        .map(|r| ResourceRow {
            problem: problems.remove(&r.resource_id),
            id: r.resource_id,
            resource_type: r.id_details.resource_type,
            agent: r.id_details.agent,
            value: r.id_details.resource_id_value,
            status: r.status,
            requires: r.requires.len(),
        })
        .collect();
    Ok(ResourcesView { page: info, summary: summary(&deploy), summary_total: deploy.total, rows })
}

/// Why each of `resources` (id, status) is not deployed, where it says so: its last error when
/// it failed, the dependency that blocks it when it waits or was skipped. A page of rows costs
/// a few queries whatever its size; deployed rows none.
#[cfg(feature = "ssr")]
async fn problems(
    o: &orchestrator::Orchestrator,
    env: uuid::Uuid,
    resources: &[(&ResourceId, ResourceState)],
) -> Result<std::collections::HashMap<ResourceId, Problem>, ConsoleError> {
    // The orchestrator's lookups take and answer ids as stored text.
    let with = |states: &[ResourceState]| -> Vec<String> {
        resources.iter().filter(|(_, status)| states.contains(status)).map(|(rid, _)| rid.to_string()).collect()
    };
    let (failed, waiting) = (
        with(&[ResourceState::Failed, ResourceState::Unavailable]),
        with(&[ResourceState::Available, ResourceState::Skipped, ResourceState::SkippedForUndefined]),
    );
    let stored = |text: &str| ResourceId::parse(text).map_err(|e| ConsoleError::refused(e.to_string()));
    let mut problems = std::collections::HashMap::new();
    for (rid, msg) in o.last_errors(env, &as_strs(&failed)).await.map_err(fail)? {
        problems.insert(stored(&rid)?, Problem::Error(msg));
    }
    for (rid, requires) in o.requires_states(env, &as_strs(&waiting)).await.map_err(fail)? {
        let requires = requires
            .into_iter()
            .map(|(id, state)| Ok((stored(&id)?, state)))
            .collect::<Result<Vec<_>, ConsoleError>>()?;
        if let Some(problem) = Problem::blocked_by(&requires) {
            problems.insert(stored(&rid)?, problem);
        }
    }
    Ok(problems)
}

#[server(prefix = "/console/fn", endpoint = "resource_details", input = Json)]
pub async fn load_resource_details(env: String, rid: ResourceId) -> Result<ResourceDetails, ConsoleError> {
    let s = authorized_for("resource.read", &env)?;
    let r = s.orchestrator.released_resource(env_id(&env)?, &rid.to_string()).await.map_err(fail)?;
    let problem = problems(&s.orchestrator, env_id(&env)?, &[(&rid, r.status)]).await?.remove(&rid);
    Ok(ResourceDetails {
        problem,
        id: r.resource_id,
        resource_type: r.resource_type,
        agent: r.agent,
        value: r.id_attribute_value,
        status: r.status,
        last_deploy: r.last_deploy.map(|t| t.to_string()),
        first_generated: r.first_generated_time.to_string(),
        attributes: attributes(&r.attributes),
        requires: r.requires_status.into_iter().collect(),
    })
}

#[server(prefix = "/console/fn", endpoint = "resource_history", input = Json)]
pub async fn resource_history(env: String, rid: ResourceId) -> Result<Vec<HistoryRow>, ConsoleError> {
    let s = authorized_for("resource.read", &env)?;
    let req = orchestrator::paging::PageRequest { limit: Some(50), ..Default::default() };
    let page = s.orchestrator.resource_history(env_id(&env)?, &rid.to_string(), &req).await.map_err(fail)?;
    Ok(page
        .items
        .into_iter()
        .map(|h| HistoryRow {
            date: h.date.to_string(),
            attribute_hash: h.attribute_hash,
            attributes: attributes(&h.attributes),
            requires: h.requires,
        })
        .collect())
}

/// The latest 100 log lines of a resource, at `min_level` or more severe.
#[server(prefix = "/console/fn", endpoint = "resource_logs", input = Json)]
pub async fn resource_logs(env: String, rid: ResourceId, min_level: String) -> Result<Vec<LogRow>, ConsoleError> {
    let s = authorized_for("resource.read", &env)?;
    let mut req = orchestrator::paging::PageRequest { limit: Some(100), ..Default::default() };
    if !min_level.is_empty() {
        req.filters.push(("minimal_log_level".into(), min_level));
    }
    let id = env_id(&env)?;
    let rid = rid.to_string();
    let page = s.orchestrator.resource_logs(id, &rid, &req).await.map_err(fail)?;
    // The version of each line's action: one query for the resource's latest actions.
    let actions =
        orchestrator::resources::ActionQuery { resource_id: Some(rid), limit: Some(1000), ..Default::default() };
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
            timestamp: l.timestamp.to_string(),
            action: l.action,
            level: l.level,
            message: l.msg,
        })
        .collect())
}

#[server(prefix = "/console/fn", endpoint = "resource_facts", input = Json)]
pub async fn resource_facts(env: String, rid: ResourceId) -> Result<Vec<ParameterRow>, ConsoleError> {
    let s = authorized_for("fact.read", &env)?;
    let facts = s.orchestrator.resource_facts(env_id(&env)?, &rid.to_string()).await.map_err(fail)?;
    Ok(facts.into_iter().map(fact_row).collect())
}

#[cfg(feature = "ssr")]
fn as_strs(ids: &[String]) -> Vec<&str> {
    ids.iter().map(String::as_str).collect()
}
