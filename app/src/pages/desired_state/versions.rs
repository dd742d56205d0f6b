//! The desired state page: the versions of an environment, with promote and delete.

use leptos::prelude::*;

use super::*;
use crate::components::*;
use crate::model::{Paged, VersionRow, VersionStatus};

#[component]
pub fn DesiredStatePage() -> impl IntoView {
    let env = env();
    let data = table_resource(fns::versions);
    view! {
        <EnvironmentPage title="Desired State" env>
            <StatusFilter path=crate::routes::DESIRED_STATE.href values=&["", "active", "candidate", "retired", "skipped_candidate"]/>
            <Loaded
                resource=data
                loading="Loading versions…"
                error_title="The versions could not be loaded"
                view=move |page| view! { <VersionsTable env=env.get_untracked() data=page/> }
            />
        </EnvironmentPage>
    }
}

#[component]
fn VersionsTable(env: String, data: Paged<VersionRow>) -> impl IntoView {
    if data.rows.is_empty() {
        return view! {
            <Empty title="No versions">
                <p>
                    "Versions appear when a model is exported: " <code>"inmanta export"</code>
                    " (or " <code>"PUT /api/v1/version"</code> "). Clear the filters if some are set."
                </p>
            </Empty>
        }
        .into_any();
    }
    let selected: RwSignal<Vec<i64>> = RwSignal::new(Vec::new());
    let error = ActionError::new();
    let compare_env = env.clone();
    let compare_href = move || {
        let mut v = selected.get();
        v.sort();
        (v.len() == 2).then(|| format!("{}&from={}&to={}", crate::routes::COMPARE.of(&compare_env), v[0], v[1]))
    };
    let row = move |v: VersionRow| {
        let version = v.version;
        let href = version_link(&env, version);
        let (env_p, env_d) = (env.clone(), env.clone());
        let candidate = matches!(v.status, VersionStatus::Candidate | VersionStatus::SkippedCandidate);
        let active = v.status == VersionStatus::Active;
        view! {
            <tr data-version=version>
                <td>
                    <input
                        type="checkbox"
                        class="select-version"
                        aria-label=format!("Select version {version} to compare")
                        prop:checked=move || selected.get().contains(&version)
                        on:change=move |ev| {
                            let on = event_target_checked(&ev);
                            selected.update(|s| {
                                s.retain(|x| *x != version);
                                if on {
                                    s.push(version);
                                    if s.len() > 2 {
                                        s.remove(0);
                                    }
                                }
                            })
                        }
                    />
                </td>
                <td><a href=href>{version}</a></td>
                <td>{short_date(&v.date)}</td>
                <td><StatusBadge status=v.status/></td>
                <td>{v.total}</td>
                <td class="version-message">{v.message.clone()}</td>
                <td class="row-actions">
                    <a
                        class="button button-small button-secondary compliance"
                        href=compliance_link(&env, version)
                        aria-label=format!("Compare version {version} with the current state (dry run)")
                    >
                        "Compare with current state"
                    </a>
                    {candidate.then(|| version_form(error, env_p.clone(), version, false, view! {
                        <button class="button button-small promote" type="submit">"Promote"</button>
                    }))}
                    {(!active).then(|| version_form(error, env_d.clone(), version, true, view! {
                        <button class="button button-small button-secondary delete" type="submit">"Delete"</button>
                    }))}
                </td>
            </tr>
        }
    };
    let headings = &[
        Heading::Unseen("Select"),
        Heading::Sorts("version", "Version"),
        Heading::Plain("Date"),
        Heading::Plain("Status"),
        Heading::Plain("Resources"),
        Heading::Plain("Message"),
        Heading::Unseen("Actions"),
    ];
    view! {
        <div class="toolbar">
            {move || match compare_href() {
                Some(href) => view! { <a class="button" id="compare" href=href>"Compare selected"</a> }.into_any(),
                None => view! {
                    <span class="button disabled" id="compare" aria-disabled="true" title="Select two versions">
                        "Compare selected"
                    </span>
                }
                    .into_any(),
            }}
            <span class="muted">"Select two versions to compare them."</span>
        </div>
        <ActionMessage error/>
        <Table path=crate::routes::DESIRED_STATE.href id="versions" headings rows=data.rows row/>
        <Pager path=crate::routes::DESIRED_STATE.href page=data.page/>
    }
    .into_any()
}
