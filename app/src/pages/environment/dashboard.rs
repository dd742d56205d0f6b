//! The dashboard of an environment: what needs attention, deploy state, latest compiles and versions.

use leptos::prelude::*;

use super::fns;
use crate::components::*;
use crate::model::{CompileRow, Dashboard, ResourceState, VersionRow};

#[component]
pub fn DashboardPage() -> impl IntoView {
    let env = env();
    let data = live_resource(move || env.get(), fns::load_dashboard);
    view! {
        <EnvironmentPage title="Dashboard" env>
            <Loaded
                resource=data
                loading="Loading…"
                error_title="The dashboard could not be loaded"
                view=move |d| view! { <DashboardBody env=env.get_untracked() data=d/> }
            />
            <crate::pages::compliance::ComplianceCard env/>
            <crate::pages::metrics::MetricsPanel env/>
        </EnvironmentPage>
    }
}

/// What an operator should look at first: failed and blocked resources, agents down, a failed
/// latest compile; each a link to the list that shows them.
#[component]
fn NeedsAttention(env: String, data: Dashboard) -> impl IntoView {
    use api::{AgentStatus, CompileStatus};
    let count = |states: &[ResourceState]| -> u64 {
        data.summary.iter().filter(|(s, _)| states.contains(s)).map(|(_, n)| *n).sum()
    };
    let resources = |state: ResourceState| {
        format!("{}&filter.status={}", crate::routes::RESOURCES.of(&env), encode(state.as_str()))
    };
    let plural = |n: u64, one: &str, many: &str| if n == 1 { format!("1 {one}") } else { format!("{n} {many}") };
    // (text, link, the state whose colour the swatch takes)
    let mut items: Vec<(String, String, ResourceState)> = Vec::new();
    let failed = count(&[ResourceState::Failed]);
    if failed > 0 {
        let text = plural(failed, "resource failed", "resources failed");
        items.push((text, resources(ResourceState::Failed), ResourceState::Failed));
    }
    let blocked = count(&[ResourceState::Skipped, ResourceState::SkippedForUndefined]);
    if blocked > 0 {
        let text = plural(blocked, "resource blocked by a dependency", "resources blocked by a dependency");
        items.push((text, resources(ResourceState::Skipped), ResourceState::Skipped));
    }
    let undefined = count(&[ResourceState::Undefined]);
    if undefined > 0 {
        let text = plural(undefined, "resource undefined", "resources undefined");
        items.push((text, resources(ResourceState::Undefined), ResourceState::Undefined));
    }
    if data.agents_down > 0 {
        let text = plural(data.agents_down, "agent down", "agents down");
        let link = format!("{}&filter.status={}", crate::routes::AGENTS.of(&env), AgentStatus::Down);
        items.push((text, link, ResourceState::Failed));
    }
    let ended = |c: &&CompileRow| matches!(c.status, CompileStatus::Success | CompileStatus::Failed);
    if let Some(latest) = data.compiles.iter().find(ended)
        && latest.status == CompileStatus::Failed
    {
        items.push(("The latest compile failed".into(), compile_link(&env, &latest.id), ResourceState::Failed));
    }
    let total = items.len();
    view! {
        <div class="card attention" id="needs-attention" data-count=total>
            <h2>"Needs attention"</h2>
            {if items.is_empty() {
                view! { <p class="muted">"Nothing: every resource is fine, agents are up, the latest compile passed."</p> }
                    .into_any()
            } else {
                view! {
                    <ul class="attention-list">
                        {items
                            .into_iter()
                            .map(|(text, href, state)| {
                                view! {
                                    <li>
                                        <span class=format!("legend-swatch state-bg-{state}")></span>
                                        <a href=href>{text}</a>
                                    </li>
                                }
                            })
                            .collect_view()}
                    </ul>
                }
                    .into_any()
            }}
        </div>
    }
}

