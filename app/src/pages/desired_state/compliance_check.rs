//! The compliance check page: the dry runs of one version, each shown like a comparison.

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_params_map, use_query_map};

use super::compare::Changes;
use super::*;
use crate::components::*;
use crate::model::{ComplianceView, ResourceChange, ResourceDiffStatus};

/// Dry runs of one version: what the handlers would change to reach it from the current state.
/// The selected report (`?report=`, default the newest) is shown like the compare view and
/// follows the dry run live until every resource is reported.
#[component]
pub fn ComplianceCheckPage() -> impl IntoView {
    let env = env();
    let params = use_params_map();
    let version = Memo::new(move |_| params.with(|p| p.get("version").unwrap_or_default()));
    let report = query("report");
    let refresh = Refresh::get();
    // A complete report does not change: the source keeps the tick it was seen complete at, so
    // the open diffs stay as the reader left them while other events arrive.
    let complete: RwSignal<Option<((String, String), u64)>> = RwSignal::new(None);
    let data = Resource::new(
        move || {
            let key = (version.get(), report.get());
            let tick = match complete.get() {
                Some((done, tick)) if done == key => tick,
                _ => refresh.tick(),
            };
            (env.get(), key, tick)
        },
        move |(env, (version, report), tick)| async move {
            let v: i64 = version.parse().map_err(|_| ConsoleError::refused(format!("{version:?} is not a version")))?;
            let view = fns::compliance(env, v, report.clone()).await;
            // Complete only once a named report is done: without one, a newer run may appear.
            if !report.is_empty() && view.as_ref().is_ok_and(|c| c.selected.as_ref().is_some_and(|s| s.todo == 0)) {
                complete.set(Some(((version, report), tick)));
            }
            view
        },
    );
    let error = ActionError::new();
    let busy = RwSignal::new(false);
    let navigate = use_navigate();
    let q = use_query_map();
    let start = move || {
        let Ok(v) = version.get_untracked().parse::<i64>() else { return };
        busy.set(true);
        let navigate = navigate.clone();
        let call = fns::dry_run(env.get_untracked(), v);
        let path = format!("{}/desiredstate/{v}/compliancecheck", crate::BASE);
        leptos::task::spawn_local(async move {
            match call.await {
                Ok(id) => {
                    error.set(None);
                    navigate(&in_app(&link(&path, &q.get_untracked(), &[("report", Some(id))])), Default::default());
                }
                Err(e) => error.fail(e),
            }
            busy.set(false);
            error.refresh.bump();
        });
    };
    view! {
        <SubPage
            title=move || format!("Compliance check of version {}", version.get())
            trail=move || view! {
                <a href=move || crate::routes::DESIRED_STATE.of(&env.get())>"Desired State"</a>
                " › "
                <a href=move || version_link(&env.get(), version.get())>{move || format!("Version {}", version.get())}</a>
                " › "
                <span>"Compliance check"</span>
            }
        >
            <div class="page-header">
                <h1>{move || format!("Compliance check of version {}", version.get())}</h1>
                <ChangeForm
                    action={endpoint::<fns::DryRun>()}
                    fields=vec![("env", env.get_untracked()), ("version", version.get_untracked())]
                    on_submit=start
                >
                    <button
                        class="button button-primary"
                        type="submit"
                        id="dry-run"
                        disabled=move || busy.get() || env.get().is_empty()
                    >
                        {move || if busy.get() { "Starting…" } else { "Perform dry run" }}
                    </button>
                </ChangeForm>
            </div>
            <p class="muted">
                "A dry run asks every resource's handler what it would change to reach this version, without changing anything."
            </p>
            <ActionMessage error/>
            <Show when=move || !env.get().is_empty() fallback=NoEnvironment>
                <Loaded
                    resource=data
                    loading="Loading dry runs…"
                    error_title="The dry runs could not be loaded"
                    view=move |view| view! { <ComplianceBody env=env.get_untracked() version=version.get_untracked() view/> }
                />
            </Show>
        </SubPage>
    }
    .into_any()
}

#[component]
fn ComplianceBody(env: String, version: String, view: ComplianceView) -> impl IntoView {
    let halted = view.halted.then(|| {
        view! { <p class="hint" role="status">"The environment is halted: resume it to perform a dry run."</p> }
    });
    let Some(selected) = view.selected else {
        return view! {
            {halted}
            <Empty title="No dry runs of this version yet">
                <p>
                    <strong>"Perform dry run"</strong>
                    " above to compare this version with what is deployed now (or "
                    <code>{format!("inmanta dryrun request {version}")}</code> ")."
                </p>
            </Empty>
        }
        .into_any();
    };
    let path = format!("{}/desiredstate/{version}/compliancecheck", crate::BASE);
    let q = use_query_map();
    let current = q.get_untracked();
    let picker = view
        .reports
        .iter()
        .map(|r| {
            let href = link(&path, &current, &[("report", Some(r.id.clone()))]);
            let active = r.id == selected.id;
            let state = if r.todo > 0 { format!(" ({} of {} done)", r.total - r.todo, r.total) } else { String::new() };
            view! {
                <a class="chip" class:active=active aria-current=active.then_some("true") href=href data-report=r.id.clone()>
                    {format!("{}{state}", short_date(&r.date))}
                </a>
            }
        })
        .collect_view();
    let done = selected.total - selected.todo;
    let progress = (selected.todo > 0).then(|| {
        view! {
            <div class="dry-run-progress" role="status" id="dry-run-progress">
                <progress max=selected.total value=done aria-label="Dry run progress"></progress>
                {format!(" {done} of {} resources checked…", selected.total)}
            </div>
        }
    });
    let total = view.changes.len();
    let unmodified = view.changes.iter().filter(|c| c.status == ResourceDiffStatus::Unmodified).count();
    let changed: Vec<ResourceChange> =
        view.changes.into_iter().filter(|c| c.status != ResourceDiffStatus::Unmodified).collect();
    let mut counts: Vec<(ResourceDiffStatus, usize)> = Vec::new();
    for c in &changed {
        match counts.iter_mut().find(|(s, _)| *s == c.status) {
            Some((_, n)) => *n += 1,
            None => counts.push((c.status, 1)),
        }
    }
    let summary = std::iter::once(format!("{total} resources reported: {unmodified} unmodified"))
        .chain(counts.iter().map(|(s, n)| format!("{n} {}", s.as_str().replace('_', " "))))
        .collect::<Vec<_>>()
        .join(", ");
    let empty = if selected.todo > 0 {
        "No differences reported so far."
    } else {
        "Every reported resource already matches this version: nothing would change."
    };
    view! {
        {halted}
        <nav class="toolbar" aria-label="Dry-run reports, newest first" id="dry-run-reports">
            <span class="muted">"Reports:"</span>
            {picker}
        </nav>
        {progress}
        <Changes
            env
            changes=changed
            summary
            empty
        />
    }
    .into_any()
}
