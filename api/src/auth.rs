//! Users, login, roles and environment tokens (docs/api.md, "Authentication").

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Who may call an endpoint, carried by a token in claim `urn:inmanta:ct`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum ClientType {
    /// People: console, CLI, scripts.
    Api,
    /// Agents and the scheduler.
    Agent,
    /// The exporter.
    Compiler,
    /// Prometheus scraping `GET /metrics`, and nothing else.
    Metrics,
}

impl ClientType {
    pub const ALL: [ClientType; 4] = [ClientType::Api, ClientType::Agent, ClientType::Compiler, ClientType::Metrics];

    pub fn as_str(self) -> &'static str {
        match self {
            ClientType::Api => "api",
            ClientType::Agent => "agent",
            ClientType::Compiler => "compiler",
            ClientType::Metrics => "metrics",
        }
    }

    pub fn parse(text: &str) -> Option<ClientType> {
        ClientType::ALL.into_iter().find(|c| c.as_str() == text.trim())
    }
}

/// What a registered token was issued for (its scope).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenKind {
    /// A user's login (`POST /api/v2/login`), acting as that user.
    Login,
    /// An environment token for agents, the compiler or scripts (`/api/v2/environment_auth`).
    #[default]
    Environment,
    /// The token a server-side compile's export runs with.
    Compile,
    /// `inmanta token bootstrap`: every client type, no environment, short-lived.
    Bootstrap,
}

impl TokenKind {
    pub const ALL: [TokenKind; 4] =
        [TokenKind::Login, TokenKind::Environment, TokenKind::Compile, TokenKind::Bootstrap];

    pub fn as_str(self) -> &'static str {
        match self {
            TokenKind::Login => "login",
            TokenKind::Environment => "environment",
            TokenKind::Compile => "compile",
            TokenKind::Bootstrap => "bootstrap",
        }
    }

    pub fn parse(text: &str) -> Option<TokenKind> {
        TokenKind::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// A registered token (the token registry). The token itself is shown only once, at creation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Token {
    pub jti: String,
    /// Our addition to Inmanta's shape; Inmanta's environment lists hold environment tokens only.
    #[serde(default)]
    pub kind: TokenKind,
    #[serde(default)]
    pub created_by: Option<String>,
    pub client_types: Vec<ClientType>,
    #[serde(default)]
    pub environment: Option<Uuid>,
    pub issued_at: DateTime<Utc>,
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub revoked_at: Option<DateTime<Utc>>,
    #[serde(default)]
    pub last_used: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct User {
    pub username: String,
    pub auth_method: String,
    pub is_admin: bool,
    /// Our extension: the generated first admin must pick a password before anything else.
    #[serde(default)]
    pub password_change_required: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserWithRoles {
    #[serde(flatten)]
    pub user: User,
    pub roles: BTreeMap<Uuid, Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoginReturn {
    pub token: String,
    pub user: User,
    #[serde(default)]
    pub expires_in: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CurrentUser {
    pub username: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RoleAssignmentsPerEnvironment {
    pub assignments: BTreeMap<Uuid, Vec<String>>,
}

/// Body of `POST /api/v2/login` and `POST /api/v2/user`. Debug hides the password so it can
/// never reach a log line.
#[derive(Clone, Serialize, Deserialize)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("username", &self.username).field("password", &"<hidden>").finish()
    }
}
