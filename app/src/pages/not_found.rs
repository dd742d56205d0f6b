//! What the console shows for an address that names nothing: no page ([`NotFound`]), or no
//! environment the caller may read ([`KnownEnvironment`], checked once by [`CheckEnvironment`]).

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use leptos_meta::Title;

use crate::BASE;
use crate::components;
#[cfg(feature = "ssr")]
use crate::fns::{authorized_for, fail};

#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(axum::http::StatusCode::NOT_FOUND);
    }
    view! {
        <Title text="Page not found"/>
        <section class="page">
            <h1>"Page not found"</h1>
            <p>"There is no console page at this address. " <a href=BASE>"Go to the environments"</a></p>
        </section>
    }
}

/// Checks once per page whether `?env=` names an environment the caller may read, for the page
/// ([`KnownEnvironment`]) and the header and sidebar (which ask nothing about an unknown one).
#[component]
pub fn CheckEnvironment(children: Children) -> impl IntoView {
    let env = components::env();
    let known = Resource::new(
        move || env.get(),
        |env| async move { if env.is_empty() { Ok(true) } else { environment_exists(env).await } },
    );
    provide_context(components::EnvKnown(known));
    children()
}

/// The page, unless `?env=` names no environment the caller may read: then the console's 404 page
/// for environments (HTTP 404 on the server-rendered page), never an error per panel.
#[component]
pub fn KnownEnvironment(children: ChildrenFn) -> impl IntoView {
    let env = components::env();
    let known = expect_context::<components::EnvKnown>().0;
    let children = StoredValue::new(children);
    view! {
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match known.await {
                    Ok(false) => view! { <EnvironmentNotFound id=env.get_untracked()/> }.into_any(),
                    // Known, or the check failed: the page shows its own errors.
                    _ => children.with_value(|c| c()).into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn EnvironmentNotFound(id: String) -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(response) = use_context::<leptos_axum::ResponseOptions>() {
        response.set_status(axum::http::StatusCode::NOT_FOUND);
    }
    view! {
        <Title text="Environment not found"/>
        <section class="page" id="environment-not-found">
            <h1>"Environment not found"</h1>
            <p>
                "There is no environment " <code>{id}</code>
                " that you may open: it may have been deleted, or the link is mistyped. "
                <a href=BASE>"See all environments"</a>
            </p>
        </section>
    }
}

/// Whether `env` names an environment the caller may read. Unknown and forbidden look alike, so
/// the console's "environment not found" page does not tell which environments exist.
#[server(prefix = "/console/fn", endpoint = "environment_exists", input = Json)]
pub async fn environment_exists(env: String) -> Result<bool, ConsoleError> {
    let Ok(id) = env.parse::<uuid::Uuid>() else { return Ok(false) };
    let Ok(s) = authorized_for("environment.read", &env) else { return Ok(false) };
    match s.orchestrator.get_environment(id, Default::default()).await {
        Ok(_) => Ok(true),
        Err(orchestrator::Error::NotFound(_)) => Ok(false),
        Err(error) => Err(fail(error)),
    }
}
