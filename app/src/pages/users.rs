//! User management: users, the admin flag, passwords and role assignments per environment.
//! Everyone sees the page; only admins get its data (the server functions check `role-assignment.read` and
//! the write labels).

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use leptos_meta::Title;

use crate::components::*;
#[cfg(feature = "ssr")]
use crate::fns::{authorized_global, env_id, fail};
#[cfg(feature = "ssr")]
use crate::model::RoleRow;
use crate::model::{RegisteredTokenRow, UserRow, UsersView};

/// What the password policy asks, shown next to every password input.
pub const PASSWORD_HINT: &str =
    "12 to 128 characters, with at least three of: lower case, upper case, digits, other characters.";

#[component]
pub fn UsersPage() -> impl IntoView {
    let data = live_resource(|| (), |()| users());
    // Made here so a message stays when the table reloads after the action.
    let error = ActionError::new();
    view! {
        <Title text="Users"/>
        <section class="page">
            <div class="page-header">
                <h1>"Users"</h1>
            </div>
            <Loaded
                resource=data
                loading="Loading…"
                error_title="The users could not be loaded"
                view=move |view| view! { <UsersTable data=view error/> }
                not_allowed=|| view! {
                    <div id="users-not-allowed">
                        <Empty title="Only admins manage users">
                            <p>
                                "You are signed in without admin rights. Ask an admin to add users, "
                                "set passwords or give roles in an environment."
                            </p>
                        </Empty>
                    </div>
                }
            />
            <Transition fallback=|| ()>
                <UserForms data/>
            </Transition>
            <RegisteredTokens/>
        </section>
    }
}

type UsersResource = Resource<Result<UsersView, ConsoleError>>;

/// The token registry: every token this server issued (logins included) that the signed-in
/// user may manage (an admin: all), with creator and expiry, and a revoke button.
#[component]
fn RegisteredTokens() -> impl IntoView {
    let tokens = live_resource(|| (), |()| registered_tokens());
    let error = ActionError::new();
    view! {
        <div class="card">
            <h2>"Access tokens"</h2>
            <p class="muted">
                "Every token this server issued: logins (console sessions excepted), environment tokens, "
                "compiles and bootstrap tokens. Admins see all of them, everyone else their own. A revoked token "
                "is refused by every server from its next request on."
            </p>
            <ActionMessage error/>
            <Loaded
                resource=tokens
                loading="Loading…"
                error_title="The tokens could not be loaded"
                view=move |rows| view! { <RegisteredTokenTable rows error/> }
            />
        </div>
    }
}

#[component]
fn RegisteredTokenTable(rows: Vec<RegisteredTokenRow>, error: ActionError) -> impl IntoView {
    if rows.is_empty() {
        return view! { <p id="no-registered-tokens" class="muted">"No tokens."</p> }.into_any();
    }
    let row = move |t: RegisteredTokenRow| {
        let jti = t.token.jti.clone();
        let revoke = move || act(error, "Token revoked", revoke_registered_token(jti.clone()));
        let owner = t.token.created_by.clone().unwrap_or_else(|| "nobody".into());
        let action = endpoint::<RevokeRegisteredToken>();
        let (jti, kind, revoked) = (t.token.jti.clone(), t.kind.clone(), t.token.revoked.is_some().to_string());
        view! {
            <tr data-jti=jti data-kind=kind data-revoked=revoked>
                <td>{t.kind.clone()}</td>
                <td>{t.environment.clone().unwrap_or_else(|| "—".into())}</td>
                <TokenCells token=t.token.clone()/>
                <RevokeTokenCell token=t.token.clone() what=t.kind owner error action fields=vec![("jti", t.token.jti)] revoke/>
            </tr>
        }
    };
    view! { <Table id="registered-tokens" headings=REGISTERED_TOKEN_HEADINGS rows row/> }.into_any()
}

