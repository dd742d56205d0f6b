//! Desired state: versions, the resources of a version, one versioned resource, compare, and
//! the compliance check (dry runs) of a version. One page per module; this one holds what
//! several of them share.

use leptos::prelude::*;

use crate::components::{ActionError, ChangeForm, act, endpoint};
use crate::error::ConsoleError;

mod compare;
mod compliance_check;
pub(crate) mod fns;
#[cfg(all(test, feature = "ssr"))]
mod tests;
mod version;
mod version_resource;
mod versions;

pub use compare::ComparePage;
pub use compliance_check::ComplianceCheckPage;
pub use version::VersionPage;
pub use version_resource::VersionResourcePage;
pub use versions::DesiredStatePage;

/// Asks before promoting `version` (or, with `delete`, deleting it), then does it: the versions
/// table and a version's page ask the same question.
fn ask_version_action(error: ActionError, env: String, version: i64, delete: bool) {
    let (question, yes, done) = if delete {
        (format!("Delete version {version}?"), "Delete", format!("Version {version} deleted"))
    } else {
        (
            format!("Promote version {version}? It becomes the desired state and deploys."),
            "Promote",
            format!("Version {version} promoted"),
        )
    };
    error.ask(question, yes, move || act(error, done.clone(), fns::version_action(env.clone(), version, delete)));
}

/// The form of [`ask_version_action`] posted without the wasm: `button` in a form that does it.
fn version_form(
    error: ActionError,
    env: String,
    version: i64,
    delete: bool,
    button: impl IntoView + 'static,
) -> impl IntoView {
    let fields = vec![("env", env.clone()), ("version", version.to_string()), ("delete", delete.to_string())];
    view! {
        <ChangeForm
            action={endpoint::<fns::VersionAction>()}
            fields
            on_submit=move || ask_version_action(error, env.clone(), version, delete)
        >
            {button}
        </ChangeForm>
    }
}

/// The version `?v=` names, or the error the page shows when it names none.
fn version_number(v: &str) -> Result<i64, ConsoleError> {
    v.parse().map_err(|_| ConsoleError::refused("no version given (?v=)"))
}
