//! Dashboard, create environment and environment settings.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_navigate;

use crate::components::*;
use crate::fns;
use crate::model::{Dashboard, EnvironmentDetails, SettingRow};

#[component]
pub fn DashboardPage() -> impl IntoView {
    let env = env();
    let refresh = Refresh::get();
    let data = Resource::new(move || (env.get(), refresh.tick()), |(env, _)| fns::load_dashboard(env));
    view! {
        <Title text="Dashboard"/>
        <section class="page">
            <div class="page-header">
                <h1>"Dashboard"</h1>
            </div>
            <Show when=move || !env.get().is_empty() fallback=NoEnvironment>
                <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                    {move || Suspend::new(async move {
                        match data.await {
                            Ok(d) => view! { <DashboardBody env=env.get_untracked() data=d/> }.into_any(),
                            Err(e) => view! { <ErrorBox title="The dashboard could not be loaded" error=e.to_string()/> }.into_any(),
                        }
                    })}
                </Transition>
            </Show>
        </section>
    }
}

#[component]
fn DashboardBody(env: String, data: Dashboard) -> impl IntoView {
    let deployed = data.summary.iter().find(|(s, _)| s == "deployed").map(|(_, n)| *n).unwrap_or(0);
    let percent = (deployed * 100).checked_div(data.summary_total).unwrap_or(0);
    let legend = data
        .summary
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(state, n)| {
            let href = format!("{}&filter.status={}", env_link("resources", &env), encode(state));
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
            <h2><a href=env_link("compilereports", &env)>"Latest compile reports"</a></h2>
            {if compiles.is_empty() {
                view! {
                    <p class="muted">
                        "No compiles yet: request one on the "
                        <a href=env_link("compilereports", &env)>"Compile Reports"</a>
                        " page."
                    </p>
                }
                    .into_any()
            } else {
                view! {
                    <table class="table">
                        <thead>
                            <tr>
                                <th scope="col">"Requested"</th>
                                <th scope="col">"Status"</th>
                                <th scope="col">"Message"</th>
                                <th scope="col">"Duration"</th>
                            </tr>
                        </thead>
                        <tbody>
                            {compiles
                                .into_iter()
                                .map(|c| {
                                    let href = compile_link(&env, &c.id);
                                    view! {
                                        <tr data-id=c.id.clone() data-status=c.status.clone()>
                                            <td class="nowrap"><a href=href>{short_date(&c.requested)}</a></td>
                                            <td><StatusBadge status=c.status.clone()/></td>
                                            <td>{c.message}</td>
                                            <td class="nowrap">{c.duration.map(duration_text).unwrap_or_default()}</td>
                                        </tr>
                                    }
                                })
                                .collect_view()}
                        </tbody>
                    </table>
                }
                    .into_any()
            }}
        </div>
    };
    view! {
        <div class="cards">
            <div class="card card-wide" id="deploy-progress">
                <h2>"Deployment"</h2>
                {if data.summary_total == 0 {
                    view! {
                        <p class="muted">
                            "No resources released yet. Export a model ("
                            <code>"inmanta export"</code>
                            ") and promote its version on the "
                            <a href=env_link("desiredstate", &env)>"Desired State"</a>
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
            <a class="card tile" href=env_link("agents", &env) id="agents-tile">
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
                view! {
                    <table class="table">
                        <thead>
                            <tr>
                                <th scope="col">"Version"</th>
                                <th scope="col">"Date"</th>
                                <th scope="col">"Status"</th>
                                <th scope="col">"Resources"</th>
                            </tr>
                        </thead>
                        <tbody>
                            {versions
                                .into_iter()
                                .map(|v| {
                                    let href = format!("{}&v={}", env_link("desiredstate/version", &env), v.version);
                                    view! {
                                        <tr>
                                            <td><a href=href>{v.version}</a></td>
                                            <td>{short_date(&v.date)}</td>
                                            <td><StatusBadge status=v.status/></td>
                                            <td>{v.total}</td>
                                        </tr>
                                    }
                                })
                                .collect_view()}
                        </tbody>
                    </table>
                }
                    .into_any()
            }}
        </div>
    }
}

/// `2026-11-23T10:00:00.123456+00:00` -> `2026-11-23 10:00:00`.
pub fn short_date(date: &str) -> String {
    let d = date.replace('T', " ");
    d.get(..19).unwrap_or(&d).to_string()
}

#[component]
pub fn CreateEnvironmentPage() -> impl IntoView {
    let projects = Resource::new(|| (), |_| fns::list_projects());
    let project = RwSignal::new(String::new());
    let new_project = RwSignal::new(String::new());
    let name = RwSignal::new(String::new());
    let repository = RwSignal::new(String::new());
    let branch = RwSignal::new(String::from("master"));
    let description = RwSignal::new(String::new());
    let error = ActionError::new();
    let busy = RwSignal::new(false);
    let navigate = use_navigate();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        busy.set(true);
        let navigate = navigate.clone();
        let call = fns::create_environment(
            project.get_untracked(),
            new_project.get_untracked(),
            name.get_untracked(),
            repository.get_untracked(),
            branch.get_untracked(),
            description.get_untracked(),
        );
        leptos::task::spawn_local(async move {
            match call.await {
                Ok(id) => navigate(&in_app(&env_link("dashboard", &id)), Default::default()),
                Err(e) => error.fail(e),
            }
            busy.set(false);
        });
    };
    view! {
        <Title text="Create environment"/>
        <section class="page page-narrow">
            <div class="page-header">
                <h1>"Create environment"</h1>
            </div>
            <form class="form card" id="create-environment" on:submit=submit>
                <label for="project">"Project"</label>
                <Transition fallback=|| view! { <p class="muted">"Loading projects…"</p> }>
                    {move || {
                        let list = projects.get().and_then(|r| r.ok()).unwrap_or_default();
                        view! {
                            <select
                                id="project"
                                class="input"
                                prop:value=move || project.get()
                                on:change=move |ev| project.set(event_target_value(&ev))
                            >
                                <option value="">"— new project (type its name below) —"</option>
                                {list
                                    .into_iter()
                                    .map(|p| view! { <option value=p.id.clone()>{p.name}</option> })
                                    .collect_view()}
                            </select>
                        }
                    }}
                </Transition>
                <Show when=move || project.get().is_empty()>
                    <label for="new-project">"New project name"</label>
                    <input
                        id="new-project"
                        class="input"
                        type="text"
                        prop:value=move || new_project.get()
                        on:input=move |ev| new_project.set(event_target_value(&ev))
                    />
                </Show>
                <label for="env-name">"Name"</label>
                <input
                    id="env-name"
                    class="input"
                    type="text"
                    required=true
                    prop:value=move || name.get()
                    on:input=move |ev| name.set(event_target_value(&ev))
                />
                <label for="env-description">"Description"</label>
                <input
                    id="env-description"
                    class="input"
                    type="text"
                    prop:value=move || description.get()
                    on:input=move |ev| description.set(event_target_value(&ev))
                />
                <label for="env-repo">"Repository URL"</label>
                <input
                    id="env-repo"
                    class="input"
                    type="url"
                    placeholder="https://github.com/example/project.git"
                    prop:value=move || repository.get()
                    on:input=move |ev| repository.set(event_target_value(&ev))
                />
                <label for="env-branch">"Branch"</label>
                <input
                    id="env-branch"
                    class="input"
                    type="text"
                    prop:value=move || branch.get()
                    on:input=move |ev| branch.set(event_target_value(&ev))
                />
                <ActionMessage error/>
                <div class="form-actions">
                    <button class="button" type="submit" disabled=move || busy.get()>"Create"</button>
                    <a class="button button-secondary" href=format!("{}/", crate::BASE)>"Cancel"</a>
                </div>
            </form>
        </section>
    }
}

