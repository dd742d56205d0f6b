//! Logging in to the console through OpenID Connect providers (`[oidc_<name>]` sections,
//! docs/security.md): the authorization code flow with PKCE. The login page links to
//! [`START`]; the provider sends the browser back to [`CALLBACK`] with a code, which is exchanged
//! for an ID token, checked with the provider's keys (the JWKS cache of `outside_tokens.rs`),
//! and turned into a console session whose roles come from the token's claims.
//!
//! The pending login (state, nonce, PKCE verifier) is kept in the database under a random id
//! that only this browser holds, in a cookie of its own: the session cookie is `SameSite=Strict`
//! and is therefore not sent when the provider redirects back, and the id binds the answer to
//! the browser that asked (a code obtained by someone else cannot log this browser in).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use base64::Engine;
use orchestrator::auth::jwt::TokenError;
use orchestrator::auth::outside::ROLES_CLAIM;
use orchestrator::auth::outside::jsonwebtoken::{self, Algorithm, Validation};
use orchestrator::auth::{Clients, Principal, ROLES};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;
use tower_sessions::Session;
use uuid::Uuid;

use crate::console_auth::ConsoleAuth;
use crate::outside_tokens::{KeySet, http_client};

/// Where a login through a provider starts: `/console/oidc/<name>/login?next=...`.
pub const START: &str = "/console/oidc/{name}/login";
/// Where every provider sends the browser back.
pub const CALLBACK: &str = "/console/oidc/callback";
/// The cookie with the id of a pending login: `SameSite=Lax`, so the provider's redirect brings it.
const PENDING_COOKIE: &str = "inmanta_oidc";
/// A login not finished within this time must start again.
const PENDING_TTL: i64 = 600;
/// The discovery document is fetched again after this long (its keys follow their own cache).
const DISCOVERY_MAX_AGE: Duration = Duration::from_secs(3600);

/// The options of an `[oidc_<name>]` section.
pub const OPTIONS: &[&str] = &[
    "issuer",
    "client_id",
    "client_secret",
    "display_name",
    "scopes",
    "algorithm",
    "jwt_username_claim",
    "roles_claim",
    "default_role",
    "redirect_uri",
    "validate_cert",
    "request_timeout",
];

/// One configured provider.
#[derive(Clone, PartialEq)]
pub struct ProviderConfig {
    /// The section name without `oidc_`; in URLs and sessions.
    pub name: String,
    /// Shown on the login page: "Log in with <display_name>".
    pub display_name: String,
    /// The provider's issuer URL; its discovery document is `<issuer>/.well-known/openid-configuration`.
    pub issuer: String,
    pub client_id: String,
    /// None for a public client (PKCE alone).
    pub client_secret: Option<String>,
    pub scopes: String,
    pub algorithm: Algorithm,
    pub username_claim: String,
    pub roles_claim: String,
    /// The role in every environment that the roles claim does not name.
    pub default_role: Option<String>,
    /// The URL of [`CALLBACK`] as the provider knows it; by default the request's own origin.
    pub redirect_uri: Option<String>,
    pub validate_cert: bool,
    pub timeout: Duration,
}

impl std::fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("name", &self.name)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<hidden>"))
            .finish_non_exhaustive()
    }
}

