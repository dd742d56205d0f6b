//! Agents: their status, pausing and resuming them, deploying or repairing what one manages.

use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use crate::components::*;
use crate::fns;
#[cfg(feature = "ssr")]
use crate::fns::{env_id, fail, page_request, paged, services_for};
use crate::model::{AgentRow, Paged, TableQuery};

const AGENTS: &str = "/console/agents";

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
