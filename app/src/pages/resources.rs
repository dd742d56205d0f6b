//! Resources (the latest released state) and one resource's details.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use leptos_router::hooks::use_query_map;

use crate::components::*;
use crate::fns;
#[cfg(feature = "ssr")]
use crate::fns::{attributes, env_id, fail, page_info, page_request, services_for, summary};
use crate::layout::resource_link;
#[cfg(feature = "ssr")]
use crate::model::ResourceRow;
use crate::model::{
    HistoryRow, LogRow, ParameterRow, Problem, ResourceDetails, ResourceState, ResourcesView, TableQuery,
};

const RESOURCES: &str = "/console/resources";
const DETAILS: &str = "/console/resources/details";

#[component]
pub fn ResourcesPage() -> impl IntoView {
    let env = env();
    let data = table_resource(resources);
    let error = ActionError::new();
    let deploy = move |repair: bool| {
        let (question, yes, done) = if repair {
            (
                "Repair every resource of this environment (deploy all, also those that seem up to date)?",
                "Repair",
                "Repair started: every resource deploys again",
            )
        } else {
            ("Deploy every resource whose desired state is not deployed yet?", "Deploy", "Deploy started")
        };
        let env = env.get_untracked();
        error.ask(question, yes, move || {
            let env = env.clone();
            act(error, done, async move { fns::deploy(env, repair, None).await.map(|_| ()) })
        });
    };
    view! {
        <EnvironmentPage
            title="Resources"
            env
            actions=move || view! {
                <div class="page-actions">
                    <a class="button button-secondary" id="graph-link" href=move || env_link("resources/graph", &env.get())>
                        "Dependency graph"
                    </a>
                    <button class="button" id="deploy" type="button" on:click=move |_| deploy(false)>"Deploy"</button>
                    <button class="button button-secondary" id="repair" type="button" on:click=move |_| deploy(true)>
                        "Repair"
                    </button>
                </div>
            }
            notice=move || view! { <ActionMessage error/> }
        >
            <crate::pages::compliance::ComplianceCard env report_only_only=true/>
            <FilterForm
                path=RESOURCES
                fields=vec![("resource_type", "Type"), ("agent", "Agent"), ("resource_id_value", "Value")]
                keep=vec!["env", "filter.status"]
            />
            <Loaded
                resource=data
                loading="Loading resources…"
                error_title="The resources could not be loaded"
                view=move |view| view! { <ResourcesBody env=env.get_untracked() data=view/> }
            />
        </EnvironmentPage>
    }
}

