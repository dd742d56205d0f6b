//! The web console under `/console`: server-rendered Leptos pages (hydrated in the browser by the
//! wasm in the site directory), their static assets and the console's server functions.
//!
//! Routes:
//! - `/console`, `/console/*`: pages, rendered on the server (the whole page, data included);
//! - `/console/pkg/*`: the wasm, its JS glue and the stylesheet, from `<site>/pkg`;
//! - `/console/favicon.svg` (and the other files of `public/`): from `<site>`;
//! - `/console/fn/*`: server functions (each has a fixed endpoint, see the `app` crate);
//! - `/console/events?env=<id>`: Server-Sent Events of one environment (the orchestrator's
//!   events, as `{"kind": ..., "env": ...}`), followed by every open page to refetch what it shows;
//! - `/console/login`, `/console/password`, `/console/logout`: signing in (see console_auth.rs);
//!   every other page, server function and the event stream need a signed-in session;
//! - `/` and `/dashboard`: redirect to `/console`.
//!
//! The site directory is built by `scripts/build-console.sh`; without it the pages still render
//! (without interactivity) and a warning says where the site was expected.

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Query;
use axum::http::{Request, StatusCode};
use axum::response::Redirect;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::routing::{get, post};
use axum::{Extension, Router};
use leptos::prelude::provide_context;
use orchestrator::auth::{Access, Clients, Principal};
use tower_http::services::{ServeDir, ServeFile};

use crate::console_auth::{self, ConsoleAuth};
use crate::security::Security;

pub fn router(
    orchestrator: orchestrator::Orchestrator,
    schedulers: Option<Arc<orchestrator::scheduler::Schedulers>>,
    security: Arc<Security>,
    site_root: Option<PathBuf>,
) -> axum::Router {
    let site_root = site_root.unwrap_or_else(default_site_root);
    if !site_root.join(app::PKG_DIR).join(format!("{}.js", app::OUTPUT_NAME)).is_file() {
        tracing::warn!(
            site = %site_root.display(),
            "console assets not found: pages render without interactivity (build them with scripts/build-console.sh, \
             or point --console-path at the built site)"
        );
    }
    // Server-side rendering spawns Leptos tasks: run them on the server's tokio runtime.
    let _ = any_spawner::Executor::init_tokio();
    let options = app::options(&site_root.to_string_lossy());
    let events_source = orchestrator.clone();
    let auth = ConsoleAuth { orchestrator: orchestrator.clone(), security: security.clone() };
    let sessions =
        crate::sessions::layer(orchestrator.clone(), security.authenticator.login_expire, security.secure_cookies);
    // The settings page's tokens tab issues environment tokens with it.
    let authenticator = security.authenticator.clone();
    let context = move || {
        provide_context(orchestrator.clone());
        provide_context(authenticator.clone());
        if let Some(schedulers) = &schedulers {
            provide_context(schedulers.clone());
        }
    };

    let render = leptos_axum::render_app_async_with_context(context.clone(), move || app::shell(options.clone()));
    let page = get(move |req: Request<Body>| render(req));
    let server_fn = move |req: Request<Body>| leptos_axum::handle_server_fns_with_context(context.clone(), req);

    // Everything that shows or changes data goes through the session guard.
    let guarded = Router::new()
        .route(app::BASE, page.clone())
        .route("/console/{*path}", page)
        .route("/console/fn/{*name}", post(server_fn.clone()).get(server_fn))
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
        // A sign-in form is a user name and passwords: nobody buffers megabytes before login.
        .layer(axum::extract::DefaultBodyLimit::max(crate::rest::limits::SMALL_BODY))
        .with_state(auth);
    Router::new()
        .route("/", get(|| async { Redirect::temporary(app::BASE) }))
        .route("/dashboard", get(|| async { Redirect::temporary(app::BASE) }))
        .merge(guarded.layer(axum::extract::DefaultBodyLimit::max(crate::rest::limits::NORMAL_BODY)))
        .merge(sign_in)
        .layer(sessions)
        .nest_service("/console/pkg", ServeDir::new(site_root.join(app::PKG_DIR)))
        .route_service("/console/favicon.svg", ServeFile::new(site_root.join("favicon.svg")))
        .layer(axum::middleware::from_fn(security_headers))
}

/// The console's pages may not be framed by another site (clickjacking), load scripts or styles
/// from elsewhere, or have their content type guessed. Leptos hydration needs inline scripts
/// and wasm compilation.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self' 'unsafe-inline' 'wasm-unsafe-eval'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; \
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
        Some(env) => caller.authorize(access, Some(env)).map_err(|d| d.0),
        None if caller.is_admin() => Ok(()),
        None => Err("only admins may follow every environment: pass ?env=<id>".to_string()),
    };
    allowed.map_err(|message| (StatusCode::FORBIDDEN, message))?;
    let receiver = orchestrator.subscribe();
    let stream = futures_util::stream::unfold(receiver, move |mut receiver| async move {
        loop {
            let first = match receiver.recv().await {
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

/// Where the built site is looked for when no `--console-path` is given: `$LEPTOS_SITE_ROOT`
/// (set by cargo-leptos), `$CARGO_TARGET_DIR/site`, then `site/` next to the binary or one level
/// up (`target/debug/inmanta` -> `target/site`, where `scripts/build-console.sh` puts it).
fn default_site_root() -> PathBuf {
    let mut candidates = Vec::new();
    if let Some(dir) = std::env::var_os("LEPTOS_SITE_ROOT") {
        candidates.push(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        candidates.push(Path::new(&dir).join("site"));
    }
    if let Some(bin_dir) = std::env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf)) {
        candidates.push(bin_dir.join("site"));
        if let Some(up) = bin_dir.parent() {
            candidates.push(up.join("site"));
        }
    }
    let first = candidates.first().cloned().unwrap_or_else(|| PathBuf::from("site"));
    candidates.into_iter().find(|dir| dir.join(app::PKG_DIR).is_dir()).unwrap_or(first)
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
        std::fs::write(site.join("pkg/console.css"), "body { margin: 0 }").unwrap();
        std::fs::write(site.join("favicon.svg"), "<svg/>").unwrap();
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
        assert!(html.contains("/console/pkg/console.js"), "{html}");

        let (status, _, html) = call(&router, "/console/no/such/page").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(html.contains("Page not found"), "{html}");

        for path in ["/", "/dashboard"] {
            let (status, location, _) = call(&router, path).await;
            assert_eq!(status, StatusCode::TEMPORARY_REDIRECT, "{path}");
            assert_eq!(location.as_deref(), Some("/console"), "{path}");
        }

        let (status, _, css) = call(&router, "/console/pkg/console.css").await;
        assert_eq!((status, css.as_str()), (StatusCode::OK, "body { margin: 0 }"));
        let (status, _, _) = call(&router, "/console/favicon.svg").await;
        assert_eq!(status, StatusCode::OK);
        let (status, _, _) = call(&router, "/console/pkg/missing.js").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
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