impl ProviderConfig {
    /// Reads the section `oidc_<name>`; `get` answers an option by its name.
    pub fn parse<'a>(name: &str, get: impl Fn(&str) -> Option<&'a str>) -> Result<ProviderConfig, String> {
        let section = format!("[oidc_{name}]");
        let required = |option: &str| {
            get(option)
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
                .ok_or_else(|| format!("{section}: {option} is required"))
        };
        let issuer = required("issuer")?;
        if !(issuer.starts_with("https://") || issuer.starts_with("http://")) {
            return Err(format!("{section}: issuer must be an http(s) URL, got {issuer:?}"));
        }
        let algorithm = match get("algorithm").map(str::trim).unwrap_or("RS256") {
            a if a.eq_ignore_ascii_case("RS256") => Algorithm::RS256,
            a if a.eq_ignore_ascii_case("PS256") => Algorithm::PS256,
            a if a.eq_ignore_ascii_case("ES256") => Algorithm::ES256,
            a if a.eq_ignore_ascii_case("EdDSA") => Algorithm::EdDSA,
            other => {
                return Err(format!(
                    "{section}: algorithm {other:?} is not supported: use RS256, PS256, ES256 or EdDSA"
                ));
            }
        };
        let default_role = get("default_role").map(str::trim).filter(|r| !r.is_empty()).map(str::to_string);
        if let Some(role) = &default_role
            && !ROLES.contains(&role.as_str())
        {
            return Err(format!("{section}: default_role {role:?} is not a role; use one of {}", ROLES.join(", ")));
        }
        let validate_cert = match get("validate_cert").map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("true" | "yes" | "on" | "1") => true,
            Some("false" | "no" | "off" | "0") => false,
            Some(other) => return Err(format!("{section}: validate_cert must be true or false, got {other:?}")),
        };
        let timeout = match get("request_timeout") {
            None => Duration::from_secs(10),
            Some(v) => v
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| format!("{section}: request_timeout must be a positive number of seconds"))?,
        };
        Ok(ProviderConfig {
            name: name.to_string(),
            display_name: get("display_name").map(str::trim).unwrap_or(name).to_string(),
            issuer: issuer.trim_end_matches('/').to_string(),
            client_id: required("client_id")?,
            client_secret: get("client_secret").map(str::trim).filter(|s| !s.is_empty()).map(str::to_string),
            scopes: get("scopes").map(str::trim).unwrap_or("openid profile email").to_string(),
            algorithm,
            username_claim: get("jwt_username_claim").map(str::trim).unwrap_or("preferred_username").to_string(),
            roles_claim: get("roles_claim").map(str::trim).unwrap_or(ROLES_CLAIM).to_string(),
            default_role,
            redirect_uri: get("redirect_uri").map(str::trim).map(str::to_string),
            validate_cert,
            timeout,
        })
    }
}

/// What the provider's discovery document says that we use.
#[derive(Debug, Clone, Deserialize)]
struct Discovery {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: String,
    #[serde(default)]
    end_session_endpoint: Option<String>,
}

/// A provider with what was learnt from it.
#[derive(Debug)]
pub struct Provider {
    pub config: ProviderConfig,
    client: reqwest::Client,
    discovered: Mutex<Option<Discovered>>,
}

#[derive(Debug)]
struct Discovered {
    document: Discovery,
    at: Instant,
    keys: std::sync::Arc<KeySet>,
}

/// Every configured provider, in configuration order, and whether the local form stays offered.
#[derive(Debug, Default)]
pub struct Providers {
    pub providers: Vec<Provider>,
    /// `[web-ui] oidc_local_fallback`: the local user name and password form is offered (and
    /// accepted) next to the providers; without providers it always is.
    pub local_fallback: bool,
}

impl Providers {
    pub fn new(configs: Vec<ProviderConfig>, local_fallback: bool) -> anyhow::Result<Providers> {
        let mut providers = Vec::new();
        for config in configs {
            let client = http_client(config.validate_cert, config.timeout)?;
            providers.push(Provider { config, client, discovered: Mutex::new(None) });
        }
        Ok(Providers { providers, local_fallback })
    }

    /// Whether users may log in with a local user name and password.
    pub fn local_login(&self) -> bool {
        self.providers.is_empty() || self.local_fallback
    }

    pub fn get(&self, name: &str) -> Option<&Provider> {
        self.providers.iter().find(|p| p.config.name == name)
    }
}

impl Provider {
    /// The discovery document and key set, fetched at first use and again when old. A
    /// provider that cannot be reached is asked again at the next login.
    async fn discovery(&self) -> anyhow::Result<(Discovery, std::sync::Arc<KeySet>)> {
        let mut discovered = self.discovered.lock().await;
        if let Some(d) = discovered.as_ref()
            && d.at.elapsed() < DISCOVERY_MAX_AGE
        {
            return Ok((d.document.clone(), d.keys.clone()));
        }
        let url = format!("{}/.well-known/openid-configuration", self.config.issuer);
        let fetched = async {
            let response = self.client.get(&url).send().await?.error_for_status()?;
            anyhow::Ok(serde_json::from_slice::<Discovery>(&response.bytes().await?)?)
        }
        .await;
        let document = match fetched {
            Ok(document) => document,
            Err(e) => {
                // An old document is better than none while the provider is away.
                if let Some(d) = discovered.as_ref() {
                    tracing::warn!(provider = %self.config.name, %url, "cannot refresh the discovery document: {e}");
                    return Ok((d.document.clone(), d.keys.clone()));
                }
                anyhow::bail!("cannot read the discovery document {url}: {e}");
            }
        };
        if document.issuer.trim_end_matches('/') != self.config.issuer {
            anyhow::bail!(
                "the discovery document {url} names the issuer {:?}, not the configured {:?}",
                document.issuer,
                self.config.issuer
            );
        }
        // The same key set keeps its cache (and its refetch limit) across refreshes.
        let keys = match discovered.take() {
            Some(old) if old.keys.uri() == document.jwks_uri => old.keys,
            _ => std::sync::Arc::new(KeySet::new(
                &self.config.issuer,
                &document.jwks_uri,
                self.config.validate_cert,
                self.config.timeout,
            )),
        };
        *discovered = Some(Discovered { document: document.clone(), at: Instant::now(), keys: keys.clone() });
        Ok((document, keys))
    }

