//! Dashboard, create environment and environment settings.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_navigate, use_query_map};

use crate::components::*;
pub(crate) mod fns;
#[cfg(all(test, feature = "ssr"))]
mod tests;
use crate::model::{CLIENT_TYPES, CompileRow, Dashboard, EnvironmentDetails, ResourceState, SettingRow, TokenRow};
use crate::pages::desired_state::version_link;

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
    let resources =
        |state: ResourceState| format!("{}&filter.status={}", env_link("resources", &env), encode(state.as_str()));
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
        let link = format!("{}&filter.status={}", env_link("agents", &env), AgentStatus::Down);
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
                                        <tr data-id=c.id.clone() data-status=c.status.as_str()>
                                            <td class="nowrap"><a href=href>{short_date(&c.requested)}</a></td>
                                            <td><StatusBadge status=c.status/></td>
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
                                    let href = version_link(&env, v.version);
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
    let projects = Resource::new(|| (), |_| crate::fns::list_projects());
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
                    <TextField id="new-project" label="New project name" value=new_project/>
                </Show>
                <TextField id="env-name" label="Name" value=name required=true/>
                <TextField id="env-description" label="Description" value=description/>
                <TextField id="env-repo" label="Repository URL" value=repository input_type="url" placeholder="https://github.com/example/project.git"/>
                <TextField id="env-branch" label="Branch" value=branch/>
                <ActionMessage error/>
                <div class="form-actions">
                    <button class="button" type="submit" disabled=move || busy.get()>"Create"</button>
                    <a class="button button-secondary" href=format!("{}/", crate::BASE)>"Cancel"</a>
                </div>
            </form>
        </section>
    }
}

const SETTINGS: &str = "/console/settings";

#[component]
pub fn SettingsPage() -> impl IntoView {
    let env = env();
    let tab = query("tab");
    let q = use_query_map();
    let tabs = [("environment", "Environment"), ("configuration", "Configuration"), ("tokens", "Tokens")];
    let tab_links = move || {
        let current = q.get();
        let active_tab = match tab.get().as_str() {
            "" => "environment".to_string(),
            t => t.to_string(),
        };
        tabs.iter()
            .map(|(key, label)| {
                let href = link(SETTINGS, &current, &[("tab", Some(key.to_string()))]);
                let active = active_tab == *key;
                view! {
                    <a role="tab" class="tab" class:active=active aria-selected=active.to_string() href=href id=format!("tab-{key}")>
                        {*label}
                    </a>
                }
            })
            .collect_view()
    };
    view! {
        <EnvironmentPage title="Settings" env>
            <div class="tabs" role="tablist" aria-label="Settings">{tab_links}</div>
            <div class="tab-panel settings-panel" role="tabpanel">
                {move || match tab.get().as_str() {
                    "configuration" => view! { <ConfigurationTab env/> }.into_any(),
                    "tokens" => view! { <TokensTab env/> }.into_any(),
                    _ => view! { <EnvironmentTab env/> }.into_any(),
                }}
            </div>
        </EnvironmentPage>
    }
}

#[component]
fn EnvironmentTab(env: Memo<String>) -> impl IntoView {
    let details = live_resource(move || env.get(), crate::fns::environment);
    view! {
        <Loaded
            resource=details
            loading="Loading…"
            error_title="The environment could not be loaded"
            view=move |d| view! { <EnvironmentForm details=d/> }
        />
    }
}

#[component]
fn ConfigurationTab(env: Memo<String>) -> impl IntoView {
    let settings = live_resource(move || env.get(), fns::settings);
    view! {
        <div class="card">
            <h2>"Configuration"</h2>
            <Loaded
                resource=settings
                loading="Loading…"
                error_title="The settings could not be loaded"
                view=move |rows| view! { <SettingsTable env=env.get_untracked() rows/> }
            />
        </div>
    }
}

/// Expiry choices of a new token, in days (`None`: never).
const EXPIRY: &[(&str, Option<u32>)] = &[
    ("1 day", Some(1)),
    ("7 days", Some(7)),
    ("30 days", Some(30)),
    ("90 days", Some(90)),
    ("1 year", Some(365)),
    ("Never", None),
];

