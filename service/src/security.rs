//! Authentication at the HTTP edge: bearer tokens for the API and the agent session, the
//! console's session cookie, the login throttle (with the client address, trusted proxies
//! considered) and the first admin. What a caller may do
//! is decided by `orchestrator::Orchestrator::authorize`, not here.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

use axum::http::{HeaderMap, StatusCode, header};
use orchestrator::Orchestrator;
use orchestrator::auth::Principal;
use orchestrator::auth::jwt::{self, TokenError};
use orchestrator::auth::outside::{Issuer, KeySource};
use orchestrator::auth::throttle::{LoginThrottle, ThrottleSettings, Throttled};
use orchestrator::auth::tokens::{Authenticator, Unauthenticated};
use orchestrator::auth::users::UserRecord;

use crate::outside_tokens::OutsideIssuers;
use crate::rest::error::ApiError;

/// The server's authentication state, shared by the API, the console and the agent session.
#[derive(Debug)]
pub struct Security {
    pub authenticator: Authenticator,
    /// False only with `--no-auth`: every caller is then unrestricted.
    pub enabled: bool,
    pub logins: LoginThrottle,
    /// The server speaks HTTPS: session cookies are `Secure`.
    pub secure_cookies: bool,
    /// Peers whose `X-Forwarded-For` names the client (`[server] trusted-proxies`).
    pub trusted_proxies: Vec<IpAddr>,
    /// Issuers of tokens this server accepts but did not sign (`[auth_jwt_<name>]`).
    pub outside: OutsideIssuers,
    /// OpenID Connect providers for the console's login (`[oidc_<name>]`).
    pub oidc: std::sync::Arc<crate::oidc::Providers>,
}

impl Security {
    pub async fn new(
        orchestrator: &Orchestrator,
        enabled: bool,
        login_expire: i64,
        max_failures: usize,
    ) -> orchestrator::Result<Security> {
        Ok(Security {
            authenticator: Authenticator::load(orchestrator, login_expire).await?,
            enabled,
            logins: LoginThrottle::new(
                orchestrator.store().clone(),
                &ThrottleSettings::for_max_failures(max_failures.try_into().unwrap_or(u32::MAX)),
            ),
            trusted_proxies: Vec::new(),
            secure_cookies: false,
            outside: OutsideIssuers::default(),
            oidc: Default::default(),
        })
    }

    /// The `[auth_jwt_<name>]` sections: the one with `sign=true` becomes this server's own
    /// key, the others are outside issuers whose tokens are accepted.
    pub fn with_jwt_issuers(mut self, issuers: &[Issuer], leeway: u64) -> anyhow::Result<Security> {
        if let Some(signing) = issuers.iter().find(|i| i.sign) {
            let KeySource::Shared(secret) = &signing.keys else {
                anyhow::bail!("[auth_jwt_{}]: only an HS256 section can sign", signing.name);
            };
            self.authenticator = self.authenticator.with_signing_key(secret, &signing.issuer, &signing.audience);
        }
        let own = self.authenticator.issuer();
        if let Some(clash) = issuers.iter().find(|i| !i.sign && i.issuer == own) {
            anyhow::bail!(
                "[auth_jwt_{}]: its issuer {own} is this server's own; set `issuer` to the issuer's `iss`",
                clash.name
            );
        }
        self.outside = OutsideIssuers::new(issuers.to_vec(), leeway)?;
        Ok(self)
    }

    /// The console's login providers and whether the local form stays offered next to them.
    pub fn with_oidc(mut self, providers: crate::oidc::Providers) -> Security {
        self.oidc = std::sync::Arc::new(providers);
        self
    }

    /// Takes the client address from `X-Forwarded-For` when the peer is one of these proxies.
    pub fn with_trusted_proxies(mut self, proxies: Vec<IpAddr>) -> Security {
        self.trusted_proxies = proxies;
        self
    }

    /// Tolerates this much clock skew (seconds) on token expiry.
    pub fn with_token_leeway(mut self, seconds: u64) -> Security {
        self.authenticator = self.authenticator.with_leeway(seconds);
        self
    }

