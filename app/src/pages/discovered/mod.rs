//! Discovered resources: what the discovery handlers of the agents found on the managed
//! machines (`/api/v2/discovered`), with the resource that discovered each one, the managed
//! resource of the same id when there is one, and a way to forget a row.

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use serde::{Deserialize, Serialize};

use crate::components::*;
#[cfg(feature = "ssr")]
use crate::fns::{authorized_for, env_id, fail, json_text, page_request, paged};
use crate::layout::resource_link;
use crate::model::{Paged, ResourceId, TableQuery};

#[cfg(all(test, feature = "ssr"))]
mod tests;

/// One discovered resource as the page lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiscoveredRow {
    pub id: ResourceId,
    pub resource_type: String,
    pub agent: String,
    pub value: String,
    /// Whether the orchestrator manages a resource with this id (then the row links to it).
    pub managed: bool,
    /// The discovery resource whose handler reported it.
    pub discovery_id: ResourceId,
    /// Whether that discovery resource is managed here (then the row links to it).
    pub discovery_managed: bool,
    /// The reported values, as text per key.
    pub values: Vec<(String, String)>,
}

#[component]
pub fn DiscoveredResourcesPage() -> impl IntoView {
    let env = env();
    let data = table_resource(discovered_resources);
    let error = ActionError::new();
    view! {
        <EnvironmentPage title="Discovered Resources" env notice=move || view! { <ActionMessage error/> }>
            <FilterForm
                path=crate::routes::DISCOVERED.href
                fields=vec![("resource_type", "Type"), ("agent", "Agent"), ("resource_id_value", "Value")]
                keep=vec!["env", "filter.managed"]
            />
            <div class="toolbar" aria-label="Filter on managed">
                <span class="muted">"Managed: "</span>
                {choice_filter(crate::routes::DISCOVERED.href, "managed", &["", "true", "false"])}
            </div>
            <Loaded
                resource=data
                loading="Loading discovered resources…"
                error_title="The discovered resources could not be loaded"
                view=move |page| view! { <DiscoveredTable env=env.get_untracked() data=page error/> }
            />
        </EnvironmentPage>
    }
}

#[component]
fn DiscoveredTable(env: String, data: Paged<DiscoveredRow>, error: ActionError) -> impl IntoView {
    if data.rows.is_empty() {
        let filtered = use_query_map_filters();
        return view! {
            <Empty title=if filtered { "No discovered resources match the filters" } else { "No discovered resources" }>
                {if filtered {
                    view! { <p><a href=crate::routes::DISCOVERED.of(&env)>"Clear the filters"</a> " to see every one."</p> }
                        .into_any()
                } else {
                    view! {
                        <p>
                            "Agents report here what the discovery handlers of their resources find on the machines "
                            "they manage: deploy a discovery resource to fill this list."
                        </p>
                    }
                        .into_any()
                }}
            </Empty>
        }
        .into_any();
    }
    let row = move |r: DiscoveredRow| {
        let managed = if r.managed {
            view! { <a class="managed-link" href=resource_link(&env, &r.id)>"Managed resource"</a> }.into_any()
        } else {
            view! { <span class="muted">"not managed"</span> }.into_any()
        };
        let discovery = if r.discovery_managed {
            view! { <a class="mono discovery-link" href=resource_link(&env, &r.discovery_id)>{r.discovery_id.to_string()}</a> }
                    .into_any()
        } else {
            view! { <span class="mono discovery-id">{r.discovery_id.to_string()}</span> }.into_any()
        };
        let (delete_env, id) = (env.clone(), r.id.clone());
        let fields = vec![("env", env.clone()), ("id", r.id.to_string())];
        let delete = move || {
            let (env, id) = (delete_env.clone(), id.clone());
            let question =
                format!("Forget the discovered resource {id}? An agent that finds it again reports it again.");
            error.ask(question, "Delete", move || {
                act(error, format!("{id} deleted"), delete_discovered(env.clone(), id.clone()))
            });
        };
        let count = r.values.len();
        view! {
            <tr data-id=r.id.to_string() data-managed=r.managed.to_string()>
                <td>{r.resource_type}</td>
                <td>{r.agent}</td>
                <td class="mono">{r.value}</td>
                <td>{managed}</td>
                <td>{discovery}</td>
                <td>
                    <details class="discovered-values">
                        <summary>{if count == 1 { "1 value".to_string() } else { format!("{count} values") }}</summary>
                        <AttributeTable attributes=r.values/>
                    </details>
                </td>
                <td class="row-actions">
                    <ChangeForm action={endpoint::<DeleteDiscovered>()} fields on_submit=delete>
                        <button class="button button-small button-secondary delete-discovered" type="submit">
                            "Delete"
                        </button>
                    </ChangeForm>
                </td>
            </tr>
        }
    };
    let headings = &[
        Heading::Sorts("resource_type", "Type"),
        Heading::Sorts("agent", "Agent"),
        Heading::Sorts("resource_id_value", "Value"),
        Heading::Plain("Managed"),
        Heading::Plain("Discovered by"),
        Heading::Plain("Values"),
        Heading::Unseen("Actions"),
    ];
    view! {
        <Table path=crate::routes::DISCOVERED.href id="discovered" headings rows=data.rows row/>
        <Pager path=crate::routes::DISCOVERED.href page=data.page/>
    }
    .into_any()
}

/// Whether the URL filters the list (the empty state then says how to clear the filters).
fn use_query_map_filters() -> bool {
    leptos_router::hooks::use_query_map()
        .get_untracked()
        .latest_values()
        .any(|(k, v)| k.starts_with("filter.") && !v.is_empty())
}

#[server(prefix = "/console/fn", endpoint = "discovered_resources", input = Json)]
pub async fn discovered_resources(query: TableQuery) -> Result<Paged<DiscoveredRow>, ConsoleError> {
    let s = authorized_for("discovered-resources.read", &query.env)?;
    let env = env_id(&query.env)?;
    let page = s.orchestrator.discovered_resources(env, &page_request(&query)).await.map_err(fail)?;
    // The orchestrator looks ids up as stored text.
    let discovery_ids: Vec<String> = page.items.iter().map(|d| d.discovery_resource_id.to_string()).collect();
    let discovery_ids: Vec<&str> = discovery_ids.iter().map(String::as_str).collect();
    let managed_discovery = s.orchestrator.managed_resource_ids(env, &discovery_ids).await.map_err(fail)?;
    Ok(paged(page, |d| DiscoveredRow {
        managed: d.managed_resource_uri.is_some(),
        discovery_managed: managed_discovery.contains(&d.discovery_resource_id.to_string()),
        values: d.values.iter().map(|(k, v)| (k.clone(), json_text(v))).collect(),
        id: d.discovered_resource_id,
        resource_type: d.resource_type,
        agent: d.agent,
        value: d.resource_id_value,
        discovery_id: d.discovery_resource_id,
    }))
}

/// Also posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "delete_discovered")]
pub async fn delete_discovered(env: String, id: ResourceId) -> Result<(), ConsoleError> {
    let s = authorized_for("discovered-resources.delete", &env)?;
    s.orchestrator.delete_discovered_resource(env_id(&env)?, &id.to_string()).await.map_err(fail)
}
