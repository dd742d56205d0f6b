//! The web console under `/console`: server-rendered Leptos pages (hydrated in the browser by the
//! console's wasm), their static assets and the console's server functions.
//!
//! Routes:
//! - `/console`, `/console/*`: pages, rendered on the server (the whole page, data included),
//!   gzip-compressed when the browser accepts it, `Cache-Control: no-cache`; unknown paths answer
//!   the console's own 404 page;
//! - `/console/pkg/*`: the wasm, its JS glue and the stylesheet under content-hashed names,
//!   pre-compressed and cached for good (see console_assets.rs);
//! - `/console/favicon.svg` (and the other files of `public/`);
//! - `/console/fn/*`: server functions (each has a fixed endpoint, see the `app` crate);
//! - `/console/events?env=<id>`: Server-Sent Events of one environment (the orchestrator's
//!   events, as `{"kind": ..., "env": ...}`), followed by every open page to refetch what it shows;
//! - `/console/login`, `/console/password`, `/console/logout`: signing in (see console_auth.rs);
//!   every other page, server function and the event stream need a signed-in session;
//! - `/`, `/dashboard` and `/console/`: redirect to `/console`.
//!
//! The assets are embedded in the binary when the console was built before the server
//! (server/build.rs); `--console-path DIR` serves a built site from disk instead. Without either
//! the pages still render (without interactivity) with a notice saying how to build them.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, Query};
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect};
use axum::routing::{get, post};
use axum::{Extension, Router};
use leptos::prelude::provide_context;
use orchestrator::auth::{Access, Clients, Principal};
use tower_http::compression::CompressionLayer;

use crate::console_assets::Site;
use service::console_auth::{self, ConsoleAuth};
use service::security::Security;

