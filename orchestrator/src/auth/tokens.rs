//! Bearer tokens: login tokens for users and registered environment tokens for agents, the
//! compiler and scripts (reference/api.md §1.3 and §5.4). Turning a token into a [`Principal`]
//! happens here, for every entry point.

use api::auth::{ClientType, Token};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::Utc;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::jwt::{self, Claims, Key, TokenError};
use super::password::random_bytes;
use super::users::UserRecord;
use super::{Clients, Principal, commit_if_changed};
use crate::store::{format_time, now, parse_time, parse_uuid};
use crate::{Error, Orchestrator, Result};

/// The server's authentication settings, shared by every entry point.
#[derive(Debug, Clone)]
pub struct Authenticator {
    key: Key,
    leeway: u64,
    /// Lifetime of login tokens and console sessions, in seconds.
    pub login_expire: i64,
}

/// Why a request is not authenticated: no token at all (401), or a token that is refused (403,
/// `Access denied: <reason>`, as Inmanta answers).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unauthenticated {
    #[error("this call needs credentials: log in (POST /api/v2/login) and send `Authorization: Bearer <token>`")]
    Missing,
    #[error("{0}")]
    Invalid(#[from] TokenError),
    #[error("The provided token has been revoked.")]
    Revoked,
    #[error("The provided token is not recognized; it may have been revoked.")]
    Unknown,
    #[error("the user of this token no longer exists")]
    UnknownUser,
    #[error("the password changed since this token was issued: log in again")]
    PasswordChanged,
}

impl Unauthenticated {
    /// No credentials at all (401); every other refusal is of a token that was sent (403).
    pub fn is_missing(&self) -> bool {
        matches!(self, Unauthenticated::Missing)
    }
}

impl Authenticator {
    /// Loads the signing key from the database, creating it on first start.
    pub async fn load(orchestrator: &Orchestrator, login_expire: i64) -> Result<Authenticator> {
        let store = orchestrator.store();
        let existing: Option<String> = sqlx::query_scalar("SELECT value FROM auth_secret WHERE name = 'jwt-key'")
            .fetch_optional(store.pool())
            .await?;
        let encoded = match existing {
            Some(value) => value,
            None => {
                // Servers starting together on one database each offer a key; the first insert
                // wins and everyone reads that one.
                let fresh = STANDARD.encode(random_bytes::<32>());
                let mut tx = store.begin_write().await?;
                sqlx::query(
                    "INSERT INTO auth_secret (name, value) VALUES ('jwt-key', $1) ON CONFLICT (name) DO NOTHING",
                )
                .bind(&fresh)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                sqlx::query_scalar("SELECT value FROM auth_secret WHERE name = 'jwt-key'")
                    .fetch_one(store.pool())
                    .await?
            }
        };
        let key = STANDARD.decode(encoded).map_err(|_| Error::Corrupt("the stored JWT signing key".into()))?;
        Ok(Authenticator { key: Key::new(&key, 0), leeway: 0, login_expire })
    }

    /// Tolerates this much clock skew (seconds) when checking a token's expiry: replicas whose
    /// clocks differ a little accept each other's tokens.
    pub fn with_leeway(mut self, seconds: u64) -> Authenticator {
        self.key.set_leeway(seconds);
        self.leeway = seconds;
        self
    }

    /// Signs and checks with an HS256 key from the configuration (an `[auth_jwt_<name>]`
    /// section with `sign=true`) instead of the generated one in the database, as `issuer` for
    /// `audience`: tokens made elsewhere with the same section (`inmanta-cli token bootstrap`)
    /// are then accepted.
    pub fn with_signing_key(mut self, secret: &[u8], issuer: &str, audience: &str) -> Authenticator {
        self.key = Key::for_issuer(secret, issuer, audience, self.leeway);
        self
    }

    /// The issuer of the tokens this server signs.
    pub fn issuer(&self) -> &str {
        self.key.issuer()
    }

    /// Seconds of clock skew tolerated on `exp` and `nbf`.
    pub fn leeway(&self) -> u64 {
        self.leeway
    }

