//! The frame around every page: header (environment switcher, notifications, theme), sidebar
//! (pages of the environment, halt and resume) and the halted banner, with
//! the server functions only the frame calls (`whoami`, `set_halted`).

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos_router::hooks::use_location;

use crate::components::{
    ActionError, ActionMessage, ChangeForm, EnvKnown, Refresh, act, encode, endpoint, env, env_link, known_env,
    live_resource,
};
use crate::fns;
#[cfg(feature = "ssr")]
use crate::fns::{authorized_for, caller, env_id, fail};
use crate::model::{EnvironmentDetails, TableQuery};
use crate::pages::notifications::NotificationForm;
use crate::{BASE, live, routes};

/// Where switching to `env` leads: the same page when every environment has it, else its dashboard.
fn switch_target(path: &str, env: &str) -> String {
    let page = path.strip_prefix(BASE).unwrap_or(path).trim_matches('/');
    let page = routes::sidebar().find(|p| p.path == page).unwrap_or(routes::DASHBOARD);
    page.of(env)
}

/// Whether the navigation is open on a narrow screen (below 900 px the sidebar is hidden behind
/// the header's menu button).
#[derive(Clone, Copy)]
pub struct NavOpen(pub RwSignal<bool>);

#[component]
pub fn Header() -> impl IntoView {
    let env = env();
    let refresh = Refresh::get();
    let connected = RwSignal::new(false);
    // Events only of an environment the caller may read (none on an unknown one's 404 page).
    let known = EnvKnown::get();
    let live_env = Memo::new(move |_| {
        let id = env.get();
        match known.map(|k| k.0.get()) {
            None | Some(Some(Ok(true))) => id,
            _ => String::new(),
        }
    });
    live::follow(live_env, refresh, connected);
    let nav = use_context::<NavOpen>().map(|n| n.0).unwrap_or_else(|| RwSignal::new(false));
    view! {
        <header class="topbar">
            <Show when=move || !env.get().is_empty()>
                <button
                    class="icon-button menu-button"
                    id="menu-toggle"
                    type="button"
                    aria-label="Menu"
                    aria-controls="sidebar"
                    aria-expanded=move || nav.get().to_string()
                    on:click=move |_| nav.update(|open| *open = !*open)
                >
                    "☰"
                </button>
            </Show>
            <a class="brand" href=BASE>
                <img src="/console/favicon.svg" alt="" width="24" height="24"/>
                <span>"Inmanta"</span>
            </a>
            <EnvironmentSwitcher/>
            <div class="topbar-end">
                <span
                    class="live-dot"
                    class:on=move || connected.get()
                    title=move || if connected.get() { "Live updates on" } else { "Live updates off" }
                    data-live=move || connected.get().to_string()
                ></span>
                <a class="topbar-link" href="/api/v2/docs">"API"</a>
                <NotificationBell/>
                <UserMenu/>
                <button
                    class="icon-button"
                    id="theme-toggle"
                    type="button"
                    aria-label="Toggle dark mode"
                    title="Toggle dark mode"
                    on:click=|_| live::toggle_theme()
                >
                    "◐"
                </button>
            </div>
        </header>
    }
}

#[component]
fn EnvironmentSwitcher() -> impl IntoView {
    let env = env();
    let location = use_location();
    // Refetched on a switch too: the target may be an environment created since the page loaded.
    let environments = live_resource(move || env.get(), |_| fns::list_environments());
    let search = RwSignal::new(String::new());
    let open = RwSignal::new(false);
    let current = move || {
        let id = env.get();
        environments
            .get()
            .and_then(|r| r.ok())
            .and_then(|list| list.into_iter().find(|e| e.id == id))
            .map(|e| format!("{} / {}", e.project_name, e.name))
            .unwrap_or_else(|| if id.is_empty() { "Select an environment".into() } else { "Environment".into() })
    };
    view! {
        <div class="switcher">
            <button
                class="switcher-button"
                id="env-switcher"
                type="button"
                aria-haspopup="listbox"
                aria-expanded=move || open.get().to_string()
                on:click=move |_| open.update(|o| *o = !*o)
            >
                <Transition fallback=|| "Environment">{current}</Transition>
                " ▾"
            </button>
            <Show when=move || open.get()>
                <div class="switcher-panel" role="dialog" aria-label="Switch environment">
                    <input
                        class="input"
                        type="search"
                        id="env-search"
                        placeholder="Search by environment or project"
                        aria-label="Search environments"
                        prop:value=move || search.get()
                        on:input=move |ev| search.set(event_target_value(&ev))
                    />
                    <ul class="switcher-list" role="listbox">
                        {move || {
                            let needle = search.get().to_lowercase();
                            let path = location.pathname.get();
                            environments
                                .get()
                                .and_then(|r| r.ok())
                                .unwrap_or_default()
                                .into_iter()
                                .filter(|e| {
                                    needle.is_empty() || e.name.to_lowercase().contains(&needle)
                                        || e.project_name.to_lowercase().contains(&needle)
                                })
                                .map(|e| {
                                    let href = switch_target(&path, &e.id);
                                    let selected = e.id == env.get();
                                    view! {
                                        <li role="option" aria-selected=selected.to_string()>
                                            <a href=href data-env=e.id.clone() on:click=move |_| open.set(false)>
                                                <span class="muted">{e.project_name}</span>
                                                " / "
                                                <strong>{e.name}</strong>
                                                {e.halted.then(|| view! { <span class="badge badge-warning">"halted"</span> })}
                                            </a>
                                        </li>
                                    }
                                })
                                .collect_view()
                        }}
                    </ul>
                    <div class="switcher-footer">
                        <a href=format!("{BASE}/environment/create") on:click=move |_| open.set(false)>
                            "+ Create environment"
                        </a>
                        <a href=BASE on:click=move |_| open.set(false)>"All environments"</a>
                        <a href=format!("{BASE}/projects") id="manage-projects" on:click=move |_| open.set(false)>
                            "Manage projects"
                        </a>
                    </div>
                </div>
            </Show>
        </div>
    }
}

