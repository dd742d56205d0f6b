//! The resources page: the released resources of an environment with their status, the
//! deploy bar and why each one that is not deployed is not.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use super::ProblemText;
use super::fns::resources;
use crate::components::*;
use crate::layout::resource_link;
use crate::model::{ResourceRow, ResourceState, ResourcesView};

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
            act(error, done, async move { crate::fns::deploy(env, repair, None).await.map(|_| ()) })
        });
    };
    view! {
        <EnvironmentPage
            title="Resources"
            env
            actions=move || view! {
                <div class="page-actions">
                    <a class="button button-secondary" id="graph-link" href=move || crate::routes::GRAPH.of(&env.get())>
                        "Dependency graph"
                    </a>
                    <super::DeployButton env=env.get_untracked() repair=false id="deploy" class="button" on_submit=move || deploy(false)/>
                    <super::DeployButton
                        env=env.get_untracked()
                        repair=true
                        id="repair"
                        class="button button-secondary"
                        on_submit=move || deploy(true)
                    />
                </div>
            }
            notice=move || view! { <ActionMessage error/> }
        >
            <crate::pages::compliance::ComplianceCard env report_only_only=true/>
            <FilterForm
                path=crate::routes::RESOURCES.href
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
            let href = link(
                crate::routes::RESOURCES.href,
                &current,
                &[("filter.status", (!active).then(|| state.to_string()))],
            );
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
                    view! { <p><a href=crate::routes::RESOURCES.of(&env)>"Clear the filters"</a> " to see every resource."</p> }.into_any()
                } else {
                    view! {
                        <p>
                            "Resources appear when a version is released: export a model and promote it on the "
                            <a href=crate::routes::DESIRED_STATE.of(&env)>"Desired State"</a> " page."
                        </p>
                    }
                        .into_any()
                }}
            </Empty>
        }
        .into_any()
    } else {
        let headings = &[
            Heading::Sorts("resource_type", "Type"),
            Heading::Sorts("agent", "Agent"),
            Heading::Sorts("resource_id_value", "Value"),
            Heading::Sorts("status", "Status"),
            Heading::Plain("Requires"),
            Heading::Plain("Problem"),
        ];
        let row_env = env.clone();
        let row = move |r: ResourceRow| {
            let env = &row_env;
            let href = resource_link(env, &r.id);
            let (rid, status) = (r.id.to_string(), r.status.as_str());
            let problem = r.problem.map(|p| view! { <ProblemText env=env.clone() problem=p/> });
            view! {
                <tr data-id=rid data-status=status>
                    <td>{r.resource_type}</td><td>{r.agent}</td><td><a href=href>{r.value}</a></td>
                    <td><StatusBadge status=r.status/></td><td>{r.requires}</td><td class="problem">{problem}</td>
                </tr>
            }
        };
        view! {
            <Table path=crate::routes::RESOURCES.href id="resources" headings rows=data.rows row/>
            <Pager path=crate::routes::RESOURCES.href page=data.page/>
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
