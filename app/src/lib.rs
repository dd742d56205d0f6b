//! The web console: Leptos pages, components and server functions.
//!
//! The server renders every page (`ssr` feature) and the browser hydrates it from the wasm
//! module built from `frontend` (`hydrate` feature). Server functions run on the server only and
//! call the orchestrator's services; the orchestrator reaches them through Leptos context, provided
//! by the server's console router.
#![recursion_limit = "256"]

pub mod components;
pub mod fns;
mod layout;
pub mod live;
pub mod model;
mod pages;

use leptos::prelude::*;
use leptos_meta::{MetaTags, Title, provide_meta_context};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::path;

pub use fns::list_environments;
pub use model::EnvironmentSummary;

use components::{Empty, ErrorBox, Refresh};

/// Where the console lives on the server; every page and asset URL starts with it.
pub const BASE: &str = "/console";
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
                        <Routes fallback=NotFound>
                            <Route path=path!("") view=EnvironmentsPage/>
                            <Route path=path!("/environment/create") view=pages::CreateEnvironmentPage/>
                            <Route path=path!("/projects") view=pages::ProjectsPage/>
                            <Route path=path!("/dashboard") view=pages::DashboardPage/>
                            <Route path=path!("/settings") view=pages::SettingsPage/>
                            <Route path=path!("/desiredstate") view=pages::DesiredStatePage/>
                            <Route path=path!("/desiredstate/version") view=pages::VersionPage/>
                            <Route path=path!("/desiredstate/resource") view=pages::VersionResourcePage/>
                            <Route path=path!("/desiredstate/compare") view=pages::ComparePage/>
                            <Route
                                path=path!("/desiredstate/:version/compliancecheck")
                                view=pages::ComplianceCheckPage
                            />
                            <Route path=path!("/compilereports") view=pages::CompileReportsPage/>
                            <Route path=path!("/compilereports/:id") view=pages::CompileDetailsPage/>
                            <Route path=path!("/status") view=pages::StatusPage/>
                            <Route path=path!("/users") view=pages::UsersPage/>
                            <Route path=path!("/resources") view=pages::ResourcesPage/>
                            <Route path=path!("/resources/details") view=pages::ResourceDetailsPage/>
                            <Route path=path!("/resources/graph") view=pages::GraphPage/>
                            <Route path=path!("/agents") view=pages::AgentsPage/>
                            <Route path=path!("/parameters") view=pages::ParametersPage/>
                            <Route path=path!("/facts") view=pages::FactsPage/>
                            <Route path=path!("/notificationcenter") view=pages::NotificationsPage/>
                        </Routes>
                        </KnownEnvironment>
                    </main>
                </div>
                </CheckEnvironment>
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

/// Checks once per page whether `?env=` names an environment the caller may read, for the page
/// ([`KnownEnvironment`]) and the header and sidebar (which ask nothing about an unknown one).
#[component]
fn CheckEnvironment(children: Children) -> impl IntoView {
    let env = components::env();
    let known = Resource::new(
        move || env.get(),
        |env| async move { if env.is_empty() { Ok(true) } else { fns::environment_exists(env).await } },
    );
    provide_context(components::EnvKnown(known));
    children()
}