    /// Checks an ID token from the token endpoint: the algorithm configured, a signature by a
    /// key of the provider's set (refetched for an unknown `kid`), issuer, audience (our client
    /// id), expiry and our nonce.
    async fn verify_id_token(
        &self,
        token: &str,
        nonce: &str,
        keys: &KeySet,
        leeway: u64,
    ) -> Result<Map<String, Value>, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
        if header.alg != self.config.algorithm {
            return Err(TokenError::Algorithm(format!("{:?}", header.alg)));
        }
        let kid = header.kid.as_deref().ok_or(TokenError::MissingKid)?;
        let key = keys.key(kid).await?;
        let mut validation = Validation::new(self.config.algorithm);
        validation.set_issuer(&[&self.config.issuer, &format!("{}/", self.config.issuer)]);
        validation.set_audience(&[&self.config.client_id]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = leeway;
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|e| TokenError::from_check(&e))?
            .claims;
        if claims.get("nonce").and_then(Value::as_str) != Some(nonce) {
            return Err(TokenError::Claims("the ID token's nonce is not the one of this login".into()));
        }
        Ok(claims)
    }
}

/// A login on its way through the provider, stored until the provider answers.
#[derive(Serialize, Deserialize)]
struct Pending {
    provider: String,
    state: String,
    nonce: String,
    verifier: String,
    redirect_uri: String,
    next: String,
}

/// What a console session of a user of a provider holds: who they are and what the claims
/// gave them at login.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SsoLogin {
    pub provider: String,
    pub username: String,
    pub is_admin: bool,
    pub roles: BTreeMap<Uuid, Vec<String>>,
    pub default_role: Option<String>,
    /// For the provider's end-session endpoint (`id_token_hint`).
    pub id_token: String,
}

impl SsoLogin {
    /// The principal, with the default role in every environment of `environments` that the
    /// claims do not name.
    pub fn principal(&self, environments: impl IntoIterator<Item = Uuid>) -> Principal {
        let mut roles = self.roles.clone();
        if let Some(role) = &self.default_role {
            for env in environments {
                roles.entry(env).or_insert_with(|| vec![role.clone()]);
            }
        }
        Principal::User { username: self.username.clone(), is_admin: self.is_admin, roles, must_change_password: false }
    }
}

