//! The `inmanta` binary: server, and the client commands that drive it over the REST API.

// mimalloc instead of glibc's malloc: `perf` on the server under the scale bench put 17 % (first
// deploy) to 28 % (50 clients listing) of its samples in glibc's allocator (`_int_malloc`,
// `malloc_consolidate`, `unlink_chunk`, `free`) across the runtime's threads.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod console;
mod console_assets;
mod log_writer;
mod logging_config;

use service::{cli, config, maintenance, migrate, serve};

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use tracing_subscriber::EnvFilter;

/// The compiler's allocator settings, which mimalloc reads from the environment when the process
/// starts (setting them from inside the process would be too late, and is `unsafe`):
/// - `MIMALLOC_ALLOW_THP=0`: no transparent huge pages (mimalloc v3 asks for them on its arenas).
///   On this kind of VM the kernel's first touch of a 2 MiB page costs far more than of the same
///   memory in 4 KiB pages: release `cfc` example, 100 000 resources, system time 1.8–2.2 s with
///   them, 0.47 s without; 10 000 resources 0.13–0.32 s against 0.03–0.07 s, peak RSS 134 → 114 MB
///   (2 Dec, load 10, alternated runs; issue 45). Large OS pages (`MIMALLOC_ALLOW_LARGE_OS_PAGES`)
///   bought nothing measurable beside it and are no longer asked for;
/// - `MIMALLOC_PURGE_DELAY=-1`: memory freed during the compile (the tokens once parsed, the
///   task queue before the export) stays with the process instead of being handed back to the
///   kernel and faulted in again by the next allocation. `perf`/`time` on the 10 000-resource
///   model: 8 400 page faults with purging, 2 400 without (issue 45); the process ends after the
///   compile, so what it keeps costs no one.
///
/// So `compile` and `export` replace themselves (`exec`, same process id) by the same command with
/// them set; when `exec` fails the compile runs with mimalloc's defaults.
fn restart_with_allocator_settings() {
    use std::os::unix::process::CommandExt;
    const SETTINGS: [(&str, &str); 2] = [("MIMALLOC_ALLOW_THP", "0"), ("MIMALLOC_PURGE_DELAY", "-1")];
    if std::env::var_os(SETTINGS[0].0).is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else { return };
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_else(|| exe.clone().into_os_string());
    let mut command = std::process::Command::new(&exe);
    command.arg0(arg0).args(args);
    for (name, value) in SETTINGS {
        if std::env::var_os(name).is_none() {
            command.env(name, value);
        }
    }
    let error = command.exec();
    tracing::debug!(%error, "cannot restart with the allocator settings; compiling without");
}