#[component]
fn DashboardBody(env: String, data: Dashboard) -> impl IntoView {
    let deployed = data.summary.iter().find(|(s, _)| *s == ResourceState::Deployed).map(|(_, n)| *n).unwrap_or(0);
    let percent = (deployed * 100).checked_div(data.summary_total).unwrap_or(0);
    let legend = data
        .summary
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(state, n)| {
            let state = state.as_str();
            let href = format!("{}&filter.status={}", crate::routes::RESOURCES.of(&env), encode(state));
            view! {
                <a class="legend-item" href=href>
                    <span class=format!("legend-swatch state-bg-{state}")></span>
                    {format!("{} {n}", state.replace('_', " "))}
                </a>
            }
        })
        .collect_view();
    let versions = data.versions.clone();
    let compiles = data.compiles.clone();
    let compiles_card = view! {
        <div class="card" id="latest-compiles">
            <h2><a href=crate::routes::COMPILE_REPORTS.of(&env)>"Latest compile reports"</a></h2>
            {if compiles.is_empty() {
                view! {
                    <p class="muted">
                        "No compiles yet: request one on the "
                        <a href=crate::routes::COMPILE_REPORTS.of(&env)>"Compile Reports"</a>
                        " page."
                    </p>
                }
                    .into_any()
            } else {
                let headings = &[Heading::Plain("Requested"), Heading::Plain("Status"), Heading::Plain("Message"), Heading::Plain("Duration")];
                let row = |c: CompileRow| {
                    let href = compile_link(&env, &c.id);
                    let duration = c.duration.map(duration_text).unwrap_or_default();
                    view! {
                        <tr data-id=c.id.clone() data-status=c.status.as_str()>
                            <td class="nowrap"><a href=href>{short_date(&c.requested)}</a></td><td><StatusBadge status=c.status/></td><td>{c.message}</td><td class="nowrap">{duration}</td>
                        </tr>
                    }
                };
                view! { <Table headings rows=compiles row/> }.into_any()
            }}
        </div>
    };
    let attention = view! { <NeedsAttention env=env.clone() data=data.clone()/> };
    view! {
        {attention}
        <div class="cards">
            <div class="card card-wide" id="deploy-progress">
                <h2>"Deployment"</h2>
                {if data.summary_total == 0 {
                    view! {
                        <p class="muted">
                            "No resources released yet. Export a model ("
                            <code>"inmanta export"</code>
                            ") and promote its version on the "
                            <a href=crate::routes::DESIRED_STATE.of(&env)>"Desired State"</a>
                            " page."
                        </p>
                    }
                        .into_any()
                } else {
                    view! {
                        <p class="big-number">
                            {format!("{percent}%")} <span class="muted">{format!(" deployed of {} resources", data.summary_total)}</span>
                        </p>
                        <DeployBar env=env.clone() summary=data.summary.clone() total=data.summary_total/>
                        <div class="legend">{legend}</div>
                    }
                        .into_any()
                }}
            </div>
            <a class="card tile" href=crate::routes::AGENTS.of(&env) id="agents-tile">
                <h2>"Agents"</h2>
                <p class="tile-counts">
                    <span class="count-up">{data.agents_up} " up"</span>
                    <span class="count-down">{data.agents_down} " down"</span>
                    <span class="count-paused">{data.agents_paused} " paused"</span>
                </p>
            </a>
        </div>
        {compiles_card}
        <div class="card">
            <h2>"Latest versions"</h2>
            {if versions.is_empty() {
                view! { <p class="muted">"No versions yet: the compiler exports them."</p> }.into_any()
            } else {
                let headings = &[Heading::Plain("Version"), Heading::Plain("Date"), Heading::Plain("Status"), Heading::Plain("Resources")];
                let row = |v: VersionRow| {
                    let href = version_link(&env, v.version);
                    view! { <tr><td><a href=href>{v.version}</a></td><td>{short_date(&v.date)}</td><td><StatusBadge status=v.status/></td><td>{v.total}</td></tr> }
                };
                view! { <Table headings rows=versions row/> }.into_any()
            }}
        </div>
    }
}