pub fn router(
    orchestrator: orchestrator::Orchestrator,
    schedulers: Option<Arc<orchestrator::scheduler::Schedulers>>,
    security: Arc<Security>,
    site_root: Option<PathBuf>,
) -> axum::Router {
    let site = choose_site(site_root).map(Arc::new);
    match &site {
        Some(site) => tracing::info!(origin = %site.origin, "console assets"),
        None => tracing::warn!(
            "console assets not built: pages render without interactivity (build them with scripts/build-console.sh \
             and rebuild the server, or point --console-path at the built site)"
        ),
    }
    let assets = site.as_ref().map(|s| s.assets.clone());
    let graphiql_built = site.as_ref().is_some_and(|s| s.has(service::graphql::page::BUNDLE));
    // Server-side rendering spawns Leptos tasks: run them on the server's tokio runtime.
    let _ = any_spawner::Executor::init_tokio();
    let events_source = orchestrator.clone();
    let graphql_source = orchestrator.clone();
    let stylesheet = assets.as_ref().map(|a| a.css.clone());
    let auth = ConsoleAuth {
        orchestrator: orchestrator.clone(),
        security: security.clone(),
        stylesheet,
        oidc: security.oidc.clone(),
    };
    let sessions =
        service::sessions::layer(orchestrator.clone(), security.authenticator.login_expire, security.secure_cookies);
    // The settings page's tokens tab issues environment tokens with it.
    let authenticator = security.authenticator.clone();
    let context = move || {
        provide_context(orchestrator.clone());
        provide_context(authenticator.clone());
        if let Some(schedulers) = &schedulers {
            provide_context(schedulers.clone());
        }
    };

    let render = leptos_axum::render_app_async_with_context(context.clone(), move || app::shell(assets.clone()));
    let page = get(move |req: Request<Body>| async move {
        let mut response = render(req).await;
        // Pages show live data: always revalidate (the hashed assets they link to are cached).
        response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        response
    });
    let server_fn = move |req: Request<Body>| {
        let answer = leptos_axum::handle_server_fns_with_context(context.clone(), req);
        async move { answer.await.into_response() }
    };

    // Everything that shows or changes data goes through the session guard.
    let guarded = Router::new()
        .route(app::BASE, page.clone())
        .route(
            service::graphql::page::PATH,
            get(move |Query(q): Query<service::graphql::page::PageQuery>| async move {
                service::graphql::page::graphiql(graphiql_built, q.env.and_then(|e| e.parse().ok()))
            }),
        )
        .route("/console/{*path}", page)
        .route("/console/fn/{*name}", post(server_fn.clone()).get(server_fn))
        .route(
            service::graphql::page::ENDPOINT,
            post(move |Extension(caller): Extension<Principal>, body| {
                service::graphql::console_execute(graphql_source.clone(), caller, body)
            }),
        )
        .route(
            "/console/events",
            get(move |Extension(caller): Extension<Principal>, Query(q): Query<EventsQuery>| {
                events(events_source.clone(), caller, q.env)
            }),
        )
        .route_layer(axum::middleware::from_fn_with_state(auth.clone(), console_auth::guard));
    let sign_in = Router::new()
        .route(console_auth::LOGIN, get(console_auth::login_page).post(console_auth::login_submit))
        .route(console_auth::PASSWORD, get(console_auth::password_page).post(console_auth::password_submit))
        .route(console_auth::LOGOUT, post(console_auth::logout))
        .route(service::oidc::START, get(service::oidc::start))
        .route(service::oidc::CALLBACK, get(service::oidc::callback))
        // A sign-in form is a user name and passwords: nobody buffers megabytes before login.
        .layer(axum::extract::DefaultBodyLimit::max(service::rest::limits::SMALL_BODY))
        .with_state(auth);
    let mut router = Router::new()
        .route("/", get(|| async { Redirect::temporary(app::BASE) }))
        .route("/dashboard", get(|| async { Redirect::temporary(app::BASE) }))
        .route("/console/", get(|| async { Redirect::temporary(app::BASE) }))
        .merge(guarded.layer(axum::extract::DefaultBodyLimit::max(service::rest::limits::NORMAL_BODY)))
        .merge(sign_in)
        .layer(sessions)
        // HTML and server-function answers; the event stream is never compressed (it would
        // buffer) and the static files below carry their own pre-compressed copies.
        .layer(CompressionLayer::new());
    // The static files: no session, no guard (the login page needs the stylesheet too).
    let files = site.clone();
    router = router.route(
        "/console/pkg/{*file}",
        get(move |Path(file): Path<String>, headers: HeaderMap| async move {
            match &files {
                Some(site) => site.respond(&format!("{}/{file}", app::PKG_DIR), &headers),
                None => (StatusCode::NOT_FOUND, "the console's assets are not built").into_response(),
            }
        }),
    );
    if let Some(site) = site {
        for file in site.public_files().map(str::to_string).collect::<Vec<_>>() {
            let site = site.clone();
            let path = file.clone();
            router = router.route(
                &format!("{}/{file}", app::BASE),
                get(move |headers: HeaderMap| async move { site.respond(&path, &headers) }),
            );
        }
    }
    router.layer(axum::middleware::from_fn(security_headers))
}

/// The site to serve: a directory given at run time (`--console-path`, `[web-console] path`,
/// `$LEPTOS_SITE_ROOT`) wins over the one embedded in the binary; without either, a site built
/// on disk after this binary (`$CARGO_TARGET_DIR/site`, `site/` next to the binary).
fn choose_site(explicit: Option<PathBuf>) -> Option<Site> {
    let explicit = explicit.or_else(|| std::env::var_os("LEPTOS_SITE_ROOT").map(PathBuf::from));
    if let Some(dir) = explicit {
        match Site::load(&dir) {
            Ok(site) => return Some(site),
            Err(error) => {
                tracing::warn!(%error, "the console directory given cannot be served; using the embedded console")
            }
        }
    }
    match Site::embedded() {
        Some(Ok(site)) => return Some(site),
        Some(Err(error)) => tracing::warn!(%error, "the embedded console is broken"),
        None => {}
    }
    site_candidates().iter().find_map(|dir| Site::load(dir).ok())
}

/// The console's pages may not be framed by another site (clickjacking), load scripts or styles
/// from elsewhere, or have their content type guessed. Leptos hydration needs inline scripts
/// and wasm compilation; GraphiQL's stylesheet carries its fonts as data URLs.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self' 'unsafe-inline' 'wasm-unsafe-eval'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; \
     base-uri 'self'; form-action 'self'; object-src 'none'";

async fn security_headers(request: Request<Body>, next: axum::middleware::Next) -> axum::response::Response {
    use axum::http::{HeaderValue, header};
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    response
}

