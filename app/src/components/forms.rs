//! Forms that change something, working before the wasm has loaded and better once it has.
//!
//! Before: a [`ChangeForm`] is a plain HTML form posting its fields to its server function's
//! endpoint. The server function does the change and the server answers with a redirect back to
//! the page (Leptos does that for a request that accepts HTML), which then shows the new state; a
//! failure comes back in the page's query (`__path`, `__err`) and the form shows it.
//! After: the page's own handler runs instead (the dialog that asks first, toasts, a refresh in
//! place), calling the same server function.

use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos::server_fn::error::ServerFnUrlError;
use leptos_router::hooks::use_query_map;

use crate::error::ConsoleError;

/// The endpoint a form posts to without the wasm: the server function `F`'s. Its arguments must
/// come as a URL-encoded form (the server function's default input, not `input = Json`).
pub fn endpoint<F: ServerFn>() -> &'static str {
    F::PATH
}

/// A form that changes something (see the module doc). `fields` are sent as hidden inputs beside
/// the named inputs among `children`; `on_submit` is what the wasm does instead of the post.
#[component]
pub fn ChangeForm(
    /// The server function's endpoint ([`endpoint`]).
    action: &'static str,
    #[prop(optional, into)] id: Option<String>,
    #[prop(optional)] class: Option<&'static str>,
    #[prop(optional)] fields: Vec<(&'static str, String)>,
    on_submit: impl Fn() + 'static,
    children: Children,
) -> impl IntoView {
    view! {
        <form
            method="post"
            action=action
            id=id
            class=class.unwrap_or("inline-form")
            on:submit=move |ev| {
                ev.prevent_default();
                on_submit();
            }
        >
            {fields
                .into_iter()
                .map(|(name, value)| view! { <input type="hidden" name=name value=value/> })
                .collect_view()}
            {children()}
            <FormFailure action/>
        </form>
    }
}

/// The failure of the last post of the form for `action`, when the page came back with one
/// (only without the wasm: with it, failures show where the page's handler puts them).
#[component]
pub fn FormFailure(action: &'static str) -> impl IntoView {
    let query = use_query_map();
    move || {
        posted_failure(action, &query.get()).map(|error| {
            view! {
                <p class="action-error" role="alert" data-status=error.status()>
                    {error.to_string()}
                </p>
            }
        })
    }
}

/// The error a page's query carries for the form posting to `action`.
fn posted_failure(action: &str, query: &leptos_router::params::ParamsMap) -> Option<ConsoleError> {
    if query.get("__path")? != action {
        return None;
    }
    Some(ServerFnUrlError::<ConsoleError>::decode_err(&query.get("__err")?))
}

/// Whether the server function runs for a plain form post (no wasm), which expects a redirect
/// to the page to show next rather than an answer to decode.
#[cfg(feature = "ssr")]
pub fn plain_form_post() -> bool {
    use_context::<axum::http::request::Parts>().is_some_and(|parts| {
        parts
            .headers
            .get(axum::http::header::ACCEPT)
            .and_then(|accept| accept.to_str().ok())
            .is_some_and(|accept| accept.contains("text/html"))
    })
}

/// After a plain form post, shows `url` next instead of the page the form was on.
#[cfg(feature = "ssr")]
pub fn show_next(url: &str) {
    if plain_form_post() {
        leptos_axum::redirect(url);
    }
}
