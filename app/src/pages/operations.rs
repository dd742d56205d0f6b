//! Agents, parameters, facts and the notification centre.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use crate::components::*;
use crate::fns;
#[cfg(feature = "ssr")]
use crate::fns::{env_id, fail, page_request, paged, services_for};
use crate::layout::resource_link;
use crate::model::{AgentRow, NotificationRow, Paged, ParameterRow, TableQuery};

const AGENTS: &str = "/console/agents";
const PARAMETERS: &str = "/console/parameters";
const FACTS: &str = "/console/facts";
const NOTIFICATIONS: &str = "/console/notificationcenter";

#[component]
pub fn AgentsPage() -> impl IntoView {
    let env = env();
    let data = table_resource(agents);
    view! {
        <EnvironmentPage title="Agents" env>
            <StatusFilter path=AGENTS values=&["", "up", "down", "paused"]/>
            <Loaded
                resource=data
                loading="Loading agents…"
                error_title="The agents could not be loaded"
                view=move |page| view! { <AgentsTable env=env.get_untracked() data=page/> }
            />
        </EnvironmentPage>
    }
}

#[component]
fn AgentsTable(env: String, data: Paged<AgentRow>) -> impl IntoView {
    if data.rows.is_empty() {
        return view! {
            <Empty title="No agents">
                <p>"Agents appear when a version that uses them is released."</p>
            </Empty>
        }
        .into_any();
    }
    let error = ActionError::new();
    let rows = data
        .rows
        .into_iter()
        .map(|a| {
            let name = a.name.clone();
            let (e1, e2, e3) = (env.clone(), env.clone(), env.clone());
            let (n1, n2, n3) = (name.clone(), name.clone(), name.clone());
            let paused = a.paused;
            view! {
                <tr data-agent=a.name.clone() data-status=a.status.as_str()>
                    <td class="mono">{a.name.clone()}</td>
                    <td><StatusBadge status=a.status/></td>
                    <td>{a.last_seen.as_deref().map(short_date).unwrap_or_default()}</td>
                    <td>{a.unpause_on_resume.map(|u| if u { "unpause" } else { "keep paused" }).unwrap_or("")}</td>
                    <td class="row-actions">
                        <button
                            class="button button-small pause-toggle"
                            type="button"
                            on:click=move |_| {
                                let action = if paused { "unpause" } else { "pause" };
                                act(error, format!("Agent {n1}: {action}d"), agent_action(e1.clone(), n1.clone(), action.into()))
                            }
                        >
                            {if paused { "Unpause" } else { "Pause" }}
                        </button>
                        <button
                            class="button button-small button-secondary"
                            type="button"
                            on:click=move |_| deploy_agent(error, e2.clone(), n2.clone(), false)
                        >
                            "Deploy"
                        </button>
                        <button
                            class="button button-small button-secondary"
                            type="button"
                            on:click=move |_| deploy_agent(error, e3.clone(), n3.clone(), true)
                        >
                            "Repair"
                        </button>
                    </td>
                </tr>
            }
        })
        .collect_view();
    let (pause_env, unpause_env) = (env.clone(), env);
    view! {
        <div class="toolbar">
            <button
                class="button button-secondary"
                type="button"
                on:click=move |_| {
                    let env = pause_env.clone();
                    error.ask("Pause every agent of this environment?", "Pause all", move || {
                        act(error, "Every agent paused", agent_action(env.clone(), String::new(), "pause".into()))
                    })
                }
            >
                "Pause all"
            </button>
            <button
                class="button button-secondary"
                type="button"
                on:click=move |_| act(error, "Every agent unpaused", agent_action(unpause_env.clone(), String::new(), "unpause".into()))
            >
                "Unpause all"
            </button>
        </div>
        <ActionMessage error/>
        <table class="table" id="agents">
            <thead>
                <tr>
                    <SortHeader path=AGENTS column="name" label="Name"/>
                    <SortHeader path=AGENTS column="status" label="Status"/>
                    <th scope="col">"Last seen"</th>
                    <th scope="col">"On resume"</th>
                    <th scope="col"><span class="sr-only">"Actions"</span></th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
        <Pager path=AGENTS page=data.page/>
    }
    .into_any()
}

