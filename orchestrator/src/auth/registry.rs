//! The token registry (Inmanta's, since 19.0): every token this server issues (login,
//! environment, compile, bootstrap) is recorded by its `jti` with its kind, creator, client
//! types, environment, creation and expiry, never the token itself. A token with a `jti` is
//! accepted only while its row exists and is not revoked; the row is read at every request (no
//! cache), so a revocation reaches every server on the database at its next request.

use api::auth::{ClientType, Token, TokenKind};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::{Access, Clients, Principal, commit_if_changed};
use crate::store::{format_time, now, parse_time};
use crate::{Error, Orchestrator, Result};

/// A token about to be registered.
#[derive(Debug, Clone)]
pub struct NewToken<'a> {
    pub jti: &'a str,
    pub kind: TokenKind,
    pub environment: Option<Uuid>,
    pub clients: &'a [ClientType],
    pub created_by: Option<&'a str>,
    pub issued_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// Registry rows stay this long after their token expired, so a list still shows what was
/// recently in use; older ones are removed when new tokens are registered.
const RETENTION: chrono::Duration = chrono::Duration::days(7);

/// Whether a registered token may still be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registration {
    Active,
    Revoked,
    Unknown,
}

type TokenRow =
    (String, String, Option<String>, String, Option<String>, String, Option<String>, Option<String>, Option<String>);

const COLUMNS: &str = "jti, kind, environment, client_types, created_by, issued_at, expires_at, revoked_at, last_used";

fn to_token(row: TokenRow) -> Result<Token> {
    let (jti, kind, environment, clients, created_by, issued_at, expires_at, revoked_at, last_used) = row;
    let time = |t: Option<String>| t.map(|t| parse_time(&t)).transpose();
    Ok(Token {
        kind: TokenKind::parse(&kind).ok_or_else(|| Error::Corrupt(format!("token kind {kind:?}")))?,
        environment: environment.map(|e| crate::store::parse_uuid(&e)).transpose()?,
        client_types: clients.split(',').filter_map(ClientType::parse).collect(),
        created_by,
        issued_at: parse_time(&issued_at)?,
        expires_at: time(expires_at)?,
        revoked_at: time(revoked_at)?,
        last_used: time(last_used)?,
        jti,
    })
}

fn join(clients: &[ClientType]) -> String {
    clients.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(",")
}

