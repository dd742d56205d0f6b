//! The compile reports page: an environment's compiles, newest first, filtered by status,
//! with the Recompile menu.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use api::CompileStatus;

use super::fns::{compile_reports, recompile, server_compile_enabled};
use crate::components::*;
use crate::model::{CompileRow, Paged};

/// The status filter of the compile reports: any, or one compile status.
const COMPILE_STATUS_CHOICES: [&str; 5] = [
    "",
    CompileStatus::Queued.as_str(),
    CompileStatus::Running.as_str(),
    CompileStatus::Success.as_str(),
    CompileStatus::Failed.as_str(),
];

#[component]
pub fn CompileReportsPage() -> impl IntoView {
    let env = env();
    let data = table_resource(compile_reports);
    view! {
        <EnvironmentPage
            title="Compile Reports"
            env
            actions=move || view! {
                <RecompileMenu/>
            }
        >
            <StatusFilter path=crate::routes::COMPILE_REPORTS.href values=&COMPILE_STATUS_CHOICES/>
            <Loaded
                resource=data
                loading="Loading compile reports…"
                error_title="The compile reports could not be loaded"
                view=move |page| view! { <CompileTable env=env.get_untracked() data=page/> }
            />
        </EnvironmentPage>
    }
    .into_any()
}

/// "Recompile ▾" with "Recompile" and "Update project & recompile"; disabled, with the reason,
/// when the environment does not compile on the server. Its open state lives outside the
/// refetched part, so live updates do not close it.
#[component]
fn RecompileMenu() -> impl IntoView {
    let env = env();
    let enabled = live_resource(move || env.get(), server_compile_enabled);
    let menu = NodeRef::<leptos::html::Details>::new();
    let open = RwSignal::new(false);
    let notice = RwSignal::new(None::<String>);
    let error = ActionError::new();
    let start = move |update: bool| {
        open.set(false);
        let call = recompile(env.get_untracked(), update);
        leptos::task::spawn_local(async move {
            match call.await {
                Ok(message) => {
                    error.set(None);
                    notice.set(Some(message));
                }
                Err(e) => {
                    notice.set(None);
                    error.fail(e);
                }
            }
            error.refresh.bump();
        });
    };
    view! {
        <div class="menu">
            <Transition fallback=|| {
                view! { <button class="button" type="button" id="recompile-menu" disabled=true>"Recompile ▾"</button> }
            }>
                {move || {
                    let on = enabled.get().and_then(|r| r.ok()).unwrap_or(true);
                    let settings = crate::routes::SETTINGS.of(&env.get());
                    let fields = move |update: bool| vec![("env", env.get_untracked()), ("update", update.to_string())];
                    if !on {
                        return view! {
                            <button
                                class="button"
                                type="button"
                                id="recompile-menu"
                                aria-describedby="recompile-hint"
                                title="Server compiles are off for this environment (setting server_compile)"
                                disabled=true
                            >
                                "Recompile ▾"
                            </button>
                            <p class="hint" id="recompile-hint">
                                "Server compiles are off for this environment. Turn on "
                                <a href=settings>"server_compile"</a>
                                " in the settings to recompile from here."
                            </p>
                        }
                        .into_any();
                    }
                    // A disclosure, so the menu opens before the wasm has loaded too.
                    view! {
                        <details
                            class="menu-details"
                            id="recompile-details"
                            node_ref=menu
                            prop:open=move || open.get()
                            on:toggle=move |_| {
                                if let Some(menu) = menu.get_untracked() {
                                    open.set(menu.open());
                                }
                            }
                        >
                            <summary class="button" id="recompile-menu" aria-haspopup="menu">
                                "Recompile ▾"
                            </summary>
                            <div class="menu-panel" role="menu" aria-label="Recompile">
                                <ChangeForm action={endpoint::<super::fns::Recompile>()} fields=fields(false) on_submit=move || start(false)>
                                    <button class="menu-item" type="submit" role="menuitem" id="recompile">"Recompile"</button>
                                </ChangeForm>
                                <ChangeForm action={endpoint::<super::fns::Recompile>()} fields=fields(true) on_submit=move || start(true)>
                                    <button class="menu-item" type="submit" role="menuitem" id="recompile-update">
                                        "Update project & recompile"
                                    </button>
                                </ChangeForm>
                            </div>
                        </details>
                    }
                    .into_any()
                }}
            </Transition>
            {move || notice.get().map(|n| view! { <p class="action-notice" role="status">{n}</p> })}
            <ActionMessage error/>
        </div>
    }
    .into_any()
}

#[component]
fn CompileTable(env: String, data: Paged<CompileRow>) -> impl IntoView {
    let q = use_query_map();
    if data.rows.is_empty() {
        let current = q.get_untracked();
        let filtered = current.latest_values().any(|(k, v)| k.starts_with("filter.") && !v.is_empty());
        if filtered {
            let clear = link(crate::routes::COMPILE_REPORTS.href, &current, &[("filter.status", None)]);
            return view! {
                <Empty title="No compile reports match the filter">
                    <p><a class="button button-secondary" href=clear>"Clear the filter"</a></p>
                </Empty>
            }
            .into_any();
        }
        return view! {
            <Empty title="No compile reports yet">
                <p>
                    "A compile appears here when one is requested: use " <strong>"Recompile"</strong>
                    " above, " <code>"POST /api/v1/notify/<environment>"</code> ", or the "
                    <code>"auto_full_compile"</code> " setting. Compiles check out the environment's repository, set in "
                    <a href=crate::routes::SETTINGS.of(&env)>"Settings"</a> "."
                </p>
            </Empty>
        }
        .into_any();
    }
    let row = move |c: CompileRow| {
        let href = compile_link(&env, &c.id);
        let label = format!("Show details of the compile requested at {}", short_date(&c.requested));
        view! {
            <tr data-id=c.id.clone() data-status=c.status.as_str()>
                <td class="nowrap">{short_date(&c.requested)}</td>
                <td><StatusBadge status=c.status/></td>
                <td>{c.message.clone()}</td>
                <td class="nowrap">{c.wait.map(duration_text).unwrap_or_default()}</td>
                <td class="nowrap">{c.duration.map(duration_text).unwrap_or_default()}</td>
                <td class="row-actions">
                    <a class="button button-small button-secondary" href=href aria-label=label>"Show details"</a>
                </td>
            </tr>
        }
    };
    let headings = &[
        Heading::Sorts("requested", "Requested"),
        Heading::Plain("Status"),
        Heading::Plain("Message"),
        Heading::Plain("Wait time"),
        Heading::Plain("Duration"),
        Heading::Unseen("Actions"),
    ];
    view! {
        <Table path=crate::routes::COMPILE_REPORTS.href id="compile-reports" headings rows=data.rows row/>
        <Pager path=crate::routes::COMPILE_REPORTS.href page=data.page/>
    }
    .into_any()
}