#[derive(Parser)]
#[command(name = "inmanta", version = api::VERSION, about = "Infrastructure orchestrator compatible with Inmanta")]
struct Cli {
    /// Configuration file in Inmanta's ini layout.
    #[arg(short = 'c', long = "config", global = true)]
    config: Option<PathBuf>,
    /// More log output (-v info, -vv debug, -vvv trace). RUST_LOG overrides it.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// Log as JSON lines.
    #[arg(long, global = true)]
    log_json: bool,
    /// Inmanta's logging configuration file: YAML in the schema of Python's dictConfig (a
    /// template when it ends in .tmpl). Also `[logging] server`, `[config] logging_config` and
    /// their INMANTA_* variables (docs/configuration.md). -v adds a console handler; RUST_LOG,
    /// --log-json and --log-dir's server.log do not apply then.
    #[arg(long = "logging-config", global = true, value_name = "FILE")]
    logging_config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the orchestrator server with its web console.
    Server(ServerArgs),
    /// Move the projects, environments, settings, parameters and latest released versions (and
    /// with --users the users and roles) of a running Inmanta server into this server's database
    /// (docs/operations.md, "Move over"). The source is only read; a second run changes nothing.
    Migrate(migrate::MigrateArgs),
    #[command(flatten)]
    Client(cli::ClientCommand),
    /// Speak the Language Server Protocol on stdin/stdout, for editors: diagnostics as you type,
    /// definition, references, hover, completion, symbols, rename (docs/editors.md).
    Lsp {
        /// Accepted for editors' configurations that pass it: stdio is the only transport.
        #[arg(long)]
        stdio: bool,
    },
    /// Print the commented configuration file of every option (the package's
    /// /etc/inmanta/inmanta.cfg).
    #[command(hide = true)]
    ConfigTemplate,
    /// Print a shell completion script: `inmanta completions bash > /etc/bash_completion.d/inmanta`
    /// (also zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(clap::Args)]
struct ServerArgs {
    /// Address to listen on ([server] bind-address).
    #[arg(long)]
    bind_address: Option<String>,
    /// Port to listen on ([server] bind-port; 0 picks a free port).
    #[arg(long)]
    bind_port: Option<u16>,
    /// Directory for the server's state, including the default SQLite database ([config] state-dir).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Directory for log files ([config] log-dir); logs go to stderr without it.
    #[arg(long)]
    log_dir: Option<PathBuf>,
    /// Database URL, sqlite://PATH or postgres://USER:PASSWORD@HOST:PORT/NAME ([database] url).
    #[arg(long)]
    database_url: Option<String>,
    /// Directory with the built console site ([web-console] path).
    #[arg(long)]
    console_path: Option<PathBuf>,
    /// Turn authentication off: anyone who can reach the port can do anything. For development
    /// only ([server] auth=false).
    #[arg(long)]
    no_auth: bool,
    /// Say whether database migrations are pending, without applying them, and exit: 0 the
    /// database is current, 1 migrations are pending, 2 it cannot be checked.
    #[arg(long)]
    check: bool,
    #[command(subcommand)]
    action: Option<ServerAction>,
}

/// Maintenance of the server's database (docs/operations.md); without one, the server runs.
#[derive(Subcommand)]
enum ServerAction {
    /// Write a consistent copy of the SQLite database to FILE, also while the server runs
    /// (PostgreSQL: use pg_dump).
    Backup { file: PathBuf },
    /// Replace the SQLite database by the backup FILE; the server must be stopped. The database
    /// it replaces is kept beside it.
    Restore { file: PathBuf },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(cli.command, Command::Client(cli::ClientCommand::Compile(_) | cli::ClientCommand::Export(_))) {
        restart_with_allocator_settings();
    }
    let options = match config::Options::load(cli.config.as_deref()) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        Command::Server(args) => {
            let mut options = options;
            let flags = [
                ("server", "bind-address", args.bind_address.clone()),
                ("server", "bind-port", args.bind_port.map(|p| p.to_string())),
                ("config", "state-dir", args.state_dir.clone().map(|p| p.display().to_string())),
                ("config", "log-dir", args.log_dir.clone().map(|p| p.display().to_string())),
                ("database", "url", args.database_url.clone()),
                ("web-console", "path", args.console_path.clone().map(|p| p.display().to_string())),
                ("server", "auth", args.no_auth.then(|| "false".to_string())),
            ];
            for (section, key, value) in flags {
                if let Some(value) = value {
                    options.set(section, key, &value);
                }
            }
            let config = match config::ServerConfig::from_options(&options) {
                Ok(config) => config,
                Err(e) => {
                    eprintln!("error: {e:#}");
                    return ExitCode::from(2);
                }
            };
            if args.check || args.action.is_some() {
                let _ = init_logging(cli.verbose, cli.log_json);
                return runtime.block_on(async {
                    match (&args.action, args.check) {
                        (Some(_), true) => {
                            eprintln!("error: --check goes alone, not with backup or restore");
                            ExitCode::from(2)
                        }
                        (Some(ServerAction::Backup { file }), false) => maintenance::backup(&config, file).await,
                        (Some(ServerAction::Restore { file }), false) => maintenance::restore(&config, file).await,
                        (None, _) => maintenance::check(&config).await,
                    }
                });
            }
            let logging = LoggingChoice::of(cli.logging_config.as_deref(), &options, Some("server"));
            if options.get("logging", "scheduler").is_some_and(|v| !v.trim().is_empty()) {
                eprintln!(
                    "warning: [logging] scheduler is not read: the scheduler runs inside the server and logs as the \
                     server's logging config says"
                );
            }
            let log = match logging {
                LoggingChoice::Config(source) => configured_logging(&source, cli.verbose),
                LoggingChoice::Flags => {
                    server_logging(cli.verbose.max(1), cli.log_json, config.storage.log_dir.as_deref())
                        .map(|writer| vec![writer])
                }
            };
            let log = match log {
                Ok(log) => log,
                Err(e) => {
                    eprintln!("error: {e:#}");
                    return ExitCode::from(2);
                }
            };
            let code = match runtime.block_on(serve::run(config, console::router)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!("{e:#}");
                    let _ = writeln!(std::io::stderr(), "error: {e:#}");
                    ExitCode::FAILURE
                }
            };
            for writer in &log {
                writer.drain(std::time::Duration::from_secs(2));
            }
            code
        }
        Command::Migrate(args) => {
            let _ = init_logging(cli.verbose, cli.log_json);
            let mut options = options;
            for (section, key, value) in args.overrides() {
                if let Some(value) = value {
                    options.set(section, key, &value);
                }
            }
            match config::ServerConfig::from_options(&options) {
                Ok(config) => runtime.block_on(migrate::run(&config, &args)),
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Client(command) => {
            let component =
                matches!(command, cli::ClientCommand::Compile(_) | cli::ClientCommand::Export(_)).then_some("compiler");
            let log = match LoggingChoice::of(cli.logging_config.as_deref(), &options, component) {
                LoggingChoice::Config(source) => match configured_logging(&source, cli.verbose) {
                    Ok(log) => log,
                    Err(e) => {
                        eprintln!("error: {e:#}");
                        return ExitCode::from(2);
                    }
                },
                LoggingChoice::Flags => {
                    let _ = init_logging(cli.verbose, cli.log_json);
                    Vec::new()
                }
            };
            let code = runtime.block_on(cli::run(command, &options, cli.verbose));
            for writer in &log {
                writer.drain(std::time::Duration::from_secs(2));
            }
            code
        }
        Command::Lsp { .. } => {
            // logs go to stderr: stdout is the protocol's
            let _ = init_logging(cli.verbose, cli.log_json);
            match lsp::run_stdio() {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::ConfigTemplate => {
            print!("{}", config::template());
            ExitCode::SUCCESS
        }
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "inmanta", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
    }
}

/// The running server's log: to `log_dir`'s server.log or stderr, through a [`log_writer::LogWriter`]
/// so that a log that cannot be written never holds up or fails the server (issue 47).
fn server_logging(verbose: u8, json: bool, log_dir: Option<&std::path::Path>) -> anyhow::Result<log_writer::LogWriter> {
    let target: Box<dyn std::io::Write + Send> = match log_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            Box::new(std::fs::OpenOptions::new().create(true).append(true).open(dir.join("server.log"))?)
        }
        None => Box::new(std::io::stderr()),
    };
    let ansi = log_dir.is_none() && colour_on_stderr();
    let writer = log_writer::LogWriter::spawn(target);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter(verbose))
        .with_ansi(ansi)
        .log_internal_errors(false)
        .with_writer(writer.clone());
    let result = if json { builder.json().try_init() } else { builder.try_init() };
    result.map_err(|e| anyhow::anyhow!("cannot set up logging: {e}"))?;
    Ok(writer)
}

