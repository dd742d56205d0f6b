//! Who may do what: Inmanta 20.1's client types and default roles (docs/security.md).
//!
//! Every entry point (REST routes, console server functions, the remote agent session) declares
//! an [`Access`] and asks [`crate::Orchestrator::authorize`], which hands the check to the
//! configured provider ([`policy::Authorization`]): the legacy rules of [`Principal::authorize`]
//! in this file, or an access policy for users ([`policy`]).
//! Authentication (turning a bearer token or a console session into a [`Principal`]) lives in
//! [`tokens`] and [`users`]; both end here.

pub mod jwt;
pub mod outside;
pub mod password;
pub mod policy;
pub mod registry;
pub mod sessions;
pub mod throttle;
pub mod tokens;
pub mod users;

use std::collections::BTreeMap;

use api::auth::ClientType;
use uuid::Uuid;

/// What an entry point needs from its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// No credentials: health and login.
    Public,
    /// Any authenticated caller of one of these client types: calls that are not about an
    /// environment and reveal nothing of one (own user, file store by hash). The label is
    /// Inmanta's for the endpoint, what an access policy sees; the legacy rules need none.
    Authenticated(&'static str, Clients),
    /// An action inside one environment, allowed by a permission label.
    Environment(&'static str, Clients),
    /// A server-wide action allowed by a permission label: reads for every user, the rest for
    /// global admins.
    Global(&'static str, Clients),
}

impl Access {
    pub fn label(self) -> Option<&'static str> {
        match self {
            Access::Authenticated(label, _) | Access::Environment(label, _) | Access::Global(label, _) => Some(label),
            Access::Public => None,
        }
    }

    /// The same access for other client types.
    pub const fn with_clients(self, clients: Clients) -> Access {
        match self {
            Access::Public => Access::Public,
            Access::Authenticated(label, _) => Access::Authenticated(label, clients),
            Access::Environment(label, _) => Access::Environment(label, clients),
            Access::Global(label, _) => Access::Global(label, clients),
        }
    }

    pub fn clients(self) -> Clients {
        match self {
            Access::Public => Clients::ALL,
            Access::Authenticated(_, c) | Access::Environment(_, c) | Access::Global(_, c) => c,
        }
    }

    /// Reads change nothing: every `*.read` label.
    pub fn is_read(self) -> bool {
        self.label().is_none_or(is_read_label)
    }
}

/// A set of client types, as a bit set so route tables stay `const`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clients(u8);

impl Clients {
    pub const API: Clients = Clients(1);
    pub const AGENT: Clients = Clients(2);
    pub const COMPILER: Clients = Clients(4);
    pub const API_AGENT: Clients = Clients(1 | 2);
    pub const API_COMPILER: Clients = Clients(1 | 4);
    /// Only `GET /metrics`: never part of [`Clients::ALL`], so a scraping token reads nothing else.
    pub const METRICS: Clients = Clients(8);
    /// Every client that works with environments (not [`Clients::METRICS`]).
    pub const ALL: Clients = Clients(1 | 2 | 4);

    pub fn of(types: &[ClientType]) -> Clients {
        Clients(types.iter().map(|t| Clients::bit(*t)).fold(0, |a, b| a | b))
    }

    fn bit(t: ClientType) -> u8 {
        match t {
            ClientType::Api => 1,
            ClientType::Agent => 2,
            ClientType::Compiler => 4,
            ClientType::Metrics => 8,
        }
    }

    pub fn contains(self, t: ClientType) -> bool {
        self.0 & Clients::bit(t) != 0
    }

    pub fn intersects(self, other: Clients) -> bool {
        self.0 & other.0 != 0
    }

    pub fn types(self) -> Vec<ClientType> {
        ClientType::ALL.into_iter().filter(|t| self.contains(*t)).collect()
    }
}

/// The permission labels (Inmanta 20.1's auth labels) that only read.
pub const READ_LABELS: &[&str] = &[
    "agent.read",
    "compile-report.read",
    "compiler.status.read",
    "desired-state.read",
    "discovered-resources.read",
    "docs.read",
    "dryrun.read",
    "environment.read",
    "environment.setting.read",
    "fact.read",
    "file.read",
    "graphql.read",
    "metrics.read",
    "notification.read",
    "parameter.read",
    "pip-config.read",
    "project.read",
    "report.read",
    "resource.read",
    "status.read",
    "user.read",
    "role.read",
    "role-assignment.read",
    "feature.read",
];

pub fn is_read_label(label: &str) -> bool {
    READ_LABELS.contains(&label)
}

/// The built-in roles, weakest first.
pub const ROLES: &[&str] = &["read-only", "noc", "operator", "environment-admin", "environment-expert-admin"];

/// What `noc` adds to reading. Triggering a compile is allowed for noc only without `update`,
/// which is a separate label so the check stays here.
const NOC: &[&str] = &[
    "deploy",
    "dryrun.write",
    "agent.pause-resume",
    "environment.halt-resume",
    "notification.write",
    "compiler.execute",
];

/// What `environment-admin` adds to noc (and operator, whose service-inventory writes are not
/// part of this product).
const ENVIRONMENT_ADMIN: &[&str] = &[
    "desired-state.write",
    "environment.modify",
    "environment.setting.write",
    "compiler.execute.update",
    "parameter.write",
    "fact.write",
    "agent.write",
];

/// What `environment-expert-admin` adds to environment-admin.
const ENVIRONMENT_EXPERT_ADMIN: &[&str] = &["environment.clear", "environment.delete", "token"];

/// Whether a role grants a label. Roles created through the API grant nothing by themselves.
pub fn role_grants(role: &str, label: &str) -> bool {
    // (noc's actions, environment-admin's, environment-expert-admin's); `operator` only reads:
    // its writes belong to the service inventory.
    let (noc, admin, expert) = match role {
        "read-only" | "operator" => (false, false, false),
        "noc" => (true, false, false),
        "environment-admin" => (true, true, false),
        "environment-expert-admin" => (true, true, true),
        _ => return false,
    };
    is_read_label(label)
        || (noc && NOC.contains(&label))
        || (admin && ENVIRONMENT_ADMIN.contains(&label))
        || (expert && ENVIRONMENT_EXPERT_ADMIN.contains(&label))
}

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq)]
pub enum Principal {
    /// Auth is off (`--no-auth`) or the server acts for itself.
    Unrestricted,
    /// A person, through a login token or a console session. Roles are read from the database
    /// on each request, so a change applies at once.
    User { username: String, is_admin: bool, roles: BTreeMap<Uuid, Vec<String>>, must_change_password: bool },
    /// An environment token for agents, the compiler or scripts.
    Token { environment: Uuid, clients: Clients, jti: Option<String> },
    /// A machine token bound to no environment: Inmanta's bootstrap token, or a pipeline's
    /// token from an outside issuer for agents or the compiler. As Inmanta's service tokens, it
    /// may call everything its client types reach.
    Service { clients: Clients },
}

