//! Client commands, named like Inmanta's `inmanta-cli`. They talk to a server over the REST API;
//! the server comes from `--host/--port`, else `[cmdline_rest_transport]` of the config file or
//! of `.inmanta` in the current directory, else 127.0.0.1:8888.
//!
//! Exit codes: 0 success, 1 the server refused (the message says why), 2 bad usage or config,
//! 3 the server could not be reached.

mod agent;
mod agent_process;
mod compile;
mod compiles;
mod deploy;
mod dryrun;
mod environment;
mod export;
mod graph;
mod output;
mod param;
mod policy_engine;
mod project;
pub(crate) mod project_init;
mod resource;
mod token;
mod user;
mod version;

use std::process::ExitCode;

use api::client::{Client, ClientError};
use clap::{Args, Subcommand};

use crate::config::Options;

#[derive(Subcommand)]
pub enum ClientCommand {
    /// Manage projects.
    Project {
        #[command(flatten)]
        connection: Connection,
        #[command(subcommand)]
        command: project::ProjectCommand,
    },
    /// Inmanta's module commands (add, list, install, status, push, verify, create, freeze,
    /// build, v1tov2, release, download), as Inmanta 20.1 has them (docs/cli.md).
    #[command(alias = "modules", disable_help_flag = true)]
    Module {
        /// The subcommand and its arguments, as Inmanta takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Manage environments and their settings.
    #[command(alias = "env")]
    Environment {
        #[command(flatten)]
        connection: Connection,
        #[command(subcommand)]
        command: environment::EnvironmentCommand,
    },
    /// Compile the project in the current directory (or --project) and report errors; with a
    /// subcommand, the server's compiles of an environment.
    Compile(compiles::CompileCommand),
    /// Compile and send the resources to a server as a new version (or to a file with -j).
    // Boxed: its options are most of the command's size (clippy's large_enum_variant).
    Export(Box<compile::ExportArgs>),
    /// All in one: compile the project here, deploy it with an embedded server and agent, report.
    Deploy(deploy::DeployArgs),
    /// Desired-state versions of an environment.
    Version {
        #[command(flatten)]
        scope: Scope,
        #[command(subcommand)]
        command: version::VersionCommand,
    },
    /// Resources of an environment: status, history, logs.
    Resource {
        #[command(flatten)]
        scope: Scope,
        #[command(subcommand)]
        command: resource::ResourceCommand,
    },
    /// Agents of an environment: list, pause, unpause; without a subcommand, run an agent
    /// process that serves the agent names given with --name.
    Agent {
        #[command(flatten)]
        scope: Scope,
        #[command(flatten)]
        process: agent_process::ProcessArgs,
        #[command(subcommand)]
        command: Option<agent::AgentCommand>,
    },
    /// Follow the deploy of an environment with a progress bar until it settles.
    Monitor {
        #[command(flatten)]
        scope: Scope,
        /// Keep following after the deploy settled.
        #[arg(long)]
        follow: bool,
    },
    /// Dry runs: what a version would change.
    Dryrun {
        #[command(flatten)]
        scope: Scope,
        #[command(subcommand)]
        command: dryrun::DryrunCommand,
    },
    /// Users: create, list, delete, set passwords, log in for a token.
    User {
        #[command(flatten)]
        connection: Connection,
        #[command(flatten)]
        args: user::UserArgs,
    },
    /// The token registry: create, list, show and revoke tokens; `bootstrap` makes the first
    /// admin token on the server's machine.
    Token {
        #[command(flatten)]
        connection: Connection,
        #[command(subcommand)]
        command: token::TokenCommand,
    },
    /// What access policies are evaluated against: `print-endpoint-data`, `print-default-policy`.
    PolicyEngine {
        #[command(subcommand)]
        command: policy_engine::PolicyEngineCommand,
    },
    /// Parameters of an environment.
    Param {
        #[command(flatten)]
        scope: Scope,
        #[command(subcommand)]
        command: param::ParamCommand,
    },
}

/// A connection plus the environment a command works on.
#[derive(Args, Clone)]
pub struct Scope {
    #[command(flatten)]
    connection: Connection,
    /// Environment id or name; defaults to [config] environment of .inmanta.
    #[arg(short = 'e', long, global = true)]
    environment: Option<String>,
}

#[derive(Args, Clone)]
pub struct Connection {
    /// Server host ([cmdline_rest_transport] host).
    #[arg(long, global = true)]
    host: Option<String>,
    /// Server port ([cmdline_rest_transport] port).
    #[arg(long, global = true)]
    port: Option<u16>,
    /// Bearer token ([cmdline_rest_transport] token, INMANTA_CMDLINE_REST_TRANSPORT_TOKEN); get
    /// one with `inmanta user login NAME` or from the console's tokens tab.
    #[arg(long, global = true)]
    token: Option<String>,
    /// Print the API's JSON instead of tables.
    #[arg(long, global = true)]
    json: bool,
}

/// What a client command needs: the API client and the output mode.
pub struct Context {
    pub client: Client,
    pub json: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The model has errors; they are printed as they are.
    #[error("{0}")]
    Compile(compiler::Diagnostics),
    /// Some resources did not deploy.
    #[error("{0}")]
    Deploy(String),
}

/// Runs a client command; `verbose` is the global `-v` count.
pub async fn run(command: ClientCommand, options: &Options, verbose: u8) -> ExitCode {
    let configured_python = options.get("compiler", "python").map(std::path::PathBuf::from);
    let result = match command {
        ClientCommand::Module { args } => return crate::module_tool::run(&args, configured_python.as_deref()),
        ClientCommand::PolicyEngine { command } => policy_engine::run(command),
        ClientCommand::Project { command: project::ProjectCommand::Download { install }, .. } => {
            std::env::current_dir().map_err(CliError::Io).and_then(|here| {
                crate::module_tool::download::download_project(&here, install, configured_python.as_deref())
                    .map_err(CliError::Usage)
            })
        }
        ClientCommand::Project { command: project::ProjectCommand::Install { project_dir, .. }, .. } => {
            project::install(project_dir, options.get("compiler", "python").map(std::path::PathBuf::from), false).await
        }
        ClientCommand::Project { command: project::ProjectCommand::Update { project_dir, .. }, .. } => {
            project::install(project_dir, options.get("compiler", "python").map(std::path::PathBuf::from), true).await
        }
        ClientCommand::Project {
            command: project::ProjectCommand::Freeze { outfile, recursive, operator }, ..
        } => {
            let request = crate::module_tool::freeze::FreezeRequest {
                project_dir: std::path::Path::new("."),
                outfile: outfile.as_deref(),
                recursive: recursive.then_some(true),
                operator: operator.as_deref(),
                python: configured_python.as_deref(),
            };
            crate::module_tool::freeze::freeze(&request).map_err(CliError::Usage)
        }
        ClientCommand::Project { command: project::ProjectCommand::Init { name, output_dir, default }, .. } => {
            project_init::init(&output_dir, &name, default).map(|_| ())
        }
        ClientCommand::Project { connection, command } => match context(&connection, options) {
            Ok(ctx) => project::run(command, &ctx).await,
            Err(e) => Err(e),
        },
        ClientCommand::Environment { connection, command } => match context(&connection, options) {
            Ok(ctx) => environment::run(command, &ctx).await,
            Err(e) => Err(e),
        },
        ClientCommand::Compile(args) => compiles::run(args, options).await,
        ClientCommand::Export(args) => compile::run_export(*args, options).await,
        ClientCommand::Deploy(args) => deploy::run(args, verbose > 0).await,
        ClientCommand::Version { scope, command } => match scoped(&scope, options).await {
            Ok((ctx, env)) => version::run(command, &ctx, env).await,
            Err(e) => Err(e),
        },
        ClientCommand::Resource { scope, command } => match scoped(&scope, options).await {
            Ok((ctx, env)) => resource::run(command, &ctx, env).await,
            Err(e) => Err(e),
        },
        ClientCommand::Agent { scope, process, command } => match scoped(&scope, options).await {
            Ok((ctx, env)) => match command {
                Some(command) => agent::run(command, &ctx, env).await,
                None => {
                    let base = process.server.clone().unwrap_or_else(|| ctx.client.base().to_string());
                    let token = ctx.client.token().map(str::to_string);
                    agent_process::run(base, env, process, token, options).await
                }
            },
            Err(e) => Err(e),
        },
        ClientCommand::Monitor { scope, follow } => match scoped(&scope, options).await {
            Ok((ctx, env)) => agent::monitor(&ctx, env, follow).await,
            Err(e) => Err(e),
        },
        ClientCommand::Dryrun { scope, command } => match scoped(&scope, options).await {
            Ok((ctx, env)) => dryrun::run(command, &ctx, env).await,
            Err(e) => Err(e),
        },
        ClientCommand::User { connection, args } => match context(&connection, options) {
            Ok(ctx) => user::run(args, &ctx, options).await,
            Err(e) => Err(e),
        },
        ClientCommand::Token { command: token::TokenCommand::Bootstrap { expire, database_url }, .. } => {
            token::bootstrap(expire, database_url, options).await
        }
        ClientCommand::Token { connection, command } => match context(&connection, options) {
            Ok(ctx) => token::run(command, &ctx).await,
            Err(e) => Err(e),
        },
        ClientCommand::Param { scope, command } => match scoped(&scope, options).await {
            Ok((ctx, env)) => param::run(command, &ctx, env).await,
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Compile(diagnostics)) => {
            eprintln!("{}", compile::report(&diagnostics));
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(match e {
                CliError::Client(ClientError::Api { .. }) | CliError::Compile(_) | CliError::Deploy(_) => 1,
                CliError::Client(_) => 3,
                CliError::Usage(_) | CliError::Io(_) => 2,
            })
        }
    }
}

/// The context and environment id of an environment-scoped command.
async fn scoped(scope: &Scope, options: &Options) -> Result<(Context, uuid::Uuid), CliError> {
    let ctx = context(&scope.connection, options)?;
    let key = scope
        .environment
        .clone()
        .or_else(|| options.get("config", "environment").map(str::to_string))
        .or_else(|| dot_inmanta().and_then(|d| d.get("config", "environment").map(str::to_string)))
        .ok_or_else(|| {
            CliError::Usage("no environment: pass -e ENV or run `inmanta environment save ENV` first".into())
        })?;
    let env = match uuid::Uuid::parse_str(&key) {
        Ok(id) => id,
        Err(_) => environment::find(&ctx, &key).await?.id,
    };
    Ok((ctx, env))
}

/// Percent-encodes one URL path segment or query value (resource ids hold `/`, `[`, `,`, `=`).
pub use api::url::encode as encode_segment;

fn context(connection: &Connection, options: &Options) -> Result<Context, CliError> {
    let dotfile = dot_inmanta();
    let setting = |key: &str| {
        options
            .get("cmdline_rest_transport", key)
            .map(str::to_string)
            .or_else(|| dotfile.as_ref().and_then(|d| d.get("cmdline_rest_transport", key).map(str::to_string)))
    };
    let host = connection.host.clone().or_else(|| setting("host")).unwrap_or_else(|| "127.0.0.1".into());
    let port = connection.port.map(|p| p.to_string()).or_else(|| setting("port")).unwrap_or_else(|| "8888".into());
    let token = connection.token.clone().or_else(|| setting("token"));
    let scheme = if setting("ssl").is_some_and(|v| is_true(&v)) { "https" } else { "http" };
    let ca_file = setting("ssl-ca-cert-file").map(std::path::PathBuf::from);
    let client = Client::new(format!("{scheme}://{host}:{port}"))
        .with_token(token)
        .with_ca_file(ca_file.as_deref())
        .map_err(|e| CliError::Usage(format!("[cmdline_rest_transport] {e}")))?;
    Ok(Context { client, json: connection.json })
}

/// The server's configuration, with `database_url` in place of its own when given, and its
/// database opened: for the commands that work on the database itself (`user`, `token
/// bootstrap`).
async fn open_server_database(
    options: &Options,
    database_url: Option<&str>,
) -> Result<(crate::config::ServerConfig, orchestrator::Orchestrator), CliError> {
    let mut options = options.clone();
    if let Some(url) = database_url {
        options.set("database", "url", url);
    }
    let config = crate::config::ServerConfig::from_options(&options).map_err(|e| CliError::Usage(format!("{e:#}")))?;
    let o = orchestrator::Orchestrator::open(&config.storage.database_url)
        .await
        .map_err(|e| CliError::Usage(format!("cannot open the database {}: {e}", config.storage.database_display())))?;
    Ok((config, o))
}

/// A boolean option's value as Inmanta's configuration reads it.
pub fn is_true(value: &str) -> bool {
    matches!(value.to_ascii_lowercase().as_str(), "true" | "yes" | "on" | "1")
}

/// The project's `.inmanta` file in the current directory, if there is one.
pub fn dot_inmanta() -> Option<Options> {
    let path = std::path::Path::new(".inmanta");
    path.exists().then(|| Options::load(Some(path)).ok()).flatten()
}
