//! The web console: Leptos pages, components and server functions.
//!
//! The server renders every page (`ssr` feature) and the browser hydrates it from the wasm
//! module built from `frontend` (`hydrate` feature). Server functions run on the server only and
//! call the orchestrator's operations; the orchestrator reaches them through Leptos context, provided
//! by the server's console router.
#![recursion_limit = "256"]

pub mod components;
pub mod error;
pub mod fns;
mod layout;
pub mod live;
pub mod model;
mod pages;
pub mod routes;
#[cfg(all(test, feature = "ssr"))]
mod test_support;
#[cfg(all(test, feature = "ssr"))]
mod tests;

use leptos::prelude::*;
use leptos_meta::{MetaTags, Title, provide_meta_context};
use leptos_router::components::Router;

pub use fns::list_environments;
pub use model::EnvironmentSummary;
pub use pages::EnvironmentsPage;

use components::Refresh;
use pages::{CheckEnvironment, KnownEnvironment};

/// Where the console lives on the server; every page and asset URL starts with it.
pub use api::console::BASE;
/// Folder of the built wasm, js and css inside the site directory (served as `/console/pkg`).
pub const PKG_DIR: &str = "pkg";
/// URL prefix of the server functions (each has a fixed endpoint under it).
pub const SERVER_FN_PREFIX: &str = "/console/fn";

/// The URLs of the console's built files as the server serves them. Their names carry a hash of
/// their content (`pkg/console.<hash>.wasm`, see `scripts/build-console.sh`), so browsers may
/// keep them forever and a page never pairs a new script with an old wasm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assets {
    pub js: String,
    pub wasm: String,
    pub css: String,
}

/// The HTML document around the app, rendered on the server. Without built assets (a server
/// compiled before `scripts/build-console.sh` ran) the pages still render, with a notice saying
/// how to get the scripts and styles.
pub fn shell(assets: Option<Assets>) -> impl IntoView {
    let head = assets.clone().map(|a| {
        // What Leptos' HydrationScripts does, with the hashed names: fetch the wasm while the
        // script module loads, then hydrate the server-rendered body.
        let hydrate = format!(
            "import({js:?}).then(m => m.default({{module_or_path: {wasm:?}}}).then(() => m.hydrate()));",
            js = a.js,
            wasm = a.wasm
        );
        view! {
            <link rel="stylesheet" href=a.css/>
            <link rel="modulepreload" href=a.js/>
            <link rel="preload" href=a.wasm r#as="fetch" r#type="application/wasm" crossorigin=""/>
            <script type="module">{hydrate}</script>
        }
    });
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <script>{live::THEME_SCRIPT}</script>
                <link rel="icon" type="image/svg+xml" href="/console/favicon.svg"/>
                {head}
                <MetaTags/>
            </head>
            <body>
                <App/>
                // After the app: hydration starts at the body's first node, which must be the
                // app's (an absent notice still renders a placeholder).
                {assets.is_none().then(|| view! {
                    <p class="banner banner-warning" id="console-not-built">
                        "This server was built without the console's scripts and styles. Build them with "
                        <code>"scripts/build-console.sh"</code>
                        " and rebuild the server (they are embedded), or start it with "
                        <code>"--console-path $CARGO_TARGET_DIR/site"</code> "."
                    </p>
                })}
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    let refresh = Refresh(RwSignal::new(0));
    provide_context(refresh);
    provide_context(layout::NavOpen(RwSignal::new(false)));
    provide_context(components::Feedback::new());
    // Effects only run in the browser, so this flips once the page is hydrated (tests wait on it).
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    view! {
        <Title formatter=|page: String| format!("{page} · Inmanta")/>
        <Router base=BASE>
            <div class="layout" data-hydrated=move || hydrated.get().to_string()>
                <CheckEnvironment>
                <a class="skip-link" href="#main">"Skip to content"</a>
                <layout::Header/>
                <components::FeedbackLayer/>
                <div class="frame">
                    <layout::Sidebar/>
                    <main class="content" id="main">
                        <layout::HaltedBanner/>
                        <KnownEnvironment>
                        <routes::PageRoutes/>
                        </KnownEnvironment>
                    </main>
                </div>
                </CheckEnvironment>
            </div>
        </Router>
    }
}