/// Server-wide labels every authenticated user has: reading what is not about one environment
/// (environment lists are filtered to what the caller may see), changing one's own password,
/// and the labels Inmanta gives the endpoints any signed-in caller may use
/// ([`Access::Authenticated`]: their own user, the file store by hash, GraphQL, our token
/// registry, the console's [`policy::AUTHENTICATED_LABEL`]). Reading users and role
/// assignments is for admins.
pub const OPEN_GLOBAL_LABELS: &[&str] = &[
    "project.read",
    "environment.read",
    "status.read",
    "docs.read",
    "role.read",
    "feature.read",
    "metrics.read",
    "user.change-password",
    "user.read",
    "file.read",
    "file.write",
    "graphql.read",
    "token",
    policy::AUTHENTICATED_LABEL,
];

/// Labels a user who must change their password may still use.
const PASSWORD_CHANGE_LABELS: &[&str] = &["user.change-password"];

/// Why a caller may not do something: the message says what is missing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Denied(pub String);

impl Principal {
    /// May write to the file store (shared by every environment): those who export. An admin, a
    /// user with a role that writes the desired state somewhere, a compiler or API token; not
    /// agents, read-only users or a user who must still change the generated password.
    pub fn may_write_files(&self) -> bool {
        match self {
            Principal::Unrestricted => true,
            Principal::Token { clients, .. } | Principal::Service { clients } => {
                clients.contains(ClientType::Compiler) || clients.contains(ClientType::Api)
            }
            Principal::User { must_change_password: true, .. } => false,
            Principal::User { is_admin, roles, .. } => {
                *is_admin || roles.values().flatten().any(|role| role_grants(role, "desired-state.write"))
            }
        }
    }

