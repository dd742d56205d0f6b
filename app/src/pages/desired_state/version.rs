//! One version's page: its facts and actions, and its resources.

use leptos::prelude::*;

use super::*;
use crate::components::*;
use crate::model::{Paged, VersionStatus, VersionedResourceRow};

#[component]
pub fn VersionPage() -> impl IntoView {
    let env = env();
    let version = query("v");
    let table = table_query();
    let data = live_resource(
        move || (table.get(), version.get()),
        |(q, v)| async move {
            let v = version_number(&v)?;
            fns::version_resources(q, v).await
        },
    );
    view! {
        <SubPage
            title=move || format!("Version {}", version.get())
            trail=move || view! {
                <a href=move || crate::routes::DESIRED_STATE.of(&env.get())>"Desired State"</a>
                " › "
                <span>{move || format!("Version {}", version.get())}</span>
            }
        >
            <div class="page-header">
                <h1>{move || format!("Version {}", version.get())}</h1>
            </div>
            <Show when=move || !env.get().is_empty() fallback=NoEnvironment>
                <VersionHeader env version/>
                <FilterForm
                    path=crate::routes::VERSION.href
                    fields=vec![("resource_type", "Type"), ("agent", "Agent"), ("resource_id_value", "Value")]
                    keep=vec!["env", "v"]
                />
                <Loaded
                    resource=data
                    loading="Loading resources…"
                    error_title="The version could not be loaded"
                    view=move |page| view! { <VersionResources env=env.get_untracked() version=version.get_untracked() data=page/> }
                />
            </Show>
        </SubPage>
    }
}

/// Status, date, size and message of the version, with what can be done with it: promote a
/// candidate, dry run it against the current state.
#[component]
fn VersionHeader(env: Memo<String>, version: Memo<String>) -> impl IntoView {
    let summary = live_resource(
        move || (env.get(), version.get()),
        |(env, v)| async move {
            let v = version_number(&v)?;
            fns::version_summary(env, v).await
        },
    );
    let error = ActionError::new();
    view! {
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                let v = match summary.await {
                    Ok(v) => v,
                    Err(e) => return view! { <ErrorBox title="The version could not be loaded" error=e.to_string()/> }.into_any(),
                };
                let version = v.version;
                let candidate = matches!(v.status, VersionStatus::Candidate | VersionStatus::SkippedCandidate);
                let env = env.get_untracked();
                let dry_run = compliance_link(&env, version);
                let message = if v.message.is_empty() { "No message".to_string() } else { v.message.clone() };
                view! {
                    <div class="version-header" id="version-header" data-status=v.status.as_str()>
                        <dl class="facts-list">
                            <dt>"Status"</dt>
                            <dd><StatusBadge status=v.status/></dd>
                            <dt>"Exported"</dt>
                            <dd>{short_date(&v.date)}</dd>
                            <dt>"Resources"</dt>
                            <dd>{v.total}</dd>
                            <dt>"Message"</dt>
                            <dd id="version-message" class:muted=v.message.is_empty()>{message}</dd>
                        </dl>
                        <div class="page-actions">
                            {candidate.then(|| version_form(error, env.clone(), version, false, view! {
                                <button class="button button-primary" id="version-promote" type="submit">
                                    "Promote"
                                </button>
                            }))}
                            <a class="button button-secondary" id="version-dry-run" href=dry_run>
                                "Dry run against the current state"
                            </a>
                        </div>
                    </div>
                    <ActionMessage error/>
                }
                    .into_any()
            })}
        </Transition>
    }
}

#[component]
fn VersionResources(env: String, version: String, data: Paged<VersionedResourceRow>) -> impl IntoView {
    let row = move |r: VersionedResourceRow| {
        let href =
            format!("{}&v={version}&rid={}", crate::routes::VERSION_RESOURCE.of(&env), encode(&r.id.to_string()));
        view! { <tr data-id=r.id.to_string()><td>{r.resource_type}</td><td>{r.agent}</td><td><a href=href>{r.value}</a></td><td>{r.requires}</td></tr> }
    };
    let headings = &[
        Heading::Sorts("resource_type", "Type"),
        Heading::Sorts("agent", "Agent"),
        Heading::Sorts("resource_id_value", "Value"),
        Heading::Plain("Requires"),
    ];
    view! {
        <PagedTable
            path=crate::routes::VERSION.href
            id="version-resources"
            headings
            data
            row
            empty="No resources"
            hint=|| view! { <p>"This version has no resources matching the filters."</p> }
        />
    }
}