/// The page, unless `?env=` names no environment the caller may read: then the console's 404 page
/// for environments (HTTP 404 on the server-rendered page), never an error per panel.
#[component]
fn KnownEnvironment(children: ChildrenFn) -> impl IntoView {
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

/// Lists every environment with its project.
#[component]
pub fn EnvironmentsPage() -> impl IntoView {
    let refresh = Refresh::get();
    let environments = Resource::new(move || refresh.tick(), |_| list_environments());
    view! {
        <Title text="Environments"/>
        <section class="page">
            <div class="page-header">
                <h1>"Environments"</h1>
                <a class="button button-secondary" href=format!("{BASE}/environment/create")>"Create environment"</a>
                <button id="reload" class="button" type="button" on:click=move |_| environments.refetch()>
                    "Reload"
                </button>
            </div>
            <Transition fallback=|| view! { <p class="muted">"Loading environments…"</p> }>
                {move || Suspend::new(async move {
                    match environments.await {
                        Ok(list) if list.is_empty() => EmptyEnvironments().into_any(),
                        Ok(list) => view! { <EnvironmentTable environments=list/> }.into_any(),
                        Err(error) => {
                            view! { <ErrorBox title="The environments could not be loaded" error=error.to_string()/> }
                                .into_any()
                        }
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
                                    <a href=components::env_link("dashboard", &env.id)>{env.name}</a>
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
        <div id="no-environments">
            <Empty title="No environments yet">
                <p>
                    <a href=format!("{BASE}/environment/create")>"Create an environment"</a> " here, with "
                    <code>"inmanta environment create -n NAME -p PROJECT"</code> ", or through the API ("
                    <code>"PUT /api/v2/environment"</code> ")."
                </p>
            </Empty>
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
        let context = move || {
            if let Some(o) = orchestrator.clone() {
                provide_context(o);
            }
            provide_context(orchestrator::auth::Principal::Unrestricted);
        };
        let page = leptos_axum::render_app_async_with_context(context.clone(), move || shell(Some(test_assets())));
        let page = axum::routing::get(move |req: Request<Body>| page(req));
        Router::new().route("/console", page.clone()).route("/console/{*path}", page).route(
            "/console/fn/{*name}",
            axum::routing::post(move |req: Request<Body>| leptos_axum::handle_server_fns_with_context(context, req)),
        )
    }

    fn test_assets() -> Assets {
        Assets {
            js: "/console/pkg/console.0123.js".into(),
            wasm: "/console/pkg/console.0123.wasm".into(),
            css: "/console/pkg/console.0123.css".into(),
        }
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

    /// An environment with `n` NullResources in version 1 (released) and a changed copy in
    /// version 2 (not released: auto_deploy is off).
    async fn environment_with_versions(o: &orchestrator::Orchestrator, n: usize) -> uuid::Uuid {
        let project = o.create_project("infra", None).await.unwrap();
        let env = o
            .create_environment(api::environment::EnvironmentCreate {
                project_id: project.id,
                name: "production".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .id;
        o.set_environment_setting(env, "auto_deploy", &serde_json::json!(false)).await.unwrap();
        for (version, value) in [(1, "old"), (2, "new")] {
            let v = o.reserve_version(env).await.unwrap();
            assert_eq!(v, version);
            let resources = (0..n)
                .map(|i| {
                    let value = if i == 0 { value } else { "" };
                    let requires: Vec<String> =
                        if i > 0 { vec![format!("std::testing::NullResource[agent1,name=n0],v={v}")] } else { vec![] };
                    serde_json::json!({
                        "id": format!("std::testing::NullResource[agent1,name=n{i}],v={v}"),
                        "name": format!("n{i}"), "agentname": "agent1", "fail": false, "value": value,
                        "int_value": 0, "purged": false, "send_event": true, "receive_events": true,
                        "requires": requires,
                    })
                    .as_object()
                    .unwrap()
                    .clone()
                })
                .collect();
            o.put_version(env, api::version::PutVersion { version: v, resources, ..Default::default() }).await.unwrap();
        }
        o.release_version(env, 1).await.unwrap();
        env
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
        assert!(html.contains(r#"import("/console/pkg/console.0123.js")"#), "{html}");
        assert!(html.contains(r#"href="/console/pkg/console.0123.css""#), "{html}");
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

    #[tokio::test]
    async fn environment_pages_render_with_their_data() {
        let (_dir, o) = orchestrator_with(&[]).await;
        let env = environment_with_versions(&o, 3).await;
        let router = router(Some(o));

        let (status, html) = get(router.clone(), &format!("/console/dashboard?env={env}")).await;
        assert_eq!(status, StatusCode::OK);
        for needle in
            ["<title>Dashboard · Inmanta</title>", "deploy-bar", "of 3 resources", "Latest versions", "candidate"]
        {
            assert!(html.contains(needle), "{needle} missing in {html}");
        }
        // The shell: sidebar, switcher with the current environment, bell.
        for needle in ["Desired State", "infra / production", "notification-bell", "halt-toggle", "theme-toggle"] {
            assert!(html.contains(needle), "{needle} missing in {html}");
        }

        let (_, html) = get(router.clone(), &format!("/console/desiredstate?env={env}")).await;
        assert!(html.contains(r#"data-version="1""#) && html.contains(r#"data-version="2""#), "{html}");
        assert!(html.contains("Promote"), "{html}");

        let (_, html) = get(router.clone(), &format!("/console/desiredstate/version?env={env}&v=2")).await;
        assert!(html.contains("std::testing::NullResource[agent1,name=n2]"), "{html}");

        let (_, html) = get(router.clone(), &format!("/console/desiredstate/compare?env={env}&from=1&to=2")).await;
        assert!(html.contains("0 added, 1 modified, 0 deleted"), "{html}");
        assert!(html.contains(r#"data-attribute="value""#), "{html}");

        let (_, html) = get(router.clone(), &format!("/console/resources?env={env}&sort=resource_id_value.asc")).await;
        assert!(html.contains("0 deploying / 3 resources"), "{html}");
        let rows: Vec<usize> =
            (0..3).map(|i| html.find(&format!("NullResource[agent1,name=n{i}]")).expect("row")).collect();
        assert!(rows.windows(2).all(|w| w[0] < w[1]), "sorted by value: {html}");
        assert!(html.contains(r#"id="deploy""#) && html.contains(r#"id="repair""#), "{html}");

        let (_, html) =
            get(router.clone(), &format!("/console/resources?env={env}&filter.resource_id_value=n1&limit=50")).await;
        assert!(html.contains("name=n1]") && !html.contains("name=n2]\""), "{html}");
        assert!(html.contains("1–1 of 1"), "{html}");

        let rid = "std::testing::NullResource%5Bagent1%2Cname%3Dn1%5D";
        let (_, html) =
            get(router.clone(), &format!("/console/resources/details?env={env}&rid={rid}&tab=requires")).await;
        assert!(html.contains("std::testing::NullResource[agent1,name=n0]"), "{html}");

        let (_, html) = get(router.clone(), &format!("/console/agents?env={env}")).await;
        assert!(html.contains(r#"data-agent="agent1""#) && html.contains("Pause"), "{html}");

        let (_, html) = get(router.clone(), &format!("/console/settings?env={env}")).await;
        assert!(html.contains("Type <code>production</code> to confirm") || html.contains("to confirm"), "{html}");
        assert!(html.contains(r#"id="tab-tokens""#), "{html}");
        let (_, html) = get(router.clone(), &format!("/console/settings?env={env}&tab=configuration")).await;
        assert!(html.contains(r#"data-setting="auto_deploy""#), "{html}");
        let (_, html) = get(router.clone(), &format!("/console/settings?env={env}&tab=tokens")).await;
        assert!(html.contains("No tokens yet") && html.contains("Generate token"), "{html}");
        let (_, html) = get(router.clone(), "/console/users").await;
        assert!(html.contains("Add user") && html.contains("12 to 128 characters"), "{html}");

        let (_, html) = get(router.clone(), &format!("/console/resources/graph?env={env}")).await;
        assert!(html.contains(r#"data-id="std::testing::NullResource[agent1,name=n2]""#), "{html}");
        assert_eq!(html.matches("class=\"edge ").count(), 2, "{html}");

        for page in ["parameters", "facts", "notificationcenter"] {
            let (status, html) = get(router.clone(), &format!("/console/{page}?env={env}")).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            assert!(html.contains("No "), "{page}: empty state missing in {html}");
        }
    }

    /// A failed compile (Init passed, the clone failed, one compile error) and a queued one.
    async fn compiles(o: &orchestrator::Orchestrator, env: uuid::Uuid) -> (uuid::Uuid, uuid::Uuid) {
        use orchestrator::compiles::{CompileOutcome, CompileRequest, StageResult};
        let request = |message: &str, vars: &[(&str, &str)]| CompileRequest {
            metadata: serde_json::json!({"type": "api", "message": message}),
            requested_environment_variables: vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Default::default()
        };
        let failed = o.request_compile(env, request("first try", &[("DEBUG", "1")])).await.unwrap().id.unwrap();
        assert!(o.start_compile(failed, std::time::Duration::from_secs(30)).await.unwrap());
        let init = o.begin_compile_stage(env, failed, "Init", "").await.unwrap();
        let result =
            StageResult { outstream: "Compile of environment".into(), errstream: String::new(), returncode: Some(0) };
        o.finish_compile_stage(init, &result).await.unwrap();
        let clone =
            o.begin_compile_stage(env, failed, "Cloning repository", "git clone /nowhere/repo project").await.unwrap();
        let result = StageResult {
            outstream: String::new(),
            errstream: "fatal: repository '/nowhere/repo' does not exist".into(),
            returncode: Some(128),
        };
        o.finish_compile_stage(clone, &result).await.unwrap();
        let data = serde_json::json!({"errors": [{"category": "parser", "type": "ParserError", "message": "unexpected token",
            "location": {"uri": "main.cf", "range": {"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 5}}}}]});
        let outcome = CompileOutcome {
            success: false,
            version: None,
            compile_data: Some(data),
            message: "stage Cloning repository failed".into(),
        };
        o.finish_compile(env, failed, &outcome).await.unwrap();
        let queued = o.request_compile(env, request("second try", &[])).await.unwrap().id.unwrap();
        (failed, queued)
    }

    #[tokio::test]
    async fn compile_pages_show_reports_stages_and_errors() {
        let (_dir, o) = orchestrator_with(&[]).await;
        let env = environment_with_versions(&o, 2).await;
        let (failed, queued) = compiles(&o, env).await;
        let router = router(Some(o.clone()));

        let (status, html) = get(router.clone(), &format!("/console/compilereports?env={env}")).await;
        assert_eq!(status, StatusCode::OK);
        for needle in [
            "<title>Compile Reports · Inmanta</title>",
            &format!(r#"data-id="{failed}" data-status="failed""#),
            &format!(r#"data-id="{queued}" data-status="queued""#),
            "first try",
            "second try",
            "Show details",
            r#"id="recompile-menu""#,
            &format!("/console/compilereports/{failed}?env={env}"),
            "Compile Reports</a>",
        ] {
            assert!(html.contains(needle), "{needle} missing in {html}");
        }
        assert!(!html.contains("Server compiles are off"), "{html}");
        // Newest first.
        assert!(html.find(&queued.to_string()).unwrap() < html.find(&failed.to_string()).unwrap(), "{html}");

        let (_, html) = get(router.clone(), &format!("/console/compilereports?env={env}&filter.status=failed")).await;
        assert!(html.contains(&failed.to_string()) && !html.contains(&queued.to_string()), "{html}");
        let (_, html) = get(router.clone(), &format!("/console/compilereports?env={env}&filter.status=success")).await;
        assert!(html.contains("No compile reports match the filter") && html.contains("Clear the filter"), "{html}");

        let (status, html) = get(router.clone(), &format!("/console/compilereports/{failed}?env={env}")).await;
        assert_eq!(status, StatusCode::OK);
        for needle in [
            "Requested",
            "Started",
            "Completed",
            r#"data-stage="Init""#,
            "git clone /nowhere/repo project",
            "fatal: repository",
            "✕ 128",
            "ParserError",
            "unexpected token",
            "main.cf:3",
            "DEBUG",
            "stage Cloning repository failed",
            "none produced",
        ] {
            assert!(html.contains(needle), "{needle} missing in {html}");
        }
        // The failed stage is open, the one that passed is folded.
        assert!(html.contains(r#"data-stage="Cloning repository" open"#), "{html}");
        assert!(!html.contains(r#"data-stage="Init" open"#), "{html}");

        let (_, html) = get(router.clone(), &format!("/console/compilereports/{queued}?env={env}")).await;
        assert!(html.contains("waiting in the queue"), "{html}");
        let (_, html) =
            get(router.clone(), &format!("/console/compilereports/{}?env={env}", uuid::Uuid::new_v4())).await;
        assert!(html.contains("The compile could not be loaded") && html.contains("does not exist"), "{html}");

        let (_, html) = get(router.clone(), &format!("/console/dashboard?env={env}")).await;
        assert!(html.contains("Latest compile reports") && html.contains("second try"), "{html}");
        assert!(html.contains(r#"data-status="queued""#) && html.contains(r#"data-status="failed""#), "{html}");

        // The failure's notification opens the details in this environment.
        let (_, html) = get(router.clone(), &format!("/console/notificationcenter?env={env}")).await;
        assert!(html.contains(&format!(r#"href="/console/compilereports/{failed}?env={env}""#)), "{html}");

        o.set_environment_setting(env, "server_compile", &serde_json::json!(false)).await.unwrap();
        let (_, html) = get(router.clone(), &format!("/console/compilereports?env={env}")).await;
        assert!(
            html.contains("Server compiles are off") && html.contains(r#"aria-describedby="recompile-hint""#),
            "{html}"
        );
    }

    #[tokio::test]
    async fn compliance_check_renders_dry_run_reports_with_progress() {
        let (_dir, o) = orchestrator_with(&[]).await;
        let env = environment_with_versions(&o, 3).await;
        let router = router(Some(o.clone()));

        let (_, html) = get(router.clone(), &format!("/console/desiredstate?env={env}")).await;
        assert!(html.contains(&format!("/console/desiredstate/2/compliancecheck?env={env}")), "{html}");
        assert!(html.contains("Compare with current state"), "{html}");

        let (status, html) = get(router.clone(), &format!("/console/desiredstate/2/compliancecheck?env={env}")).await;
        assert_eq!(status, StatusCode::OK);
        assert!(html.contains("No dry runs of this version yet") && html.contains("Perform dry run"), "{html}");

        let (older, _) = o.create_dryrun(env, 2).await.unwrap();
        let (run, _) = o.create_dryrun(env, 2).await.unwrap();
        let changes = serde_json::json!({
            "value": {"current": "old", "desired": "new"},
            "content": {"current": "line 1\nold line\n", "desired": "line 1\nnew line\n"},
        });
        let rid = |i: usize| format!("std::testing::NullResource[agent1,name=n{i}],v=2");
        o.dryrun_update(env, run.id, &rid(0), api::ResourceDiffStatus::Modified, changes.as_object().unwrap())
            .await
            .unwrap();
        o.dryrun_update(env, run.id, &rid(1), api::ResourceDiffStatus::Unmodified, &serde_json::Map::new())
            .await
            .unwrap();

        let (_, html) = get(router.clone(), &format!("/console/desiredstate/2/compliancecheck?env={env}")).await;
        for needle in [
            "<title>Compliance check of version 2 · Inmanta</title>",
            "2 of 3 resources checked",
            "2 resources reported: 1 unmodified, 1 modified",
            r#"data-id="std::testing::NullResource[agent1,name=n0]""#,
            r#"data-attribute="value""#,
            r#"<span class="diff-del">-old line"#,
            r#"<span class="diff-add">+new line"#,
            &format!(r#"data-report="{}""#, older.id),
        ] {
            assert!(html.contains(needle), "{needle} missing in {html}");
        }
        // The newest report is the one shown: its chip is the current one.
        let chip = |id: uuid::Uuid| {
            let end = html.find(&format!(r#"data-report="{id}""#)).expect("chip");
            let start = html[..end].rfind("<a ").unwrap();
            html[start..end].to_string()
        };
        assert!(chip(run.id).contains(r#"aria-current="true""#), "{html}");
        assert!(!chip(older.id).contains("aria-current"), "{html}");

        let (_, html) =
            get(router.clone(), &format!("/console/desiredstate/2/compliancecheck?env={env}&report={}", older.id))
                .await;
        assert!(html.contains("0 of 3 resources checked") && html.contains("No differences reported so far"), "{html}");
    }

    #[tokio::test]
    async fn status_page_shows_the_server_and_its_components() {
        let (_dir, o) = orchestrator_with(&[]).await;
        let env = environment_with_versions(&o, 1).await;
        compiles(&o, env).await;
        let (status, html) = get(router(Some(o)), &format!("/console/status?env={env}")).await;
        assert_eq!(status, StatusCode::OK);
        for needle in [
            "<title>Server Status · Inmanta</title>",
            "Inmanta Service Orchestrator",
            r#"id="status-database">sqlite<"#,
            r#"data-component="core.server""#,
            r#"data-component="core.database""#,
            r#"data-component="core.scheduler""#,
            r#"data-component="core.compiler""#,
            "no scheduler runs in this process",
            "Server Status</a>",
        ] {
            assert!(html.contains(needle), "{needle} missing in {html}");
        }
    }

    #[tokio::test]
    async fn compile_and_dry_run_server_functions() {
        let _ = any_spawner::Executor::init_tokio();
        let (_dir, o) = orchestrator_with(&[]).await;
        let env = environment_with_versions(&o, 1).await;
        let owner = Owner::new();
        owner.set();
        provide_context(o.clone());
        provide_context(orchestrator::auth::Principal::Unrestricted);
        let e = env.to_string();
        assert_eq!(fns::recompile(e.clone(), true).await.unwrap(), "Compile queued.");
        assert_eq!(fns::recompile(e.clone(), true).await.unwrap(), "Joined a compile that was already waiting.");
        let page = fns::compile_reports(model::TableQuery { env: e.clone(), ..Default::default() }).await.unwrap();
        assert_eq!(page.rows.len(), 1);
        assert_eq!((page.rows[0].status.as_str(), page.rows[0].force_update), ("queued", true));
        assert!(page.rows[0].message.contains("web console"), "{:?}", page.rows[0]);
        let mut bad = model::TableQuery { env: e.clone(), ..Default::default() };
        bad.filters.insert("status".into(), "sleeping".into());
        assert!(fns::compile_reports(bad).await.unwrap_err().to_string().contains("queued, running"));
        o.set_environment_setting(env, "server_compile", &serde_json::json!(false)).await.unwrap();
        assert!(!fns::server_compile_enabled(e.clone()).await.unwrap());
        let err = fns::recompile(e.clone(), false).await.unwrap_err();
        assert!(err.to_string().contains("server_compile"), "{err}");
        // No scheduler in this test: a dry run explains itself.
        let err = fns::dry_run(e.clone(), 1).await.unwrap_err();
        assert!(err.to_string().contains("scheduler"), "{err}");
        let status = fns::load_server_status().await.unwrap();
        assert_eq!((status.database.as_str(), status.database_status.as_str()), ("sqlite", "OK"));
        assert_eq!(status.status, "Warning", "no scheduler: {status:?}");
    }

    #[tokio::test]
    async fn environment_pages_without_environment_say_what_to_do() {
        let (_dir, o) = orchestrator_with(&[]).await;
        let (status, html) = get(router(Some(o)), "/console/resources").await;
        assert_eq!(status, StatusCode::OK);
        assert!(html.contains("No environment selected"), "{html}");
    }

    #[tokio::test]
    async fn server_functions_act_on_the_orchestrator() {
        let _ = any_spawner::Executor::init_tokio();
        let (_dir, o) = orchestrator_with(&[]).await;
        let env = environment_with_versions(&o, 2).await;
        let owner = Owner::new();
        owner.set();
        provide_context(o.clone());
        provide_context(orchestrator::auth::Principal::Unrestricted);
        let e = env.to_string();
        fns::version_action(e.clone(), 2, false).await.unwrap();
        assert!(o.get_version_model(env, 2).await.unwrap().released);
        fns::set_halted(e.clone(), true).await.unwrap();
        assert!(fns::environment(e.clone()).await.unwrap().halted);
        fns::set_halted(e.clone(), false).await.unwrap();
        fns::save_setting(e.clone(), "autostart_agent_deploy_interval".into(), "120".into(), false).await.unwrap();
        let row =
            fns::settings(e.clone()).await.unwrap().into_iter().find(|r| r.name == "autostart_agent_deploy_interval");
        assert_eq!(row.map(|r| (r.value, r.is_default)), Some(("120".into(), false)));
        assert!(fns::save_setting(e.clone(), "auto_deploy".into(), "maybe".into(), false).await.is_err());
        fns::agent_action(e.clone(), "agent1".into(), "pause".into()).await.unwrap();
        let agents = fns::agents(model::TableQuery { env: e.clone(), ..Default::default() }).await.unwrap();
        assert_eq!(agents.rows[0].status, "paused");
        let err = fns::remove_environment(e.clone(), "wrong".into(), true).await.unwrap_err();
        assert!(err.to_string().contains("production"), "{err}");
        // No scheduler in this test: deploy explains itself.
        let err = fns::deploy(e.clone(), false, None).await.unwrap_err();
        assert!(err.to_string().contains("scheduler"), "{err}");
        let id = fns::create_environment(
            String::new(),
            "apps".into(),
            "dev".into(),
            String::new(),
            "main".into(),
            String::new(),
        )
        .await
        .unwrap();
        assert!(fns::list_environments().await.unwrap().iter().any(|x| x.id == id && x.project_name == "apps"));
        fns::remove_environment(e.clone(), "production".into(), true).await.unwrap();
        assert!(fns::environment(e).await.is_err());
    }

    /// Server functions check the signed-in user: a read-only user reads her environment, sees
    /// no other, and changes nothing; without a user nothing is served.
    #[tokio::test]
    async fn server_functions_check_the_signed_in_user() {
        let _ = any_spawner::Executor::init_tokio();
        let (_dir, o) = orchestrator_with(&[]).await;
        let env = environment_with_versions(&o, 1).await;
        let project = o.list_projects().await.unwrap()[0].id;
        let hidden = o
            .create_environment(api::environment::EnvironmentCreate {
                project_id: project,
                name: "hidden".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        let owner = Owner::new();
        owner.set();
        provide_context(o.clone());
        let e = env.to_string();
        let error = fns::versions(model::TableQuery { env: e.clone(), ..Default::default() }).await.unwrap_err();
        assert!(error.to_string().contains("not signed in"), "{error}");

        o.create_user("rita", "Rita-password-123", false, false).await.unwrap();
        o.assign_role("rita", env, "read-only").await.unwrap();
        let rita = o.user_record("rita").await.unwrap().unwrap();
        provide_context(rita.principal());
        let listed = fns::list_environments().await.unwrap();
        assert_eq!(listed.iter().map(|e| e.id.clone()).collect::<Vec<_>>(), vec![e.clone()]);
        assert!(fns::versions(model::TableQuery { env: e.clone(), ..Default::default() }).await.is_ok());
        let error = fns::set_halted(e.clone(), true).await.unwrap_err();
        assert!(error.to_string().contains("not allowed"), "{error}");
        assert!(!o.get_environment(env, Default::default()).await.unwrap().halted);
        let error = fns::environment(hidden.id.to_string()).await.unwrap_err();
        assert!(error.to_string().contains("no role"), "{error}");
    }

    /// Projects are managed by admins: a read-only user may list them but not create one.
    #[tokio::test]
    async fn projects_are_listed_for_all_and_managed_by_admins() {
        let _ = any_spawner::Executor::init_tokio();
        let (_dir, o) = orchestrator_with(&[]).await;
        let env = environment_with_versions(&o, 1).await;
        let owner = Owner::new();
        owner.set();
        provide_context(o.clone());
        o.create_user("rita", "Rita-password-123", false, false).await.unwrap();
        o.assign_role("rita", env, "read-only").await.unwrap();
        provide_context(o.user_record("rita").await.unwrap().unwrap().principal());
        assert_eq!(fns::list_projects().await.unwrap().len(), 1);
        let error = fns::create_project("extra".into()).await.unwrap_err();
        assert!(error.to_string().contains("only an admin"), "{error}");

        provide_context(orchestrator::auth::Principal::Unrestricted);
        fns::create_project("extra".into()).await.unwrap();
        let extra = fns::list_projects().await.unwrap().into_iter().find(|p| p.name == "extra").unwrap();
        fns::rename_project(extra.id.clone(), "renamed".into()).await.unwrap();
        let busy = fns::list_projects().await.unwrap().into_iter().find(|p| p.environments == 1).unwrap();
        let error = fns::delete_project(busy.id).await.unwrap_err();
        assert!(error.to_string().contains("delete them first"), "{error}");
        fns::delete_project(extra.id).await.unwrap();
        assert!(fns::list_projects().await.unwrap().iter().all(|p| p.name != "renamed"));

        let (status, html) = get(router(Some(o)), "/console/projects").await;
        assert_eq!(status, StatusCode::OK);
        assert!(html.contains(r#"id="projects""#) && html.contains("Create project"), "{html}");
    }

    /// An admin manages users and roles through the server functions; the last admin stays;
    /// a user who is not an admin is refused.
    #[tokio::test]
    async fn user_server_functions_are_for_admins() {
        let _ = any_spawner::Executor::init_tokio();
        let (_dir, o) = orchestrator_with(&[("infra", "production")]).await;
        let env = o.list_environments().await.unwrap()[0].id;
        let e = env.to_string();
        o.create_user("admin", "Admin-password-123", true, false).await.unwrap();
        let owner = Owner::new();
        owner.set();
        provide_context(o.clone());
        provide_context(o.user_record("admin").await.unwrap().unwrap().principal());

        let error = fns::add_user("rita".into(), "short".into(), false).await.unwrap_err();
        assert!(error.to_string().contains("12 to 128"), "{error}");
        fns::add_user("rita".into(), "Rita-password-123".into(), false).await.unwrap();
        fns::role_assignment("rita".into(), e.clone(), "noc".into(), true).await.unwrap();
        let view = fns::users().await.unwrap();
        assert_eq!(view.me.as_deref(), Some("admin"));
        assert!(view.roles.starts_with(&["read-only".to_string(), "noc".to_string()]), "{:?}", view.roles);
        let rita = view.users.iter().find(|u| u.username == "rita").unwrap();
        assert!(!rita.is_admin);
        assert_eq!(rita.roles.len(), 1);
        assert_eq!((rita.roles[0].env_name.as_str(), rita.roles[0].role.as_str()), ("infra / production", "noc"));
        fns::role_assignment("rita".into(), e.clone(), "noc".into(), false).await.unwrap();
        fns::role_assignment("rita".into(), e.clone(), "read-only".into(), true).await.unwrap();
        fns::set_user_password("rita".into(), "Other-password-456".into()).await.unwrap();
        assert!(o.verify_login("rita", "Other-password-456").await.unwrap().is_some());

        // The last admin stays one.
        let error = fns::set_admin("admin".into(), false).await.unwrap_err();
        assert!(error.to_string().contains("last admin"), "{error}");
        let error = fns::delete_user("admin".into(), "admin".into()).await.unwrap_err();
        assert!(error.to_string().contains("last admin"), "{error}");
        let error = fns::delete_user("rita".into(), "someone".into()).await.unwrap_err();
        assert!(error.to_string().contains("rita"), "{error}");

        // Rita is no admin: nothing of this is hers.
        provide_context(o.user_record("rita").await.unwrap().unwrap().principal());
        for error in [
            fns::users().await.unwrap_err(),
            fns::add_user("mallory".into(), "Mallory-password-1".into(), true).await.unwrap_err(),
            fns::set_admin("rita".into(), true).await.unwrap_err(),
            fns::role_assignment("rita".into(), e.clone(), "environment-admin".into(), true).await.unwrap_err(),
            fns::delete_user("admin".into(), "admin".into()).await.unwrap_err(),
        ] {
            assert!(error.to_string().contains("not allowed"), "{error}");
        }
        assert!(o.user_record("mallory").await.unwrap().is_none());

        provide_context(o.user_record("admin").await.unwrap().unwrap().principal());
        fns::set_admin("rita".into(), true).await.unwrap();
        fns::set_admin("admin".into(), false).await.unwrap();
        fns::delete_user("admin".into(), "admin".into()).await.unwrap();
        let names: Vec<String> = o.list_users().await.unwrap().into_iter().map(|u| u.user.username).collect();
        assert_eq!(names, vec!["rita".to_string()]);
    }

    /// A token generated on the settings page authenticates, is listed without its text, and is
    /// refused once revoked. Only environment expert admins (and admins) handle tokens.
    #[tokio::test]
    async fn token_server_functions_issue_list_and_revoke() {
        use orchestrator::auth::tokens::{Authenticator, Unauthenticated};
        let _ = any_spawner::Executor::init_tokio();
        let (_dir, o) = orchestrator_with(&[("infra", "production")]).await;
        let env = o.list_environments().await.unwrap()[0].id;
        let e = env.to_string();
        let authenticator = Authenticator::load(&o, 3600).await.unwrap();
        o.create_user("eve", "Eve-password-123", false, false).await.unwrap();
        o.assign_role("eve", env, "environment-expert-admin").await.unwrap();
        o.create_user("otto", "Otto-password-123", false, false).await.unwrap();
        o.assign_role("otto", env, "environment-admin").await.unwrap();
        let owner = Owner::new();
        owner.set();
        provide_context(o.clone());
        provide_context(authenticator.clone());
        provide_context(o.user_record("eve").await.unwrap().unwrap().principal());

        assert!(fns::tokens(e.clone()).await.unwrap().is_empty());
        let error = fns::generate_token(e.clone(), vec![], Some(7)).await.unwrap_err();
        assert!(error.to_string().contains("client type"), "{error}");
        let token = fns::generate_token(e.clone(), vec!["agent".into(), "api".into()], Some(7)).await.unwrap();
        let forever = fns::generate_token(e.clone(), vec!["compiler".into()], None).await.unwrap();
        assert_ne!(token, forever);
        match authenticator.authenticate(&o, &token).await.unwrap().unwrap() {
            orchestrator::auth::Principal::Token { environment, clients, .. } => {
                assert_eq!(environment, env);
                assert_eq!(clients, orchestrator::auth::Clients::API_AGENT);
            }
            other => panic!("not an environment token: {other:?}"),
        }
        let rows = fns::tokens(e.clone()).await.unwrap();
        assert_eq!(rows.len(), 2);
        let listed = serde_json::to_string(&rows).unwrap();
        assert!(!listed.contains(&token) && !listed.contains(&forever), "{listed}");
        let row = rows.iter().find(|r| r.client_types == ["api", "agent"]).unwrap();
        assert_eq!(row.created_by.as_deref(), Some("eve"));
        assert!(row.expires.is_some() && row.revoked.is_none(), "{row:?}");
        assert!(row.last_used.is_some(), "authenticating marks the token used: {row:?}");
        assert!(rows.iter().any(|r| r.client_types == ["compiler"] && r.expires.is_none()), "{rows:?}");

        fns::revoke_token(e.clone(), row.jti.clone()).await.unwrap();
        assert_eq!(authenticator.authenticate(&o, &token).await.unwrap(), Err(Unauthenticated::Revoked));
        let rows = fns::tokens(e.clone()).await.unwrap();
        assert!(rows.iter().find(|r| r.jti == row.jti).unwrap().revoked.is_some(), "{rows:?}");

        // An environment admin does not handle tokens.
        provide_context(o.user_record("otto").await.unwrap().unwrap().principal());
        for error in [
            fns::tokens(e.clone()).await.unwrap_err(),
            fns::generate_token(e.clone(), vec!["agent".into()], Some(7)).await.unwrap_err(),
            fns::revoke_token(e.clone(), rows[0].jti.clone()).await.unwrap_err(),
        ] {
            assert!(error.to_string().contains("not allowed"), "{error}");
        }
    }

    /// A thousand resources in long chains are laid out in bands that keep the frame's
    /// proportions, every node in its own place inside the picture.
    #[tokio::test]
    async fn the_graph_of_a_thousand_resources_keeps_its_proportions() {
        let _ = any_spawner::Executor::init_tokio();
        let (_dir, o) = orchestrator_with(&[("infra", "big")]).await;
        let env = o.list_environments().await.unwrap()[0].id;
        let version = o.reserve_version(env).await.unwrap();
        let id = |i: usize| format!("std::testing::NullResource[agent{},name=r{i}],v={version}", i / 100);
        let resources = (0..1000)
            .map(|i| {
                serde_json::json!({"id": id(i), "name": format!("r{i}"), "agentname": format!("agent{}", i / 100),
                    "fail": false, "value": "", "int_value": 0, "purged": false, "send_event": false,
                    "receive_events": false, "requires": if i % 100 > 0 { vec![id(i - 1)] } else { vec![] }})
                .as_object()
                .unwrap()
                .clone()
            })
            .collect();
        // auto_deploy (the default) releases it.
        o.put_version(env, api::version::PutVersion { version, resources, ..Default::default() }).await.unwrap();
        let owner = Owner::new();
        owner.set();
        provide_context(o.clone());
        provide_context(orchestrator::auth::Principal::Unrestricted);
        let graph = fns::resource_graph(env.to_string(), model::GraphFocus::default()).await.unwrap();
        assert_eq!((graph.nodes.len(), graph.edges.len()), (1000, 990));
        let ratio = graph.width / graph.height;
        assert!((1.0..3.0).contains(&ratio), "{} x {}", graph.width, graph.height);
        let mut places = std::collections::HashSet::new();
        for node in &graph.nodes {
            assert!(node.x >= 0.0 && node.x + fns::GRAPH_NODE_WIDTH <= graph.width, "{node:?}");
            assert!(node.y >= 0.0 && node.y + fns::GRAPH_NODE_HEIGHT <= graph.height, "{node:?}");
            assert!(places.insert((node.x as i64, node.y as i64)), "two nodes at {node:?}");
        }
    }
}