#[component]
pub fn SettingsPage() -> impl IntoView {
    let env = env();
    let refresh = Refresh::get();
    let details = Resource::new(move || (env.get(), refresh.tick()), |(env, _)| fns::environment(env));
    let settings = Resource::new(move || (env.get(), refresh.tick()), |(env, _)| fns::settings(env));
    view! {
        <Title text="Settings"/>
        <section class="page">
            <div class="page-header">
                <h1>"Settings"</h1>
            </div>
            <Show when=move || !env.get().is_empty() fallback=NoEnvironment>
                <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                    {move || Suspend::new(async move {
                        match details.await {
                            Ok(d) => view! { <EnvironmentForm details=d/> }.into_any(),
                            Err(e) => view! { <ErrorBox title="The environment could not be loaded" error=e.to_string()/> }.into_any(),
                        }
                    })}
                </Transition>
                <div class="card">
                    <h2>"Configuration"</h2>
                    <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
                        {move || Suspend::new(async move {
                            match settings.await {
                                Ok(rows) => view! { <SettingsTable env=env.get_untracked() rows/> }.into_any(),
                                Err(e) => view! { <ErrorBox title="The settings could not be loaded" error=e.to_string()/> }.into_any(),
                            }
                        })}
                    </Transition>
                </div>
            </Show>
        </section>
    }
}

