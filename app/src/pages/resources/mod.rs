//! Resources: the latest released state of an environment's resources, and one resource's
//! details. One page per module; this one holds what both show.

use leptos::prelude::*;

use crate::layout::resource_link;
use crate::model::Problem;

mod details;
pub(crate) mod fns;
mod list;

pub use details::ResourceDetailsPage;
pub use list::ResourcesPage;

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