/// Deploys (or, with `repair`, repairs) the resources of one agent, saying so in a toast.
fn deploy_agent(error: ActionError, env: String, agent: String, repair: bool) {
    let what = if repair { "Repair" } else { "Deploy" };
    let call = fns::deploy(env, repair, Some(agent.clone()));
    act(error, format!("{what} of agent {agent} started"), async move { call.await.map(|_| ()) })
}

#[component]
pub fn ParametersPage() -> impl IntoView {
    view! { <ParameterList facts=false/> }
}

#[component]
pub fn FactsPage() -> impl IntoView {
    view! { <ParameterList facts=true/> }
}

#[component]
fn ParameterList(facts: bool) -> impl IntoView {
    let env = env();
    let data = table_resource(move |q| parameters(q, facts));
    let (title, path) = if facts { ("Facts", FACTS) } else { ("Parameters", PARAMETERS) };
    let fields = if facts {
        vec![("name", "Name"), ("resource_id", "Resource")]
    } else {
        vec![("name", "Name"), ("source", "Source")]
    };
    view! {
        <EnvironmentPage title=title env>
            <FilterForm path fields=fields.clone() keep=vec!["env"]/>
            <Loaded
                resource=data
                loading="Loading…"
                error_title="The list could not be loaded"
                view=move |page| view! { <ParameterTable env=env.get_untracked() path facts data=page/> }
            />
        </EnvironmentPage>
    }
}