    /// The client's address: the peer, or when the peer is a trusted proxy, the last address
    /// in `X-Forwarded-For` that is not one (earlier entries are the client's own word).
    pub fn client_address(&self, peer: Option<SocketAddr>, headers: &HeaderMap) -> Option<IpAddr> {
        let peer = peer?.ip();
        if !self.trusted_proxies.contains(&peer) {
            return Some(peer);
        }
        let forwarded = headers.get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok());
        let hops: Vec<IpAddr> = forwarded.flat_map(|v| v.split(',')).filter_map(|a| a.trim().parse().ok()).collect();
        Some(hops.into_iter().rev().find(|hop| !self.trusted_proxies.contains(hop)).unwrap_or(peer))
    }

    /// The caller of an API request, from its `Authorization: Bearer` header. As Inmanta: no
    /// token is a 401, a token that is refused a 403 `Access denied: <which check failed>`.
    pub async fn authenticate(&self, orchestrator: &Orchestrator, headers: &HeaderMap) -> Result<Principal, ApiError> {
        if !self.enabled {
            return Ok(Principal::Unrestricted);
        }
        let outcome = match bearer(headers) {
            Some(token) => self.principal_of(orchestrator, token).await?,
            None => Err(Unauthenticated::Missing),
        };
        outcome.map_err(|e| match e {
            Unauthenticated::Missing => ApiError::new(StatusCode::UNAUTHORIZED, e.to_string()),
            refused => ApiError::new(StatusCode::FORBIDDEN, format!("Access denied: {refused}")),
        })
    }

    /// Who a bearer token names: this server's own tokens by its key and registry, the others
    /// by the `[auth_jwt_<name>]` section of their issuer.
    pub async fn principal_of(
        &self,
        orchestrator: &Orchestrator,
        token: &str,
    ) -> orchestrator::Result<Result<Principal, Unauthenticated>> {
        let unverified = match jwt::peek(token) {
            Ok(unverified) => unverified,
            Err(e) => return Ok(Err(e.into())),
        };
        match unverified.issuer() {
            None => Ok(Err(TokenError::MissingIssuer.into())),
            Some(iss) if iss == self.authenticator.issuer() => {
                self.authenticator.authenticate(orchestrator, token).await
            }
            Some(_) => Ok(self.outside.authenticate(token, &unverified).await.map_err(Unauthenticated::from)),
        }
    }
}

/// Why a login was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginRefused {
    /// The user at this address, or the address, used up its failures; try again after this long.
    TooManyFailures(std::time::Duration),
    WrongCredentials,
}

impl Security {
    /// Checks a login (API or console) against the throttle and the stored hash. Every attempt
    /// is logged with user name and client address, never the password.
    pub async fn login(
        &self,
        orchestrator: &Orchestrator,
        username: &str,
        password: &str,
        peer: Option<SocketAddr>,
        headers: &HeaderMap,
    ) -> orchestrator::Result<Result<UserRecord, LoginRefused>> {
        let address = self.client_address(peer, headers);
        let client = address.map(|a| a.to_string()).unwrap_or_else(|| "-".into());
        if let Err(throttled) = self.logins.check(username, address).await? {
            let (reason, wait) = match throttled {
                Throttled::User(wait) => ("too many failed attempts for this user from this address", wait),
                Throttled::Address(wait) => ("too many failed attempts from this address", wait),
            };
            tracing::warn!(%username, %client, wait_seconds = wait.as_secs_f64(), "login refused: {reason}");
            // Whole seconds, rounded up: a client that waits `Retry-After` is then let in.
            let whole = std::time::Duration::from_secs(throttled.wait().as_secs_f64().ceil() as u64);
            return Ok(Err(LoginRefused::TooManyFailures(whole)));
        }
        let Some(user) = orchestrator.verify_login(username, password).await? else {
            match self.logins.failed(username, address).await? {
                Some(wait) => tracing::warn!(
                    %username, %client, wait_seconds = wait.as_secs_f64(),
                    "login failed: wrong username or password; further attempts from this address must wait"
                ),
                None => tracing::warn!(%username, %client, "login failed: wrong username or password"),
            }
            return Ok(Err(LoginRefused::WrongCredentials));
        };
        tracing::info!(username = %user.username, %client, "user logged in");
        Ok(Ok(user))
    }
}

