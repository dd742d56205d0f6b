//! Small widgets the pages share: status badges, form fields, the resource search box, the
//! deploy bar and a registered token's cells.

use leptos::prelude::*;

use super::table::Heading;

use super::forms::ChangeForm;

use super::feedback::ActionError;
use super::text::short_date;
use super::url::encode;

/// The wire name of a status a badge shows: a state of `api::state` or a version's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusName(pub &'static str);

macro_rules! status_names {
    ($($status:ty),+) => {
        $(impl From<$status> for StatusName {
            fn from(status: $status) -> StatusName {
                StatusName(status.as_str())
            }
        })+
    };
}

status_names!(
    api::ResourceState,
    api::CompileStatus,
    api::AgentStatus,
    api::ResourceDiffStatus,
    api::version::VersionStatus
);

#[component]
pub fn StatusBadge(#[prop(into)] status: StatusName) -> impl IntoView {
    let status = status.0;
    let class = format!("badge state-{status}");
    view! { <span class=class data-status=status>{status.replace('_', " ")}</span> }
}

/// A label and the text input it names (`for` is the input's `id`), bound to `value`; `hint`, a
/// line under the input that describes it (`id` + `-hint`). `name` is the form field it is in a
/// [`ChangeForm`](super::ChangeForm) posted without the wasm; the page renders with the value.
#[component]
pub fn TextField(
    id: &'static str,
    label: &'static str,
    value: RwSignal<String>,
    #[prop(optional)] name: Option<&'static str>,
    #[prop(default = "text")] input_type: &'static str,
    #[prop(optional)] placeholder: Option<&'static str>,
    #[prop(optional)] required: bool,
    #[prop(optional)] autocomplete: Option<&'static str>,
    #[prop(optional)] hint: Option<&'static str>,
) -> impl IntoView {
    let hint_id = format!("{id}-hint");
    view! {
        <label for=id>{label}</label>
        <input
            id=id
            name=name
            class="input"
            type=input_type
            value=value.get_untracked()
            placeholder=placeholder
            autocomplete=autocomplete
            required=required
            aria-describedby=hint.is_some().then(|| hint_id.clone())
            prop:value=move || value.get()
            on:input=move |ev| value.set(event_target_value(&ev))
        />
        {hint.map(|hint| view! { <p class="muted field-hint" id=hint_id>{hint}</p> })}
    }
}

/// A label and the choice it names (`for` is the select's `id`), bound to `value`: `prompt` as an
/// empty first option, then `options()` as (value, text) pairs, which follow the data they are
/// read from.
#[component]
pub fn SelectField<O>(
    id: &'static str,
    label: &'static str,
    value: RwSignal<String>,
    /// The form field it is, as [`TextField`]'s `name`.
    #[prop(optional)]
    name: Option<&'static str>,
    options: O,
    #[prop(optional)] prompt: Option<&'static str>,
    #[prop(optional)] required: bool,
) -> impl IntoView
where
    O: Fn() -> Vec<(String, String)> + Send + Sync + 'static,
{
    view! {
        <label for=id>{label}</label>
        <select
            id=id
            name=name
            class="input"
            required=required
            prop:value=move || value.get()
            on:change=move |ev| value.set(event_target_value(&ev))
        >
            {prompt.map(|prompt| view! { <option value="">{prompt}</option> })}
            {move || {
                options()
                    .into_iter()
                    .map(|(option, text)| {
                        let selected = option == value.get_untracked();
                        view! { <option value=option selected=selected>{text}</option> }
                    })
                    .collect_view()
            }}
        </select>
    }
    // Erased: a form holds several, and their nested view types otherwise overflow the stack of a
    // debug build's test thread while the page renders.
    .into_any()
}

/// A box that searches resources as the user types, bound to `search`; its `label` is for
/// screen readers only (the placeholder says it to the eye).
#[component]
pub fn ResourceSearch(id: &'static str, label: &'static str, search: RwSignal<String>) -> impl IntoView {
    view! {
        <label class="sr-only" for=id>{label}</label>
        <input
            class="input"
            type="search"
            id=id
            placeholder="Search resources…"
            prop:value=move || search.get()
            on:input=move |ev| search.set(event_target_value(&ev))
        />
    }
}