    /// The one authorization decision. `environment` is the environment the call is about
    /// (required for [`Access::Environment`]).
    pub fn authorize(&self, access: Access, environment: Option<Uuid>) -> Result<(), Denied> {
        let what = access.label().unwrap_or("this call");
        match self {
            Principal::Unrestricted => Ok(()),
            Principal::Service { clients } => {
                if clients.intersects(access.clients()) {
                    Ok(())
                } else {
                    Err(Denied(format!(
                        "a token for {} may not call this endpoint (it needs one of: {})",
                        names(clients.types()),
                        names(access.clients().types()),
                    )))
                }
            }
            Principal::Token { environment: own, clients, .. } => {
                if !clients.intersects(access.clients()) {
                    return Err(Denied(format!(
                        "a token for {} may not call this endpoint (it needs one of: {})",
                        names(clients.types()),
                        names(access.clients().types()),
                    )));
                }
                match access {
                    Access::Public | Access::Authenticated(..) => Ok(()),
                    Access::Environment(..) => match environment {
                        Some(env) if env == *own => Ok(()),
                        Some(env) => Err(Denied(format!(
                            "this token belongs to environment {own} and cannot act on environment {env}"
                        ))),
                        None => Err(Denied("this call needs an environment".into())),
                    },
                    Access::Global(label, _) if is_read_label(label) && OPEN_GLOBAL_LABELS.contains(&label) => Ok(()),
                    Access::Global(label, _) => Err(Denied(format!(
                        "an environment token cannot do this server-wide action ({label}); log in as an admin"
                    ))),
                }
            }
            Principal::User { username, is_admin, roles, must_change_password } => {
                if !access.clients().contains(ClientType::Api) {
                    return Err(Denied(format!(
                        "this endpoint is for agents and the compiler, not for users ({what})"
                    )));
                }
                if *must_change_password {
                    if access == Access::Public {
                        return Ok(());
                    }
                    self.password_change_gate(access)?;
                }
                if *is_admin {
                    return Ok(());
                }
                match access {
                    Access::Public | Access::Authenticated(..) => Ok(()),
                    Access::Global(label, _) if OPEN_GLOBAL_LABELS.contains(&label) => Ok(()),
                    Access::Global(label, _) => {
                        Err(Denied(format!("only an admin may do this ({label}); user {username} is not an admin")))
                    }
                    Access::Environment(label, _) => {
                        let env = environment.ok_or_else(|| Denied("this call needs an environment".into()))?;
                        let granted = roles.get(&env).map(Vec::as_slice).unwrap_or_default();
                        if granted.is_empty() {
                            return Err(Denied(format!("user {username} has no role in environment {env}")));
                        }
                        if granted.iter().any(|role| role_grants(role, label)) {
                            Ok(())
                        } else {
                            Err(Denied(format!(
                                "the role(s) {} of user {username} in environment {env} do not allow {label}",
                                granted.join(", ")
                            )))
                        }
                    }
                }
            }
        }
    }

    /// A user who must change the generated password may do nothing but that, not even read
    /// who they are or renew the login, whichever provider decides the rest.
    pub fn password_change_gate(&self, access: Access) -> Result<(), Denied> {
        match self {
            Principal::User { username, must_change_password: true, .. }
                if !access.label().is_some_and(|l| PASSWORD_CHANGE_LABELS.contains(&l)) =>
            {
                Err(Denied(format!(
                    "user {username} must change the generated password first (PATCH /api/v2/user/{username}/password)"
                )))
            }
            _ => Ok(()),
        }
    }

    /// Whether this caller may see an environment at all (lists are filtered with it).
    pub fn can_see(&self, environment: Uuid) -> bool {
        match self {
            Principal::Unrestricted | Principal::Service { .. } => true,
            Principal::Token { environment: own, .. } => *own == environment,
            Principal::User { is_admin, roles, .. } => {
                *is_admin || roles.get(&environment).is_some_and(|r| !r.is_empty())
            }
        }
    }

