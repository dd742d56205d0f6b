//! Signing in to the console: the login and password-change pages (plain HTML forms, so they
//! work before any wasm loads and with the keyboard alone), logout, and the guard that puts the
//! signed-in user on every console request for the server functions to check.

use std::sync::Arc;

use axum::extract::{Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use orchestrator::Orchestrator;
use orchestrator::auth::Principal;
use serde::Deserialize;
use tower_sessions::Session;

use crate::rest::error::ApiError;
use crate::rest::extract::PeerAddress;
use crate::security::{LoginRefused, Security};

pub const LOGIN: &str = "/console/login";
pub const PASSWORD: &str = "/console/password";
pub const LOGOUT: &str = "/console/logout";

#[derive(Clone)]
pub struct ConsoleAuth {
    pub orchestrator: Orchestrator,
    pub security: Arc<Security>,
    /// The URL of the console's stylesheet (content-hashed), when the console is built.
    pub stylesheet: Option<String>,
    /// OpenID Connect providers offered on the login page, and whether the local form is.
    pub oidc: Arc<crate::oidc::Providers>,
}

/// In front of pages, server functions and the event stream: no session, no console. Pages
/// redirect to the login page (and back afterwards); calls get a 401.
pub async fn guard(State(auth): State<ConsoleAuth>, session: Session, mut request: Request, next: Next) -> Response {
    let principal = if auth.security.enabled {
        crate::sessions::principal(&session, &auth.orchestrator).await
    } else {
        Some(Principal::Unrestricted)
    };
    let path = request.uri().path().to_string();
    let is_call = path.starts_with("/console/fn/") || path == "/console/events";
    match principal {
        None if is_call => (StatusCode::UNAUTHORIZED, "not signed in: log in again at /console/login").into_response(),
        None => {
            let target = request.uri().path_and_query().map(|p| p.as_str().to_string()).unwrap_or(path);
            Redirect::to(&format!("{LOGIN}?next={}", api::url::encode(&target))).into_response()
        }
        Some(Principal::User { must_change_password: true, .. }) if !is_call => Redirect::to(PASSWORD).into_response(),
        Some(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
    }
}

/// A sign-in form (`application/x-www-form-urlencoded`); what is no such form gets a JSON
/// error like the rest of the server (axum's own is plain text).
pub struct Form<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> axum::extract::FromRequest<S> for Form<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Form::<T>::from_request(request, state).await {
            Ok(axum::Form(form)) => Ok(Form(form)),
            Err(e) => Err(ApiError::new(e.status(), format!("not a sign-in form: {}", e.body_text()))),
        }
    }
}

#[derive(Deserialize, Default)]
pub struct LoginQuery {
    #[serde(default)]
    next: Option<String>,
}

pub async fn login_page(State(auth): State<ConsoleAuth>, Query(q): Query<LoginQuery>) -> Html<String> {
    Html(login_html(&auth, q.next.as_deref().unwrap_or(api::console::BASE), "", None))
}

#[derive(Deserialize)]
pub struct LoginForm {
    username: String,
    password: String,
    #[serde(default)]
    next: Option<String>,
}

pub async fn login_submit(
    State(auth): State<ConsoleAuth>,
    PeerAddress(peer): PeerAddress,
    headers: axum::http::HeaderMap,
    session: Session,
    Form(form): Form<LoginForm>,
) -> Response {
    let next = safe_next(form.next.as_deref());
    let refused =
        |status, message: &str| (status, Html(login_html(&auth, &next, &form.username, Some(message)))).into_response();
    if !auth.oidc.local_login() {
        tracing::info!(username = %form.username, "local login refused: only the login providers are enabled");
        return refused(
            StatusCode::FORBIDDEN,
            "Local login is disabled: log in with your organisation's provider ([web-ui] oidc_local_fallback).",
        );
    }
    let user = match auth.security.login(&auth.orchestrator, &form.username, &form.password, peer, &headers).await {
        Ok(Ok(user)) => user,
        Ok(Err(LoginRefused::WrongCredentials)) => {
            return refused(StatusCode::UNAUTHORIZED, "Wrong username or password.");
        }
        Ok(Err(LoginRefused::TooManyFailures(wait))) => {
            let message = format!("Too many failed logins. Try again in {} seconds.", wait.as_secs().max(1));
            return refused(StatusCode::TOO_MANY_REQUESTS, &message);
        }
        Err(e) => return server_error(e),
    };
    if let Err(e) = crate::sessions::begin(&session, &user).await {
        return server_error(e);
    }
    if user.must_change_password {
        return Redirect::to(PASSWORD).into_response();
    }
    Redirect::to(&next).into_response()
}

