//! Walks every route of the API router (from [`rule_table`], the table the router is built
//! from) against a real SQLite orchestrator with auth on, and checks who gets in: nobody
//! without credentials, no token of another environment, no read-only user for a change, and
//! each role exactly what Inmanta 20.1's default roles grant it.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use orchestrator::Orchestrator;
use orchestrator::auth::{Access, OPEN_GLOBAL_LABELS, is_read_label};
use tower::ServiceExt;
use uuid::Uuid;

use super::{AppState, RouteRule, rule_table};
use crate::security::Security;

const PASSWORD: &str = "Route-walk-password-1";

/// What each built-in role may change, from Inmanta 20.1's `default_policy.rego` (not from the code).
fn expected_writes(role: &str) -> BTreeSet<&'static str> {
    let noc = [
        "deploy",
        "dryrun.write",
        "agent.pause-resume",
        "environment.halt-resume",
        "notification.write",
        "compiler.execute",
    ];
    let admin = [
        "desired-state.write",
        "environment.modify",
        "environment.setting.write",
        "compiler.execute.update",
        "parameter.write",
        "fact.write",
        "agent.write",
    ];
    let expert = ["environment.clear", "environment.delete", "token"];
    let mut labels = BTreeSet::new();
    match role {
        "noc" => labels.extend(noc),
        "environment-admin" => labels.extend(noc.into_iter().chain(admin)),
        "environment-expert-admin" => labels.extend(noc.into_iter().chain(admin).chain(expert)),
        _ => {}
    }
    labels
}

struct World {
    router: axum::Router,
    orchestrator: Orchestrator,
    security: Arc<Security>,
    _dir: tempfile::TempDir,
}

async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("inmanta.db").display());
    let orchestrator = Orchestrator::open(&url).await.unwrap();
    let security = Arc::new(Security::new(&orchestrator, true, 3600, 1000).await.unwrap());
    let python = agent::PythonSettings::new("python3".into(), dir.path().join("python"));
    let agents =
        Arc::new(crate::agents::InProcessAgents::new(orchestrator.clone(), dir.path().join("handlers"), python));
    let schedulers = orchestrator::scheduler::Schedulers::start(orchestrator.clone(), agents).await.unwrap();
    let state = AppState {
        orchestrator: orchestrator.clone(),
        schedulers,
        security: security.clone(),
        reads: Default::default(),
    };
    World { router: super::router(state, 1 << 20), orchestrator, security, _dir: dir }
}

impl World {
    /// A new halted environment (nothing deploys during the walk).
    async fn environment(&self, name: &str) -> Uuid {
        let project = match self.orchestrator.list_projects().await.unwrap().into_iter().next() {
            Some(p) => p.id,
            None => self.orchestrator.create_project("walk", None).await.unwrap().id,
        };
        let env = self
            .orchestrator
            .create_environment(api::environment::EnvironmentCreate {
                project_id: project,
                name: name.into(),
                ..Default::default()
            })
            .await
            .unwrap();
        self.orchestrator.set_halted(env.id, true).await.unwrap();
        env.id
    }

    async fn login(&self, username: &str) -> orchestrator::auth::users::UserRecord {
        self.orchestrator.verify_login(username, PASSWORD).await.unwrap().expect("user")
    }

    /// A new login token of `user`: each walked route gets its own, since some end the token
    /// they are called with (logout, revoking a token).
    async fn token(&self, user: &orchestrator::auth::users::UserRecord) -> String {
        self.security.authenticator.login_token(&self.orchestrator, user).await.unwrap()
    }

