//! What frames a page: its heading or breadcrumbs, the states of its data (loading, failed,
//! empty) and what a page about an environment shows when none is chosen.

use crate::error::ConsoleError;
use leptos::prelude::*;

use super::fetch::Refresh;
use crate::BASE;

#[component]
pub fn ErrorBox(title: &'static str, error: String) -> impl IntoView {
    let refresh = Refresh::get();
    view! {
        <div class="error" role="alert">
            <p class="error-title">{title}</p>
            <p class="error-detail">{error}</p>
            <button class="button button-small" type="button" on:click=move |_| refresh.bump()>
                "Retry"
            </button>
        </div>
    }
}

/// What a page shows for a server function's result: `loading` as a muted line until the first
/// answer, then `view` of the value, or an [`ErrorBox`] titled `error_title` when it failed. A
/// `Transition`, so a refetch keeps the current view until the new one is ready.
/// `not_allowed`, when given, replaces the error box when the caller lacks the permission: a
/// page that only some roles may use explains that instead of showing a failure.
#[component]
pub fn Loaded<T, V, F>(
    resource: Resource<Result<T, ConsoleError>>,
    loading: &'static str,
    error_title: &'static str,
    view: F,
    #[prop(optional, into)] not_allowed: Option<ViewFn>,
) -> impl IntoView
where
    T: Clone + Send + Sync + 'static,
    V: IntoView + 'static,
    F: Fn(T) -> V + Clone + Send + Sync + 'static,
{
    view! {
        <Transition fallback=move || view! { <p class="muted">{loading}</p> }>
            {move || {
                let (view, not_allowed) = (view.clone(), not_allowed.clone());
                Suspend::new(async move {
                    match (resource.await, not_allowed) {
                        (Ok(value), _) => view(value).into_any(),
                        (Err(e), Some(not_allowed)) if e.is_not_allowed() => {
                            not_allowed.run().into_any()
                        }
                        (Err(e), _) => view! { <ErrorBox title=error_title error=e.to_string()/> }.into_any(),
                    }
                })
            }}
        </Transition>
    }
}

#[component]
pub fn Empty(title: &'static str, children: Children) -> impl IntoView {
    view! {
        <div class="empty">
            <p class="empty-title">{title}</p>
            {children()}
        </div>
    }
}

/// The frame of a page about the chosen environment: `title` as the document title and the
/// heading, `actions` beside the heading (once an environment is chosen), `notice` under it,
/// then `children`; without `?env=`, how to choose an environment instead.
#[component]
pub fn EnvironmentPage(
    title: &'static str,
    env: Memo<String>,
    #[prop(optional, into)] actions: Option<ViewFn>,
    #[prop(optional, into)] notice: Option<ViewFn>,
    children: ChildrenFn,
) -> impl IntoView {
    let chosen = move || !env.get().is_empty();
    view! {
        <leptos_meta::Title text=title/>
        <section class="page">
            <div class="page-header">
                <h1>{title}</h1>
                {actions.map(|actions| view! { <Show when=chosen>{actions.run()}</Show> })}
            </div>
            {notice.map(|notice| notice.run())}
            <Show when=chosen fallback=NoEnvironment>
                {children()}
            </Show>
        </section>
    }
}

/// The frame of a page below another one (a compile, a version, a resource...): `title` as the
/// document title, the breadcrumbs (`trail`: links to the pages above, then where the reader is),
/// then `children`.
#[component]
pub fn SubPage(#[prop(into)] title: TextProp, #[prop(into)] trail: ViewFn, children: Children) -> impl IntoView {
    view! {
        <leptos_meta::Title text=title/>
        <section class="page">
            <nav class="breadcrumbs" aria-label="Breadcrumbs">
                {trail.run()}
            </nav>
            {children()}
        </section>
    }
}

/// Shown on environment pages opened without `?env=`.
#[component]
pub fn NoEnvironment() -> impl IntoView {
    view! {
        <Empty title="No environment selected">
            <p>
                "Pick an environment in the switcher at the top, or "
                <a href=BASE>"see all environments"</a> "."
            </p>
        </Empty>
    }
}
