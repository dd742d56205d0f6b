//! `inmanta token create|list|show|revoke|bootstrap`: the token registry through the API, and
//! the first admin token made on the server's own machine (as `inmanta-cli token bootstrap`).

use api::auth::{ClientType, Token};
use clap::Subcommand;
use orchestrator::auth::outside::KeySource;
use orchestrator::auth::tokens::Authenticator;

use super::{CliError, Context, output};
use crate::config::Options;

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Create an environment token for the client types given (as `inmanta-cli token create`).
    Create {
        /// Environment id or name.
        #[arg(short = 'e', long)]
        environment: String,
        #[arg(long)]
        api: bool,
        #[arg(long)]
        compiler: bool,
        #[arg(long)]
        agent: bool,
        /// Seconds until the token expires; it does not by default.
        #[arg(long)]
        expire: Option<i64>,
    },
    /// List registered tokens: an environment's with -e, else every token you may manage.
    List {
        #[arg(short = 'e', long)]
        environment: Option<String>,
    },
    /// Show one registered token by its id (jti).
    Show { jti: String },
    /// Revoke a registered token: every server refuses it from its next request on.
    Revoke { jti: String },
    /// Print a token for every client type, valid for --expire seconds, made from the server's
    /// configuration and database on this machine (no server call: for the first admin steps).
    Bootstrap {
        #[arg(long, default_value_t = 3600)]
        expire: i64,
        /// Database URL ([database] url); else from the configuration, as `inmanta server`.
        #[arg(long)]
        database_url: Option<String>,
    },
}

pub async fn run(command: TokenCommand, ctx: &Context) -> Result<(), CliError> {
    let c = &ctx.client;
    match command {
        TokenCommand::Create { environment, api, compiler, agent, expire } => {
            let env = super::environment::find(ctx, &environment).await?.id;
            let types: Vec<ClientType> =
                [(api, ClientType::Api), (compiler, ClientType::Compiler), (agent, ClientType::Agent)]
                    .into_iter()
                    .filter_map(|(on, t)| on.then_some(t))
                    .collect();
            if types.is_empty() {
                return Err(CliError::Usage("name the client types: --api, --compiler and/or --agent".into()));
            }
            println!("Token: {}", c.create_environment_token(env, &types, expire).await?);
        }
        TokenCommand::List { environment } => {
            let tokens = match environment {
                Some(env) => c.environment_tokens(super::environment::find(ctx, &env).await?.id).await?,
                None => c.tokens().await?,
            };
            print_tokens(ctx, &tokens);
        }
        TokenCommand::Show { jti } => print_tokens(ctx, &[c.registered_token(&jti).await?]),
        TokenCommand::Revoke { jti } => {
            c.revoke_token(&jti).await?;
            println!("Token {jti} revoked");
        }
        TokenCommand::Bootstrap { .. } => unreachable!("bootstrap runs without a server connection"),
    }
    Ok(())
}

/// `inmanta token bootstrap`: signs with the server's key (the `sign=true` section of the
/// configuration, else the key in its database) and registers the token there, so it is listed
/// and can be revoked like any other.
pub async fn bootstrap(expire: i64, database_url: Option<String>, options: &Options) -> Result<(), CliError> {
    if expire <= 0 {
        return Err(CliError::Usage("--expire must be a positive number of seconds".into()));
    }
    let (config, o) = super::open_server_database(options, database_url.as_deref()).await?;
    let refused = |e: orchestrator::Error| CliError::Deploy(e.to_string());
    let mut authenticator = Authenticator::load(&o, config.auth.login_session_expire).await.map_err(refused)?;
    if let Some(signing) = config.auth.jwt_issuers.iter().find(|i| i.sign)
        && let KeySource::Shared(secret) = &signing.keys
    {
        authenticator = authenticator.with_signing_key(secret, &signing.issuer, &signing.audience);
    }
    let token = authenticator.bootstrap_token(&o, expire).await.map_err(refused)?;
    o.store().close().await;
    println!("Token: {token}");
    Ok(())
}

fn print_tokens(ctx: &Context, tokens: &[Token]) {
    if ctx.json {
        output::json(&tokens);
        return;
    }
    let time = |t: Option<chrono::DateTime<chrono::Utc>>| {
        t.map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string()).unwrap_or_default()
    };
    let rows: Vec<Vec<String>> = tokens
        .iter()
        .map(|t| {
            vec![
                t.jti.clone(),
                t.kind.as_str().to_string(),
                t.created_by.clone().unwrap_or_default(),
                t.client_types.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(","),
                t.environment.map(|e| e.to_string()).unwrap_or_default(),
                time(Some(t.issued_at)),
                t.expires_at.map(|e| time(Some(e))).unwrap_or_else(|| "never".into()),
                time(t.revoked_at),
                time(t.last_used),
            ]
        })
        .collect();
    output::table(
        &["JTI", "KIND", "CREATED BY", "CLIENT TYPES", "ENVIRONMENT", "ISSUED", "EXPIRES", "REVOKED", "LAST USED"],
        &rows,
    );
}