/// Who is signed in, and a logout that is a plain form: it works before the wasm loads.
#[component]
fn UserMenu() -> impl IntoView {
    let user = Resource::new(|| (), |_| whoami());
    view! {
        <Suspense fallback=|| ()>
            {move || {
                user.get()
                    .and_then(|u| u.ok())
                    .flatten()
                    .map(|name| {
                        view! {
                            <form class="user-menu" method="post" action="/console/logout">
                                <span class="user-name" id="current-user" title="Signed in">
                                    {name}
                                </span>
                                <button class="button button-small button-secondary" id="logout" type="submit">
                                    "Log out"
                                </button>
                            </form>
                        }
                    })
            }}
        </Suspense>
    }
}

#[component]
fn NotificationBell() -> impl IntoView {
    let env = env();
    let open = RwSignal::new(false);
    let error = ActionError::new();
    let known = EnvKnown::get();
    let unread = live_resource(
        move || env.get(),
        move |env| async move {
            let env = known_env(known, env).await;
            if env.is_empty() {
                return Ok(None);
            }
            let mut q = TableQuery { env, limit: Some(10), ..Default::default() };
            q.filters.insert("read".into(), "false".into());
            fns::notifications(q).await.map(Some)
        },
    );
    let count = move || unread.get().and_then(|r| r.ok()).flatten().map(|p| p.page.total).unwrap_or(0);
    view! {
        <Show when=move || !env.get().is_empty()>
            <Transition fallback=|| ()>
            <button
                class="icon-button bell"
                id="notification-bell"
                type="button"
                aria-label=move || format!("Notifications: {} unread", count())
                aria-expanded=move || open.get().to_string()
                on:click=move |_| open.update(|o| *o = !*o)
            >
                <svg viewBox="0 0 24 24" width="18" height="18" aria-hidden="true" fill="none" stroke="currentColor" stroke-width="2">
                    <path d="M6 8a6 6 0 0 1 12 0c0 7 3 9 3 9H3s3-2 3-9"></path>
                    <path d="M10.3 21a1.94 1.94 0 0 0 3.4 0"></path>
                </svg>
                {move || {
                    let n = count();
                    (n > 0).then(|| view! { <span class="bell-count" id="unread-count">{n}</span> })
                }}
            </button>
            </Transition>
        </Show>
        <Show when=move || open.get()>
            <aside class="drawer" id="notification-drawer" aria-label="Unread notifications">
                <div class="drawer-header">
                    <h2>"Notifications"</h2>
                    <button class="icon-button" type="button" aria-label="Close" on:click=move |_| open.set(false)>
                        "×"
                    </button>
                </div>
                <ActionMessage error/>
                <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                    {move || {
                        let rows = unread.get().and_then(|r| r.ok()).flatten().map(|p| p.rows).unwrap_or_default();
                        if rows.is_empty() {
                            return view! { <p class="muted">"No unread notifications."</p> }.into_any();
                        }
                        rows.into_iter()
                            .map(|n| {
                                let id = n.id.clone();
                                let id2 = n.id.clone();
                                view! {
                                    <div class=format!("drawer-item severity-{}", n.severity) data-id=n.id.clone()>
                                        <p class="drawer-title">{n.title}</p>
                                        <p class="drawer-message">{n.message}</p>
                                        <div class="row-actions">
                                            <NotificationForm env=env.get_untracked() id read=true error>
                                                <button class="button button-small" type="submit">"Mark read"</button>
                                            </NotificationForm>
                                            <NotificationForm env=env.get_untracked() id=id2 cleared=true error>
                                                <button class="button button-small button-secondary" type="submit">"Clear"</button>
                                            </NotificationForm>
                                        </div>
                                    </div>
                                }
                            })
                            .collect_view()
                            .into_any()
                    }}
                </Transition>
                <p>
                    <a href=move || crate::routes::NOTIFICATIONS.of(&env.get()) on:click=move |_| open.set(false)>
                        "Open the notification centre"
                    </a>
                </p>
            </aside>
        </Show>
    }
}