    /// The name recorded as creator of tokens and the like.
    pub fn name(&self) -> Option<&str> {
        match self {
            Principal::User { username, .. } => Some(username),
            Principal::Token { .. } | Principal::Service { .. } | Principal::Unrestricted => None,
        }
    }

    pub fn is_admin(&self) -> bool {
        matches!(self, Principal::Unrestricted | Principal::Service { .. } | Principal::User { is_admin: true, .. })
    }
}

fn names(types: Vec<ClientType>) -> String {
    types.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ")
}

/// Commits a write that must change one row or more. When it changed none (what it names does
/// not exist), the transaction is dropped, which rolls it back, and the error is `missing`.
async fn commit_if_changed(
    tx: crate::store::Transaction,
    done: sqlx::any::AnyQueryResult,
    missing: impl FnOnce() -> crate::Error,
) -> crate::Result<()> {
    if done.rows_affected() == 0 {
        return Err(missing());
    }
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(role: &str, env: Uuid) -> Principal {
        Principal::User {
            username: "u".into(),
            is_admin: false,
            roles: [(env, vec![role.to_string()])].into(),
            must_change_password: false,
        }
    }

    #[test]
    fn roles_grow_along_the_reference_table() {
        let env = Uuid::new_v4();
        let deploy = Access::Environment("deploy", Clients::API);
        let write = Access::Environment("desired-state.write", Clients::API);
        let delete = Access::Environment("environment.delete", Clients::API);
        let read = Access::Environment("resource.read", Clients::API);
        for role in ROLES {
            assert!(user(role, env).authorize(read, Some(env)).is_ok(), "{role} reads");
        }
        assert!(user("read-only", env).authorize(deploy, Some(env)).is_err());
        assert!(user("operator", env).authorize(deploy, Some(env)).is_err());
        assert!(user("noc", env).authorize(deploy, Some(env)).is_ok());
        assert!(user("noc", env).authorize(write, Some(env)).is_err());
        assert!(user("environment-admin", env).authorize(write, Some(env)).is_ok());
        assert!(user("environment-admin", env).authorize(delete, Some(env)).is_err());
        assert!(user("environment-expert-admin", env).authorize(delete, Some(env)).is_ok());
        // No role elsewhere.
        assert!(user("environment-expert-admin", env).authorize(read, Some(Uuid::new_v4())).is_err());
    }

    #[test]
    fn tokens_stay_in_their_environment_and_client_type() {
        let env = Uuid::new_v4();
        let agent = Principal::Token { environment: env, clients: Clients::AGENT, jti: None };
        let api_only = Access::Environment("resource.read", Clients::API);
        let for_agents = Access::Environment("file.read", Clients::API_AGENT);
        assert!(agent.authorize(api_only, Some(env)).is_err());
        assert!(agent.authorize(for_agents, Some(env)).is_ok());
        assert!(agent.authorize(for_agents, Some(Uuid::new_v4())).is_err());
        assert!(agent.authorize(Access::Global("project.create", Clients::ALL), None).is_err());
        let scraper = Principal::Token { environment: env, clients: Clients::METRICS, jti: None };
        let metrics = Access::Global("metrics.read", Clients::METRICS);
        assert!(scraper.authorize(metrics, None).is_ok());
        assert!(scraper.authorize(Access::Environment("parameter.read", Clients::ALL), Some(env)).is_err());
        assert!(scraper.authorize(Access::Global("project.read", Clients::ALL), None).is_err());
        assert!(agent.authorize(metrics, None).is_err(), "only metrics tokens scrape");
    }

    #[test]
    fn a_generated_admin_must_change_the_password_first() {
        let admin = Principal::User {
            username: "admin".into(),
            is_admin: true,
            roles: BTreeMap::new(),
            must_change_password: true,
        };
        assert!(admin.authorize(Access::Global("project.read", Clients::API), None).is_err());
        assert!(admin.authorize(Access::Global("user.change-password", Clients::API), None).is_ok());
        assert!(admin.authorize(Access::Authenticated("user.read", Clients::API), None).is_err());
        assert!(admin.authorize(Access::Public, None).is_ok());
        assert!(!admin.may_write_files());
    }
}
