//! Login, users, roles, role assignments and environment tokens (docs/api.md, "Authentication").

use api::auth::{ClientType, Credentials, CurrentUser, LoginReturn};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use orchestrator::auth::{Access, Clients, Principal};
use serde::Deserialize;
use serde_json::json;
use tower_sessions::Session;
use uuid::Uuid;

use crate::security::LoginRefused;

use super::error::{ApiError, ApiResult};
use super::extract::{self, Path, PeerAddress, Query, Tid};
use super::limits::BodyLimit;
use super::{AppState, Caller, Routes, authenticated, data, done, env, global, public};

pub fn router() -> Routes {
    let tokens = env("token");
    let registry = authenticated("token");
    Routes::new()
        .post("/api/v2/login", public(), login)
        .post("/api/v2/login/renew", authenticated("user.read"), renew)
        .body(BodyLimit::Small)
        .post("/api/v2/logout", public(), logout)
        .get("/api/v2/current_user", authenticated("user.read"), current_user)
        .get("/api/v2/user", global("role-assignment.read"), list_users)
        .post("/api/v2/user", global("user.write"), add_user)
        .delete("/api/v2/user/{username}", global("user.write"), delete_user)
        .patch("/api/v2/user/{username}/password", global("user.change-password"), set_password)
        .body(BodyLimit::Small)
        .patch("/api/v2/is_admin", global("role.is-admin"), set_is_admin)
        .get("/api/v2/role", global("role.read"), list_roles)
        .post("/api/v2/role", global("role.write"), create_role)
        .delete("/api/v2/role", global("role.write"), delete_role)
        .get("/api/v2/role_assignment/{username}", global("role-assignment.read"), list_assignments)
        .post("/api/v2/role_assignment/{username}", global("role-assignment.write"), assign_role)
        .delete("/api/v2/role_assignment/{username}", global("role-assignment.write"), unassign_role)
        .post("/api/v1/environment_auth", tokens.clients(Clients::API_COMPILER), create_token_v1)
        .post("/api/v2/environment_auth", tokens.clients(Clients::API_COMPILER), create_token_v2)
        .get("/api/v2/environment_auth", tokens.reads(), list_tokens)
        .delete("/api/v2/environment_auth/{jti}", tokens, revoke_token)
        // The whole registry (our addition: Inmanta 20.1 lists environment tokens only); who
        // sees which token is decided by the orchestrator (`auth::registry::may_manage`).
        .get("/api/v2/token", registry.reads(), list_registry)
        .get("/api/v2/token/{jti}", registry.reads(), show_registered)
        .delete("/api/v2/token/{jti}", registry, revoke_registered)
}

/// Logs a user in: a bearer token in the answer and a fresh console session cookie. Failures
/// are counted per user and address and logged without the password.
async fn login(
    State(state): State<AppState>,
    PeerAddress(peer): PeerAddress,
    headers: axum::http::HeaderMap,
    session: Session,
    extract::Json(credentials): extract::Json<Credentials>,
) -> ApiResult<Response> {
    let security = &state.security;
    let (username, password) = (&credentials.username, &credentials.password);
    let user = match security.login(&state.orchestrator, username, password, peer, &headers).await? {
        Ok(user) => user,
        Err(LoginRefused::WrongCredentials) => {
            return Err(ApiError::new(StatusCode::UNAUTHORIZED, "wrong username or password"));
        }
        Err(LoginRefused::TooManyFailures(wait)) => {
            let seconds = wait.as_secs().max(1);
            let mut response = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!("too many failed logins; try again in {seconds} s"),
            )
            .into_response();
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
            return Ok(response);
        }
    };
    crate::sessions::begin(&session, &user)
        .await
        .map_err(|e| ApiError::internal(&format!("cannot start a session: {e}")))?;
    let answer = LoginReturn {
        token: security.authenticator.login_token(&state.orchestrator, &user).await?,
        user: user.user(),
        expires_in: Some(security.authenticator.login_expire),
    };
    Ok(data(answer).into_response())
}