/// A horizontal bar with one segment per state, each a link that filters the resources page.
#[component]
pub fn DeployBar(env: String, summary: Vec<(api::ResourceState, u64)>, total: u64) -> impl IntoView {
    let segments = summary
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(state, n)| {
            let width = if total == 0 { 0.0 } else { n as f64 * 100.0 / total as f64 };
            let state = state.as_str();
            let href = format!("{}&filter.status={}", crate::routes::RESOURCES.of(&env), encode(state));
            let label = format!("{}: {n}", state.replace('_', " "));
            view! {
                <a
                    class=format!("bar-segment state-bg-{state}")
                    style=format!("width: {width:.3}%")
                    href=href
                    title=label.clone()
                    aria-label=label
                    data-state=state
                ></a>
            }
        })
        .collect_view();
    view! {
        <div class="deploy-bar" role="group" aria-label="Resources by state">
            {segments}
        </div>
    }
}

/// The headings of an environment's tokens: [`TokenCells`] and the Revoke button.
pub const TOKEN_HEADINGS: &[Heading] = &[
    Heading::Plain("Client types"),
    Heading::Plain("Created by"),
    Heading::Plain("Issued"),
    Heading::Plain("Expires"),
    Heading::Plain("Last used"),
    Heading::Plain("Revoked"),
    Heading::Unseen("Actions"),
];

/// The headings of every registered token: its kind and environment, then [`TOKEN_HEADINGS`].
pub const REGISTERED_TOKEN_HEADINGS: &[Heading] = &[
    Heading::Plain("Kind"),
    Heading::Plain("Environment"),
    Heading::Plain("Client types"),
    Heading::Plain("Created by"),
    Heading::Plain("Issued"),
    Heading::Plain("Expires"),
    Heading::Plain("Last used"),
    Heading::Plain("Revoked"),
    Heading::Unseen("Actions"),
];

/// A token row's Revoke button: asks whether to revoke the `what` token (of `owner`, when given)
/// `token`, then calls `revoke`; disabled once revoked. Without the wasm it posts `fields` to the
/// server function at `action` (see [`ChangeForm`]).
#[component]
pub fn RevokeTokenCell<R>(
    token: crate::model::TokenRow,
    /// The token's kind or client types, as its row names it.
    what: String,
    #[prop(optional)] owner: Option<String>,
    error: ActionError,
    action: &'static str,
    fields: Vec<(&'static str, String)>,
    revoke: R,
) -> impl IntoView
where
    R: Fn() + Clone + Send + Sync + 'static,
{
    let issued = short_date(&token.issued);
    let whose = owner.map(|owner| format!(" of {owner}")).unwrap_or_default();
    let question = format!("Revoke the {what} token{whose} issued {issued}? Whatever uses it is refused from now on.");
    let label = format!("{what} token issued {issued}");
    view! {
        <td class="row-actions">
            <ChangeForm action fields on_submit=move || error.ask(question.clone(), "Revoke", revoke.clone())>
                <button
                    class="button button-small button-danger"
                    type="submit"
                    data-action="revoke"
                    disabled=token.revoked.is_some()
                    aria-label=format!("Revoke the {label}")
                >
                    "Revoke"
                </button>
            </ChangeForm>
        </td>
    }
}

/// A registered token's cells in a table row: its client types, creator, when it was issued,
/// expires and was last used, and whether it is revoked. The environment's tokens tab and the
/// users page list tokens alike.
#[component]
pub fn TokenCells(token: crate::model::TokenRow) -> impl IntoView {
    let never = || view! { <span class="muted">"never"</span> }.into_any();
    view! {
        <td>{token.client_types.join(", ")}</td>
        <td class="created-by">{token.created_by.unwrap_or_else(|| "—".into())}</td>
        <td class="nowrap" title=token.issued.clone()>{short_date(&token.issued)}</td>
        <td class="nowrap expires">{token.expires.as_deref().map(|d| short_date(d).into_any()).unwrap_or_else(never)}</td>
        <td class="nowrap">{token.last_used.as_deref().map(|d| short_date(d).into_any()).unwrap_or_else(never)}</td>
        <td class="nowrap">
            {match token.revoked.as_deref() {
                Some(at) => view! { <span class="badge badge-danger">"revoked"</span> " " {short_date(at)} }.into_any(),
                None => view! { <span class="badge badge-ok">"active"</span> }.into_any(),
            }}
        </td>
    }
}