    async fn call(&self, route: &RouteRule, env: Uuid, token: Option<&str>) -> StatusCode {
        // Triggering a compile is judged without `update`, which needs a label of its own
        // (checked in compile_update_needs_more_than_noc below).
        let no_update = route.path.starts_with("/api/v1/notify/");
        let mut uri = concrete_path(route, env);
        if no_update && route.method == Method::GET {
            uri.push_str("?update=false");
        }
        let mut request = Request::builder().method(route.method.clone()).uri(uri);
        request = request.header(api::TID_HEADER, env.to_string());
        if let Some(token) = token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let body = if [Method::POST, Method::PUT, Method::PATCH].contains(&route.method) {
            request = request.header("content-type", "application/json");
            Body::from(if no_update { r#"{"update": false}"# } else { "{}" })
        } else {
            Body::empty()
        };
        self.router.clone().oneshot(request.body(body).unwrap()).await.unwrap().status()
    }
}

/// The route's path with its parameters filled in; the environment parameter gets `env`.
fn concrete_path(route: &RouteRule, env: Uuid) -> String {
    let mut path = String::new();
    for segment in route.path.split('/').skip(1) {
        path.push('/');
        match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(name) if route.rule.environment_in_path == Some(name) => path.push_str(&env.to_string()),
            Some("version" | "from_version" | "to_version") => path.push('1'),
            Some("action") => path.push_str("pause"),
            Some("rid" | "rvid") => path.push_str(&api::url::encode("std::testing::NullResource[a,name=x]")),
            Some("username") => path.push_str("nobody"),
            Some(_) => path.push_str("00000000-0000-0000-0000-000000000001"),
            None => path.push_str(segment),
        }
    }
    path
}

/// Destructive calls last, so the environment they remove is there for the others.
fn walk_order() -> Vec<RouteRule> {
    let mut routes = rule_table();
    routes.sort_by_key(|r| matches!(r.rule.access.label(), Some("environment.delete" | "environment.clear")));
    routes
}

fn denied(status: StatusCode) -> bool {
    status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN
}

#[tokio::test]
async fn every_route_checks_its_callers() {
    let w = world().await;
    let routes = walk_order();
    assert!(routes.len() > 90, "the table lists every route ({})", routes.len());
    let env = w.environment("target").await;
    let other = w.environment("other").await;
    let mut failures = Vec::new();

    // No credentials: 401, except health and login.
    for route in &routes {
        let status = w.call(route, env, None).await;
        let public = route.rule.access == Access::Public;
        if public == (status == StatusCode::UNAUTHORIZED) {
            failures.push(format!("no credentials: {} {} -> {status}", route.method, route.path));
        }
    }

    // A token of another environment, with every client type: 403 for environment calls.
    let foreign = w
        .security
        .authenticator
        .create_environment_token(&w.orchestrator, other, &api::auth::ClientType::ALL, false, None, None)
        .await
        .unwrap();
    for route in &routes {
        if matches!(route.rule.access, Access::Environment(..)) {
            let status = w.call(route, env, Some(&foreign)).await;
            if status != StatusCode::FORBIDDEN {
                failures.push(format!("foreign token: {} {} -> {status}", route.method, route.path));
            }
        }
    }

    // Each built-in role in its own environment: allowed exactly what the reference grants.
    for role in orchestrator::auth::ROLES {
        let env = w.environment(role).await;
        let username = format!("user-{role}");
        w.orchestrator.create_user(&username, PASSWORD, false, false).await.unwrap();
        w.orchestrator.assign_role(&username, env, role).await.unwrap();
        let user = w.login(&username).await;
        let writes = expected_writes(role);
        for (index, route) in routes.iter().enumerate() {
            // Deleting or clearing gets an environment of its own, so each such call is judged
            // on an environment that exists.
            let env = if matches!(route.rule.access.label(), Some("environment.delete" | "environment.clear")) {
                let fresh = w.environment(&format!("{role}-{index}")).await;
                w.orchestrator.assign_role(&username, fresh, role).await.unwrap();
                fresh
            } else {
                env
            };
            let status = w.call(route, env, Some(&w.token(&user).await)).await;
            let api_may_call = route.rule.access.clients().contains(api::auth::ClientType::Api);
            let expected_allowed = api_may_call
                && match route.rule.access {
                    Access::Public | Access::Authenticated(..) => true,
                    Access::Environment(label, _) => is_read_label(label) || writes.contains(label),
                    Access::Global(label, _) => OPEN_GLOBAL_LABELS.contains(&label),
                };
            if expected_allowed == denied(status) {
                failures.push(format!(
                    "{role}: {} {} -> {status} (expected {})",
                    route.method,
                    route.path,
                    if expected_allowed { "allowed" } else { "403" }
                ));
            }
            // The read-only role never changes anything in an environment or on the server.
            if *role == "read-only" && !route.rule.access.is_read() && !denied(status) {
                let open = matches!(route.rule.access, Access::Authenticated(..) | Access::Public)
                    || route.rule.access.label().is_some_and(|l| OPEN_GLOBAL_LABELS.contains(&l));
                if !open {
                    failures.push(format!("read-only changed something: {} {}", route.method, route.path));
                }
            }
        }
        // And nothing at all in an environment it has no role in.
        let unrelated = routes.iter().find(|r| r.path == "/api/v2/resource").unwrap();
        if w.call(unrelated, other, Some(&w.token(&user).await)).await != StatusCode::FORBIDDEN {
            failures.push(format!("{role} read an environment without a role in it"));
        }
    }

    // A global admin passes every rule made for users.
    let admin_env = w.environment("admin").await;
    w.orchestrator.create_user("root", PASSWORD, true, false).await.unwrap();
    let root = w.login("root").await;
    for route in &routes {
        let status = w.call(route, admin_env, Some(&w.token(&root).await)).await;
        let api_may_call = route.rule.access.clients().contains(api::auth::ClientType::Api);
        if api_may_call == denied(status) {
            failures.push(format!("admin: {} {} -> {status}", route.method, route.path));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[tokio::test]
async fn compile_update_needs_more_than_noc() {
    let w = world().await;
    let env = w.environment("compiles").await;
    for (user, role) in [("nina", "noc"), ("ada", "environment-admin")] {
        w.orchestrator.create_user(user, PASSWORD, false, false).await.unwrap();
        w.orchestrator.assign_role(user, env, role).await.unwrap();
    }
    let notify = |token: String, update: bool| {
        let request = Request::post(format!("/api/v1/notify/{env}"))
            .header("Authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .body(Body::from(format!(r#"{{"update": {update}}}"#)))
            .unwrap();
        let router = w.router.clone();
        async move { router.oneshot(request).await.unwrap().status() }
    };
    assert_eq!(notify(w.token(&w.login("nina").await).await, false).await, StatusCode::OK);
    assert_eq!(notify(w.token(&w.login("nina").await).await, true).await, StatusCode::FORBIDDEN);
    assert_eq!(notify(w.token(&w.login("ada").await).await, true).await, StatusCode::OK);
}