#[derive(serde::Deserialize)]
struct EventsQuery {
    env: Option<String>,
}

/// What one SSE message says: `kind` is `version_released`, `halted`, `settings_changed`,
/// `resources_changed`, `environment_deleted`, `compile_changed` or `dryrun_changed`.
fn describe(event: &orchestrator::Event) -> (uuid::Uuid, &'static str) {
    use orchestrator::Event::*;
    match event {
        VersionReleased { env, .. } => (*env, "version_released"),
        Halted { env, .. } => (*env, "halted"),
        SettingsChanged { env } => (*env, "settings_changed"),
        ResourcesChanged { env } => (*env, "resources_changed"),
        EnvironmentDeleted { env } => (*env, "environment_deleted"),
        CompileChanged { env } => (*env, "compile_changed"),
        DryRunChanged { env } => (*env, "dryrun_changed"),
        SchedulerRequest { env } | AgentTask { env } => (*env, "resources_changed"),
        Resync => (uuid::Uuid::nil(), "resources_changed"),
    }
}

/// The event stream of one environment (`env` unset: every environment). Bursts (a deploy of many
/// resources) are coalesced: at most one message per kind every 250 ms.
///
/// Only environments the caller may read: one it has a role in, or all of them for an admin.
async fn events(
    orchestrator: orchestrator::Orchestrator,
    caller: Principal,
    env: Option<String>,
) -> Result<Sse<impl futures_util::Stream<Item = Result<SseEvent, Infallible>>>, (StatusCode, String)> {
    let filter: Option<uuid::Uuid> = env.and_then(|e| e.parse().ok());
    let access = Access::Environment("environment.read", Clients::API);
    let allowed = match filter {
        Some(env) => {
            orchestrator.authorize(&caller, &orchestrator::auth::policy::Call::new(access, Some(env))).map_err(|d| d.0)
        }
        None if caller.is_admin() => Ok(()),
        None => Err("only admins may follow every environment: pass ?env=<id>".to_string()),
    };
    allowed.map_err(|message| (StatusCode::FORBIDDEN, message))?;
    let receiver = orchestrator.subscribe();
    let stream = futures_util::stream::unfold(receiver, move |mut receiver| async move {
        loop {
            let first = match receiver.recv().await {
                // Notifications from other servers may be lost: the page refetches.
                Ok(orchestrator::Event::Resync) => None,
                Ok(event) => Some(event),
                // Missed events: tell the page to refetch anyway.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => None,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            };
            let (env, kind) = match &first {
                Some(event) => describe(event),
                None => (filter.unwrap_or_default(), "resources_changed"),
            };
            if filter.is_some_and(|f| f != env) {
                continue;
            }
            if kind != "environment_deleted" {
                // Swallow the rest of a burst for this environment.
                let deadline = tokio::time::Instant::now() + Duration::from_millis(250);
                while let Ok(Ok(_)) = tokio::time::timeout_at(deadline, receiver.recv()).await {}
            }
            let data = serde_json::json!({ "kind": kind, "env": env.to_string() }).to_string();
            return Some((Ok(SseEvent::default().event("message").data(data)), receiver));
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// Where a site built on disk is looked for when neither a directory is given nor one embedded:
/// `$CARGO_TARGET_DIR/site`, then `site/` next to the binary or one level up
/// (`target/debug/inmanta` -> `target/site`, where `scripts/build-console.sh` puts it).
fn site_candidates() -> Vec<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        candidates.push(std::path::Path::new(&dir).join("site"));
    }
    if let Some(bin_dir) = std::env::current_exe().ok().and_then(|exe| exe.parent().map(std::path::Path::to_path_buf)) {
        candidates.push(bin_dir.join("site"));
        if let Some(up) = bin_dir.parent() {
            candidates.push(up.join("site"));
        }
    }
    candidates
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use tower::ServiceExt;

    use super::*;

    async fn no_auth(o: &orchestrator::Orchestrator) -> Arc<Security> {
        Arc::new(Security::new(o, false, 3600, 5).await.unwrap())
    }

    async fn call(router: &Router, path: &str) -> (StatusCode, Option<String>, String) {
        let response = router.clone().oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
        let status = response.status();
        let location = response.headers().get("location").map(|v| v.to_str().unwrap().to_string());
        let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        (status, location, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn console_serves_pages_assets_and_redirects() {
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join("site");
        std::fs::create_dir_all(site.join("pkg")).unwrap();
        std::fs::write(site.join("pkg/console.c55.css"), "body { margin: 0 }").unwrap();
        std::fs::write(site.join("pkg/console.a11.js"), "export default 1").unwrap();
        std::fs::write(site.join("pkg/console.b22.wasm"), "\0asm").unwrap();
        std::fs::write(site.join("favicon.svg"), "<svg/>").unwrap();
        let manifest = r#"{"js": "pkg/console.a11.js", "wasm": "pkg/console.b22.wasm", "css": "pkg/console.c55.css"}"#;
        std::fs::write(site.join("manifest.json"), manifest).unwrap();
        let url = format!("sqlite://{}", dir.path().join("inmanta.db").display());
        let o = orchestrator::Orchestrator::open(&url).await.unwrap();
        let project = o.create_project("infra", None).await.unwrap();
        let env = o
            .create_environment(api::environment::EnvironmentCreate {
                project_id: project.id,
                name: "production".into(),
                ..Default::default()
            })
            .await
            .unwrap();
        let router = router(o.clone(), None, no_auth(&o).await, Some(site));

        let (status, _, html) = call(&router, "/console").await;
        assert_eq!(status, StatusCode::OK);
        assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
        assert!(html.contains("production") && html.contains(&env.id.to_string()), "{html}");
        assert!(html.contains(r#"import("/console/pkg/console.a11.js")"#), "{html}");
        assert!(html.contains(r#"href="/console/pkg/console.c55.css""#), "{html}");
        assert!(!html.contains("console-not-built"), "{html}");

        let (status, _, html) = call(&router, "/console/no/such/page").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(html.contains("Page not found"), "{html}");

        for (path, target) in [("/", "/console"), ("/dashboard", "/console"), ("/console/", "/console")] {
            let (status, location, _) = call(&router, path).await;
            assert_eq!(status, StatusCode::TEMPORARY_REDIRECT, "{path}");
            assert_eq!(location.as_deref(), Some(target), "{path}");
        }

        let (status, _, css) = call(&router, "/console/pkg/console.c55.css").await;
        assert_eq!((status, css.as_str()), (StatusCode::OK, "body { margin: 0 }"));
        let (status, _, _) = call(&router, "/console/favicon.svg").await;
        assert_eq!(status, StatusCode::OK);
        let (status, _, _) = call(&router, "/console/pkg/missing.js").await;
        assert_eq!(status, StatusCode::NOT_FOUND);

        // Pages are compressed for browsers that accept it, and never cached without asking.
        let request = Request::get("/console").header("accept-encoding", "gzip").body(Body::empty()).unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        assert_eq!(response.headers()["content-encoding"], "gzip");
        assert_eq!(response.headers()["cache-control"], "no-cache");
    }

    #[tokio::test]
    async fn event_stream_pushes_the_events_of_one_environment() {
        use futures_util::StreamExt;

        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("inmanta.db").display());
        let o = orchestrator::Orchestrator::open(&url).await.unwrap();
        let project = o.create_project("infra", None).await.unwrap();
        let mut envs = Vec::new();
        for name in ["watched", "other"] {
            let env =
                api::environment::EnvironmentCreate { project_id: project.id, name: name.into(), ..Default::default() };
            envs.push(o.create_environment(env).await.unwrap().id);
        }
        let router = router(o.clone(), None, no_auth(&o).await, Some(dir.path().join("site")));
        let path = format!("/console/events?env={}", envs[0]);
        let response = router.oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let mut body = response.into_body().into_data_stream();
        // An event of another environment is not sent; the watched one's is.
        o.set_halted(envs[1], true).await.unwrap();
        o.set_halted(envs[0], true).await.unwrap();
        let chunk = tokio::time::timeout(Duration::from_secs(5), body.next()).await.unwrap().unwrap().unwrap();
        let text = String::from_utf8_lossy(&chunk).into_owned();
        assert!(text.contains(r#""kind":"halted""#) && text.contains(&envs[0].to_string()), "{text}");
        assert!(!text.contains(&envs[1].to_string()), "{text}");
    }
}