#[component]
fn TokensTab(env: Memo<String>) -> impl IntoView {
    let tokens = live_resource(move || env.get(), fns::tokens);
    let error = ActionError::new();
    view! {
        <GenerateToken env/>
        <div class="card">
            <h2>"Tokens"</h2>
            <p class="muted">
                "Environment tokens let agents, the compiler and scripts call the API of this environment ("
                <code>"Authorization: Bearer <token>"</code> "). Only their details are kept: a lost token cannot be shown again, generate a new one."
            </p>
            <ActionMessage error/>
            <Loaded
                resource=tokens
                loading="Loading…"
                error_title="The tokens could not be loaded"
                view=move |rows| {
                    if rows.is_empty() {
                        view! {
                            <div id="no-tokens">
                                <Empty title="No tokens yet">
                                    <p>"Generate one above for an agent, the compiler or a script."</p>
                                </Empty>
                            </div>
                        }
                            .into_any()
                    } else {
                        view! { <TokenTable env=env.get_untracked() rows error/> }.into_any()
                    }
                }
                not_allowed=|| view! {
                    <Empty title="Tokens are for environment expert admins">
                        <p>"Issuing and revoking tokens needs the environment-expert-admin role in this environment, or an admin."</p>
                    </Empty>
                }
            />
        </div>
    }
}