/// The forms, made once (what is typed survives reloads); their choices follow the data.
#[component]
fn UserForms(data: UsersResource) -> impl IntoView {
    let loaded = move || data.get().and_then(|r| r.ok());
    view! {
        <Show when=move || loaded().is_some()>
            <div class="cards user-forms">
                <AddUserForm/>
                <AssignRoleForm data/>
                <SetPasswordForm data/>
            </div>
        </Show>
    }
}

#[component]
fn UsersTable(data: UsersView, error: ActionError) -> impl IntoView {
    let users = data.users.clone();
    let me = data.me.clone();
    let table = if users.is_empty() {
        view! {
            <Empty title="No users yet">
                <p>"Add the first one below, or with " <code>"inmanta user create NAME"</code> "."</p>
            </Empty>
        }
        .into_any()
    } else {
        view! {
            <Table
                id="users"
                headings=&[Heading::Plain("User"), Heading::Plain("Admin"), Heading::Plain("Roles per environment"), Heading::Unseen("Actions")]
                rows=users
                row=move |user| view! { <UserLine user me=me.clone() error/> }
            />
        }
        .into_any()
    };
    view! {
        <div class="card">
            <h2>{format!("Users ({})", data.users.len())}</h2>
            <ActionMessage error/>
            {table}
        </div>
    }
}

