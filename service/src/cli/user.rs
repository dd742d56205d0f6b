//! `inmanta user create|list|delete|password|login`: users through the API with a token, or
//! directly on the server's database with `--direct` (how the first admin is made before the
//! server ever ran, or recovered when every admin password is lost).

use std::io::IsTerminal;

use api::auth::UserWithRoles;
use clap::{Args, Subcommand};

use super::{CliError, Context, output};
use crate::config::Options;

#[derive(Args)]
pub struct UserArgs {
    /// Work on the server's database (from -c, INMANTA_DATABASE_URL or --database-url) instead
    /// of through the API.
    #[arg(long, global = true)]
    direct: bool,
    /// Database URL for --direct ([database] url).
    #[arg(long, global = true)]
    database_url: Option<String>,
    #[command(subcommand)]
    command: UserCommand,
}

/// Where a password comes from: a hidden prompt on a terminal, else stdin or the environment.
#[derive(Args, Clone, Default)]
pub struct PasswordSource {
    /// Read the password from the first line of stdin (for scripts: nothing is echoed or shown
    /// in the process list).
    #[arg(long)]
    password_stdin: bool,
    /// The password itself. Every user of the machine sees it in the process list: prefer the
    /// prompt, --password-stdin or $INMANTA_PASSWORD.
    #[arg(long, hide = true)]
    password: Option<String>,
}

#[derive(Subcommand)]
pub enum UserCommand {
    /// List users with their roles.
    List,
    /// Create a user. The password is asked twice on the terminal without echo, or read with
    /// --password-stdin, or taken from $INMANTA_PASSWORD.
    Create {
        username: String,
        #[command(flatten)]
        password: PasswordSource,
        /// Make the user a global admin.
        #[arg(long)]
        admin: bool,
    },
    /// Delete a user.
    Delete { username: String },
    /// Set a user's password (same sources as create). Changing your own through the API also
    /// needs --current.
    Password {
        username: String,
        #[command(flatten)]
        password: PasswordSource,
        /// Your current password, when changing your own through the API.
        #[arg(long)]
        current: Option<String>,
    },
    /// Log in and print a bearer token for --token or INMANTA_CMDLINE_REST_TRANSPORT_TOKEN.
    Login {
        username: String,
        #[command(flatten)]
        password: PasswordSource,
    },
}

/// Whether a new password is asked (typed twice) or an existing one (once).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Asking {
    Existing,
    New,
}

impl PasswordSource {
    fn read(&self, username: &str, asking: Asking) -> Result<String, CliError> {
        let password = if self.password_stdin {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line)?;
            line.trim_end_matches(['\n', '\r']).to_string()
        } else if let Some(given) = self.password.clone().or_else(|| std::env::var("INMANTA_PASSWORD").ok()) {
            given
        } else if std::io::stdin().is_terminal() {
            prompt(username, asking)?
        } else {
            return Err(CliError::Usage(
                "no password: stdin is not a terminal to ask on; pass --password-stdin (first line of stdin) \
                 or set INMANTA_PASSWORD"
                    .into(),
            ));
        };
        if password.is_empty() {
            return Err(CliError::Usage("the password is empty".into()));
        }
        Ok(password)
    }
}

/// Asks on the terminal with echo off.
fn prompt(username: &str, asking: Asking) -> Result<String, CliError> {
    let question = match asking {
        Asking::Existing => format!("Password for {username}: "),
        Asking::New => format!("New password for {username}: "),
    };
    let password = rpassword::prompt_password(question)?;
    if asking == Asking::New && rpassword::prompt_password("Repeat the new password: ")? != password {
        return Err(CliError::Usage("the two passwords differ; nothing changed".into()));
    }
    Ok(password)
}

pub async fn run(args: UserArgs, ctx: &Context, options: &Options) -> Result<(), CliError> {
    if args.direct || args.database_url.is_some() {
        return direct(args, ctx, options).await;
    }
    let c = &ctx.client;
    match args.command {
        UserCommand::List => {
            let users = c.users().await?;
            print_users(ctx, &users);
        }
        UserCommand::Create { username, password, admin } => {
            let user = c.create_user(&username, &password.read(&username, Asking::New)?).await?;
            if admin {
                c.set_is_admin(&username, true).await?;
            }
            println!("User {} created{}", user.username, if admin { " (admin)" } else { "" });
        }
        UserCommand::Delete { username } => {
            c.delete_user(&username).await?;
            println!("User {username} deleted");
        }
        UserCommand::Password { username, password, current } => {
            c.set_password(&username, &password.read(&username, Asking::New)?, current.as_deref()).await?;
            println!("Password of {username} changed");
        }
        UserCommand::Login { username, password } => {
            let login = c.login(&username, &password.read(&username, Asking::Existing)?).await?;
            if ctx.json {
                output::json(&login);
            } else {
                println!("{}", login.token);
            }
        }
    }
    Ok(())
}

async fn direct(args: UserArgs, ctx: &Context, options: &Options) -> Result<(), CliError> {
    let (_, o) = super::open_server_database(options, args.database_url.as_deref()).await?;
    let refused = |e: orchestrator::Error| CliError::Deploy(e.to_string());
    match args.command {
        UserCommand::List => print_users(ctx, &o.list_users().await.map_err(refused)?),
        UserCommand::Create { username, password, admin } => {
            let password = password.read(&username, Asking::New)?;
            o.create_user(&username, &password, admin, false).await.map_err(refused)?;
            println!("User {username} created{}", if admin { " (admin)" } else { "" });
        }
        UserCommand::Delete { username } => {
            o.delete_user(&username).await.map_err(refused)?;
            println!("User {username} deleted");
        }
        UserCommand::Password { username, password, .. } => {
            let password = password.read(&username, Asking::New)?;
            o.set_password(&username, &password, None).await.map_err(refused)?;
            println!("Password of {username} changed");
        }
        UserCommand::Login { .. } => {
            return Err(CliError::Usage("login talks to a server: leave out --direct".into()));
        }
    }
    o.store().close().await;
    Ok(())
}

fn print_users(ctx: &Context, users: &[UserWithRoles]) {
    if ctx.json {
        output::json(&users);
        return;
    }
    let rows: Vec<Vec<String>> = users
        .iter()
        .map(|u| {
            let roles: Vec<String> =
                u.roles.iter().map(|(env, roles)| format!("{env}: {}", roles.join(", "))).collect();
            vec![u.user.username.clone(), if u.user.is_admin { "yes".into() } else { String::new() }, roles.join("; ")]
        })
        .collect();
    output::table(&["USERNAME", "ADMIN", "ROLES"], &rows);
}
