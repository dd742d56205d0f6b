//! The web console: Leptos pages, components and server functions.
//!
//! The server renders every page (`ssr` feature) and the browser hydrates it from the wasm
//! module built from `frontend` (`hydrate` feature). Server functions run on the server only and
//! call the orchestrator's services; the orchestrator reaches them through Leptos context, provided
//! by the server's console router.

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::StaticSegment;
use leptos_router::components::{Route, Router, Routes};
use serde::{Deserialize, Serialize};

/// Where the console lives on the server; every page and asset URL starts with it.
pub const BASE: &str = "/console";
/// Name of the wasm-bindgen output (`pkg/console.js`, `pkg/console.wasm`, `pkg/console.css`).
pub const OUTPUT_NAME: &str = "console";
/// Folder of the built wasm, js and css inside the site directory (served as `/console/pkg`).
pub const PKG_DIR: &str = "pkg";
/// URL prefix of the server functions (each has a fixed endpoint under it).
pub const SERVER_FN_PREFIX: &str = "/console/fn";

/// The Leptos options the console is rendered with, for a site built into `site_root`.
pub fn options(site_root: &str) -> LeptosOptions {
    LeptosOptions::builder().output_name(OUTPUT_NAME).site_root(site_root).site_pkg_dir(PKG_DIR).build()
}

/// One row of the environments page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvironmentSummary {
    pub id: String,
    pub name: String,
    pub project_id: String,
    pub project_name: String,
    pub halted: bool,
}

/// Every environment, sorted by project name and environment name.
#[server(prefix = "/console/fn", endpoint = "list_environments")]
pub async fn list_environments() -> Result<Vec<EnvironmentSummary>, ServerFnError> {
    let orchestrator = use_context::<orchestrator::Orchestrator>()
        .ok_or_else(|| ServerFnError::new("the console is not connected to an orchestrator"))?;
    let projects = orchestrator.list_projects().await.map_err(|e| ServerFnError::new(e.to_string()))?;
    let environments = orchestrator.list_environments().await.map_err(|e| ServerFnError::new(e.to_string()))?;
    Ok(environments
        .into_iter()
        .map(|env| EnvironmentSummary {
            project_name: projects.iter().find(|p| p.id == env.project_id).map(|p| p.name.clone()).unwrap_or_default(),
            id: env.id.to_string(),
            name: env.name,
            project_id: env.project_id.to_string(),
            halted: env.halted,
        })
        .collect())
}

/// The HTML document around the app, rendered on the server.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <link rel="icon" type="image/svg+xml" href="/console/favicon.svg"/>
                <AutoReload options=options.clone()/>
                <HydrationScripts options root=BASE/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    // Effects only run in the browser, so this flips once the page is hydrated (tests wait on it).
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    view! {
        <Stylesheet id="console" href="/console/pkg/console.css"/>
        <Title formatter=|page: String| format!("{page} · Inmanta")/>
        <Router base=BASE>
            <div class="layout" data-hydrated=move || hydrated.get().to_string()>
                <header class="topbar">
                    <a class="brand" href=BASE>
                        <img src="/console/favicon.svg" alt="" width="24" height="24"/>
                        <span>"Inmanta"</span>
                    </a>
                    <nav class="topnav" aria-label="Main">
                        <a href=BASE>"Environments"</a>
                    </nav>
                </header>
                <main class="content">
                    <Routes fallback=NotFound>
                        <Route path=StaticSegment("") view=EnvironmentsPage/>
                    </Routes>
                </main>
            </div>
        </Router>
    }
}

