//! Client commands, named like Inmanta's `inmanta-cli`. They talk to a server over the REST API;
//! the server comes from `--host/--port`, else `[cmdline_rest_transport]` of the config file or
//! of `.inmanta` in the current directory, else 127.0.0.1:8888.
//!
//! Exit codes: 0 success, 1 the server refused (the message says why), 2 bad usage or config,
//! 3 the server could not be reached.

mod environment;
mod output;
mod project;

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
    /// Manage environments and their settings.
    #[command(alias = "env")]
    Environment {
        #[command(flatten)]
        connection: Connection,
        #[command(subcommand)]
        command: environment::EnvironmentCommand,
    },
}

#[derive(Args, Clone)]
pub struct Connection {
    /// Server host ([cmdline_rest_transport] host).
    #[arg(long, global = true)]
    host: Option<String>,
    /// Server port ([cmdline_rest_transport] port).
    #[arg(long, global = true)]
    port: Option<u16>,
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
}

pub async fn run(command: ClientCommand, options: &Options) -> ExitCode {
    let (connection, result) = match command {
        ClientCommand::Project { connection, command } => {
            let ctx = context(&connection, options);
            (connection, project::run(command, &ctx).await)
        }
        ClientCommand::Environment { connection, command } => {
            let ctx = context(&connection, options);
            (connection, environment::run(command, &ctx).await)
        }
    };
    let _ = connection;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(match e {
                CliError::Client(ClientError::Api { .. }) => 1,
                CliError::Client(_) => 3,
                CliError::Usage(_) | CliError::Io(_) => 2,
            })
        }
    }
}

fn context(connection: &Connection, options: &Options) -> Context {
    let dotfile = dot_inmanta();
    let setting = |key: &str| {
        options
            .get("cmdline_rest_transport", key)
            .map(str::to_string)
            .or_else(|| dotfile.as_ref().and_then(|d| d.get("cmdline_rest_transport", key).map(str::to_string)))
    };
    let host = connection.host.clone().or_else(|| setting("host")).unwrap_or_else(|| "127.0.0.1".into());
    let port = connection.port.map(|p| p.to_string()).or_else(|| setting("port")).unwrap_or_else(|| "8888".into());
    Context { client: Client::new(format!("http://{host}:{port}")), json: connection.json }
}

/// The project's `.inmanta` file in the current directory, if there is one.
pub fn dot_inmanta() -> Option<Options> {
    let path = std::path::Path::new(".inmanta");
    path.exists().then(|| Options::load(Some(path)).ok()).flatten()
}
