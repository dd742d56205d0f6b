//! Authentication at the HTTP edge: bearer tokens for the API and the agent session, the
//! console's session cookie, the login rate limit and the first admin. What a caller may do
//! is decided by `orchestrator::auth::Principal::authorize`, not here.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode, header};
use orchestrator::Orchestrator;
use orchestrator::auth::Principal;
use orchestrator::auth::tokens::{Authenticator, Unauthenticated};
use orchestrator::auth::users::UserRecord;

use crate::rest::error::ApiError;

/// The server's authentication state, shared by the API, the console and the agent session.
#[derive(Debug)]
pub struct Security {
    pub authenticator: Authenticator,
    /// False only with `--no-auth`: every caller is then unrestricted.
    pub enabled: bool,
    pub logins: LoginLimiter,
    /// The server speaks HTTPS: session cookies are `Secure`.
    pub secure_cookies: bool,
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
            logins: LoginLimiter::new(Duration::from_secs(300), max_failures.max(1), max_failures.max(1) * 4),
            secure_cookies: false,
        })
    }

    /// The caller of an API request, from its `Authorization: Bearer` header.
    pub async fn authenticate(&self, orchestrator: &Orchestrator, headers: &HeaderMap) -> Result<Principal, ApiError> {
        if !self.enabled {
            return Ok(Principal::Unrestricted);
        }
        let token = bearer(headers).ok_or(Unauthenticated::Missing);
        let outcome = match token {
            Ok(token) => self.authenticator.authenticate(orchestrator, token).await?,
            Err(missing) => Err(missing),
        };
        outcome.map_err(|e| ApiError::new(StatusCode::UNAUTHORIZED, e.to_string()))
    }
}

/// Why a login was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginRefused {
    /// The user or the address used up its failures; try again after this long.
    TooManyFailures(Duration),
    WrongCredentials,
}

impl Security {
    /// Checks a login (API or console) against the rate limit and the stored hash. Failures are
    /// counted and logged with user name and address, never the password.
    pub async fn login(
        &self,
        orchestrator: &Orchestrator,
        username: &str,
        password: &str,
        peer: Option<std::net::SocketAddr>,
    ) -> orchestrator::Result<Result<UserRecord, LoginRefused>> {
        let address = peer.map(|p| p.ip());
        let peer = peer.map(|p| p.to_string()).unwrap_or_else(|| "-".into());
        if let Err(wait) = self.logins.check(username, address) {
            tracing::warn!(%username, %peer, "login refused: too many failed attempts");
            return Ok(Err(LoginRefused::TooManyFailures(wait)));
        }
        let Some(user) = orchestrator.verify_login(username, password).await? else {
            self.logins.failed(username, address);
            tracing::warn!(%username, %peer, "login failed: wrong username or password");
            return Ok(Err(LoginRefused::WrongCredentials));
        };
        self.logins.succeeded(username);
        tracing::info!(username = %user.username, %peer, "user logged in");
        Ok(Ok(user))
    }
}

/// The token of an `Authorization: Bearer <token>` header.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(token.trim()).filter(|t| !t.is_empty())
}

#[derive(Debug)]
/// Failed logins in a sliding window, per user name and per client address, so guessing
/// passwords is slow for one account and for one machine trying many accounts.
pub struct LoginLimiter {
    window: Duration,
    per_user: usize,
    per_address: usize,
    failures: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl LoginLimiter {
    pub fn new(window: Duration, per_user: usize, per_address: usize) -> LoginLimiter {
        LoginLimiter { window, per_user, per_address, failures: Mutex::default() }
    }

    fn keys(username: &str, address: Option<IpAddr>) -> [Option<String>; 2] {
        [Some(format!("user:{}", username.trim().to_lowercase())), address.map(|a| format!("addr:{a}"))]
    }

    /// `Err(wait)` while either the user or the address used up its failures.
    pub fn check(&self, username: &str, address: Option<IpAddr>) -> Result<(), Duration> {
        let now = Instant::now();
        let mut failures = self.failures.lock().expect("limiter lock");
        let [user, addr] = Self::keys(username, address);
        for (key, limit) in [(user, self.per_user), (addr, self.per_address)] {
            let Some(key) = key else { continue };
            let Some(times) = failures.get_mut(&key) else { continue };
            while times.front().is_some_and(|t| now.duration_since(*t) >= self.window) {
                times.pop_front();
            }
            if times.len() >= limit {
                let oldest = *times.front().expect("non-empty");
                return Err(self.window.saturating_sub(now.duration_since(oldest)));
            }
        }
        Ok(())
    }

    pub fn failed(&self, username: &str, address: Option<IpAddr>) {
        let mut failures = self.failures.lock().expect("limiter lock");
        // Bound memory under a flood of made-up user names.
        if failures.len() > 100_000 {
            failures.clear();
        }
        for key in Self::keys(username, address).into_iter().flatten() {
            failures.entry(key).or_default().push_back(Instant::now());
        }
    }

    pub fn succeeded(&self, username: &str) {
        let [user, _] = Self::keys(username, None);
        if let Some(user) = user {
            self.failures.lock().expect("limiter lock").remove(&user);
        }
    }
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
    orchestrator.create_user("admin", &password, true, true).await?;
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

    #[test]
    fn limiter_counts_per_user_and_per_address() {
        let limiter = LoginLimiter::new(Duration::from_secs(60), 2, 3);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        assert!(limiter.check("alice", Some(a)).is_ok());
        limiter.failed("alice", Some(a));
        limiter.failed("Alice", Some(a));
        assert!(limiter.check("alice", None).is_err(), "alice used her two failures");
        assert!(limiter.check("bob", Some(a)).is_ok(), "the address has one left");
        limiter.failed("bob", Some(a));
        assert!(limiter.check("carol", Some(a)).is_err(), "the address used its three");
        assert!(limiter.check("carol", Some("10.0.0.2".parse().unwrap())).is_ok());
        limiter.succeeded("alice");
        assert!(limiter.check("alice", None).is_ok());
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
