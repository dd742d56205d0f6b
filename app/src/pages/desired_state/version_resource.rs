//! One resource as a version holds it: its attributes.

use leptos::prelude::*;

use super::*;
use crate::components::*;

#[component]
pub fn VersionResourcePage() -> impl IntoView {
    let env = env();
    let version = query("v");
    let rid = query("rid");
    let data = Resource::new(
        move || (env.get(), version.get(), rid.get()),
        |(env, v, rid)| async move {
            let v = version_number(&v)?;
            fns::version_resource(env, v, rid_argument(&rid)?).await
        },
    );
    view! {
        <SubPage
            title=move || rid.get()
            trail=move || view! {
                <a href=move || crate::routes::DESIRED_STATE.of(&env.get())>"Desired State"</a>
                " › "
                <a href=move || version_link(&env.get(), version.get())>{move || format!("Version {}", version.get())}</a>
                " › "
                <span>{move || rid.get()}</span>
            }
        >
            <div class="page-header">
                <h1 class="mono">{move || rid.get()}</h1>
            </div>
            <Loaded
                resource=data
                loading="Loading…"
                error_title="The resource could not be loaded"
                view=move |attrs| view! { <AttributeTable attributes=attrs/> }
            />
        </SubPage>
    }
}
