//! One resource's details: its header with status and problem, and the tabs with its
//! attributes, requirements, history, logs and facts.

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use super::ProblemText;
use super::fns::{load_resource_details, resource_facts, resource_history, resource_logs};
use crate::components::*;
use crate::layout::resource_link;
use crate::model::{LogRow, ParameterRow, ResourceDetails, ResourceId, ResourceState};

const DETAILS_TABS: [(&str, &str); 5] = [
    ("attributes", "Desired state"),
    ("requires", "Requires"),
    ("history", "History"),
    ("logs", "Logs"),
    ("facts", "Facts"),
];

#[component]
pub fn ResourceDetailsPage() -> impl IntoView {
    let env = env();
    let rid = query("rid");
    let tab = query("tab");
    let level = query("level");
    let details = live_resource(
        move || (env.get(), rid.get()),
        |(e, r)| async move { load_resource_details(e, rid_argument(&r)?).await },
    );
    view! {
        <SubPage
            title=move || rid.get()
            trail=move || view! {
                <a href=move || crate::routes::RESOURCES.of(&env.get())>"Resources"</a>
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
            <div class="tabs" role="tablist">
                <TabLinks path=crate::routes::RESOURCE_DETAILS.href tabs=&DETAILS_TABS/>
            </div>
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

#[component]
fn ResourceHeader(details: ResourceDetails) -> impl IntoView {
    let env = env().get_untracked();
    let problem = details.problem.clone().map(|p| {
        view! { <p class="resource-problem" id="resource-problem"><ProblemText env=env.clone() problem=p/></p> }
    });
    view! {
        <div class="page-header">
            <h1 class="mono" id="resource-id">{details.id.to_string()}</h1>
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

type DetailsResource = Resource<Result<ResourceDetails, ConsoleError>>;

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
                    let row = move |(id, status): (ResourceId, ResourceState)| {
                        let href = resource_link(&env.get_untracked(), &id);
                        view! { <tr><td><a class="mono" href=href>{id.to_string()}</a></td><td><StatusBadge status/></td></tr> }
                    };
                    view! {
                        <Table
                            id="requires"
                            headings=&[Heading::Plain("Resource"), Heading::Plain("Status")]
                            rows=d.requires
                            row
                            empty=|| view! { <p class="muted">"This resource requires nothing."</p> }
                        />
                    }
                })
            }}
        </Transition>
    }
}

#[component]
fn HistoryTab(env: Memo<String>, rid: Memo<String>) -> impl IntoView {
    let data = live_resource(
        move || (env.get(), rid.get()),
        |(e, r)| async move { resource_history(e, rid_argument(&r)?).await },
    );
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
    let data = live_resource(
        move || (env.get(), rid.get(), level.get()),
        |(e, r, l)| async move { resource_logs(e, rid_argument(&r)?, l).await },
    );
    let q = use_query_map();
    let navigate = leptos_router::hooks::use_navigate();
    let on_level = move |ev: leptos::ev::Event| {
        let value = event_target_value(&ev);
        let href = link(
            crate::routes::RESOURCE_DETAILS.href,
            &q.get_untracked(),
            &[("level", (!value.is_empty()).then_some(value))],
        );
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
                let headings = &[Heading::Plain("Time"), Heading::Plain("Version"), Heading::Plain("Action"), Heading::Plain("Level"), Heading::Plain("Message")];
                let row = |l: LogRow| {
                    let level = format!("level level-{}", l.level.to_lowercase());
                    view! {
                        <tr data-level=l.level.clone() data-version=l.version.map(|v| v.to_string())>
                            <td class="nowrap">{short_date(&l.timestamp)}</td><td class="log-version">{l.version}</td><td>{l.action}</td>
                            <td><span class=level>{l.level.clone()}</span></td><td><pre class="log-message">{l.message}</pre></td>
                        </tr>
                    }
                };
                view! { <Table class="table logs" id="logs" headings rows row empty=|| view! { <p class="muted">"No log lines at this level."</p> }/> }
            }
        />
    }
}

#[component]
fn FactsTab(env: Memo<String>, rid: Memo<String>) -> impl IntoView {
    let data = live_resource(
        move || (env.get(), rid.get()),
        |(e, r)| async move { resource_facts(e, rid_argument(&r)?).await },
    );
    view! {
        <Loaded
            resource=data
            loading="Loading facts…"
            error_title="The facts could not be loaded"
            view=|rows| {
                let row = |f: ParameterRow| {
                    view! { <tr><td>{f.name}</td><td><code class="value">{f.value}</code></td><td>{f.updated.as_deref().map(short_date)}</td></tr> }
                };
                let headings = &[Heading::Plain("Name"), Heading::Plain("Value"), Heading::Plain("Updated")];
                view! { <Table headings rows row empty=|| view! { <p class="muted">"No facts: the handler of this resource reported none."</p> }/> }
            }
        />
    }
}