#[component]
fn NotFound() -> impl IntoView {
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

/// Lists every environment with its project.
#[component]
pub fn EnvironmentsPage() -> impl IntoView {
    let environments = Resource::new(|| (), |_| list_environments());
    view! {
        <Title text="Environments"/>
        <section class="page">
            <div class="page-header">
                <h1>"Environments"</h1>
                <button id="reload" class="button" type="button" on:click=move |_| environments.refetch()>
                    "Reload"
                </button>
            </div>
            <Transition fallback=|| view! { <p class="muted">"Loading environments…"</p> }>
                {move || Suspend::new(async move {
                    match environments.await {
                        Ok(list) if list.is_empty() => EmptyEnvironments().into_any(),
                        Ok(list) => view! { <EnvironmentTable environments=list/> }.into_any(),
                        Err(error) => view! { <ErrorBox error=error.to_string()/> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
fn EnvironmentTable(environments: Vec<EnvironmentSummary>) -> impl IntoView {
    view! {
        <table class="table" id="environments">
            <thead>
                <tr>
                    <th scope="col">"Name"</th>
                    <th scope="col">"Project"</th>
                    <th scope="col">"Project id"</th>
                    <th scope="col">"Id"</th>
                </tr>
            </thead>
            <tbody>
                {environments
                    .into_iter()
                    .map(|env| {
                        let id = env.id.clone();
                        view! {
                            <tr data-id=id>
                                <td class="name">
                                    {env.name}
                                    {env.halted.then(|| view! { <span class="badge badge-warning">"halted"</span> })}
                                </td>
                                <td>{env.project_name}</td>
                                <td class="mono">{env.project_id}</td>
                                <td class="mono">{env.id}</td>
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}

#[component]
fn EmptyEnvironments() -> impl IntoView {
    view! {
        <div class="empty" id="no-environments">
            <p class="empty-title">"No environments yet"</p>
            <p>
                "Create one with " <code>"inmanta environment create -n NAME -p PROJECT"</code>
                ", or through the API (" <code>"PUT /api/v2/environment"</code> ")."
            </p>
        </div>
    }
}

#[component]
fn ErrorBox(error: String) -> impl IntoView {
    view! {
        <div class="error" role="alert">
            <p class="error-title">"The environments could not be loaded"</p>
            <p class="error-detail">{error}</p>
        </div>
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    /// The console's page and server-function routes, as the server mounts them.
    fn router(orchestrator: Option<orchestrator::Orchestrator>) -> Router {
        let _ = any_spawner::Executor::init_tokio();
        let options = options("site");
        let context = move || {
            if let Some(o) = orchestrator.clone() {
                provide_context(o);
            }
        };
        let page = leptos_axum::render_app_async_with_context(context.clone(), move || shell(options.clone()));
        Router::new().route("/console", axum::routing::get(move |req: Request<Body>| page(req))).route(
            "/console/fn/{*name}",
            axum::routing::post(move |req: Request<Body>| leptos_axum::handle_server_fns_with_context(context, req)),
        )
    }

    async fn orchestrator_with(envs: &[(&str, &str)]) -> (tempfile::TempDir, orchestrator::Orchestrator) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("inmanta.db").display());
        let o = orchestrator::Orchestrator::open(&url).await.unwrap();
        for (project, env) in envs {
            let project = match o.list_projects().await.unwrap().into_iter().find(|p| p.name == *project) {
                Some(p) => p,
                None => o.create_project(project, None).await.unwrap(),
            };
            o.create_environment(api::environment::EnvironmentCreate {
                project_id: project.id,
                name: env.to_string(),
                ..Default::default()
            })
            .await
            .unwrap();
        }
        (dir, o)
    }

    async fn get(router: Router, path: &str) -> (StatusCode, String) {
        let response = router.oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn page_lists_the_environments_of_the_orchestrator() {
        let (_dir, o) = orchestrator_with(&[("infra", "production"), ("infra", "staging"), ("apps", "dev")]).await;
        let ids: Vec<String> = o.list_environments().await.unwrap().iter().map(|e| e.id.to_string()).collect();
        let (status, html) = get(router(Some(o)), "/console").await;
        assert_eq!(status, StatusCode::OK);
        for needle in ["production", "staging", "dev", "infra", "apps", "<title>Environments · Inmanta</title>"] {
            assert!(html.contains(needle), "{needle} missing in {html}");
        }
        for id in ids {
            assert!(html.contains(&id), "{id} missing in {html}");
        }
        assert!(html.contains("/console/pkg/console.js"), "{html}");
        assert!(html.contains("/console/pkg/console.css"), "{html}");
        assert!(!html.contains("No environments yet"), "{html}");
        // Sorted by project name, then environment name.
        let order: Vec<usize> = ["dev", "production", "staging"].iter().map(|n| html.find(n).unwrap()).collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{html}");
    }

    #[tokio::test]
    async fn page_without_environments_says_how_to_create_one() {
        let (_dir, o) = orchestrator_with(&[]).await;
        let (status, html) = get(router(Some(o)), "/console").await;
        assert_eq!(status, StatusCode::OK);
        assert!(html.contains("No environments yet"), "{html}");
        assert!(html.contains("inmanta environment create"), "{html}");
    }

    #[tokio::test]
    async fn page_shows_the_error_when_the_orchestrator_is_missing() {
        let (status, html) = get(router(None), "/console").await;
        assert_eq!(status, StatusCode::OK);
        assert!(html.contains("The environments could not be loaded"), "{html}");
        assert!(html.contains("not connected to an orchestrator"), "{html}");
    }

    #[tokio::test]
    async fn server_function_answers_on_its_fixed_endpoint() {
        let (_dir, o) = orchestrator_with(&[("infra", "production")]).await;
        let request = Request::post("/console/fn/list_environments")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::empty())
            .unwrap();
        let response = router(Some(o)).oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let rows: Vec<EnvironmentSummary> = serde_json::from_slice(&body).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!((rows[0].name.as_str(), rows[0].project_name.as_str()), ("production", "infra"));
    }
}