pub async fn password_page(State(auth): State<ConsoleAuth>, session: Session) -> Response {
    match crate::sessions::principal(&session, &auth.orchestrator).await {
        Some(Principal::User { username, must_change_password, .. }) => {
            Html(password_html(&auth, &username, must_change_password, None)).into_response()
        }
        _ => Redirect::to(LOGIN).into_response(),
    }
}

#[derive(Deserialize)]
pub struct PasswordForm {
    current_password: String,
    password: String,
    repeat: String,
}

pub async fn password_submit(
    State(auth): State<ConsoleAuth>,
    session: Session,
    Form(form): Form<PasswordForm>,
) -> Response {
    let Some(Principal::User { username, must_change_password, .. }) =
        crate::sessions::principal(&session, &auth.orchestrator).await
    else {
        return Redirect::to(LOGIN).into_response();
    };
    let again = |message: &str| {
        (StatusCode::BAD_REQUEST, Html(password_html(&auth, &username, must_change_password, Some(message))))
            .into_response()
    };
    if form.password != form.repeat {
        return again("The new passwords differ.");
    }
    if form.password == form.current_password {
        return again("Choose a password different from the current one.");
    }
    match auth.orchestrator.set_password(&username, &form.password, Some(&form.current_password)).await {
        Ok(()) => {}
        Err(orchestrator::Error::BadRequest(message)) => return again(&message),
        Err(e) => return server_error(e),
    }
    // The password fingerprint in the session changed: sign in again with the new one.
    match auth.orchestrator.user_record(&username).await {
        Ok(Some(user)) => {
            if let Err(e) = crate::sessions::begin(&session, &user).await {
                return server_error(e);
            }
        }
        Ok(None) => return Redirect::to(LOGIN).into_response(),
        Err(e) => return server_error(e),
    }
    tracing::info!(%username, "password changed in the console");
    Redirect::to(api::console::BASE).into_response()
}

/// Ends our session; a user of a provider with an end-session endpoint goes on to it, so the
/// provider's session ends too (with a page that moves on by itself: the console's
/// `form-action 'self'` policy forbids following a form's redirect to another site).
pub async fn logout(State(auth): State<ConsoleAuth>, headers: axum::http::HeaderMap, session: Session) -> Response {
    let login = crate::sessions::sso_login(&session).await;
    if let Err(e) = crate::sessions::end(&session).await {
        return server_error(e);
    }
    match crate::oidc::logout_target(&auth, login.as_ref(), &headers).await {
        Some(url) => crate::oidc::continue_to(&auth, "Logging out", &url),
        None => Redirect::to(LOGIN).into_response(),
    }
}

/// The login page again with a message, for refusals of provider logins.
pub(crate) fn login_refused(auth: &ConsoleAuth, status: StatusCode, message: &str) -> Response {
    (status, Html(login_html(auth, api::console::BASE, "", Some(message)))).into_response()
}

/// The detail (possibly a database's text) goes to the log; the page gets an id to quote.
pub(crate) fn server_error(e: impl std::fmt::Display) -> Response {
    let message = orchestrator::Incident::log(&format_args!("console sign-in: {e}")).to_string();
    (StatusCode::INTERNAL_SERVER_ERROR, [(header::CONTENT_TYPE, "text/plain")], message).into_response()
}

/// Only console paths of this server: never an open redirect elsewhere.
pub(crate) fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n) if n.starts_with("/console") && !n.starts_with("//") && !n.contains('\\') && n != LOGIN => {
            n.to_string()
        }
        _ => api::console::BASE.to_string(),
    }
}

pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