#[component]
fn ParameterTable(env: String, path: &'static str, facts: bool, data: Paged<ParameterRow>) -> impl IntoView {
    if data.rows.is_empty() {
        return if facts {
            view! {
                <Empty title="No facts">
                    <p>"Handlers report facts about the resources they manage; none are stored yet."</p>
                </Empty>
            }
            .into_any()
        } else {
            view! {
                <Empty title="No parameters">
                    <p>"Set one with " <code>"inmanta param set"</code> " or through " <code>"PUT /api/v1/param"</code> "."</p>
                </Empty>
            }
            .into_any()
        };
    }
    view! {
        <table class="table" id=if facts { "facts" } else { "parameters" }>
            <thead>
                <tr>
                    <SortHeader path column="name" label="Name"/>
                    {if facts {
                        view! { <SortHeader path column="resource_id" label="Resource"/> }.into_any()
                    } else {
                        view! { <SortHeader path column="source" label="Source"/> }.into_any()
                    }}
                    {(!facts).then(|| view! { <SortHeader path column="updated" label="Updated"/> })}
                    {facts.then(|| view! { <th scope="col">"Updated"</th> })}
                    <th scope="col">"Value"</th>
                </tr>
            </thead>
            <tbody>
                {data
                    .rows
                    .into_iter()
                    .map(|p| {
                        let second = if facts {
                            let href = resource_link(&env, &p.resource_id);
                            view! { <td><a class="mono" href=href>{p.resource_id.clone()}</a></td> }.into_any()
                        } else {
                            view! { <td>{p.source.clone()}</td> }.into_any()
                        };
                        let long = p.value.len() > 120 || p.value.contains('\n');
                        view! {
                            <tr>
                                <td>{p.name}</td>
                                {second}
                                <td class="nowrap">{p.updated.as_deref().map(short_date)}</td>
                                <td>
                                    {if long {
                                        view! {
                                            <details>
                                                <summary>{format!("{} characters", p.value.len())}</summary>
                                                <pre class="code">{p.value}</pre>
                                            </details>
                                        }
                                            .into_any()
                                    } else {
                                        view! { <code class="value">{p.value}</code> }.into_any()
                                    }}
                                </td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
        <Pager path page=data.page/>
    }
    .into_any()
}

#[component]
pub fn NotificationsPage() -> impl IntoView {
    let env = env();
    let data = table_resource(fns::notifications);
    let error = ActionError::new();
    view! {
        <EnvironmentPage
            title="Notifications"
            env
            actions=move || view! {
                <button
                    class="button button-secondary"
                    id="mark-all-read"
                    type="button"
                    on:click=move |_| run(error, fns::update_notification(env.get_untracked(), String::new(), Some(true), None))
                >
                    "Mark all read"
                </button>
            }
            notice=move || view! { <ActionMessage error/> }
        >
            <div class="toolbar">
                <span class="muted">"Read: "</span>
                {choice_filter(NOTIFICATIONS, "read", &["", "false", "true"])}
                <span class="muted">" Severity: "</span>
                {choice_filter(NOTIFICATIONS, "severity", &["", "message", "info", "success", "warning", "error"])}
            </div>
            <Loaded
                resource=data
                loading="Loading notifications…"
                error_title="The notifications could not be loaded"
                view=move |page| view! { <NotificationList env=env.get_untracked() data=page error/> }
            />
        </EnvironmentPage>
    }
}

#[component]
fn NotificationList(env: String, data: Paged<NotificationRow>, error: ActionError) -> impl IntoView {
    if data.rows.is_empty() {
        return view! {
            <Empty title="No notifications">
                <p>"The orchestrator notifies here when something needs attention, such as a failed compile."</p>
            </Empty>
        }
        .into_any();
    }
    view! {
        <ul class="notifications" id="notifications">
            {data
                .rows
                .into_iter()
                .map(|n| {
                    let (e1, e2) = (env.clone(), env.clone());
                    let (id1, id2) = (n.id.clone(), n.id.clone());
                    let read = n.read;
                    view! {
                        <li class=format!("notification severity-{}", n.severity) class:unread=!read data-id=n.id.clone()>
                            <div class="notification-head">
                                <span class=format!("badge severity-badge-{}", n.severity)>{n.severity.clone()}</span>
                                <strong>{n.title}</strong>
                                <span class="muted">{short_date(&n.created)}</span>
                            </div>
                            <p>{n.message}</p>
                            {n.uri.map(|uri| view! { <a href=console_uri(&uri, &env)>"Open"</a> })}
                            <div class="row-actions">
                                <button
                                    class="button button-small mark-read"
                                    type="button"
                                    on:click=move |_| run(error, fns::update_notification(e1.clone(), id1.clone(), Some(!read), None))
                                >
                                    {if read { "Mark unread" } else { "Mark read" }}
                                </button>
                                <button
                                    class="button button-small button-secondary"
                                    type="button"
                                    on:click=move |_| run(error, fns::update_notification(e2.clone(), id2.clone(), None, Some(true)))
                                >
                                    "Clear"
                                </button>
                            </div>
                        </li>
                    }
                })
                .collect_view()}
        </ul>
        <Pager path=NOTIFICATIONS page=data.page/>
    }
    .into_any()
}

#[server(prefix = "/console/fn", endpoint = "agents", input = Json)]
pub async fn agents(query: TableQuery) -> Result<Paged<AgentRow>, ServerFnError> {
    let s = services_for("agent.read", &query.env)?;
    let page = s.orchestrator.agents(env_id(&query.env)?, &page_request(&query)).await.map_err(fail)?;
    Ok(paged(page, |listed| AgentRow {
        status: listed.agent.status,
        name: listed.agent.name,
        paused: listed.agent.paused,
        unpause_on_resume: listed.agent.unpause_on_resume,
        last_seen: listed.last_seen,
    }))
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
        Ok(paged(page, |f| ParameterRow {
            resource_id: f.resource_id,
            ..parameter_row(f.name, f.value, f.source, f.updated.map(|t| t.to_string()))
        }))
    } else {
        let page = s.orchestrator.parameters(id, &req).await.map_err(fail)?;
        Ok(paged(page, |p| parameter_row(p.name, p.value, p.source, p.updated.map(|t| t.to_string()))))
    }
}

/// A parameter row (facts add their resource id).
#[cfg(feature = "ssr")]
fn parameter_row(name: String, value: String, source: String, updated: Option<String>) -> ParameterRow {
    ParameterRow { name, value, source, updated, resource_id: String::new() }
}
