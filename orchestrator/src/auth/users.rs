//! Users, roles and role assignments in the database (routes: docs/api.md, "Authentication").

use std::collections::BTreeMap;

use api::auth::{RoleAssignmentsPerEnvironment, User, UserWithRoles};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::password;
use super::registry::Registration;
use super::{Principal, ROLES, commit_if_changed};
use crate::environments::environment_not_found;
use crate::store::{now, parse_uuid};
use crate::{Error, Orchestrator, Result};

/// A user as authentication needs it: everything to build a [`Principal`] and check a login
/// token's password fingerprint.
#[derive(Debug, Clone)]
pub struct UserRecord {
    pub username: String,
    pub is_admin: bool,
    pub must_change_password: bool,
    pub password_version: String,
    pub roles: BTreeMap<Uuid, Vec<String>>,
}

impl UserRecord {
    pub fn principal(&self) -> Principal {
        Principal::User {
            username: self.username.clone(),
            is_admin: self.is_admin,
            roles: self.roles.clone(),
            must_change_password: self.must_change_password,
        }
    }

    pub fn user(&self) -> User {
        User {
            username: self.username.clone(),
            auth_method: "database".into(),
            is_admin: self.is_admin,
            password_change_required: self.must_change_password,
        }
    }
}

/// A short fingerprint of a password hash: login tokens and sessions carry it, so changing the
/// password ends them.
fn password_version(hash: &str) -> String {
    Sha256::digest(hash.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
}

fn check_username(username: &str) -> Result<&str> {
    crate::validate::name("a user name", username)?;
    let username = username.trim();
    if username.is_empty() || username.len() > 64 {
        return Err(Error::BadRequest("a username must be 1 to 64 characters long".into()));
    }
    if !username.chars().all(|c| c.is_alphanumeric() || "._-@".contains(c)) {
        return Err(Error::BadRequest(format!("the username {username:?} may only hold letters, digits and . _ - @")));
    }
    Ok(username)
}

fn user_not_found(username: &str) -> Error {
    Error::NotFound(format!("no user named {username:?}"))
}

type UserRow = (String, String, i64, i64);

impl Orchestrator {
    pub async fn user_count(&self) -> Result<i64> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM auth_user").fetch_one(self.store.pool()).await?)
    }

    /// Creates a user after checking the password policy.
    pub async fn create_user(
        &self,
        username: &str,
        password: &str,
        is_admin: bool,
        must_change_password: bool,
    ) -> Result<User> {
        let username = check_username(username)?;
        password::check_policy(password)?;
        let hash = password::hash(password)?;
        let mut tx = self.store.begin_write().await?;
        let exists: Option<String> = sqlx::query_scalar("SELECT username FROM auth_user WHERE username = $1")
            .bind(username)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_some() {
            return Err(Error::Conflict(format!("a user named {username:?} already exists")));
        }
        sqlx::query(
            "INSERT INTO auth_user (username, password_hash, is_admin, must_change_password, created_at) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(username)
        .bind(hash)
        .bind(is_admin as i64)
        .bind(must_change_password as i64)
        .bind(now())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(User {
            username: username.to_string(),
            auth_method: "database".into(),
            is_admin,
            password_change_required: must_change_password,
        })
    }

    /// Creates the global admin `admin` with `password` (to be changed at first login) if the
    /// database has no user at all; false when there is one already. Servers starting together on
    /// one database race here: the database lets exactly one of them create it.
    pub async fn create_first_admin(&self, password: &str) -> Result<bool> {
        password::check_policy(password)?;
        let hash = password::hash(password)?;
        let mut tx = self.store.begin_write().await?;
        let created = sqlx::query(
            "INSERT INTO auth_user (username, password_hash, is_admin, must_change_password, created_at) \
             SELECT 'admin', $1, 1, 1, $2 WHERE NOT EXISTS (SELECT 1 FROM auth_user) \
             ON CONFLICT (username) DO NOTHING",
        )
        .bind(hash)
        .bind(now())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(created.rows_affected() == 1)
    }

    /// The user with their roles, or `None` when there is no such user.
    pub async fn user_record(&self, username: &str) -> Result<Option<UserRecord>> {
        crate::validate::name("a user name", username)?;
        let row: Option<UserRow> = sqlx::query_as(
            "SELECT username, password_hash, is_admin, must_change_password FROM auth_user WHERE username = $1",
        )
        .bind(username)
        .fetch_optional(self.store.pool())
        .await?;
        let Some((username, hash, is_admin, must_change)) = row else { return Ok(None) };
        let roles = self.role_assignments(&username).await?.assignments;
        Ok(Some(UserRecord {
            username,
            is_admin: is_admin != 0,
            must_change_password: must_change != 0,
            password_version: password_version(&hash),
            roles,
        }))
    }

    /// What a login token's request needs to know, in one statement (it runs before every
    /// request a user makes): the registration of the token's `jti` (`None` without one) and
    /// the user with their roles. The token's use is recorded as [`Self::check_registration`]
    /// records it.
    pub async fn login_token_holder(
        &self,
        jti: Option<&str>,
        username: &str,
    ) -> Result<(Option<Registration>, Option<UserRecord>)> {
        crate::validate::name("a user name", username)?;
        type Row = (
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<i64>,
            Option<i64>,
            Option<String>,
            Option<String>,
        );
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT t.jti, t.revoked_at, t.last_used, u.username, u.password_hash, u.is_admin, \
             u.must_change_password, a.environment, a.role FROM (SELECT 1 AS one) one \
             LEFT JOIN token_registry t ON t.jti = $1 LEFT JOIN auth_user u ON u.username = $2 \
             LEFT JOIN auth_role_assignment a ON a.username = u.username ORDER BY a.environment, a.role",
        )
        .bind(jti.unwrap_or_default())
        .bind(username)
        .fetch_all(self.store.pool())
        .await?;
        let Some((registered, revoked_at, last_used, found, hash, is_admin, must_change, _, _)) = rows.first().cloned()
        else {
            return Err(crate::Error::Corrupt("the token holder's look-up returned no row".into()));
        };
        let registration = match jti {
            None => None,
            Some(_) if registered.is_none() => Some(Registration::Unknown),
            Some(_) if revoked_at.is_some() => Some(Registration::Revoked),
            Some(jti) => {
                self.record_token_use(jti, last_used.as_deref()).await?;
                Some(Registration::Active)
            }
        };
        let (Some(username), Some(hash)) = (found, hash) else { return Ok((registration, None)) };
        let mut roles: BTreeMap<Uuid, Vec<String>> = BTreeMap::new();
        for (.., environment, role) in rows {
            if let (Some(environment), Some(role)) = (environment, role) {
                roles.entry(parse_uuid(&environment)?).or_default().push(role);
            }
        }
        let user = UserRecord {
            username,
            is_admin: is_admin.unwrap_or_default() != 0,
            must_change_password: must_change.unwrap_or_default() != 0,
            password_version: password_version(&hash),
            roles,
        };
        Ok((registration, Some(user)))
    }

    /// Checks a login. `None` for an unknown user or a wrong password alike, so callers cannot
    /// tell which.
    pub async fn verify_login(&self, username: &str, password: &str) -> Result<Option<UserRecord>> {
        crate::validate::name("a user name", username)?;
        let hash: Option<String> = sqlx::query_scalar("SELECT password_hash FROM auth_user WHERE username = $1")
            .bind(username.trim())
            .fetch_optional(self.store.pool())
            .await?;
        // Hash even for unknown users so timing does not reveal which names exist.
        let stored = hash.unwrap_or_else(|| DUMMY_HASH.to_string());
        let ok = tokio::task::spawn_blocking({
            let password = password.to_string();
            move || password::verify(&password, &stored)
        })
        .await
        .unwrap_or(false);
        if !ok {
            return Ok(None);
        }
        self.user_record(username.trim()).await
    }

    pub async fn list_users(&self) -> Result<Vec<UserWithRoles>> {
        let rows: Vec<(String, i64, i64, String)> = sqlx::query_as(
            "SELECT username, is_admin, must_change_password, auth_method FROM auth_user ORDER BY username",
        )
        .fetch_all(self.store.pool())
        .await?;
        let assignments: Vec<(String, String, String)> =
            sqlx::query_as("SELECT username, environment, role FROM auth_role_assignment ORDER BY role")
                .fetch_all(self.store.pool())
                .await?;
        let mut roles: BTreeMap<String, BTreeMap<Uuid, Vec<String>>> = BTreeMap::new();
        for (user, env, role) in assignments {
            roles.entry(user).or_default().entry(parse_uuid(&env)?).or_default().push(role);
        }
        Ok(rows
            .into_iter()
            .map(|(username, is_admin, must_change, auth_method)| UserWithRoles {
                roles: roles.remove(&username).unwrap_or_default(),
                user: User {
                    username,
                    auth_method,
                    is_admin: is_admin != 0,
                    password_change_required: must_change != 0,
                },
            })
            .collect())
    }

    /// Records a user who logged in through an OpenID Connect provider (`auth_method` `oidc`):
    /// created at the first login without a password (so they cannot log in locally), the admin
    /// flag updated from the provider's claim at every login. A local user of the same name is
    /// never taken over: the login is refused.
    pub async fn record_sso_user(&self, username: &str, is_admin: bool) -> Result<()> {
        let username = check_username(username)?;
        let mut tx = self.store.begin_write().await?;
        let method: Option<String> = sqlx::query_scalar("SELECT auth_method FROM auth_user WHERE username = $1")
            .bind(username)
            .fetch_optional(&mut *tx)
            .await?;
        match method.as_deref() {
            None => {
                sqlx::query(
                    "INSERT INTO auth_user (username, password_hash, auth_method, is_admin, must_change_password, \
                     created_at) VALUES ($1, '', 'oidc', $2, 0, $3)",
                )
                .bind(username)
                .bind(is_admin as i64)
                .bind(now())
                .execute(&mut *tx)
                .await?;
            }
            Some("oidc") => {
                sqlx::query("UPDATE auth_user SET is_admin = $2 WHERE username = $1")
                    .bind(username)
                    .bind(is_admin as i64)
                    .execute(&mut *tx)
                    .await?;
            }
            Some(_) => {
                return Err(Error::Conflict(format!(
                    "a local user named {username:?} exists: the identity provider's user of that name cannot log in \
                     as them (rename or delete the local user)"
                )));
            }
        }
        tx.commit().await?;
        Ok(())
    }

    /// Whether a user who logs in through an OpenID Connect provider still exists (deleting
    /// them ends their console sessions).
    pub async fn sso_user_exists(&self, username: &str) -> Result<bool> {
        crate::validate::name("a user name", username)?;
        let found: Option<String> =
            sqlx::query_scalar("SELECT username FROM auth_user WHERE username = $1 AND auth_method = 'oidc'")
                .bind(username)
                .fetch_optional(self.store.pool())
                .await?;
        Ok(found.is_some())
    }

    /// Deletes a user; the last admin stays, so the server cannot be locked.
    pub async fn delete_user(&self, username: &str) -> Result<()> {
        crate::validate::name("a user name", username)?;
        let mut tx = self.store.begin_write().await?;
        let is_admin: Option<i64> = sqlx::query_scalar("SELECT is_admin FROM auth_user WHERE username = $1")
            .bind(username)
            .fetch_optional(&mut *tx)
            .await?;
        let is_admin = is_admin.ok_or_else(|| user_not_found(username))?;
        if is_admin != 0 {
            let admins: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM auth_user WHERE is_admin = 1").fetch_one(&mut *tx).await?;
            if admins <= 1 {
                return Err(Error::Conflict(format!(
                    "{username} is the last admin; make another user admin before deleting it"
                )));
            }
        }
        sqlx::query("DELETE FROM auth_role_assignment WHERE username = $1").bind(username).execute(&mut *tx).await?;
        sqlx::query("DELETE FROM auth_user WHERE username = $1").bind(username).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Sets a password. When users change their own, `current` must be the present one.
    pub async fn set_password(&self, username: &str, password: &str, current: Option<&str>) -> Result<()> {
        crate::validate::name("a user name", username)?;
        password::check_policy(password)?;
        if let Some(current) = current
            && self.verify_login(username, current).await?.is_none()
        {
            return Err(Error::BadRequest("the current password is not correct".into()));
        }
        let hash = password::hash(password)?;
        let mut tx = self.store.begin_write().await?;
        let done = sqlx::query("UPDATE auth_user SET password_hash = $1, must_change_password = 0 WHERE username = $2")
            .bind(hash)
            .bind(username)
            .execute(&mut *tx)
            .await?;
        commit_if_changed(tx, done, || user_not_found(username)).await
    }

    pub async fn set_is_admin(&self, username: &str, is_admin: bool) -> Result<()> {
        crate::validate::name("a user name", username)?;
        let mut tx = self.store.begin_write().await?;
        if !is_admin {
            let others: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM auth_user WHERE is_admin = 1 AND username <> $1")
                    .bind(username)
                    .fetch_one(&mut *tx)
                    .await?;
            if others == 0 {
                return Err(Error::Conflict(format!("{username} is the last admin and stays one")));
            }
        }
        let done = sqlx::query("UPDATE auth_user SET is_admin = $1 WHERE username = $2")
            .bind(is_admin as i64)
            .bind(username)
            .execute(&mut *tx)
            .await?;
        commit_if_changed(tx, done, || user_not_found(username)).await
    }

    pub async fn list_roles(&self) -> Result<Vec<String>> {
        let mut roles: Vec<String> =
            sqlx::query_scalar("SELECT name FROM auth_role").fetch_all(self.store.pool()).await?;
        // Built-in roles first, weakest first, then the others by name.
        roles.sort_by_key(|r| (ROLES.iter().position(|b| b == r).unwrap_or(usize::MAX), r.clone()));
        Ok(roles)
    }

    pub async fn create_role(&self, name: &str) -> Result<()> {
        let name = crate::projects::non_empty_name(name, "a role")?;
        let mut tx = self.store.begin_write().await?;
        let exists: Option<String> = sqlx::query_scalar("SELECT name FROM auth_role WHERE name = $1")
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_some() {
            return Err(Error::Conflict(format!("the role {name:?} already exists")));
        }
        sqlx::query("INSERT INTO auth_role (name) VALUES ($1)").bind(name).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn delete_role(&self, name: &str) -> Result<()> {
        crate::validate::name("a role name", name)?;
        if ROLES.contains(&name) {
            return Err(Error::BadRequest(format!("{name} is a built-in role and cannot be deleted")));
        }
        let mut tx = self.store.begin_write().await?;
        let used: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM auth_role_assignment WHERE role = $1")
            .bind(name)
            .fetch_one(&mut *tx)
            .await?;
        if used > 0 {
            return Err(Error::Conflict(format!(
                "the role {name:?} is still assigned {used} time(s); unassign it first"
            )));
        }
        let done = sqlx::query("DELETE FROM auth_role WHERE name = $1").bind(name).execute(&mut *tx).await?;
        commit_if_changed(tx, done, || Error::NotFound(format!("no role named {name:?}"))).await
    }

    pub async fn role_assignments(&self, username: &str) -> Result<RoleAssignmentsPerEnvironment> {
        crate::validate::name("a user name", username)?;
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT environment, role FROM auth_role_assignment WHERE username = $1 ORDER BY environment, role",
        )
        .bind(username)
        .fetch_all(self.store.pool())
        .await?;
        let mut assignments: BTreeMap<Uuid, Vec<String>> = BTreeMap::new();
        for (env, role) in rows {
            assignments.entry(parse_uuid(&env)?).or_default().push(role);
        }
        Ok(RoleAssignmentsPerEnvironment { assignments })
    }

    pub async fn assign_role(&self, username: &str, environment: Uuid, role: &str) -> Result<()> {
        crate::validate::name("a user name", username)?;
        crate::validate::name("a role name", role)?;
        let mut tx = self.store.begin_write().await?;
        let user: Option<String> = sqlx::query_scalar("SELECT username FROM auth_user WHERE username = $1")
            .bind(username)
            .fetch_optional(&mut *tx)
            .await?;
        user.ok_or_else(|| user_not_found(username))?;
        let env: Option<String> = sqlx::query_scalar("SELECT id FROM environment WHERE id = $1")
            .bind(environment.to_string())
            .fetch_optional(&mut *tx)
            .await?;
        env.ok_or_else(|| environment_not_found(environment))?;
        let known: Option<String> = sqlx::query_scalar("SELECT name FROM auth_role WHERE name = $1")
            .bind(role)
            .fetch_optional(&mut *tx)
            .await?;
        if known.is_none() {
            return Err(Error::BadRequest(format!("no role named {role:?}; the roles are {}", ROLES.join(", "))));
        }
        let assigned: Option<String> = sqlx::query_scalar(
            "SELECT role FROM auth_role_assignment WHERE username = $1 AND environment = $2 AND role = $3",
        )
        .bind(username)
        .bind(environment.to_string())
        .bind(role)
        .fetch_optional(&mut *tx)
        .await?;
        if assigned.is_some() {
            return Err(Error::Conflict(format!("{username} already has role {role} in environment {environment}")));
        }
        sqlx::query("INSERT INTO auth_role_assignment (username, environment, role) VALUES ($1, $2, $3)")
            .bind(username)
            .bind(environment.to_string())
            .bind(role)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    pub async fn unassign_role(&self, username: &str, environment: Uuid, role: &str) -> Result<()> {
        crate::validate::name("a user name", username)?;
        crate::validate::name("a role name", role)?;
        let mut tx = self.store.begin_write().await?;
        let done =
            sqlx::query("DELETE FROM auth_role_assignment WHERE username = $1 AND environment = $2 AND role = $3")
                .bind(username)
                .bind(environment.to_string())
                .bind(role)
                .execute(&mut *tx)
                .await?;
        commit_if_changed(tx, done, || {
            Error::NotFound(format!("{username} does not have role {role} in environment {environment}"))
        })
        .await
    }
}

/// An argon2id hash of a random password, verified against when the user does not exist.
const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$Ck0Ni3QFzFhUJcK0r1lJrJPW4rS6j0w6eM4K2xzw8vE";