/// Random text for `state`, `nonce` and the PKCE verifier: 244 random bits in 64 characters of
/// the verifier's alphabet.
fn random() -> String {
    format!("{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple())
}

fn pkce_challenge(verifier: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// The origin the browser reached us at, for the default redirect URI.
fn own_origin(auth: &ConsoleAuth, headers: &HeaderMap) -> String {
    let scheme = if auth.security.secure_cookies { "https" } else { "http" };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("localhost");
    format!("{scheme}://{host}")
}

#[derive(Deserialize)]
pub struct StartQuery {
    #[serde(default)]
    next: Option<String>,
}

/// `GET /console/oidc/<name>/login`: off to the provider.
pub async fn start(
    State(auth): State<ConsoleAuth>,
    Path(name): Path<String>,
    Query(q): Query<StartQuery>,
    headers: HeaderMap,
) -> Response {
    let Some(provider) = auth.oidc.get(&name) else {
        return crate::console_auth::login_refused(
            &auth,
            StatusCode::NOT_FOUND,
            &format!("No login provider named {name:?}."),
        );
    };
    let discovery = match provider.discovery().await {
        Ok((discovery, _)) => discovery,
        Err(e) => {
            tracing::warn!(provider = %name, "login through the provider is not possible: {e:#}");
            let message = format!(
                "{} cannot be reached now; try again later or ask an administrator.",
                provider.config.display_name
            );
            return crate::console_auth::login_refused(&auth, StatusCode::BAD_GATEWAY, &message);
        }
    };
    let redirect_uri =
        provider.config.redirect_uri.clone().unwrap_or_else(|| format!("{}{CALLBACK}", own_origin(&auth, &headers)));
    let pending = Pending {
        provider: name.clone(),
        state: random(),
        nonce: random(),
        verifier: random(),
        redirect_uri,
        next: crate::console_auth::safe_next(q.next.as_deref()),
    };
    let id = random();
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let data = serde_json::to_string(&pending).unwrap_or_default();
    if let Err(e) = auth.orchestrator.session_save(&pending_key(&id), &data, now + PENDING_TTL, true).await {
        return crate::console_auth::server_error(e);
    }
    let mut url = match reqwest::Url::parse(&discovery.authorization_endpoint) {
        Ok(url) => url,
        Err(e) => return crate::console_auth::server_error(format!("the provider's authorization_endpoint: {e}")),
    };
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &provider.config.client_id)
        .append_pair("redirect_uri", &pending.redirect_uri)
        .append_pair("scope", &provider.config.scopes)
        .append_pair("state", &pending.state)
        .append_pair("nonce", &pending.nonce)
        .append_pair("code_challenge", &pkce_challenge(&pending.verifier))
        .append_pair("code_challenge_method", "S256");
    let mut response = Redirect::to(url.as_str()).into_response();
    let secure = if auth.security.secure_cookies { "; Secure" } else { "" };
    let cookie =
        format!("{PENDING_COOKIE}={id}; Path={CALLBACK}; Max-Age={PENDING_TTL}; HttpOnly; SameSite=Lax{secure}");
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
    response
}

fn pending_key(id: &str) -> String {
    format!("oidc-pending:{id}")
}

#[derive(Deserialize)]
pub struct CallbackQuery {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

#[derive(Deserialize)]
struct TokenResponse {
    id_token: Option<String>,
}

/// `GET /console/oidc/callback`: the provider's answer. Every failure goes back to the login
/// page with what went wrong (the details to the log).
pub async fn callback(
    State(auth): State<ConsoleAuth>,
    headers: HeaderMap,
    session: Session,
    Query(q): Query<CallbackQuery>,
) -> Response {
    let refused = |message: &str| {
        let mut response = crate::console_auth::login_refused(&auth, StatusCode::FORBIDDEN, message);
        response.headers_mut().append(header::SET_COOKIE, clear_pending_cookie());
        response
    };
    let Some(id) = cookie(&headers, PENDING_COOKIE) else {
        return refused("This login was not started here, or took longer than 10 minutes. Log in again.");
    };
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let stored = match auth.orchestrator.session_load(&pending_key(&id), now).await {
        Ok(stored) => stored,
        Err(e) => return crate::console_auth::server_error(e),
    };
    // One answer per login: a replayed callback finds nothing.
    if let Err(e) = auth.orchestrator.session_delete(&pending_key(&id)).await {
        return crate::console_auth::server_error(e);
    }
    let Some(pending) = stored.and_then(|(data, _)| serde_json::from_str::<Pending>(&data).ok()) else {
        return refused("This login was not started here, or took longer than 10 minutes. Log in again.");
    };
    let Some(provider) = auth.oidc.get(&pending.provider) else {
        return refused("The login provider of this login is no longer configured.");
    };
    let display = &provider.config.display_name;
    if q.state.as_deref() != Some(pending.state.as_str()) {
        tracing::warn!(provider = %pending.provider, "login answer with a state that is not this browser's");
        return refused("The answer of the login provider does not belong to this login (state). Log in again.");
    }
    if let Some(error) = &q.error {
        let detail = q.error_description.as_deref().unwrap_or("");
        tracing::info!(provider = %pending.provider, %error, %detail, "the login provider refused the login");
        return refused(&format!("{display} refused the login: {error} {detail}"));
    }
    let Some(code) = q.code.as_deref() else {
        return refused(&format!("{display} answered without an authorization code."));
    };
    let (discovery, keys) = match provider.discovery().await {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(provider = %pending.provider, "{e:#}");
            return refused(&format!("{display} cannot be reached now; try again later."));
        }
    };
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", pending.redirect_uri.as_str()),
        ("code_verifier", pending.verifier.as_str()),
    ];
    let mut request = provider.client.post(&discovery.token_endpoint);
    match &provider.config.client_secret {
        Some(secret) => {
            request = request.basic_auth(form_encode(&provider.config.client_id), Some(form_encode(secret)))
        }
        None => form.push(("client_id", provider.config.client_id.as_str())),
    }
    let exchanged = async {
        let response = request.form(&form).send().await?;
        let status = response.status();
        let body = response.bytes().await?;
        if !status.is_success() {
            anyhow::bail!("the token endpoint answered {status}: {}", String::from_utf8_lossy(&body));
        }
        anyhow::Ok(serde_json::from_slice::<TokenResponse>(&body)?)
    }
    .await;
    let id_token = match exchanged {
        Ok(TokenResponse { id_token: Some(token) }) => token,
        Ok(_) => return refused(&format!("{display} gave no ID token (is `openid` among the scopes?).")),
        Err(e) => {
            tracing::warn!(provider = %pending.provider, "code exchange failed: {e:#}");
            return refused(&format!("{display} did not accept the login's code; log in again."));
        }
    };
    let leeway = auth.security.authenticator.leeway();
    let claims = match provider.verify_id_token(&id_token, &pending.nonce, &keys, leeway).await {
        Ok(claims) => claims,
        Err(e) => {
            tracing::warn!(provider = %pending.provider, "ID token refused: {e}");
            return refused(&format!("The ID token of {display} was refused: {e}"));
        }
    };
    let login = match sso_login(&provider.config, &claims, id_token) {
        Ok(login) => login,
        Err(message) => return refused(&message),
    };
    match auth.orchestrator.record_sso_user(&login.username, login.is_admin).await {
        Ok(()) => {}
        Err(orchestrator::Error::Conflict(message) | orchestrator::Error::BadRequest(message)) => {
            return refused(&message);
        }
        Err(e) => return crate::console_auth::server_error(e),
    }
    if let Err(e) = crate::sessions::begin_sso(&session, &login).await {
        return crate::console_auth::server_error(e);
    }
    tracing::info!(username = %login.username, provider = %login.provider, admin = login.is_admin, "user logged in through the login provider");
    // A page that moves on by itself rather than a redirect: the session cookie is
    // `SameSite=Strict`, and a redirect that continues the provider's cross-site navigation
    // would arrive without it.
    let mut response = continue_to(&auth, "Logged in", &pending.next);
    response.headers_mut().append(header::SET_COOKIE, clear_pending_cookie());
    response
}