    /// A token for a user who just logged in.
    pub fn login_token(&self, user: &UserRecord) -> String {
        self.sign_expiring(
            self.login_expire,
            Claims {
                sub: Some(user.username.clone()),
                client_types: Some(ClientType::Api.as_str().into()),
                is_admin: Some(user.is_admin),
                password_version: Some(user.password_version.clone()),
                ..self.key.claims()
            },
        )
    }

    /// A short-lived, unregistered token the server gives its own children (the compiler
    /// process it starts), bound to one environment.
    pub fn internal_token(&self, environment: Uuid, clients: &[ClientType], lifetime_seconds: i64) -> String {
        self.sign_expiring(
            lifetime_seconds,
            Claims {
                client_types: Some(join(clients)),
                environment: Some(environment.to_string()),
                created_by: Some("server".into()),
                ..self.key.claims()
            },
        )
    }

    /// Signs `claims` as a token issued now that expires `lifetime_seconds` from now.
    fn sign_expiring(&self, lifetime_seconds: i64, claims: Claims) -> String {
        let now = Utc::now().timestamp();
        jwt::encode(&self.key, &Claims { iat: Some(now), exp: Some(now + lifetime_seconds), ..claims })
    }

    /// Creates and registers an environment token. Idempotent tokens carry no time claims, so
    /// the same request yields the same token (and the same `jti`).
    pub async fn create_environment_token(
        &self,
        orchestrator: &Orchestrator,
        environment: Uuid,
        clients: &[ClientType],
        idempotent: bool,
        expire_seconds: Option<i64>,
        created_by: Option<&str>,
    ) -> Result<String> {
        if clients.is_empty() {
            return Err(Error::BadRequest(
                "client_types must name at least one of api, agent, compiler, metrics".into(),
            ));
        }
        if expire_seconds.is_some_and(|s| s <= 0) {
            return Err(Error::BadRequest("expire must be a positive number of seconds".into()));
        }
        let mut clients = clients.to_vec();
        clients.sort();
        clients.dedup();
        orchestrator.get_environment(environment, Default::default()).await?;
        let now = Utc::now();
        let jti = if idempotent {
            let digest = Sha256::digest(format!("{environment}/{}", join(&clients)));
            Uuid::from_slice(&digest[..16]).expect("16 bytes").to_string()
        } else {
            Uuid::new_v4().to_string()
        };
        let (iat, exp) = if idempotent {
            (None, None)
        } else {
            (Some(now.timestamp()), expire_seconds.map(|s| now.timestamp() + s))
        };
        let token = jwt::encode(
            &self.key,
            &Claims {
                iat,
                exp,
                jti: Some(jti.clone()),
                client_types: Some(join(&clients)),
                environment: Some(environment.to_string()),
                created_by: created_by.map(str::to_string),
                ..self.key.claims()
            },
        );
        let mut tx = orchestrator.store().begin_write().await?;
        let registered: Option<String> =
            sqlx::query_scalar("SELECT jti FROM auth_token WHERE jti = $1").bind(&jti).fetch_optional(&mut *tx).await?;
        if registered.is_none() {
            sqlx::query(
                "INSERT INTO auth_token (jti, environment, client_types, created_by, issued_at, expires_at) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(&jti)
            .bind(environment.to_string())
            .bind(join(&clients))
            .bind(created_by)
            .bind(format_time(now))
            .bind(exp.and_then(|e| chrono::DateTime::from_timestamp(e, 0)).map(format_time))
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(token)
    }

    /// Who sends this bearer token. Environment tokens must be registered and not revoked;
    /// login tokens must belong to an existing user whose password has not changed since.
    pub async fn authenticate(
        &self,
        orchestrator: &Orchestrator,
        token: &str,
    ) -> Result<std::result::Result<Principal, Unauthenticated>> {
        let claims = match jwt::decode(&self.key, token) {
            Ok(claims) => claims,
            Err(e) => return Ok(Err(e.into())),
        };
        let clients = match &claims.client_types {
            None => Clients::API,
            Some(text) => Clients::of(&text.split(',').filter_map(ClientType::parse).collect::<Vec<_>>()),
        };
        if let Some(env) = &claims.environment {
            let environment = parse_uuid(env).map_err(|_| Error::BadRequest("bad environment claim".into()));
            let Ok(environment) = environment else { return Ok(Err(TokenError::Malformed.into())) };
            if let Some(jti) = &claims.jti {
                let row: Option<(Option<String>, Option<String>)> =
                    sqlx::query_as("SELECT revoked_at, last_used FROM auth_token WHERE jti = $1 AND environment = $2")
                        .bind(jti)
                        .bind(env)
                        .fetch_optional(orchestrator.store().pool())
                        .await?;
                match row {
                    None | Some((Some(_), _)) => return Ok(Err(Unauthenticated::Revoked)),
                    Some((None, last_used)) => touch(orchestrator, jti, last_used.as_deref()).await?,
                }
            }
            return Ok(Ok(Principal::Token { environment, clients, jti: claims.jti }));
        }
        let Some(username) = &claims.sub else {
            // Tokens for agents or the compiler bound to no environment: `inmanta token
            // bootstrap` and Inmanta's own bootstrap tokens.
            if clients.contains(ClientType::Agent) || clients.contains(ClientType::Compiler) {
                return Ok(Ok(Principal::Service { clients }));
            }
            return Ok(Err(TokenError::Claims("the token names no user and no environment".into()).into()));
        };
        let Some(user) = orchestrator.user_record(username).await? else {
            return Ok(Err(Unauthenticated::UnknownUser));
        };
        if claims.password_version.as_deref() != Some(user.password_version.as_str()) {
            return Ok(Err(Unauthenticated::PasswordChanged));
        }
        Ok(Ok(user.principal()))
    }
}

/// Records when a token was last used, at most once a minute, so agents calling often do not
/// turn every read into a write (and take the database's write lock on each request).
async fn touch(orchestrator: &Orchestrator, jti: &str, last_used: Option<&str>) -> Result<()> {
    let stale = format_time(Utc::now() - chrono::Duration::seconds(60));
    if last_used.is_some_and(|used| used >= stale.as_str()) {
        return Ok(());
    }
    sqlx::query("UPDATE auth_token SET last_used = $1 WHERE jti = $2")
        .bind(now())
        .bind(jti)
        .execute(orchestrator.store().pool())
        .await?;
    Ok(())
}

fn join(clients: &[ClientType]) -> String {
    clients.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(",")
}

type TokenRow = (String, String, Option<String>, String, Option<String>, Option<String>, Option<String>);

impl Orchestrator {
    /// The environment's registered tokens, newest first. Never the tokens themselves.
    pub async fn environment_tokens(&self, environment: Uuid) -> Result<Vec<Token>> {
        let rows: Vec<TokenRow> = sqlx::query_as(
            "SELECT jti, client_types, created_by, issued_at, expires_at, revoked_at, last_used \
             FROM auth_token WHERE environment = $1 ORDER BY issued_at DESC, jti",
        )
        .bind(environment.to_string())
        .fetch_all(self.store.pool())
        .await?;
        let time = |t: Option<String>| t.map(|t| parse_time(&t)).transpose();
        rows.into_iter()
            .map(|(jti, clients, created_by, issued_at, expires_at, revoked_at, last_used)| {
                Ok(Token {
                    jti,
                    created_by,
                    client_types: clients.split(',').filter_map(ClientType::parse).collect(),
                    environment: Some(environment),
                    issued_at: parse_time(&issued_at)?,
                    expires_at: time(expires_at)?,
                    revoked_at: time(revoked_at)?,
                    last_used: time(last_used)?,
                })
            })
            .collect()
    }

    pub async fn revoke_environment_token(&self, environment: Uuid, jti: &str) -> Result<()> {
        let mut tx = self.store.begin_write().await?;
        let done = sqlx::query(
            "UPDATE auth_token SET revoked_at = $1 WHERE jti = $2 AND environment = $3 AND revoked_at IS NULL",
        )
        .bind(now())
        .bind(jti)
        .bind(environment.to_string())
        .execute(&mut *tx)
        .await?;
        commit_if_changed(tx, done, || Error::NotFound(format!("environment {environment} has no active token {jti}")))
            .await
    }
}
