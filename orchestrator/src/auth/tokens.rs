//! Bearer tokens: login tokens for users and registered environment tokens for agents, the
//! compiler and scripts (docs/security.md). Turning a token into a [`Principal`]
//! happens here, for every entry point.

use api::auth::{ClientType, TokenKind};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::Utc;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::jwt::{self, Claims, Key, TokenError};
use super::password::random_bytes;
use super::registry::{NewToken, Registration};
use super::users::UserRecord;
use super::{Clients, Principal};
use crate::store::parse_uuid;
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

    /// A registered token for a user who just logged in.
    pub async fn login_token(&self, orchestrator: &Orchestrator, user: &UserRecord) -> Result<String> {
        let claims = Claims {
            sub: Some(user.username.clone()),
            client_types: Some(ClientType::Api.as_str().into()),
            is_admin: Some(user.is_admin),
            password_version: Some(user.password_version.clone()),
            ..self.key.claims()
        };
        self.issue(
            orchestrator,
            TokenKind::Login,
            None,
            &[ClientType::Api],
            Some(&user.username),
            Some(self.login_expire),
            claims,
        )
        .await
    }

    /// A short-lived, registered token the server gives its own children (the compiler
    /// process it starts), bound to one environment.
    pub async fn compile_token(
        &self,
        orchestrator: &Orchestrator,
        environment: Uuid,
        lifetime_seconds: i64,
    ) -> Result<String> {
        let clients = [ClientType::Compiler];
        let claims = Claims {
            client_types: Some(join(&clients)),
            environment: Some(environment.to_string()),
            created_by: Some("server".into()),
            ..self.key.claims()
        };
        self.issue(
            orchestrator,
            TokenKind::Compile,
            Some(environment),
            &clients,
            Some("server"),
            Some(lifetime_seconds),
            claims,
        )
        .await
    }

    /// `inmanta token bootstrap`: a registered token for every client type, bound to no
    /// environment, that expires after `lifetime_seconds` (Inmanta's bootstrap token).
    pub async fn bootstrap_token(&self, orchestrator: &Orchestrator, lifetime_seconds: i64) -> Result<String> {
        let clients = [ClientType::Api, ClientType::Compiler, ClientType::Agent];
        let claims =
            Claims { client_types: Some(join(&clients)), created_by: Some("bootstrap".into()), ..self.key.claims() };
        self.issue(
            orchestrator,
            TokenKind::Bootstrap,
            None,
            &clients,
            Some("bootstrap"),
            Some(lifetime_seconds),
            claims,
        )
        .await
    }

    /// Signs `claims` with a fresh `jti` and registers it.
    #[allow(clippy::too_many_arguments)]
    async fn issue(
        &self,
        orchestrator: &Orchestrator,
        kind: TokenKind,
        environment: Option<Uuid>,
        clients: &[ClientType],
        created_by: Option<&str>,
        lifetime_seconds: Option<i64>,
        claims: Claims,
    ) -> Result<String> {
        let now = Utc::now();
        let jti = Uuid::new_v4().to_string();
        let expires = lifetime_seconds.map(|s| now + chrono::Duration::seconds(s));
        let token = jwt::encode(
            &self.key,
            &Claims {
                iat: Some(now.timestamp()),
                exp: expires.map(|e| e.timestamp()),
                jti: Some(jti.clone()),
                ..claims
            },
        );
        orchestrator
            .register_token(NewToken {
                jti: &jti,
                kind,
                environment,
                clients,
                created_by,
                issued_at: now,
                expires_at: expires,
            })
            .await?;
        Ok(token)
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
            idempotent_jti(orchestrator, environment, &clients).await?
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
        orchestrator
            .register_token(NewToken {
                jti: &jti,
                kind: TokenKind::Environment,
                environment: Some(environment),
                clients: &clients,
                created_by,
                issued_at: now,
                expires_at: exp.and_then(|e| chrono::DateTime::from_timestamp(e, 0)),
            })
            .await?;
        Ok(token)
    }

    /// Revokes a valid login token of ours (at logout); returns its `jti` when it was one.
    pub async fn end_login(&self, orchestrator: &Orchestrator, token: &str) -> Result<Option<String>> {
        let Ok(claims) = jwt::decode(&self.key, token) else { return Ok(None) };
        let (Some(_), Some(jti)) = (&claims.sub, &claims.jti) else { return Ok(None) };
        match orchestrator.revoke_registered(jti).await {
            Ok(()) => Ok(Some(jti.clone())),
            Err(Error::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
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
        // As Inmanta: a token of ours with a jti is accepted only while it is registered and
        // not revoked. Tokens without one (older login tokens, Inmanta's bootstrap tokens) rely
        // on their signature and expiry alone. A user's login token: its registration and its
        // user in one look-up, as this runs before every request.
        if claims.environment.is_none()
            && let Some(username) = &claims.sub
        {
            let (registration, user) = orchestrator.login_token_holder(claims.jti.as_deref(), username).await?;
            match registration {
                Some(Registration::Revoked) => return Ok(Err(Unauthenticated::Revoked)),
                Some(Registration::Unknown) => return Ok(Err(Unauthenticated::Unknown)),
                Some(Registration::Active) | None => {}
            }
            let Some(user) = user else { return Ok(Err(Unauthenticated::UnknownUser)) };
            if claims.password_version.as_deref() != Some(user.password_version.as_str()) {
                return Ok(Err(Unauthenticated::PasswordChanged));
            }
            return Ok(Ok(user.principal()));
        }
        // Environment and service tokens.
        if let Some(jti) = &claims.jti {
            match orchestrator.check_registration(jti).await? {
                Registration::Active => {}
                Registration::Revoked => return Ok(Err(Unauthenticated::Revoked)),
                Registration::Unknown => return Ok(Err(Unauthenticated::Unknown)),
            }
        }
        if let Some(env) = &claims.environment {
            let Ok(environment) = parse_uuid(env) else { return Ok(Err(TokenError::Malformed.into())) };
            return Ok(Ok(Principal::Token { environment, clients, jti: claims.jti }));
        }
        // Tokens for agents or the compiler bound to no environment: `inmanta token bootstrap`
        // and Inmanta's own bootstrap tokens.
        if clients.contains(ClientType::Agent) || clients.contains(ClientType::Compiler) {
            return Ok(Ok(Principal::Service { clients }));
        }
        Ok(Err(TokenError::Claims("the token names no user and no environment".into()).into()))
    }
}

fn join(clients: &[ClientType]) -> String {
    clients.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(",")
}

/// The `jti` of the idempotent token of `environment` and `clients`: the same for every request
/// until that token is revoked, then a new one (issue 47: asking again after a revocation gave
/// back the dead token). The n-th generation hashes `n` in; revoked generations are skipped.
async fn idempotent_jti(orchestrator: &Orchestrator, environment: Uuid, clients: &[ClientType]) -> Result<String> {
    for generation in 0u32..1000 {
        let seed = match generation {
            0 => format!("{environment}/{}", join(clients)),
            n => format!("{environment}/{}/{n}", join(clients)),
        };
        let digest = Sha256::digest(seed);
        let jti = Uuid::from_slice(&digest[..16]).expect("16 bytes").to_string();
        if !orchestrator.token_revoked(&jti).await? {
            return Ok(jti);
        }
    }
    Err(Error::Conflict(
        "every idempotent token of these client types was revoked; ask for a non-idempotent one".into(),
    ))
}