#[component]
fn UserLine(user: UserRow, me: Option<String>, error: ActionError) -> impl IntoView {
    let name = user.username.clone();
    let is_me = me.as_deref() == Some(name.as_str());
    let roles = if user.roles.is_empty() {
        view! { <span class="muted">"no roles"</span> }.into_any()
    } else {
        view! {
            <ul class="role-list">
                {user
                    .roles
                    .iter()
                    .map(|r| {
                        let (user, env, role) = (name.clone(), r.env.clone(), r.role.clone());
                        let label = format!("Remove role {} in {} from {}", r.role, r.env_name, name);
                        let question = format!("Remove role {} in {} from user {}?", r.role, r.env_name, name);
                        view! {
                            <li class="role-chip" data-env=r.env.clone() data-role=r.role.clone()>
                                <span>
                                    <span class="muted">{format!("{}: ", r.env_name)}</span>
                                    <strong>{r.role.clone()}</strong>
                                </span>
                                <ChangeForm
                                    action={endpoint::<RoleAssignment>()}
                                    fields=vec![
                                        ("username", user.clone()),
                                        ("env", env.clone()),
                                        ("role", role.clone()),
                                        ("assign", "false".into()),
                                    ]
                                    on_submit=move || {
                                        let (user, env, role) = (user.clone(), env.clone(), role.clone());
                                        error.ask(question.clone(), "Remove", move || {
                                            act(
                                                error,
                                                format!("Role {role} removed from {user}"),
                                                role_assignment(user.clone(), env.clone(), role.clone(), false),
                                            )
                                        })
                                    }
                                >
                                    <button class="chip-remove" type="submit" title=label.clone() aria-label=label>
                                        "×"
                                    </button>
                                </ChangeForm>
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        }
        .into_any()
    };
    let admin = user.is_admin;
    let (toggle_name, delete_name) = (name.clone(), name.clone());
    let toggle_label = if admin { "Remove admin" } else { "Make admin" };
    let (toggle_aria, delete_aria) = (format!("{toggle_label}: {name}"), format!("Delete user {name}"));
    view! {
        <tr data-user=name.clone()>
            <td class="name">
                <strong>{name.clone()}</strong>
                {is_me.then(|| view! { <span class="badge">"you"</span> })}
                {user.password_change_required.then(|| view! { <span class="badge badge-warning">"must change password"</span> })}
            </td>
            <td>
                {if admin {
                    view! { <span class="badge badge-admin">"admin"</span> }.into_any()
                } else {
                    view! { <span class="muted">"—"</span> }.into_any()
                }}
            </td>
            <td>{roles}</td>
            <td class="row-actions">
                <ChangeForm
                    action={endpoint::<SetAdmin>()}
                    fields=vec![("username", name.clone()), ("is_admin", (!admin).to_string())]
                    on_submit=move || {
                        let question = if admin {
                            format!("Take admin rights away from {toggle_name}?")
                        } else {
                            format!("Make {toggle_name} an admin? Admins may do everything on this server.")
                        };
                        let name = toggle_name.clone();
                        error.ask(question, toggle_label, move || {
                            act(error, format!("{toggle_label}: {name} done"), set_admin(name.clone(), !admin))
                        })
                    }
                >
                    <button
                        class="button button-small button-secondary"
                        type="submit"
                        data-action="toggle-admin"
                        aria-label=toggle_aria
                    >
                        {toggle_label}
                    </button>
                </ChangeForm>
                <ChangeForm
                    action={endpoint::<DeleteUser>()}
                    fields=vec![("username", name.clone()), ("confirm", name.clone())]
                    on_submit=move || {
                        let name = delete_name.clone();
                        error.ask(format!("Delete user {name}? Their roles go with them."), "Delete", move || {
                            act(error, format!("User {name} deleted"), delete_user(name.clone(), name.clone()))
                        })
                    }
                >
                    <button
                        class="button button-small button-danger"
                        type="submit"
                        data-action="delete"
                        aria-label=delete_aria
                    >
                        "Delete"
                    </button>
                </ChangeForm>
            </td>
        </tr>
    }
}

/// Runs a form's server call: the error or a notice, the form cleared and the page refreshed on
/// success.
fn submit<F>(error: ActionError, notice: RwSignal<Option<String>>, done: String, on_ok: impl Fn() + 'static, call: F)
where
    F: std::future::Future<Output = Result<(), ConsoleError>> + 'static,
{
    notice.set(None);
    leptos::task::spawn_local(async move {
        match call.await {
            Ok(()) => {
                error.set(None);
                notice.set(Some(done));
                on_ok();
                error.refresh.bump();
            }
            Err(e) => error.fail(e),
        }
    });
}

#[component]
fn Notice(notice: RwSignal<Option<String>>) -> impl IntoView {
    move || notice.get().map(|n| view! { <p class="action-notice" role="status">{n}</p> })
}

#[component]
fn AddUserForm() -> impl IntoView {
    let username = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());
    let admin = RwSignal::new(false);
    let error = ActionError::new();
    let notice = RwSignal::new(None);
    let add = move || {
        let name = username.get_untracked().trim().to_string();
        submit(
            error,
            notice,
            format!("User {name} added."),
            move || {
                username.set(String::new());
                password.set(String::new());
                admin.set(false);
            },
            add_user(name.clone(), password.get_untracked(), admin.get_untracked()),
        );
    };
    view! {
        <ChangeForm action={endpoint::<AddUser>()} class="card form" id="add-user" on_submit=add>
            <h2>"Add user"</h2>
            <TextField id="new-username" name="username" label="Username" value=username autocomplete="off" required=true/>
            <TextField
                id="new-password"
                name="password"
                label="Password"
                value=password
                input_type="password"
                autocomplete="new-password"
                required=true
                hint=PASSWORD_HINT
            />
            <label class="checkbox">
                <input
                    id="new-admin"
                    type="checkbox"
                    name="is_admin"
                    value="true"
                    prop:checked=move || admin.get()
                    on:change=move |ev| admin.set(event_target_checked(&ev))
                />
                " Admin (may do everything on this server)"
            </label>
            <ActionMessage error/>
            <Notice notice/>
            <div class="form-actions">
                <button class="button" type="submit">"Add user"</button>
            </div>
        </ChangeForm>
    }
}

/// A labelled choice of one of the users, for the forms that act on a user.
#[component]
fn UserSelect(id: &'static str, data: UsersResource, user: RwSignal<String>) -> impl IntoView {
    let users = move || {
        let users = data.get().and_then(|r| r.ok()).map(|d| d.users).unwrap_or_default();
        users.into_iter().map(|u| (u.username.clone(), u.username)).collect()
    };
    view! { <SelectField id name="username" label="User" value=user options=users prompt="— pick a user —" required=true/> }
}

#[component]
fn AssignRoleForm(data: UsersResource) -> impl IntoView {
    let loaded = move || data.get().and_then(|r| r.ok());
    let user = RwSignal::new(String::new());
    let env = RwSignal::new(String::new());
    let role = RwSignal::new(String::new());
    let error = ActionError::new();
    let notice = RwSignal::new(None);
    let assign = move || {
        let (u, e) = (user.get_untracked(), env.get_untracked());
        let mut r = role.get_untracked();
        if r.is_empty() {
            r = loaded().and_then(|d| d.roles.first().cloned()).unwrap_or_default();
        }
        submit(error, notice, format!("{u} now has role {r}."), || (), role_assignment(u.clone(), e, r.clone(), true));
    };
    let no_environments = move || loaded().is_some_and(|d| d.environments.is_empty());
    let environments = move || {
        let environments = loaded().map(|d| d.environments).unwrap_or_default();
        environments.into_iter().map(|e| (e.id, format!("{} / {}", e.project_name, e.name))).collect()
    };
    let roles = move || loaded().map(|d| d.roles).unwrap_or_default().into_iter().map(|r| (r.clone(), r)).collect();
    view! {
        <ChangeForm
            action={endpoint::<RoleAssignment>()}
            class="card form"
            id="assign-role"
            fields=vec![("assign", "true".into())]
            on_submit=assign
        >
            <h2>"Assign a role"</h2>
            <UserSelect id="assign-user" data=data user=user/>
            <SelectField
                id="assign-env"
                name="env"
                label="Environment"
                value=env
                options=environments
                prompt="— pick an environment —"
                required=true
            />
            {move || no_environments().then(|| view! { <p class="muted">"There are no environments yet: create one first."</p> })}
            <SelectField id="assign-role-name" name="role" label="Role" value=role options=roles/>
            <p class="muted field-hint">
                "read-only reads; noc also deploys, pauses agents and halts; environment-admin also changes the "
                "desired state and settings; environment-expert-admin also clears, deletes and issues tokens."
            </p>
            <ActionMessage error/>
            <Notice notice/>
            <div class="form-actions">
                <button class="button" type="submit" disabled=no_environments>"Assign role"</button>
            </div>
        </ChangeForm>
    }
}

#[component]
fn SetPasswordForm(data: UsersResource) -> impl IntoView {
    let user = RwSignal::new(String::new());
    let password = RwSignal::new(String::new());
    let error = ActionError::new();
    let notice = RwSignal::new(None);
    let save = move || {
        let u = user.get_untracked();
        if u.is_empty() {
            error.set(Some("pick a user".into()));
            return;
        }
        submit(
            error,
            notice,
            format!("The password of {u} is set: their sessions and login tokens end."),
            move || password.set(String::new()),
            set_user_password(u.clone(), password.get_untracked()),
        );
    };
    view! {
        <ChangeForm action={endpoint::<SetUserPassword>()} class="card form" id="set-password" on_submit=save>
            <h2>"Set a password"</h2>
            <UserSelect id="password-user" data=data user=user/>
            <TextField
                id="password-new"
                name="password"
                label="New password"
                value=password
                input_type="password"
                autocomplete="new-password"
                required=true
                hint=PASSWORD_HINT
            />
            <ActionMessage error/>
            <Notice notice/>
            <div class="form-actions">
                <button class="button" type="submit">"Set password"</button>
            </div>
        </ChangeForm>
    }
}

/// Every user with their roles, and what the page needs to assign roles. Only admins read users.
#[server(prefix = "/console/fn", endpoint = "users", input = Json)]
pub async fn users() -> Result<UsersView, ConsoleError> {
    // Inmanta's label of `GET /api/v2/user`, the list of users with their roles.
    let s = authorized_global("role-assignment.read")?;
    let environments = crate::fns::list_environments().await?;
    let name_of = |id: &str| {
        environments
            .iter()
            .find(|e| e.id == id)
            .map(|e| format!("{} / {}", e.project_name, e.name))
            .unwrap_or_else(|| id.to_string())
    };
    let users = s
        .orchestrator
        .list_users()
        .await
        .map_err(fail)?
        .into_iter()
        .map(|u| {
            let mut roles: Vec<RoleRow> = u
                .roles
                .iter()
                .flat_map(|(env, roles)| {
                    let env = env.to_string();
                    roles.iter().map(move |role| (env.clone(), role.clone()))
                })
                .map(|(env, role)| RoleRow { env_name: name_of(&env), env, role })
                .collect();
            roles.sort_by(|a, b| (&a.env_name, &a.role).cmp(&(&b.env_name, &b.role)));
            UserRow {
                username: u.user.username,
                is_admin: u.user.is_admin,
                password_change_required: u.user.password_change_required,
                roles,
            }
        })
        .collect();
    let roles = s.orchestrator.list_roles().await.map_err(fail)?;
    Ok(UsersView { users, environments, roles, me: s.caller.name().map(str::to_string) })
}

/// The registered tokens the caller may manage (an admin: all), newest first.
#[server(prefix = "/console/fn", endpoint = "registered_tokens", input = Json)]
pub async fn registered_tokens() -> Result<Vec<RegisteredTokenRow>, ConsoleError> {
    let s = crate::fns::authorized_signed_in()?;
    let environments = s.orchestrator.list_environments().await.map_err(fail)?;
    let name_of = |id: uuid::Uuid| {
        environments.iter().find(|e| e.id == id).map(|e| e.name.clone()).unwrap_or_else(|| id.to_string())
    };
    Ok(s.orchestrator
        .tokens_of(&s.caller)
        .await
        .map_err(fail)?
        .into_iter()
        .map(|t| RegisteredTokenRow {
            kind: t.kind.as_str().to_string(),
            environment: t.environment.map(name_of),
            token: crate::fns::token_row(&t),
        })
        .collect())
}

/// Revokes a registered token the caller may manage.
/// Also posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "revoke_registered_token")]
pub async fn revoke_registered_token(jti: String) -> Result<(), ConsoleError> {
    let s = crate::fns::authorized_signed_in()?;
    s.orchestrator.revoke_token(&s.caller, &jti).await.map_err(fail)?;
    Ok(())
}

/// Adds a user; the password must follow the policy (12 to 128 characters, three kinds).
/// Also posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "add_user")]
pub async fn add_user(
    username: String,
    password: String,
    #[server(default)] is_admin: bool,
) -> Result<(), ConsoleError> {
    let s = authorized_global("user.write")?;
    if is_admin {
        authorized_global("role.is-admin")?;
    }
    s.orchestrator.create_user(&username, &password, is_admin, false).await.map_err(fail)?;
    Ok(())
}

/// Deletes a user; `confirm` must be the user's name. The last admin cannot be deleted.
/// Also posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "delete_user")]
pub async fn delete_user(username: String, confirm: String) -> Result<(), ConsoleError> {
    let s = authorized_global("user.write")?;
    if confirm != username {
        return Err(ConsoleError::refused(format!("confirm with the user's name ({username})")));
    }
    s.orchestrator.delete_user(&username).await.map_err(fail)
}

/// Makes a user admin or not; the last admin stays one.
/// Also posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "set_admin")]
pub async fn set_admin(username: String, is_admin: bool) -> Result<(), ConsoleError> {
    let s = authorized_global("role.is-admin")?;
    s.orchestrator.set_is_admin(&username, is_admin).await.map_err(fail)
}

/// Sets another user's password (an admin's action: the current password is not asked).
/// Also posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "set_user_password")]
pub async fn set_user_password(username: String, password: String) -> Result<(), ConsoleError> {
    let s = authorized_global("user.write")?;
    s.orchestrator.set_password(&username, &password, None).await.map_err(fail)
}

/// Gives (`assign`) or takes away a role of a user in an environment.
/// Also posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "role_assignment")]
pub async fn role_assignment(username: String, env: String, role: String, assign: bool) -> Result<(), ConsoleError> {
    let s = authorized_global("role-assignment.write")?;
    if username.is_empty() {
        return Err(ConsoleError::refused("pick a user"));
    }
    if role.is_empty() {
        return Err(ConsoleError::refused("pick a role"));
    }
    let id = env_id(&env).map_err(|_| ConsoleError::refused("pick an environment"))?;
    if assign {
        s.orchestrator.assign_role(&username, id, &role).await.map_err(fail)
    } else {
        s.orchestrator.unassign_role(&username, id, &role).await.map_err(fail)
    }
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;
    use crate::test_support::*;

    /// An admin manages users and roles through the server functions; the last admin stays;
    /// a user who is not an admin is refused.
    #[tokio::test]
    async fn user_server_functions_are_for_admins() {
        let _ = any_spawner::Executor::init_tokio();
        let (_dir, o) = orchestrator_with(&[("infra", "production")]).await;
        let env = o.list_environments().await.unwrap()[0].id;
        let e = env.to_string();
        o.create_user("admin", "Admin-password-123", true, false).await.unwrap();
        let owner = Owner::new();
        owner.set();
        provide_context(o.clone());
        provide_context(o.user_record("admin").await.unwrap().unwrap().principal());

        let error = add_user("rita".into(), "short".into(), false).await.unwrap_err();
        assert!(error.to_string().contains("12 to 128"), "{error}");
        add_user("rita".into(), "Rita-password-123".into(), false).await.unwrap();
        role_assignment("rita".into(), e.clone(), "noc".into(), true).await.unwrap();
        let view = users().await.unwrap();
        assert_eq!(view.me.as_deref(), Some("admin"));
        assert!(view.roles.starts_with(&["read-only".to_string(), "noc".to_string()]), "{:?}", view.roles);
        let rita = view.users.iter().find(|u| u.username == "rita").unwrap();
        assert!(!rita.is_admin);
        assert_eq!(rita.roles.len(), 1);
        assert_eq!((rita.roles[0].env_name.as_str(), rita.roles[0].role.as_str()), ("infra / production", "noc"));
        role_assignment("rita".into(), e.clone(), "noc".into(), false).await.unwrap();
        role_assignment("rita".into(), e.clone(), "read-only".into(), true).await.unwrap();
        set_user_password("rita".into(), "Other-password-456".into()).await.unwrap();
        assert!(o.verify_login("rita", "Other-password-456").await.unwrap().is_some());

        // The last admin stays one.
        let error = set_admin("admin".into(), false).await.unwrap_err();
        assert!(error.to_string().contains("last admin"), "{error}");
        let error = delete_user("admin".into(), "admin".into()).await.unwrap_err();
        assert!(error.to_string().contains("last admin"), "{error}");
        let error = delete_user("rita".into(), "someone".into()).await.unwrap_err();
        assert!(error.to_string().contains("rita"), "{error}");

        // Rita is no admin: nothing of this is hers.
        provide_context(o.user_record("rita").await.unwrap().unwrap().principal());
        for error in [
            users().await.unwrap_err(),
            add_user("mallory".into(), "Mallory-password-1".into(), true).await.unwrap_err(),
            set_admin("rita".into(), true).await.unwrap_err(),
            role_assignment("rita".into(), e.clone(), "environment-admin".into(), true).await.unwrap_err(),
            delete_user("admin".into(), "admin".into()).await.unwrap_err(),
        ] {
            assert!(error.to_string().contains("not allowed"), "{error}");
        }
        assert!(o.user_record("mallory").await.unwrap().is_none());

        provide_context(o.user_record("admin").await.unwrap().unwrap().principal());
        set_admin("rita".into(), true).await.unwrap();
        set_admin("admin".into(), false).await.unwrap();
        delete_user("admin".into(), "admin".into()).await.unwrap();
        let names: Vec<String> = o.list_users().await.unwrap().into_iter().map(|u| u.user.username).collect();
        assert_eq!(names, vec!["rita".to_string()]);
    }
}
