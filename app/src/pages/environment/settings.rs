//! The settings page of an environment: its environment tab (details, halt, clear, delete) and
//! configuration tab; the tokens tab is in [`super::tokens`].

use leptos::prelude::*;
use leptos_router::hooks::use_navigate;

use super::fns;
use super::tokens::TokensTab;
use crate::components::*;
use crate::model::{EnvironmentDetails, SettingRow};

const SETTINGS_TABS: [(&str, &str); 3] =
    [("environment", "Environment"), ("configuration", "Configuration"), ("tokens", "Tokens")];

#[component]
pub fn SettingsPage() -> impl IntoView {
    let env = env();
    let tab = query("tab");
    view! {
        <EnvironmentPage title="Settings" env>
            <div class="tabs" role="tablist" aria-label="Settings">
                <TabLinks path=crate::routes::SETTINGS.href tabs=&SETTINGS_TABS/>
            </div>
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

#[component]
fn EnvironmentForm(details: EnvironmentDetails) -> impl IntoView {
    let env = details.id.clone();
    let name = RwSignal::new(details.name.clone());
    let repository = RwSignal::new(details.repo_url.clone());
    let branch = RwSignal::new(details.repo_branch.clone());
    let description = RwSignal::new(details.description.clone());
    let error = ActionError::new();
    let (env2, env_shown) = (env.clone(), env.clone());
    let save = move || {
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
        <ChangeForm
            action={endpoint::<fns::ModifyEnvironment>()}
            class="card form"
            id="environment-form"
            fields=vec![("env", env.clone())]
            on_submit=save
        >
            <h2>"Environment"</h2>
            <p class="muted">"Project " <strong>{details.project_name.clone()}</strong> " · id " <code>{env_shown}</code></p>
            <TextField id="set-name" name="name" label="Name" value=name/>
            <TextField id="set-description" name="description" label="Description" value=description/>
            <TextField id="set-repo" name="repository" label="Repository URL" value=repository/>
            <TextField id="set-branch" name="branch" label="Branch" value=branch/>
            <ActionMessage error/>
            <div class="form-actions">
                <button class="button" type="submit">"Save"</button>
            </div>
        </ChangeForm>
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
    // Effects run in the browser only: before the wasm, the button stays usable (the server
    // checks the typed name either way).
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    let fields = vec![("env", env.clone()), ("delete", delete.to_string())];
    let click = move || {
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
            <ChangeForm action={endpoint::<fns::RemoveEnvironment>()} fields on_submit=click>
                <input
                    id=id.clone()
                    class="input"
                    type="text"
                    name="confirm"
                    aria-label=format!("Type {name} to confirm")
                    prop:value=move || typed.get()
                    on:input=move |ev| typed.set(event_target_value(&ev))
                />
                <button class="button button-danger" type="submit" disabled=move || hydrated.get() && !matches()>
                    {verb}
                </button>
            </ChangeForm>
            <ActionMessage error/>
        </div>
    }
}

#[component]
fn SettingsTable(env: String, rows: Vec<SettingRow>) -> impl IntoView {
    let headings =
        &[Heading::Plain("Setting"), Heading::Plain("Value"), Heading::Plain("Default"), Heading::Unseen("Actions")];
    let row = move |row: SettingRow| view! { <SettingEditor env=env.clone() row/> };
    view! { <Table class="table settings" id="settings" headings rows row/> }
}

#[component]
fn SettingEditor(env: String, row: SettingRow) -> impl IntoView {
    let value = RwSignal::new(row.value.clone());
    let original = row.value.clone();
    let dirty = move || value.get() != original;
    let error = ActionError::new();
    let name = row.name.clone();
    let input_id = format!("setting-{}", row.name);
    // The Save button's form, in another cell: the input joins it by its `form` attribute.
    let form_id = format!("setting-save-{}", row.name);
    let readonly = row.protected_by.is_some();
    let input = match row.kind.as_str() {
        "bool" => view! {
            <input
                id=input_id.clone()
                type="checkbox"
                form=form_id.clone()
                name="value"
                value="true"
                checked=row.value == "true"
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
                form=form_id.clone()
                name="value"
                value=row.value.clone()
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
                    form=form_id.clone()
                    name="value"
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
                form=form_id.clone()
                name="value"
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
                form=form_id.clone()
                name="value"
                value=row.value.clone()
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
                <ChangeForm
                    action={endpoint::<fns::SaveSetting>()}
                    id=form_id
                    fields=vec![("env", env1.clone()), ("name", name1.clone()), ("reset", "false".into())]
                    on_submit=move || {
                        let call = fns::save_setting(env1.clone(), name1.clone(), Some(value.get_untracked()), false);
                        act(error, format!("Setting {name1} saved"), call)
                    }
                >
                    <button class="button button-small" type="submit" disabled=readonly>"Save"</button>
                </ChangeForm>
                <ChangeForm
                    action={endpoint::<fns::SaveSetting>()}
                    fields=vec![("env", env.clone()), ("name", name.clone()), ("reset", "true".into())]
                    on_submit=move || {
                        let call = fns::save_setting(env.clone(), name.clone(), None, true);
                        act(error, format!("Setting {name} reset to its default"), call)
                    }
                >
                    <button class="button button-small button-secondary" type="submit" disabled=readonly || row.is_default>
                        "Reset"
                    </button>
                </ChangeForm>
            </td>
        </tr>
    }
}