/// A fresh login token for the user of the current one.
async fn renew(State(state): State<AppState>, Caller(caller): Caller) -> ApiResult<Response> {
    let username = user_of(&caller)?;
    let user = state
        .orchestrator
        .user_record(username)
        .await?
        .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "the user no longer exists"))?;
    let security = &state.security;
    let answer = LoginReturn {
        token: security.authenticator.login_token(&state.orchestrator, &user).await?,
        user: user.user(),
        expires_in: Some(security.authenticator.login_expire),
    };
    Ok(data(answer).into_response())
}

/// Ends the console session and revokes the login token the call is made with, if any (every
/// server refuses it from its next request on).
async fn logout(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    session: Session,
) -> ApiResult<Response> {
    crate::sessions::end(&session).await.map_err(|e| ApiError::internal(&format!("cannot end the session: {e}")))?;
    if let Some(token) = crate::security::bearer(&headers)
        && let Some(jti) = state.security.authenticator.end_login(&state.orchestrator, token).await?
    {
        tracing::info!(%jti, "login token revoked at logout");
    }
    Ok(done().into_response())
}

fn user_of(caller: &Principal) -> ApiResult<&str> {
    caller.name().ok_or_else(|| {
        ApiError::bad_request(
            "this call is about a user, and the caller is not one (an environment token or --no-auth)",
        )
    })
}

async fn current_user(Caller(caller): Caller) -> ApiResult<Response> {
    let username = user_of(&caller)?;
    Ok(data(CurrentUser { username: username.to_string() }).into_response())
}

async fn list_users(State(state): State<AppState>) -> ApiResult<Response> {
    Ok(data(state.orchestrator.list_users().await?).into_response())
}

async fn add_user(
    State(state): State<AppState>,
    Caller(caller): Caller,
    extract::Json(credentials): extract::Json<Credentials>,
) -> ApiResult<Response> {
    let user = state.orchestrator.create_user(&credentials.username, &credentials.password, false, false).await?;
    tracing::info!(username = %user.username, by = caller.name().unwrap_or("-"), "user created");
    Ok(data(user).into_response())
}

async fn delete_user(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(username): Path<String>,
) -> ApiResult<Response> {
    state.orchestrator.delete_user(&username).await?;
    tracing::info!(%username, by = caller.name().unwrap_or("-"), "user deleted");
    Ok(done().into_response())
}

#[derive(Deserialize)]
struct PasswordChange {
    password: String,
    #[serde(default)]
    current_password: Option<String>,
}

/// Users change their own password (with the current one); admins set anyone's.
async fn set_password(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(username): Path<String>,
    extract::Json(change): extract::Json<PasswordChange>,
) -> ApiResult<Response> {
    let own = caller.name() == Some(username.as_str());
    if own {
        let current = change
            .current_password
            .as_deref()
            .ok_or_else(|| ApiError::bad_request("changing your own password needs current_password as well"))?;
        state.orchestrator.set_password(&username, &change.password, Some(current)).await?;
    } else {
        let call = orchestrator::auth::policy::Call::new(Access::Global("user.write", Clients::API), None);
        state.orchestrator.authorize(&caller, &call).map_err(|d| ApiError::new(StatusCode::FORBIDDEN, d.0))?;
        state.orchestrator.set_password(&username, &change.password, None).await?;
    }
    tracing::info!(%username, by = caller.name().unwrap_or("-"), "password changed");
    Ok(done().into_response())
}

#[derive(Deserialize)]
struct IsAdmin {
    username: String,
    is_admin: bool,
}

async fn set_is_admin(
    State(state): State<AppState>,
    extract::Json(body): extract::Json<IsAdmin>,
) -> ApiResult<Response> {
    state.orchestrator.set_is_admin(&body.username, body.is_admin).await?;
    Ok(done().into_response())
}

async fn list_roles(State(state): State<AppState>) -> ApiResult<Response> {
    Ok(data(state.orchestrator.list_roles().await?).into_response())
}

#[derive(Deserialize)]
struct RoleName {
    name: String,
}

async fn create_role(
    State(state): State<AppState>,
    extract::Json(role): extract::Json<RoleName>,
) -> ApiResult<Response> {
    state.orchestrator.create_role(&role.name).await?;
    Ok(done().into_response())
}

async fn delete_role(State(state): State<AppState>, Query(role): Query<RoleName>) -> ApiResult<Response> {
    state.orchestrator.delete_role(&role.name).await?;
    Ok(done().into_response())
}