impl Orchestrator {
    /// Records a token; registering the same `jti` again (an idempotent environment token)
    /// changes nothing. Rows of tokens long expired are removed on the way.
    pub async fn register_token(&self, token: NewToken<'_>) -> Result<()> {
        let mut tx = self.store.begin_write().await?;
        sqlx::query("DELETE FROM token_registry WHERE expires_at < $1")
            .bind(format_time(Utc::now() - RETENTION))
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO token_registry (jti, kind, environment, client_types, created_by, issued_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (jti) DO NOTHING",
        )
        .bind(token.jti)
        .bind(token.kind.as_str())
        .bind(token.environment.map(|e| e.to_string()))
        .bind(join(token.clients))
        .bind(token.created_by)
        .bind(format_time(token.issued_at))
        .bind(token.expires_at.map(format_time))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Whether the token with this `jti` was registered and then revoked.
    pub(crate) async fn token_revoked(&self, jti: &str) -> Result<bool> {
        let revoked: Option<Option<String>> =
            sqlx::query_scalar("SELECT revoked_at FROM token_registry WHERE jti = $1")
                .bind(jti)
                .fetch_optional(self.store.pool())
                .await?;
        Ok(revoked.is_some_and(|at| at.is_some()))
    }

    /// Whether the token with this `jti` may be used; records its use (at most once a minute,
    /// so agents calling often do not turn every read into a write).
    pub async fn check_registration(&self, jti: &str) -> Result<Registration> {
        let row: Option<(Option<String>, Option<String>)> =
            sqlx::query_as("SELECT revoked_at, last_used FROM token_registry WHERE jti = $1")
                .bind(jti)
                .fetch_optional(self.store.pool())
                .await?;
        let Some((revoked_at, last_used)) = row else { return Ok(Registration::Unknown) };
        if revoked_at.is_some() {
            return Ok(Registration::Revoked);
        }
        self.record_token_use(jti, last_used.as_deref()).await?;
        Ok(Registration::Active)
    }

    /// Records that the token `jti`, last used at `last_used`, is used now: at most once a
    /// minute, so that agents calling often do not turn every read into a write.
    pub(crate) async fn record_token_use(&self, jti: &str, last_used: Option<&str>) -> Result<()> {
        let stale = format_time(Utc::now() - chrono::Duration::seconds(60));
        if last_used.is_none_or(|used| used < stale.as_str()) {
            sqlx::query("UPDATE token_registry SET last_used = $1 WHERE jti = $2")
                .bind(now())
                .bind(jti)
                .execute(self.store.pool())
                .await?;
        }
        Ok(())
    }

    /// The environment's registered environment tokens, newest first (Inmanta's
    /// `GET /api/v2/environment_auth`).
    pub async fn environment_tokens(&self, environment: Uuid) -> Result<Vec<Token>> {
        let rows: Vec<TokenRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM token_registry WHERE environment = $1 AND kind = 'environment' \
             ORDER BY issued_at DESC, jti"
        ))
        .bind(environment.to_string())
        .fetch_all(self.store.pool())
        .await?;
        rows.into_iter().map(to_token).collect()
    }

    /// Every registered token `caller` may manage, newest first: all of them for an admin, a
    /// user's own logins and the tokens they created otherwise.
    pub async fn tokens_of(&self, caller: &Principal) -> Result<Vec<Token>> {
        let rows: Vec<TokenRow> = if caller.is_admin() {
            sqlx::query_as(&format!("SELECT {COLUMNS} FROM token_registry ORDER BY issued_at DESC, jti"))
                .fetch_all(self.store.pool())
                .await?
        } else if let Some(name) = caller.name() {
            sqlx::query_as(&format!(
                "SELECT {COLUMNS} FROM token_registry WHERE created_by = $1 ORDER BY issued_at DESC, jti"
            ))
            .bind(name)
            .fetch_all(self.store.pool())
            .await?
        } else {
            return Err(Error::Forbidden(
                "only users list tokens: log in, or use GET /api/v2/environment_auth with an environment".into(),
            ));
        };
        rows.into_iter().map(to_token).collect()
    }

    /// One registered token, when `caller` may manage it.
    pub async fn token_of(&self, caller: &Principal, jti: &str) -> Result<Token> {
        let row: Option<TokenRow> = sqlx::query_as(&format!("SELECT {COLUMNS} FROM token_registry WHERE jti = $1"))
            .bind(jti)
            .fetch_optional(self.store.pool())
            .await?;
        let not_found = || Error::NotFound(format!("no token {jti} that you may see"));
        let token = to_token(row.ok_or_else(not_found)?)?;
        if may_manage(self.authorization(), caller, &token) { Ok(token) } else { Err(not_found()) }
    }

    /// Revokes a registered token `caller` may manage: from now on every server refuses it.
    pub async fn revoke_token(&self, caller: &Principal, jti: &str) -> Result<Token> {
        let token = self.token_of(caller, jti).await?;
        if token.revoked_at.is_some() {
            return Err(Error::Conflict(format!("token {jti} is already revoked")));
        }
        self.revoke(jti, None).await?;
        Ok(token)
    }

    /// Revokes a token the caller has already been allowed to end (its own login, at logout).
    pub(crate) async fn revoke_registered(&self, jti: &str) -> Result<()> {
        self.revoke(jti, None).await
    }

    /// Revokes an environment token of this environment (Inmanta's
    /// `DELETE /api/v2/environment_auth/<jti>`).
    pub async fn revoke_environment_token(&self, environment: Uuid, jti: &str) -> Result<()> {
        self.revoke(jti, Some(environment)).await
    }

    async fn revoke(&self, jti: &str, environment: Option<Uuid>) -> Result<()> {
        let mut tx = self.store.begin_write().await?;
        let done = match environment {
            None => {
                sqlx::query("UPDATE token_registry SET revoked_at = $1 WHERE jti = $2 AND revoked_at IS NULL")
                    .bind(now())
                    .bind(jti)
                    .execute(&mut *tx)
                    .await?
            }
            Some(env) => {
                sqlx::query(
                    "UPDATE token_registry SET revoked_at = $1 WHERE jti = $2 AND revoked_at IS NULL \
                     AND environment = $3 AND kind = 'environment'",
                )
                .bind(now())
                .bind(jti)
                .bind(env.to_string())
                .execute(&mut *tx)
                .await?
            }
        };
        commit_if_changed(tx, done, || match environment {
            Some(env) => Error::NotFound(format!("environment {env} has no active token {jti}")),
            None => Error::NotFound(format!("no active token {jti}")),
        })
        .await
    }
}

/// Who may see and revoke a registered token: admins, its creator, and for an environment
/// token whoever may manage that environment's tokens (label `token`).
pub fn may_manage(authorization: &super::policy::Authorization, caller: &Principal, token: &Token) -> bool {
    caller.is_admin()
        || (caller.name().is_some() && caller.name() == token.created_by.as_deref())
        || token.environment.is_some_and(|env| {
            let call = super::policy::Call::new(Access::Environment("token", Clients::API), Some(env));
            authorization.authorize(caller, &call).is_ok()
        })
}