#[component]
fn EnvironmentForm(details: EnvironmentDetails) -> impl IntoView {
    let env = details.id.clone();
    let name = RwSignal::new(details.name.clone());
    let repository = RwSignal::new(details.repo_url.clone());
    let branch = RwSignal::new(details.repo_branch.clone());
    let description = RwSignal::new(details.description.clone());
    let error = ActionError::new();
    let env2 = env.clone();
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        run(
            error,
            fns::modify_environment(
                env2.clone(),
                name.get_untracked(),
                repository.get_untracked(),
                branch.get_untracked(),
                description.get_untracked(),
            ),
        );
    };
    view! {
        <form class="card form" id="environment-form" on:submit=save>
            <h2>"Environment"</h2>
            <p class="muted">"Project " <strong>{details.project_name.clone()}</strong> " · id " <code>{env.clone()}</code></p>
            <label for="set-name">"Name"</label>
            <input id="set-name" class="input" type="text" prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev))/>
            <label for="set-description">"Description"</label>
            <input
                id="set-description"
                class="input"
                type="text"
                prop:value=move || description.get()
                on:input=move |ev| description.set(event_target_value(&ev))
            />
            <label for="set-repo">"Repository URL"</label>
            <input id="set-repo" class="input" type="text" prop:value=move || repository.get() on:input=move |ev| repository.set(event_target_value(&ev))/>
            <label for="set-branch">"Branch"</label>
            <input id="set-branch" class="input" type="text" prop:value=move || branch.get() on:input=move |ev| branch.set(event_target_value(&ev))/>
            <ActionMessage error/>
            <div class="form-actions">
                <button class="button" type="submit">"Save"</button>
            </div>
        </form>
        <div class="card danger-zone">
            <h2>"Danger zone"</h2>
            <DangerAction env=env.clone() name=details.name.clone() delete=false/>
            <DangerAction env=env name=details.name delete=true/>
        </div>
    }
}

/// Clear or delete, confirmed by typing the environment's name.
#[component]
fn DangerAction(env: String, name: String, delete: bool) -> impl IntoView {
    let typed = RwSignal::new(String::new());
    let error = ActionError::new();
    let matches = {
        let name = name.clone();
        move || typed.get() == name
    };
    let (verb, explain) = if delete {
        ("Delete", "Removes the environment and everything in it.")
    } else {
        ("Clear", "Removes every version, resource, agent and log but keeps the environment and its settings.")
    };
    let id = format!("confirm-{}", verb.to_lowercase());
    let navigate = use_navigate();
    let click = move |_| {
        let env = env.clone();
        let confirm = typed.get_untracked();
        let navigate = navigate.clone();
        leptos::task::spawn_local(async move {
            match fns::remove_environment(env, confirm, delete).await {
                Ok(()) if delete => navigate("/", Default::default()),
                Ok(()) => {
                    error.set(None);
                    typed.set(String::new());
                    error.refresh.bump();
                }
                Err(e) => error.fail(e),
            }
        });
    };
    view! {
        <div class="danger-action">
            <p>
                <strong>{format!("{verb} environment. ")}</strong>
                {explain}
                " Type " <code>{name.clone()}</code> " to confirm."
            </p>
            <div class="inline-form">
                <input
                    id=id.clone()
                    class="input"
                    type="text"
                    aria-label=format!("Type {name} to confirm")
                    prop:value=move || typed.get()
                    on:input=move |ev| typed.set(event_target_value(&ev))
                />
                <button class="button button-danger" type="button" disabled=move || !matches() on:click=click>
                    {verb}
                </button>
            </div>
            <ActionMessage error/>
        </div>
    }
}