#[component]
fn ResourcesBody(env: String, data: ResourcesView) -> impl IntoView {
    let q = use_query_map();
    let current = q.get_untracked();
    let status = current.get("filter.status").unwrap_or_default();
    let chips = data
        .summary
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(state, n)| {
            let state = state.as_str();
            let active = status == state;
            let href = link(RESOURCES, &current, &[("filter.status", (!active).then(|| state.to_string()))]);
            view! {
                <a class="chip" class:active=active href=href data-state=state>
                    <span class=format!("legend-swatch state-bg-{state}")></span>
                    {format!("{} {n}", state.replace('_', " "))}
                </a>
            }
        })
        .collect_view();
    let deploying = data.summary.iter().find(|(s, _)| *s == ResourceState::Deploying).map(|(_, n)| *n).unwrap_or(0);
    let header = format!("{deploying} deploying / {} resources", data.summary_total);
    let empty_env = env.clone();
    let body = if data.rows.is_empty() {
        let env = empty_env;
        let filtered = current.latest_values().any(|(k, v)| k.starts_with("filter.") && !v.is_empty());
        view! {
            <Empty title=if filtered { "No resources match the filters" } else { "No resources yet" }>
                {if filtered {
                    view! { <p><a href=env_link("resources", &env)>"Clear the filters"</a> " to see every resource."</p> }.into_any()
                } else {
                    view! {
                        <p>
                            "Resources appear when a version is released: export a model and promote it on the "
                            <a href=env_link("desiredstate", &env)>"Desired State"</a> " page."
                        </p>
                    }
                        .into_any()
                }}
            </Empty>
        }
        .into_any()
    } else {
        view! {
            <table class="table" id="resources">
                <thead>
                    <tr>
                        <SortHeader path=RESOURCES column="resource_type" label="Type"/>
                        <SortHeader path=RESOURCES column="agent" label="Agent"/>
                        <SortHeader path=RESOURCES column="resource_id_value" label="Value"/>
                        <SortHeader path=RESOURCES column="status" label="Status"/>
                        <th scope="col">"Requires"</th>
                        <th scope="col">"Problem"</th>
                    </tr>
                </thead>
                <tbody>
                    {data
                        .rows
                        .into_iter()
                        .map(|r| {
                            let href = resource_link(&env, &r.id);
                            let (rid, status) = (r.id.clone(), r.status.as_str());
                            view! {
                                <tr data-id=rid data-status=status>
                                    <td>{r.resource_type}</td>
                                    <td>{r.agent}</td>
                                    <td><a href=href>{r.value}</a></td>
                                    <td><StatusBadge status=r.status/></td>
                                    <td>{r.requires}</td>
                                    <td class="problem">{r.problem.map(|p| view! { <ProblemText env=env.clone() problem=p/> })}</td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
            <Pager path=RESOURCES page=data.page/>
        }
        .into_any()
    };
    view! {
        <div class="summary card">
            <p class="summary-header" id="deploying-count">{header}</p>
            <DeployBar env=env.clone() summary=data.summary.clone() total=data.summary_total/>
            <div class="legend" aria-label="Filter on status">{chips}</div>
        </div>
        {body}
    }
}

#[component]
pub fn ResourceDetailsPage() -> impl IntoView {
    let env = env();
    let rid = query("rid");
    let tab = query("tab");
    let level = query("level");
    let details = live_resource(move || (env.get(), rid.get()), |(e, r)| load_resource_details(e, r));
    let q = use_query_map();
    let tabs = [
        ("attributes", "Desired state"),
        ("requires", "Requires"),
        ("history", "History"),
        ("logs", "Logs"),
        ("facts", "Facts"),
    ];
    let tab_links = move || {
        let current = q.get();
        let active_tab = {
            let t = tab.get();
            if t.is_empty() { "attributes".to_string() } else { t }
        };
        tabs.iter()
            .map(|(key, label)| {
                let href = link(DETAILS, &current, &[("tab", Some(key.to_string()))]);
                let active = active_tab == *key;
                view! {
                    <a role="tab" class="tab" class:active=active aria-selected=active.to_string() href=href id=format!("tab-{key}")>
                        {*label}
                    </a>
                }
            })
            .collect_view()
    };
    view! {
        <SubPage
            title=move || rid.get()
            trail=move || view! {
                <a href=move || env_link("resources", &env.get())>"Resources"</a>
                " › "
                <span>{move || rid.get()}</span>
            }
        >
            <Loaded
                resource=details
                loading="Loading…"
                error_title="The resource could not be loaded"
                view=move |d| view! { <ResourceHeader details=d/> }
            />
            <crate::pages::compliance::ResourceCompliance env rid/>
            <div class="tabs" role="tablist">{tab_links}</div>
            <div class="tab-panel" role="tabpanel">
                {move || match tab.get().as_str() {
                    "requires" => view! { <RequiresTab details/> }.into_any(),
                    "history" => view! { <HistoryTab env rid/> }.into_any(),
                    "logs" => view! { <LogsTab env rid level/> }.into_any(),
                    "facts" => view! { <FactsTab env rid/> }.into_any(),
                    _ => view! { <AttributesTab details/> }.into_any(),
                }}
            </div>
        </SubPage>
    }
}

/// A resource's problem in one line: its last error, or "blocked by <dependency>" with a link.
#[component]
pub fn ProblemText(env: String, problem: Problem) -> impl IntoView {
    match problem {
        Problem::Error(message) => {
            let title = message.clone();
            view! { <span class="last-error" title=title>{message}</span> }.into_any()
        }
        Problem::BlockedBy { resource, status, count } => {
            let more = (count > 1).then(|| format!(" and {} more", count - 1));
            view! {
                <span class="blocked-by">
                    "blocked by " <a href=resource_link(&env, &resource) class="mono">{resource.clone()}</a>
                    {format!(" ({})", status.as_str().replace('_', " "))}
                    {more}
                </span>
            }
            .into_any()
        }
    }
}

#[component]
fn ResourceHeader(details: ResourceDetails) -> impl IntoView {
    let env = env().get_untracked();
    let problem = details.problem.clone().map(|p| {
        view! { <p class="resource-problem" id="resource-problem"><ProblemText env=env.clone() problem=p/></p> }
    });
    view! {
        <div class="page-header">
            <h1 class="mono" id="resource-id">{details.id.clone()}</h1>
            <StatusBadge status=details.status/>
            <a class="button button-secondary button-small" id="graph-around-link" href=crate::pages::graph::around_link(&env, &details.id)>
                "Show in the graph"
            </a>
        </div>
        {problem}
        <dl class="facts-list">
            <dt>"Type"</dt>
            <dd>{details.resource_type}</dd>
            <dt>"Agent"</dt>
            <dd>{details.agent}</dd>
            <dt>"Last deploy"</dt>
            <dd>{details.last_deploy.as_deref().map(short_date).unwrap_or_else(|| "never".into())}</dd>
            <dt>"First generated"</dt>
            <dd>{short_date(&details.first_generated)}</dd>
        </dl>
    }
}

type DetailsResource = Resource<Result<ResourceDetails, ServerFnError>>;

#[component]
fn AttributesTab(details: DetailsResource) -> impl IntoView {
    view! {
        <Transition fallback=|| ()>
            {move || details.get().and_then(|r| r.ok()).map(|d| view! { <AttributeTable attributes=d.attributes/> })}
        </Transition>
    }
}

#[component]
fn RequiresTab(details: DetailsResource) -> impl IntoView {
    let env = env();
    view! {
        <Transition fallback=|| ()>
            {move || {
                details.get().and_then(|r| r.ok()).map(|d| {
                    if d.requires.is_empty() {
                        return view! { <p class="muted">"This resource requires nothing."</p> }.into_any();
                    }
                    view! {
                        <table class="table" id="requires">
                            <thead>
                                <tr>
                                    <th scope="col">"Resource"</th>
                                    <th scope="col">"Status"</th>
                                </tr>
                            </thead>
                            <tbody>
                                {d
                                    .requires
                                    .into_iter()
                                    .map(|(id, status)| {
                                        let href = resource_link(&env.get_untracked(), &id);
                                        view! {
                                            <tr>
                                                <td><a class="mono" href=href>{id}</a></td>
                                                <td><StatusBadge status/></td>
                                            </tr>
                                        }
                                    })
                                    .collect_view()}
                            </tbody>
                        </table>
                    }
                        .into_any()
                })
            }}
        </Transition>
    }
}

#[component]
fn HistoryTab(env: Memo<String>, rid: Memo<String>) -> impl IntoView {
    let data = live_resource(move || (env.get(), rid.get()), |(e, r)| resource_history(e, r));
    view! {
        <Loaded
            resource=data
            loading="Loading history…"
            error_title="The history could not be loaded"
            view=|rows| {
                if rows.is_empty() {
                    return view! { <p class="muted">"No history yet."</p> }.into_any();
                }
                rows.into_iter()
                    .map(|h| {
                        view! {
                            <details class="history-item">
                                <summary>
                                    {short_date(&h.date)} " " <span class="muted mono">{h.attribute_hash.clone()}</span>
                                    {format!(" · {} requires", h.requires.len())}
                                </summary>
                                <AttributeTable attributes=h.attributes/>
                            </details>
                        }
                    })
                    .collect_view()
                    .into_any()
            }
        />
    }
}

#[component]
fn LogsTab(env: Memo<String>, rid: Memo<String>, level: Memo<String>) -> impl IntoView {
    let data = live_resource(move || (env.get(), rid.get(), level.get()), |(e, r, l)| resource_logs(e, r, l));
    let q = use_query_map();
    let navigate = leptos_router::hooks::use_navigate();
    let on_level = move |ev: leptos::ev::Event| {
        let value = event_target_value(&ev);
        let href = link(DETAILS, &q.get_untracked(), &[("level", (!value.is_empty()).then_some(value))]);
        navigate(&in_app(&href), Default::default());
    };
    view! {
        <div class="toolbar">
            <label for="log-level">"Minimal level "</label>
            <select id="log-level" class="input" prop:value=move || level.get() on:change=on_level>
                {["", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
                    .map(|l| {
                        view! {
                            <option value=l selected=move || level.get() == l>
                                {if l.is_empty() { "all" } else { l }}
                            </option>
                        }
                    })
                    .collect_view()}
            </select>
        </div>
        <Loaded
            resource=data
            loading="Loading logs…"
            error_title="The logs could not be loaded"
            view=|rows| {
                if rows.is_empty() {
                    return view! { <p class="muted">"No log lines at this level."</p> }.into_any();
                }
                view! {
                    <table class="table logs" id="logs">
                        <thead>
                            <tr>
                                <th scope="col">"Time"</th>
                                <th scope="col">"Version"</th>
                                <th scope="col">"Action"</th>
                                <th scope="col">"Level"</th>
                                <th scope="col">"Message"</th>
                            </tr>
                        </thead>
                        <tbody>
                            {rows
                                .into_iter()
                                .map(|l| {
                                    view! {
                                        <tr data-level=l.level.clone() data-version=l.version.map(|v| v.to_string())>
                                            <td class="nowrap">{short_date(&l.timestamp)}</td>
                                            <td class="log-version">{l.version}</td>
                                            <td>{l.action}</td>
                                            <td><span class=format!("level level-{}", l.level.to_lowercase())>{l.level.clone()}</span></td>
                                            <td><pre class="log-message">{l.message}</pre></td>
                                        </tr>
                                    }
                                })
                                .collect_view()}
                        </tbody>
                    </table>
                }
                    .into_any()
            }
        />
    }
}

#[component]
fn FactsTab(env: Memo<String>, rid: Memo<String>) -> impl IntoView {
    let data = live_resource(move || (env.get(), rid.get()), |(e, r)| resource_facts(e, r));
    view! {
        <Loaded
            resource=data
            loading="Loading facts…"
            error_title="The facts could not be loaded"
            view=|rows| {
                if rows.is_empty() {
                    return view! { <p class="muted">"No facts: the handler of this resource reported none."</p> }.into_any();
                }
                view! {
                    <table class="table">
                        <thead>
                            <tr>
                                <th scope="col">"Name"</th>
                                <th scope="col">"Value"</th>
                                <th scope="col">"Updated"</th>
                            </tr>
                        </thead>
                        <tbody>
                            {rows
                                .into_iter()
                                .map(|f| view! {
                                    <tr>
                                        <td>{f.name}</td>
                                        <td><code class="value">{f.value}</code></td>
                                        <td>{f.updated.as_deref().map(short_date)}</td>
                                    </tr>
                                })
                                .collect_view()}
                        </tbody>
                    </table>
                }
                    .into_any()
            }
        />
    }
}

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
    Ok(facts
        .into_iter()
        .map(|f| ParameterRow {
            name: f.name,
            value: f.value,
            source: f.source,
            updated: f.updated.map(|t| t.to_string()),
            resource_id: f.resource_id,
        })
        .collect())
}
