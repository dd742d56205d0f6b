//! Console login sessions with tower-sessions, stored in the orchestrator's database (so they
//! survive restarts and replicas share them). The cookie holds only a random id.

use std::time::Duration;

use async_trait::async_trait;
use orchestrator::Orchestrator;
use orchestrator::auth::Principal;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{Error, Result};
use tower_sessions::{Expiry, Session, SessionManagerLayer, SessionStore};

/// The cookie's name.
pub const COOKIE: &str = "inmanta_session";
const USER_KEY: &str = "user";
const PASSWORD_VERSION_KEY: &str = "pwv";
/// A login through an OpenID Connect provider: [`crate::oidc::SsoLogin`].
const SSO_KEY: &str = "sso";

#[derive(Clone)]
pub struct DatabaseStore(pub Orchestrator);

impl std::fmt::Debug for DatabaseStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DatabaseStore")
    }
}

fn backend(e: impl std::fmt::Display) -> Error {
    Error::Backend(e.to_string())
}

#[async_trait]
impl SessionStore for DatabaseStore {
    async fn create(&self, record: &mut Record) -> Result<()> {
        let data = serde_json::to_string(&record.data).map_err(|e| Error::Encode(e.to_string()))?;
        // A colliding random id is astronomically unlikely; pick another rather than overwrite.
        loop {
            let stored = self
                .0
                .session_save(&record.id.to_string(), &data, record.expiry_date.unix_timestamp(), true)
                .await
                .map_err(backend)?;
            if stored {
                return Ok(());
            }
            record.id = Id::default();
        }
    }

    async fn save(&self, record: &Record) -> Result<()> {
        let data = serde_json::to_string(&record.data).map_err(|e| Error::Encode(e.to_string()))?;
        self.0
            .session_save(&record.id.to_string(), &data, record.expiry_date.unix_timestamp(), false)
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn load(&self, id: &Id) -> Result<Option<Record>> {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let Some((data, expires_at)) = self.0.session_load(&id.to_string(), now).await.map_err(backend)? else {
            return Ok(None);
        };
        let data = serde_json::from_str(&data).map_err(|e| Error::Decode(e.to_string()))?;
        let expiry_date =
            time::OffsetDateTime::from_unix_timestamp(expires_at).map_err(|e| Error::Decode(e.to_string()))?;
        Ok(Some(Record { id: *id, data, expiry_date }))
    }

    async fn delete(&self, id: &Id) -> Result<()> {
        self.0.session_delete(&id.to_string()).await.map_err(backend)
    }
}

/// The session layer: an http-only, same-site strict cookie that expires after `expire_seconds`
/// without activity.
/// `secure`: the server speaks HTTPS, so the browser never sends the cookie over plain HTTP.
pub fn layer(orchestrator: Orchestrator, expire_seconds: i64, secure: bool) -> SessionManagerLayer<DatabaseStore> {
    SessionManagerLayer::new(DatabaseStore(orchestrator))
        .with_name(COOKIE)
        .with_http_only(true)
        .with_secure(secure)
        .with_same_site(tower_sessions::cookie::SameSite::Strict)
        .with_path("/")
        .with_expiry(Expiry::OnInactivity(time::Duration::seconds(expire_seconds)))
}

/// Deletes expired sessions every ten minutes, in the background.
pub fn start_cleanup(orchestrator: Orchestrator) {
    tokio::spawn(remove_expired(orchestrator));
}

async fn remove_expired(orchestrator: Orchestrator) {
    loop {
        tokio::time::sleep(Duration::from_secs(600)).await;
        match orchestrator.sessions_delete_expired(time::OffsetDateTime::now_utc().unix_timestamp()).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(n, "removed expired console sessions"),
            Err(e) => tracing::debug!("cannot remove expired sessions: {e}"),
        }
    }
}

/// Starts a console session for a user who just logged in. A new session id is issued so an id
/// planted before login (session fixation) is worthless afterwards.
pub async fn begin(
    session: &Session,
    user: &orchestrator::auth::users::UserRecord,
) -> std::result::Result<(), tower_sessions::session::Error> {
    session.cycle_id().await?;
    session.insert(USER_KEY, &user.username).await?;
    session.insert(PASSWORD_VERSION_KEY, &user.password_version).await?;
    Ok(())
}

/// Starts a console session for a user who logged in through an OpenID Connect provider
/// (a new session id, as [`begin`]).
pub async fn begin_sso(
    session: &Session,
    login: &crate::oidc::SsoLogin,
) -> std::result::Result<(), tower_sessions::session::Error> {
    session.cycle_id().await?;
    session.insert(USER_KEY, &login.username).await?;
    session.insert(SSO_KEY, login).await?;
    Ok(())
}

/// The provider login of a console session, if it came from one.
pub async fn sso_login(session: &Session) -> Option<crate::oidc::SsoLogin> {
    session.get(SSO_KEY).await.ok().flatten()
}

/// The user of a console session, if it is signed in and still valid (the user exists and the
/// password did not change since). A user of a provider has the roles the provider's claims
/// gave at login (and the default role in the other environments), as long as the user exists.
pub async fn principal(session: &Session, orchestrator: &Orchestrator) -> Option<Principal> {
    if let Some(login) = sso_login(session).await {
        if !orchestrator.sso_user_exists(&login.username).await.ok()? {
            return None;
        }
        let environments = match login.default_role {
            Some(_) => orchestrator.list_environments().await.ok()?.into_iter().map(|e| e.id).collect(),
            None => Vec::new(),
        };
        return Some(login.principal(environments));
    }
    let username: String = session.get(USER_KEY).await.ok().flatten()?;
    let version: String = session.get(PASSWORD_VERSION_KEY).await.ok().flatten()?;
    let user = orchestrator.user_record(&username).await.ok().flatten()?;
    (user.password_version == version).then(|| user.principal())
}

/// Ends the session: its record is deleted and the cookie cleared.
pub async fn end(session: &Session) -> std::result::Result<(), tower_sessions::session::Error> {
    session.flush().await
}