pub(crate) fn page(auth: &ConsoleAuth, title: &str, body: &str) -> String {
    let stylesheet = auth.stylesheet.as_deref().map(|href| format!(r#"<link rel="stylesheet" href="{href}"/>"#));
    format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>{title} · Inmanta</title>
<link rel="icon" href="/console/favicon.svg"/>
{stylesheet}
<script>{theme}</script>
</head>
<body class="signin-body">
<main class="signin">
<div class="signin-brand"><img src="/console/favicon.svg" alt="" width="32" height="32"/><span>Inmanta</span></div>
{body}
</main>
</body>
</html>"#,
        stylesheet = stylesheet.unwrap_or_default(),
        theme = api::console::THEME_SCRIPT,
    )
}

fn error_box(error: Option<&str>) -> String {
    error.map(|e| format!(r#"<p class="signin-error" role="alert">{}</p>"#, escape(e))).unwrap_or_default()
}

fn login_html(auth: &ConsoleAuth, next: &str, username: &str, error: Option<&str>) -> String {
    let next = safe_next(Some(next));
    let providers: String = auth
        .oidc
        .providers
        .iter()
        .map(|p| {
            let href = format!("/console/oidc/{}/login?next={}", api::url::encode(&p.config.name), api::url::encode(&next));
            format!(
                r#"<a class="button button-primary signin-provider" data-provider="{name}" href="{href}">Log in with {display}</a>
"#,
                name = escape(&p.config.name),
                href = escape(&href),
                display = escape(&p.config.display_name),
            )
        })
        .collect();
    let form = if auth.oidc.local_login() {
        let heading = if providers.is_empty() {
            String::new()
        } else {
            "<h2 class=\"signin-local\">Local login (break-glass)</h2>\n".to_string()
        };
        local_form(&next, username, &heading)
    } else {
        String::new()
    };
    page(auth, "Log in", &format!("<h1>Log in</h1>\n{error}\n{providers}{form}", error = error_box(error)))
}

fn local_form(next: &str, username: &str, heading: &str) -> String {
    format!(
        r#"{heading}<form class="signin-form" method="post" action="{LOGIN}">
<input type="hidden" name="next" value="{next}"/>
<label for="username">Username</label>
<input id="username" name="username" autocomplete="username" required autofocus value="{username}"/>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required/>
<button class="button button-primary" type="submit">Log in</button>
</form>
<p class="signin-hint">On a new server, the user is <code>admin</code> and its password is in the file <code>initial-admin-password</code> of the server's state directory.</p>"#,
        next = escape(next),
        username = escape(username),
    )
}

fn password_html(auth: &ConsoleAuth, username: &str, required: bool, error: Option<&str>) -> String {
    let why = if required {
        "This password was generated when the server started for the first time. Choose your own before going on."
    } else {
        "Choose a new password."
    };
    page(
        auth,
        "Change password",
        &format!(
            r#"<h1>Change the password of {username}</h1>
<p>{why} It needs 12 to 128 characters and three of: lower case, upper case, digits, other characters.</p>
{error}
<form class="signin-form" method="post" action="{PASSWORD}">
<input type="text" name="username" value="{username}" autocomplete="username" hidden/>
<label for="current_password">Current password</label>
<input id="current_password" name="current_password" type="password" autocomplete="current-password" required autofocus/>
<label for="new_password">New password</label>
<input id="new_password" name="password" type="password" autocomplete="new-password" minlength="12" maxlength="128" required/>
<label for="repeat">Repeat the new password</label>
<input id="repeat" name="repeat" type="password" autocomplete="new-password" minlength="12" maxlength="128" required/>
<button class="button button-primary" type="submit">Change password</button>
</form>
<form method="post" action="{LOGOUT}"><button class="button button-link" type="submit">Log out</button></form>"#,
            username = escape(username),
            error = error_box(error),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_stays_inside_the_console() {
        assert_eq!(safe_next(Some("/console/resources?env=x")), "/console/resources?env=x");
        assert_eq!(safe_next(Some("https://evil.example/")), api::console::BASE);
        assert_eq!(safe_next(Some("//evil.example/console")), api::console::BASE);
        assert_eq!(safe_next(Some(LOGIN)), api::console::BASE);
        assert_eq!(safe_next(None), api::console::BASE);
    }

    #[tokio::test]
    async fn pages_escape_what_they_echo() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("inmanta.db").display());
        let orchestrator = Orchestrator::open(&url).await.unwrap();
        let security = Arc::new(Security::new(&orchestrator, true, 3600, 5).await.unwrap());
        let stylesheet = Some("/console/pkg/console.0123.css".to_string());
        let auth = ConsoleAuth { orchestrator, security, stylesheet, oidc: Default::default() };
        let html = login_html(&auth, "/console", "<script>", Some("a \"b\""));
        assert!(html.contains(r#"<link rel="stylesheet" href="/console/pkg/console.0123.css"/>"#), "{html}");
        assert!(html.contains("&lt;script&gt;") && !html.contains("<script>alert"));
        assert!(html.contains("a &quot;b&quot;"));
    }
}