/// The claims of a verified ID token as a console login.
fn sso_login(config: &ProviderConfig, claims: &Map<String, Value>, id_token: String) -> Result<SsoLogin, String> {
    let principal =
        orchestrator::auth::outside::principal_of(claims, Clients::API, &config.username_claim, &config.roles_claim)
            .map_err(|e| format!("The ID token cannot be used: {e}"))?;
    let Principal::User { username, is_admin, roles, .. } = principal else {
        return Err(format!("The ID token names no user (claim {})", config.username_claim));
    };
    for (env, granted) in &roles {
        if let Some(unknown) = granted.iter().find(|r| !ROLES.contains(&r.as_str())) {
            return Err(format!(
                "The claim {} gives the role {unknown:?} in {env}, which does not exist (roles: {})",
                config.roles_claim,
                ROLES.join(", ")
            ));
        }
    }
    Ok(SsoLogin {
        provider: config.name.clone(),
        username,
        is_admin,
        roles,
        default_role: config.default_role.clone(),
        id_token,
    })
}

/// Basic authentication of OAuth clients form-encodes id and secret first (RFC 6749 §2.3.1).
fn form_encode(text: &str) -> String {
    reqwest::Url::parse_with_params("x:", &[("v", text)])
        .ok()
        .and_then(|u| u.query().map(|q| q.trim_start_matches("v=").to_string()))
        .unwrap_or_else(|| text.to_string())
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

fn clear_pending_cookie() -> HeaderValue {
    HeaderValue::from_str(&format!("{PENDING_COOKIE}=; Path={CALLBACK}; Max-Age=0; HttpOnly; SameSite=Lax"))
        .unwrap_or(HeaderValue::from_static(""))
}

/// A page that goes on to `url` at once (and offers a link, should it not).
pub fn continue_to(auth: &ConsoleAuth, title: &str, url: &str) -> Response {
    let url = crate::console_auth::escape(url);
    let body = format!(
        r#"<h1>{title}</h1>
<meta http-equiv="refresh" content="0;url={url}"/>
<p><a id="continue" href="{url}">Continue</a></p>"#
    );
    (StatusCode::OK, Html(crate::console_auth::page(auth, title, &body))).into_response()
}

/// Where the browser goes after our session ended: the provider's end-session endpoint when
/// the session came from a provider that has one (so the provider's session ends too), else
/// our login page.
pub async fn logout_target(auth: &ConsoleAuth, login: Option<&SsoLogin>, headers: &HeaderMap) -> Option<String> {
    let login = login?;
    let provider = auth.oidc.get(&login.provider)?;
    let (discovery, _) = provider.discovery().await.ok()?;
    let mut url = reqwest::Url::parse(discovery.end_session_endpoint.as_deref()?).ok()?;
    let back = format!("{}{}", own_origin(auth, headers), crate::console_auth::LOGIN);
    url.query_pairs_mut()
        .append_pair("id_token_hint", &login.id_token)
        .append_pair("client_id", &provider.config.client_id)
        .append_pair("post_logout_redirect_uri", &back);
    Some(url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(options: &[(&str, &str)]) -> Result<ProviderConfig, String> {
        ProviderConfig::parse("sso", |name| options.iter().find(|(k, _)| *k == name).map(|(_, v)| *v))
    }

    #[test]
    fn sections_read_with_defaults_and_clear_errors() {
        let p = section(&[("issuer", "https://sso.example.com/realms/ops/"), ("client_id", "inmanta")]).unwrap();
        assert_eq!(p.issuer, "https://sso.example.com/realms/ops");
        assert_eq!(p.display_name, "sso");
        assert_eq!(p.scopes, "openid profile email");
        assert_eq!(p.username_claim, "preferred_username");
        assert_eq!(p.roles_claim, ROLES_CLAIM);
        assert_eq!(p.algorithm, Algorithm::RS256);
        assert!(p.client_secret.is_none() && p.validate_cert);
        let err = section(&[("client_id", "inmanta")]).unwrap_err();
        assert!(err.contains("[oidc_sso]: issuer is required"), "{err}");
        let err = section(&[("issuer", "https://x"), ("client_id", "c"), ("default_role", "god")]).unwrap_err();
        assert!(err.contains("default_role \"god\" is not a role"), "{err}");
        let err = section(&[("issuer", "https://x"), ("client_id", "c"), ("algorithm", "none")]).unwrap_err();
        assert!(err.contains("not supported"), "{err}");
    }

    #[test]
    fn the_pkce_challenge_is_the_verifiers_sha256_in_url_safe_base64() {
        // Expected value from Python: base64.urlsafe_b64encode(hashlib.sha256(v).digest()) without `=`.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r7wW1gFWFOEjXk"),
            "bwWFMyPfdG9qreDhH2lmftFx_dFeLDalzcT1gb_j68g"
        );
        assert_eq!(random().len(), 64);
    }

    #[test]
    fn claims_become_a_login_with_the_default_role_elsewhere() {
        let config = section(&[
            ("issuer", "https://x"),
            ("client_id", "c"),
            ("roles_claim", "inmanta_roles"),
            ("default_role", "read-only"),
        ])
        .unwrap();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let claims = serde_json::json!({"preferred_username": "ann", "inmanta_roles": {a.to_string(): ["operator"]}});
        let login = sso_login(&config, claims.as_object().unwrap(), "t".into()).unwrap();
        let Principal::User { username, roles, is_admin, .. } = login.principal([a, b]) else { panic!() };
        assert_eq!((username.as_str(), is_admin), ("ann", false));
        assert_eq!(roles[&a], vec!["operator".to_string()]);
        assert_eq!(roles[&b], vec!["read-only".to_string()]);
        let bad = serde_json::json!({"preferred_username": "ann", "inmanta_roles": {a.to_string(): ["god"]}});
        let err = sso_login(&config, bad.as_object().unwrap(), "t".into()).unwrap_err();
        assert!(err.contains("does not exist"), "{err}");
        let nobody = serde_json::json!({"sub": "x"});
        assert!(sso_login(&config, nobody.as_object().unwrap(), "t".into()).is_err());
    }
}