async fn list_assignments(State(state): State<AppState>, Path(username): Path<String>) -> ApiResult<Response> {
    if state.orchestrator.user_record(&username).await?.is_none() {
        return Err(ApiError::new(StatusCode::NOT_FOUND, format!("no user named {username:?}")));
    }
    Ok(data(state.orchestrator.role_assignments(&username).await?).into_response())
}

#[derive(Deserialize)]
struct Assignment {
    environment: Uuid,
    role: String,
}

async fn assign_role(
    State(state): State<AppState>,
    Path(username): Path<String>,
    extract::Json(a): extract::Json<Assignment>,
) -> ApiResult<Response> {
    state.orchestrator.assign_role(&username, a.environment, &a.role).await?;
    Ok(done().into_response())
}

async fn unassign_role(
    State(state): State<AppState>,
    Path(username): Path<String>,
    Query(a): Query<Assignment>,
) -> ApiResult<Response> {
    state.orchestrator.unassign_role(&username, a.environment, &a.role).await?;
    Ok(done().into_response())
}

#[derive(Deserialize)]
struct TokenRequest {
    client_types: Vec<String>,
    #[serde(default)]
    idempotent: bool,
    /// Seconds until the token expires; none means it does not.
    #[serde(default)]
    expire: Option<i64>,
}

async fn create_token(state: &AppState, caller: &Principal, env: Uuid, request: TokenRequest) -> ApiResult<String> {
    // As Inmanta: a token of a server without authentication would grant nothing, and would
    // suggest otherwise.
    if !state.security.enabled {
        return Err(ApiError::bad_request(
            "Invalid request: Authentication is disabled, generating a token is not allowed",
        ));
    }
    let mut clients = Vec::new();
    for name in &request.client_types {
        clients.push(ClientType::parse(name).ok_or_else(|| {
            ApiError::bad_request(format!("unknown client type {name:?}: use api, agent, compiler or metrics"))
        })?);
    }
    // A token cannot give more than its creator has: an environment token may only mint its
    // own client types.
    if let Principal::Token { clients: own, .. } = caller
        && let Some(extra) = clients.iter().find(|c| !own.contains(**c))
    {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("this token cannot create a token for {}", extra.as_str()),
        ));
    }
    let token = state
        .security
        .authenticator
        .create_environment_token(&state.orchestrator, env, &clients, request.idempotent, request.expire, caller.name())
        .await?;
    tracing::info!(%env, by = caller.name().unwrap_or("-"), clients = ?request.client_types, "environment token created");
    Ok(token)
}

async fn create_token_v1(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Tid(env): Tid,
    extract::Json(request): extract::Json<TokenRequest>,
) -> ApiResult<Response> {
    let token = create_token(&state, &caller, env, request).await?;
    Ok(Json(json!({"token": token})).into_response())
}

async fn create_token_v2(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Tid(env): Tid,
    extract::Json(request): extract::Json<TokenRequest>,
) -> ApiResult<Response> {
    Ok(data(create_token(&state, &caller, env, request).await?).into_response())
}

async fn list_tokens(State(state): State<AppState>, Tid(env): Tid) -> ApiResult<Response> {
    Ok(data(state.orchestrator.environment_tokens(env).await?).into_response())
}

async fn revoke_token(State(state): State<AppState>, Tid(env): Tid, Path(jti): Path<String>) -> ApiResult<Response> {
    state.orchestrator.revoke_environment_token(env, &jti).await?;
    tracing::info!(%env, %jti, "environment token revoked");
    Ok(done().into_response())
}

async fn list_registry(State(state): State<AppState>, Caller(caller): Caller) -> ApiResult<Response> {
    Ok(data(state.orchestrator.tokens_of(&caller).await?).into_response())
}

async fn show_registered(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(jti): Path<String>,
) -> ApiResult<Response> {
    Ok(data(state.orchestrator.token_of(&caller, &jti).await?).into_response())
}

async fn revoke_registered(
    State(state): State<AppState>,
    Caller(caller): Caller,
    Path(jti): Path<String>,
) -> ApiResult<Response> {
    let token = state.orchestrator.revoke_token(&caller, &jti).await?;
    tracing::info!(%jti, kind = token.kind.as_str(), by = caller.name().unwrap_or("-"), "token revoked");
    Ok(done().into_response())
}