#[component]
fn SettingsTable(env: String, rows: Vec<SettingRow>) -> impl IntoView {
    view! {
        <table class="table settings" id="settings">
            <thead>
                <tr>
                    <th scope="col">"Setting"</th>
                    <th scope="col">"Value"</th>
                    <th scope="col">"Default"</th>
                    <th scope="col"><span class="sr-only">"Actions"</span></th>
                </tr>
            </thead>
            <tbody>
                {rows.into_iter().map(|row| view! { <SettingEditor env=env.clone() row/> }).collect_view()}
            </tbody>
        </table>
    }
}

#[component]
fn SettingEditor(env: String, row: SettingRow) -> impl IntoView {
    let value = RwSignal::new(row.value.clone());
    let original = row.value.clone();
    let dirty = move || value.get() != original;
    let error = ActionError::new();
    let name = row.name.clone();
    let input_id = format!("setting-{}", row.name);
    let readonly = row.protected_by.is_some();
    let input = match row.kind.as_str() {
        "bool" => view! {
            <input
                id=input_id.clone()
                type="checkbox"
                disabled=readonly
                prop:checked=move || value.get() == "true"
                on:change=move |ev| value.set(event_target_checked(&ev).to_string())
            />
        }
        .into_any(),
        "int" | "positive_float" => view! {
            <input
                id=input_id.clone()
                class="input input-number"
                type="number"
                min=(row.kind == "positive_float").then_some("0")
                step=if row.kind == "int" { "1" } else { "any" }
                disabled=readonly
                prop:value=move || value.get()
                on:input=move |ev| value.set(event_target_value(&ev))
            />
        }
        .into_any(),
        "enum" => {
            let options = row.allowed_values.clone();
            view! {
                <select
                    id=input_id.clone()
                    class="input"
                    disabled=readonly
                    prop:value=move || value.get()
                    on:change=move |ev| value.set(event_target_value(&ev))
                >
                    {options
                        .into_iter()
                        .map(|o| {
                            let selected = o == row.value;
                            view! { <option value=o.clone() selected=selected>{o.clone()}</option> }
                        })
                        .collect_view()}
                </select>
            }
            .into_any()
        }
        "dict" => view! {
            <textarea
                id=input_id.clone()
                class="input mono"
                rows="3"
                disabled=readonly
                prop:value=move || value.get()
                on:input=move |ev| value.set(event_target_value(&ev))
            >
                {row.value.clone()}
            </textarea>
        }
        .into_any(),
        _ => view! {
            <input
                id=input_id.clone()
                class="input"
                type="text"
                disabled=readonly
                prop:value=move || value.get()
                on:input=move |ev| value.set(event_target_value(&ev))
            />
        }
        .into_any(),
    };
    let (env1, name1) = (env.clone(), name.clone());
    view! {
        <tr data-setting=row.name.clone()>
            <td>
                <label for=input_id class="setting-name">{row.name.clone()}</label>
                {move || dirty().then(|| view! { <span class="badge badge-warning">"unsaved"</span> })}
                <p class="setting-doc muted">{row.doc.clone()}</p>
                {row.protected_by.clone().map(|by| view! { <p class="muted">{format!("Protected by {by}: read-only here.")}</p> })}
            </td>
            <td>{input} <ActionMessage error/></td>
            <td class="mono">{row.default.clone()} {row.is_default.then(|| view! { <span class="muted">" (in use)"</span> })}</td>
            <td class="row-actions">
                <button
                    class="button button-small"
                    type="button"
                    disabled=readonly
                    on:click=move |_| run(error, fns::save_setting(env1.clone(), name1.clone(), value.get_untracked(), false))
                >
                    "Save"
                </button>
                <button
                    class="button button-small button-secondary"
                    type="button"
                    disabled=readonly || row.is_default
                    on:click=move |_| run(error, fns::save_setting(env.clone(), name.clone(), String::new(), true))
                >
                    "Reset"
                </button>
            </td>
        </tr>
    }
}