#[component]
fn TokenTable(env: String, rows: Vec<TokenRow>, error: ActionError) -> impl IntoView {
    let never = || view! { <span class="muted">"never"</span> };
    view! {
        <table class="table" id="tokens">
            <thead>
                <tr>
                    <th scope="col">"Client types"</th>
                    <th scope="col">"Created by"</th>
                    <th scope="col">"Issued"</th>
                    <th scope="col">"Expires"</th>
                    <th scope="col">"Last used"</th>
                    <th scope="col">"Revoked"</th>
                    <th scope="col"><span class="sr-only">"Actions"</span></th>
                </tr>
            </thead>
            <tbody>
                {rows
                    .into_iter()
                    .map(|t| {
                        let (env, jti) = (env.clone(), t.jti.clone());
                        let types = t.client_types.join(", ");
                        let question = format!(
                            "Revoke the {types} token issued {}? Whatever uses it is refused from now on.",
                            short_date(&t.issued)
                        );
                        let revoked = t.revoked.is_some();
                        view! {
                            <tr data-jti=t.jti.clone() data-revoked=revoked.to_string()>
                                <td>{types.clone()}</td>
                                <td>{t.created_by.clone().unwrap_or_else(|| "—".into())}</td>
                                <td class="nowrap" title=t.issued.clone()>{short_date(&t.issued)}</td>
                                <td class="nowrap">{t.expires.as_deref().map(short_date).map(IntoAny::into_any).unwrap_or_else(|| never().into_any())}</td>
                                <td class="nowrap">{t.last_used.as_deref().map(short_date).map(IntoAny::into_any).unwrap_or_else(|| never().into_any())}</td>
                                <td class="nowrap">
                                    {match t.revoked.as_deref() {
                                        Some(at) => view! { <span class="badge badge-danger">"revoked"</span> " " {short_date(at)} }.into_any(),
                                        None => view! { <span class="badge badge-ok">"active"</span> }.into_any(),
                                    }}
                                </td>
                                <td class="row-actions">
                                    <button
                                        class="button button-small button-danger"
                                        type="button"
                                        data-action="revoke"
                                        disabled=revoked
                                        aria-label=format!("Revoke the {types} token issued {}", short_date(&t.issued))
                                        on:click=move |_| {
                                            let (env, jti) = (env.clone(), jti.clone());
                                            error.ask(question.clone(), "Revoke", move || {
                                                act(error, "Token revoked", fns::revoke_token(env.clone(), jti.clone()))
                                            })
                                        }
                                    >
                                        "Revoke"
                                    </button>
                                </td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

/// Generates a token and shows it once, with a copy button.
#[component]
fn GenerateToken(env: Memo<String>) -> impl IntoView {
    let chosen = RwSignal::new(vec!["agent".to_string()]);
    let expiry = RwSignal::new("7 days".to_string());
    let error = ActionError::new();
    let token = RwSignal::new(None::<String>);
    // None: not copied yet; Some(false): the browser refused.
    let copied = RwSignal::new(None::<bool>);
    let generate = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let days = EXPIRY.iter().find(|(label, _)| *label == expiry.get_untracked()).and_then(|(_, d)| *d);
        let call = fns::generate_token(env.get_untracked(), chosen.get_untracked(), days);
        token.set(None);
        copied.set(None);
        leptos::task::spawn_local(async move {
            match call.await {
                Ok(t) => {
                    error.set(None);
                    token.set(Some(t));
                    error.refresh.bump();
                }
                Err(e) => error.fail(e),
            }
        });
    };
    let copy = move |_| {
        if let Some(t) = token.get_untracked() {
            copy_text("new-token", &t, move |ok| copied.set(Some(ok)));
        }
    };
    view! {
        <form class="card form" id="generate-token" on:submit=generate>
            <h2>"Generate token"</h2>
            <fieldset class="fieldset">
                <legend>"Client types"</legend>
                {CLIENT_TYPES
                    .iter()
                    .map(|c| {
                        let c = c.to_string();
                        let (c1, c2) = (c.clone(), c.clone());
                        view! {
                            <label class="checkbox">
                                <input
                                    type="checkbox"
                                    id=format!("client-{c}")
                                    name="client_types"
                                    value=c.clone()
                                    prop:checked=move || chosen.get().contains(&c1)
                                    on:change=move |ev| {
                                        let on = event_target_checked(&ev);
                                        chosen.update(|list| {
                                            list.retain(|x| *x != c2);
                                            if on {
                                                list.push(c2.clone());
                                            }
                                        });
                                    }
                                />
                                " " {c.clone()}
                            </label>
                        }
                    })
                    .collect_view()}
            </fieldset>
            <label for="token-expiry">"Expires after"</label>
            <select
                id="token-expiry"
                class="input input-number"
                prop:value=move || expiry.get()
                on:change=move |ev| expiry.set(event_target_value(&ev))
            >
                {EXPIRY
                    .iter()
                    .map(|(label, _)| view! { <option value=*label selected=*label == "7 days">{*label}</option> })
                    .collect_view()}
            </select>
            <ActionMessage error/>
            <div class="form-actions">
                <button class="button" type="submit" id="generate-token-button">"Generate token"</button>
            </div>
            {move || {
                token.get().map(|t| {
                    view! {
                        <div class="token-once" role="status">
                            <p class="hint">
                                <strong>"Copy this token now: it will not be shown again. "</strong>
                                "Anyone holding it acts in this environment with its client types."
                            </p>
                            <label for="new-token">"New token"</label>
                            <div class="inline-form">
                                <input id="new-token" class="input mono token-value" type="text" readonly=true prop:value=t/>
                                <button class="button button-small" type="button" id="copy-token" on:click=copy>
                                    {move || if copied.get() == Some(true) { "Copied" } else { "Copy" }}
                                </button>
                            </div>
                            {move || {
                                (copied.get() == Some(false))
                                    .then(|| view! { <p class="hint">"The browser did not allow copying: the token is selected, press Ctrl+C."</p> })
                            }}
                        </div>
                    }
                })
            }}
        </form>
    }
}

/// Selects the text of an input (so Ctrl+C works whatever happens) and puts `text` on the
/// clipboard; `done` hears whether that worked.
fn copy_text(input_id: &str, text: &str, done: impl Fn(bool) + 'static) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        use wasm_bindgen::prelude::Closure;
        if let Some(input) =
            document().get_element_by_id(input_id).and_then(|e| e.dyn_into::<web_sys::HtmlInputElement>().ok())
        {
            input.select();
        }
        let done = std::rc::Rc::new(done);
        let ok = {
            let done = done.clone();
            Closure::once(move |_: wasm_bindgen::JsValue| done(true))
        };
        let failed = Closure::once(move |_: wasm_bindgen::JsValue| done(false));
        let _ = window().navigator().clipboard().write_text(text).then2(&ok, &failed);
        ok.forget();
        failed.forget();
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (input_id, text);
        done(false);
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
            <TextField id="set-name" label="Name" value=name/>
            <TextField id="set-description" label="Description" value=description/>
            <TextField id="set-repo" label="Repository URL" value=repository/>
            <TextField id="set-branch" label="Branch" value=branch/>
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
        <tr data-setting=row.name.clone() data-changed=(!row.is_default).to_string() class:setting-changed=!row.is_default>
            <td>
                <label for=input_id class="setting-name">{row.name.clone()}</label>
                {(!row.is_default).then(|| view! {
                    <span class="badge badge-changed" title="Set to something else than the default">"changed"</span>
                })}
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
                    on:click=move |_| act(error, format!("Setting {name1} saved"), fns::save_setting(env1.clone(), name1.clone(), value.get_untracked(), false))
                >
                    "Save"
                </button>
                <button
                    class="button button-small button-secondary"
                    type="button"
                    disabled=readonly || row.is_default
                    on:click=move |_| act(error, format!("Setting {name} reset to its default"), fns::save_setting(env.clone(), name.clone(), String::new(), true))
                >
                    "Reset"
                </button>
            </td>
        </tr>
    }
}
