//! The server functions of the resources pages.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;

#[cfg(feature = "ssr")]
use crate::fns::{attributes, env_id, fact_row, fail, page_info, page_request, services_for, summary};
use crate::model::{HistoryRow, LogRow, ParameterRow, ResourceDetails, ResourcesView, TableQuery};
#[cfg(feature = "ssr")]
use crate::model::{Problem, ResourceRow, ResourceState};

#[server(prefix = "/console/fn", endpoint = "resources", input = Json)]
pub async fn resources(query: TableQuery) -> Result<ResourcesView, ServerFnError> {
    let s = services_for("resource.read", &query.env)?;
    let env = env_id(&query.env)?;
    let (page, deploy) = s.orchestrator.released_resources(env, &page_request(&query), true).await.map_err(fail)?;
    let deploy = deploy.unwrap_or_default();
    let info = page_info(&page);
    let shown: Vec<(&str, ResourceState)> = page.items.iter().map(|r| (r.resource_id.as_str(), r.status)).collect();
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
    resources: &[(&str, ResourceState)],
) -> Result<std::collections::HashMap<String, Problem>, ServerFnError> {
    let with = |states: &[ResourceState]| -> Vec<&str> {
        resources.iter().filter(|(_, status)| states.contains(status)).map(|(rid, _)| *rid).collect()
    };
    let failed = with(&[ResourceState::Failed, ResourceState::Unavailable]);
    let waiting = with(&[ResourceState::Available, ResourceState::Skipped, ResourceState::SkippedForUndefined]);
    let mut problems: std::collections::HashMap<String, Problem> = o
        .last_errors(env, &failed)
        .await
        .map_err(fail)?
        .into_iter()
        .map(|(rid, msg)| (rid, Problem::Error(msg)))
        .collect();
    for (rid, requires) in o.requires_states(env, &waiting).await.map_err(fail)? {
        let requires: Vec<(String, ResourceState)> = requires.into_iter().collect();
        if let Some(problem) = Problem::blocked_by(&requires) {
            problems.insert(rid, problem);
        }
    }
    Ok(problems)
}

#[server(prefix = "/console/fn", endpoint = "resource_details", input = Json)]
pub async fn load_resource_details(env: String, rid: String) -> Result<ResourceDetails, ServerFnError> {
    let s = services_for("resource.read", &env)?;
    let r = s.orchestrator.released_resource(env_id(&env)?, &rid).await.map_err(fail)?;
    let problem = problems(&s.orchestrator, env_id(&env)?, &[(rid.as_str(), r.status)]).await?.remove(&rid);
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
pub async fn resource_history(env: String, rid: String) -> Result<Vec<HistoryRow>, ServerFnError> {
    let s = services_for("resource.read", &env)?;
    let req = orchestrator::paging::PageRequest { limit: Some(50), ..Default::default() };
    let page = s.orchestrator.resource_history(env_id(&env)?, &rid, &req).await.map_err(fail)?;
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
            timestamp: l.timestamp.to_string(),
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
    Ok(facts.into_iter().map(fact_row).collect())
}