/// The token of an `Authorization: Bearer <token>` header.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(token.trim()).filter(|t| !t.is_empty())
}

/// The file the generated first admin password is written to, readable by the owner only.
pub const INITIAL_PASSWORD_FILE: &str = "initial-admin-password";

/// On a server without users, creates `admin` with a random password that must be changed at
/// first login, and tells the operator once where to find it.
pub async fn ensure_first_admin(orchestrator: &Orchestrator, state_dir: &Path) -> anyhow::Result<Option<String>> {
    if orchestrator.user_count().await? > 0 {
        return Ok(None);
    }
    let password = orchestrator::auth::password::generate();
    if !orchestrator.create_first_admin(&password).await? {
        // Another server on the same database created it first.
        return Ok(None);
    }
    let file = state_dir.join(INITIAL_PASSWORD_FILE);
    write_private(&file, &format!("{password}\n"))?;
    tracing::warn!(
        "created the first user `admin` with the generated password {password} (also in {}); it must be \
         changed at first login",
        file.display()
    );
    Ok(Some(file.display().to_string()))
}

/// Writes a file only its owner can read.
pub fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.write_all(contents.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn forwarded_for_counts_only_behind_a_trusted_proxy() {
        let dir = tempfile::tempdir().unwrap();
        let orchestrator =
            Orchestrator::open(&format!("sqlite://{}", dir.path().join("inmanta.db").display())).await.unwrap();
        let proxy: IpAddr = "10.0.0.1".parse().unwrap();
        let security = Security::new(&orchestrator, true, 3600, 5).await.unwrap().with_trusted_proxies(vec![proxy]);
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", "6.6.6.6, 192.0.2.9, 10.0.0.1".parse().unwrap());
        let from = |ip: &str| Some(SocketAddr::new(ip.parse().unwrap(), 4000));
        assert_eq!(security.client_address(from("10.0.0.1"), &headers), Some("192.0.2.9".parse().unwrap()));
        assert_eq!(
            security.client_address(from("203.0.113.5"), &headers),
            Some("203.0.113.5".parse().unwrap()),
            "anyone else's X-Forwarded-For is ignored"
        );
        assert_eq!(security.client_address(from("10.0.0.1"), &HeaderMap::new()), Some(proxy));
    }

    #[tokio::test]
    async fn an_outside_issuer_may_not_take_the_servers_own() {
        let dir = tempfile::tempdir().unwrap();
        let orchestrator =
            Orchestrator::open(&format!("sqlite://{}", dir.path().join("inmanta.db").display())).await.unwrap();
        let security = Security::new(&orchestrator, true, 3600, 5).await.unwrap();
        // No `issuer`: Inmanta's default, which is also the issuer of this server's own tokens.
        let section = Issuer::parse("ci", |option| match option {
            "algorithm" => Some("HS256"),
            "key" => Some("c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldC0xMjM0NTY3ODk"),
            "client_types" => Some("api"),
            _ => None,
        })
        .unwrap();
        let err = security.with_jwt_issuers(&[section], 0).unwrap_err().to_string();
        assert!(err.contains("[auth_jwt_ci]") && err.contains("issuer"), "{err}");
    }

    #[test]
    fn bearer_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), None);
        headers.insert(header::AUTHORIZATION, "Bearer abc.def.ghi".parse().unwrap());
        assert_eq!(bearer(&headers), Some("abc.def.ghi"));
        headers.insert(header::AUTHORIZATION, "Basic xyz".parse().unwrap());
        assert_eq!(bearer(&headers), None);
    }
}
