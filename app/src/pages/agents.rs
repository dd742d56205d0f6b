//! Agents: their status, pausing and resuming them, deploying or repairing what one manages.

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use crate::components::*;
use crate::fns;
#[cfg(feature = "ssr")]
use crate::fns::{authorized_for, env_id, fail, page_request, paged};
use crate::model::{AgentRow, Paged, TableQuery};
use crate::pages::resources::DeployButton;

#[component]
pub fn AgentsPage() -> impl IntoView {
    let env = env();
    let data = table_resource(agents);
    view! {
        <EnvironmentPage title="Agents" env>
            <StatusFilter path=crate::routes::AGENTS.href values=&["", "up", "down", "paused"]/>
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
    let row_env = env.clone();
    let row = move |a: AgentRow| {
        let env = &row_env;
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
                    <AgentForm env=e1.clone() agent=n1.clone() action=if paused { "unpause" } else { "pause" } error>
                        <button class="button button-small pause-toggle" type="submit">
                            {if paused { "Unpause" } else { "Pause" }}
                        </button>
                    </AgentForm>
                    <DeployButton
                        env=e2.clone()
                        agent=n2.clone()
                        repair=false
                        class="button button-small button-secondary"
                        on_submit=move || deploy_agent(error, e2.clone(), n2.clone(), false)
                    />
                    <DeployButton
                        env=e3.clone()
                        agent=n3.clone()
                        repair=true
                        class="button button-small button-secondary"
                        on_submit=move || deploy_agent(error, e3.clone(), n3.clone(), true)
                    />
                </td>
            </tr>
        }
    };
    let (pause_env, unpause_env) = (env.clone(), env);
    view! {
        <div class="toolbar">
            <AgentForm env=pause_env agent=String::new() action="pause" ask=true error>
                <button class="button button-secondary" type="submit">"Pause all"</button>
            </AgentForm>
            <AgentForm env=unpause_env agent=String::new() action="unpause" error>
                <button class="button button-secondary" type="submit">"Unpause all"</button>
            </AgentForm>
        </div>
        <ActionMessage error/>
        <Table
            path=crate::routes::AGENTS.href
            id="agents"
            headings=&[Heading::Sorts("name", "Name"), Heading::Sorts("status", "Status"), Heading::Plain("Last seen"), Heading::Plain("On resume"), Heading::Unseen("Actions")]
            rows=data.rows
            row
        />
        <Pager path=crate::routes::AGENTS.href page=data.page/>
    }
    .into_any()
}

/// A form that pauses or unpauses (`action`) one agent, or with an empty `agent` every agent of
/// the environment (asking first when `ask`), with or without the wasm.
#[component]
fn AgentForm(
    env: String,
    agent: String,
    action: &'static str,
    #[prop(optional)] ask: bool,
    error: ActionError,
    children: Children,
) -> impl IntoView {
    let fields = vec![("env", env.clone()), ("agent", agent.clone()), ("action", action.to_string())];
    let done = match (agent.is_empty(), action) {
        (true, "pause") => "Every agent paused".to_string(),
        (true, _) => "Every agent unpaused".to_string(),
        (false, _) => format!("Agent {agent}: {action}d"),
    };
    let submit = move || {
        let (env, agent, done) = (env.clone(), agent.clone(), done.clone());
        let call = move || act(error, done.clone(), agent_action(env.clone(), agent.clone(), action.into()));
        if ask { error.ask("Pause every agent of this environment?", "Pause all", call) } else { call() }
    };
    view! {
        <ChangeForm action={endpoint::<AgentAction>()} fields on_submit=submit>
            {children()}
        </ChangeForm>
    }
}

/// Deploys (or, with `repair`, repairs) the resources of one agent, saying so in a toast.
fn deploy_agent(error: ActionError, env: String, agent: String, repair: bool) {
    let what = if repair { "Repair" } else { "Deploy" };
    let call = fns::deploy(env, repair, Some(agent.clone()));
    act(error, format!("{what} of agent {agent} started"), async move { call.await.map(|_| ()) })
}

#[server(prefix = "/console/fn", endpoint = "agents", input = Json)]
pub async fn agents(query: TableQuery) -> Result<Paged<AgentRow>, ConsoleError> {
    let s = authorized_for("agent.read", &query.env)?;
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
/// Also posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "agent_action")]
pub async fn agent_action(env: String, agent: String, action: String) -> Result<(), ConsoleError> {
    let s = authorized_for("agent.pause-resume", &env)?;
    let action = orchestrator::agents::AgentAction::parse(&action).map_err(fail)?;
    let agent = if agent.is_empty() { None } else { Some(agent.as_str()) };
    s.orchestrator.agent_action(env_id(&env)?, agent, action).await.map_err(fail)
}
