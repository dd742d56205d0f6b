//! Resources: the latest released state of an environment's resources, and one resource's
//! details. One page per module; this one holds what both show.

use leptos::prelude::*;

use crate::components::{ChangeForm, endpoint};
use crate::layout::resource_link;
use crate::model::Problem;

mod details;
pub(crate) mod fns;
mod list;

pub use details::ResourceDetailsPage;
pub use list::ResourcesPage;

/// Deploy (or, with `repair`, Repair) of the environment's resources, or of one `agent`'s: a form
/// that works before the wasm has loaded; with it, `on_submit` runs instead (asking first).
#[component]
pub fn DeployButton(
    env: String,
    #[prop(optional)] agent: Option<String>,
    repair: bool,
    #[prop(optional)] id: Option<&'static str>,
    class: &'static str,
    on_submit: impl Fn() + 'static,
) -> impl IntoView {
    let mut fields = vec![("env", env), ("repair", repair.to_string())];
    fields.extend(agent.map(|agent| ("agent", agent)));
    view! {
        <ChangeForm action={endpoint::<crate::fns::Deploy>()} fields on_submit>
            <button class=class id=id type="submit">{if repair { "Repair" } else { "Deploy" }}</button>
        </ChangeForm>
    }
}

/// A resource's problem in one line: its last error, or "blocked by <dependency>" with a link.
#[component]
pub fn ProblemText(env: String, problem: Problem) -> impl IntoView {
    match problem {
        Problem::Error(message) => {
            let title = message.clone();
            view! { <span class="last-error" title=title>{message}</span> }.into_any()
        }
        Problem::BlockedBy { resource, status, count } => {
            let more = (count > 1).then(|| format!(" and {} more", count - 1));
            view! {
                <span class="blocked-by">
                    "blocked by " <a href=resource_link(&env, &resource) class="mono">{resource.to_string()}</a>
                    {format!(" ({})", status.as_str().replace('_', " "))}
                    {more}
                </span>
            }
            .into_any()
        }
    }
}