/// The details of the page's environment, live; `None` without `?env=` or for an environment the
/// caller may not read (the frame asks nothing about those). The sidebar and the halted banner
/// show them.
fn current_environment() -> Resource<Result<Option<EnvironmentDetails>, ConsoleError>> {
    let env = env();
    let known = EnvKnown::get();
    live_resource(
        move || env.get(),
        move |env| async move {
            let env = known_env(known, env).await;
            if env.is_empty() { Ok(None) } else { fns::environment(env).await.map(Some) }
        },
    )
}

#[component]
pub fn Sidebar() -> impl IntoView {
    let env = env();
    let location = use_location();
    let details = current_environment();
    let error = ActionError::new();
    let open = use_context::<NavOpen>().map(|n| n.0).unwrap_or_else(|| RwSignal::new(false));
    let nav = move || {
        routes::sidebar()
            .map(|page| {
                let (label, page) = (page.nav.unwrap_or_default(), page.path);
                let active = move || {
                    let path = location.pathname.get();
                    let rest = path.strip_prefix(BASE).unwrap_or(&path).trim_start_matches('/').to_string();
                    rest == page || rest.starts_with(&format!("{page}/"))
                };
                view! {
                    <a
                        href=move || env_link(page, &env.get())
                        on:click=move |_| open.set(false)
                        class:active=active
                        aria-current=move || active().then_some("page")
                    >
                        {label}
                    </a>
                }
            })
            .collect_view()
    };
    view! {
        <Show when=move || !env.get().is_empty()>
            <nav class="sidebar" id="sidebar" class:open=move || open.get() aria-label="Environment">
                {nav()}
                <div class="sidebar-bottom">
                    <Transition fallback=|| ()>
                        {move || {
                            details
                                .get()
                                .and_then(|r| r.ok())
                                .flatten()
                                .map(|d| {
                                    let halted = d.halted;
                                    let name = d.name.clone();
                                    let fields = vec![("env", env.get_untracked()), ("halted", (!halted).to_string())];
                                    view! {
                                        <ChangeForm
                                            action={endpoint::<SetHalted>()}
                                            fields
                                            on_submit=move || {
                                                let (question, yes, done) = if halted {
                                                    (format!("Resume environment {name}? Deploys start again."), "Resume", format!("Environment {name} resumed"))
                                                } else {
                                                    (format!("Halt environment {name}? Every deploy and agent stops."), "Halt", format!("Environment {name} halted"))
                                                };
                                                let env = env.get_untracked();
                                                error.ask(question, yes, move || {
                                                    act(error, done.clone(), set_halted(env.clone(), !halted))
                                                });
                                            }
                                        >
                                            <button
                                                id="halt-toggle"
                                                type="submit"
                                                class=if halted { "button" } else { "button button-danger" }
                                            >
                                                {if halted { "▶ Resume" } else { "■ Halt" }}
                                            </button>
                                        </ChangeForm>
                                    }
                                })
                        }}
                    </Transition>
                    <ActionMessage error/>
                </div>
            </nav>
        </Show>
    }
}

/// Banner on every page of a halted environment.
#[component]
pub fn HaltedBanner() -> impl IntoView {
    let details = current_environment();
    view! {
        <Transition fallback=|| ()>
            {move || {
                details.get().and_then(|r| r.ok()).flatten().filter(|d| d.halted).map(|d| {
                    view! {
                        <div class="banner banner-warning" role="status" id="halted-banner">
                            <strong>"Environment halted. "</strong>
                            {format!("{} does not deploy; agents are stopped. Resume it from the sidebar.", d.name)}
                        </div>
                    }
                })
            }}
        </Transition>
    }
}

/// Used by pages to build links to a resource.
pub fn resource_link(env: &str, rid: &api::ResourceId) -> String {
    format!("{}&rid={}", crate::routes::RESOURCE_DETAILS.of(env), encode(&rid.to_string()))
}

/// The signed-in user's name for the header; `None` when the server runs without auth.
#[server(prefix = "/console/fn", endpoint = "whoami")]
pub async fn whoami() -> Result<Option<String>, ConsoleError> {
    let caller = caller().ok_or(ConsoleError::NotSignedIn)?;
    Ok(caller.name().map(str::to_string))
}

/// Also posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "set_halted")]
pub async fn set_halted(env: String, halted: bool) -> Result<(), ConsoleError> {
    let s = authorized_for("environment.halt-resume", &env)?;
    s.orchestrator.set_halted(env_id(&env)?, halted).await.map_err(fail)
}