/// Whether a logging configuration file decides the log, or the flags do.
enum LoggingChoice {
    Config(logging_config::Source),
    Flags,
}

impl LoggingChoice {
    /// Inmanta's precedence: `--logging-config`, the component's (`server`, `compiler`) options
    /// and variables, then `[config] logging_config`'s.
    fn of(flag: Option<&std::path::Path>, options: &config::Options, component: Option<&str>) -> LoggingChoice {
        let option = |section: &str, key: &str| options.get(section, key).map(str::to_string);
        let env = |name: &str| std::env::var(name).ok();
        match logging_config::Source::find(flag, component, option, env) {
            Some(source) => LoggingChoice::Config(source),
            None => LoggingChoice::Flags,
        }
    }
}

/// The log as a logging configuration file says, with a console handler at `-v`'s level when
/// it is given (Inmanta's `force_cli`); the writers are drained at exit.
fn configured_logging(source: &logging_config::Source, verbose: u8) -> anyhow::Result<Vec<log_writer::LogWriter>> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let yaml = source.read(&Default::default())?;
    let mut config = logging_config::LoggingConfig::parse(&yaml, &source.describe())?;
    if verbose > 0 {
        config.add_console(match verbose {
            1 => tracing::Level::INFO,
            2 => tracing::Level::DEBUG,
            _ => tracing::Level::TRACE,
        });
    }
    let (layer, writers) = config.into_layer()?;
    tracing_subscriber::registry().with(layer).try_init().map_err(|e| anyhow::anyhow!("cannot set up logging: {e}"))?;
    tracing::debug!(source = %source.describe(), "logging as configured");
    Ok(writers)
}

/// Colours only on a terminal and never with NO_COLOR (no-color.org).
fn colour_on_stderr() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stderr()) && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn filter(verbose: u8) -> EnvFilter {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(format!("{level},sqlx=warn,hyper=warn,tower_http=warn")))
}

/// The log of the client and maintenance commands: on stderr, written as it comes.
fn init_logging(verbose: u8, json: bool) -> anyhow::Result<()> {
    let builder = tracing_subscriber::fmt().with_env_filter(filter(verbose)).with_ansi(colour_on_stderr());
    let builder = builder.with_writer(std::io::stderr);
    let result = if json { builder.json().try_init() } else { builder.try_init() };
    result.map_err(|e| anyhow::anyhow!("cannot set up logging: {e}"))
}
