//! `inmanta compile` and `inmanta export`: compile the project in a directory; export writes the
//! resources to a JSON file (`-j`) or pushes them to a server as a new version.
//!
//! Pushing ([`super::export`]) uploads only the files the server lacks (one batched stat, then
//! batches of files; the handler executables that modules ship travel the same way), then stores
//! the version (`put_version`, or `put_partial` with `--partial`) and with `-d` releases it. The
//! server side of `inmanta export` and of the server's own compiles is the same.

use std::path::PathBuf;
use std::time::Instant;

use api::client::{Client, ClientError};
use clap::Args;
use compiler::{CompileOptions, CompileOutput, Diagnostics};
use reqwest::StatusCode;
use uuid::Uuid;

use super::export::{Destination, Push, push_export};
use super::{CliError, dot_inmanta};
use crate::config::Options;

#[derive(Args, Clone)]
pub struct CompileArgs {
    /// The main file of the model, relative to the project directory.
    #[arg(short = 'f', long = "file", default_value = "main.cf")]
    main: PathBuf,
    /// The project directory (with project.yml).
    #[arg(long, default_value = ".")]
    pub(super) project: PathBuf,
    /// Write the compile errors as Inmanta's compile-data JSON.
    #[arg(long = "export-compile-data")]
    export_compile_data: bool,
    /// Where --export-compile-data writes.
    #[arg(long = "export-compile-data-file", default_value = "compile_data.json")]
    export_compile_data_file: PathBuf,
    /// Show each error's exception type, the stage of the compile that raised it and its full
    /// location before the errors themselves (Inmanta shows its compiler's Python stack trace).
    #[arg(short = 'X', long = "extended-errors")]
    extended_errors: bool,
    /// The Python interpreter whose environment holds the project's modules ([compiler] python,
    /// INMANTA_COMPILER_PYTHON); default: the project's .env.
    #[arg(skip)]
    pub(super) python: Option<PathBuf>,
    /// Keep every instance for `export -j --json-instances`.
    #[arg(skip)]
    pub(super) instance_dump: bool,
    /// The compiler's limits from `[compiler] max-steps`, `max-instances`, `max-depth`, `max-memory`.
    #[arg(skip)]
    pub(super) limits: Vec<(String, String)>,
    /// The environment the compile is for, when it is known before compiling (an export to a
    /// server): what `std::environment()` returns and fact references record.
    #[arg(skip)]
    pub(super) environment: Option<Uuid>,
}

impl CompileArgs {
    /// Takes the `[compiler]` settings of the configuration: the Python interpreter and the limits.
    pub(super) fn configure(&mut self, options: &Options) {
        self.python = options.get("compiler", "python").map(PathBuf::from);
        self.limits = CompileOptions::LIMIT_KEYS
            .into_iter()
            .filter_map(|k| options.get("compiler", k).map(|v| (k.to_string(), v.to_string())))
            .collect();
    }
}

#[derive(Args, Clone)]
pub struct ExportArgs {
    #[command(flatten)]
    compile: CompileArgs,
    /// Environment id or name ([config] environment of .inmanta).
    #[arg(short = 'e', long)]
    environment: Option<String>,
    /// Server host ([compiler_rest_transport] host).
    #[arg(long = "server_address", alias = "server-address")]
    server_address: Option<String>,
    /// Server port ([compiler_rest_transport] port).
    #[arg(long = "server_port", alias = "server-port")]
    server_port: Option<u16>,
    /// Bearer token ([compiler_rest_transport] token).
    #[arg(long)]
    token: Option<String>,
    /// Use https ([compiler_rest_transport] ssl).
    #[arg(long)]
    ssl: bool,
    /// Release the new version right away.
    #[arg(short = 'd', long = "deploy")]
    deploy: bool,
    /// Write the dependency graph of the resources to dependencies.dot (and dependencies.svg when
    /// Graphviz is installed).
    #[arg(short = 'g')]
    depgraph: bool,
    /// Write the resources to this file instead of sending them to a server.
    #[arg(short = 'j', long = "json")]
    json: Option<PathBuf>,
    /// With -j: also write the file store (each file the resources refer to, named by its sha1
    /// hash) into this directory, for tools that run the handlers (pytest-inmanta's fixture).
    #[arg(long = "json-files", requires = "json", hide = true)]
    json_files: Option<PathBuf>,
    /// With -j: also write every instance of the model (entity, ancestors, attributes) to this
    /// file, for pytest-inmanta's `get_instances`.
    #[arg(long = "json-instances", requires = "json", hide = true)]
    json_instances: Option<PathBuf>,
    /// Export only the resource sets of this model (put_partial).
    #[arg(long)]
    partial: bool,
    /// Remove this resource set (with --partial); may repeat.
    #[arg(long = "delete-resource-set")]
    delete_resource_set: Vec<String>,
    /// With --partial: replace the handler code (shipped handlers, module versions) of the base
    /// version.
    #[arg(long = "allow-handler-code-update")]
    allow_handler_code_update: bool,
    /// Message recorded with the version.
    #[arg(short = 'm', long)]
    message: Option<String>,
    /// The server-side compile this export serves (the server passes it), recorded with the
    /// version so that a compile whose server died after the export is not run twice.
    #[arg(long = "compile-id", hide = true)]
    compile_id: Option<Uuid>,
}

/// Runs the compiler on a thread of its own (it is synchronous and CPU-bound). `exits_after`:
/// the command ends with this compile's output written, so the model is not freed
/// ([`CompileOptions::process_exits_after`]).
pub(super) async fn compile(args: &CompileArgs, exits_after: bool) -> Result<CompileOutput, CliError> {
    let project = args.project.clone();
    let mut options = CompileOptions {
        main_file: Some(args.main.clone()),
        python: args.python.clone(),
        root_variables: false,
        instance_dump: args.instance_dump,
        process_exits_after: exits_after,
        ..Default::default()
    };
    options
        .apply_limits(|k| args.limits.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
        .map_err(CliError::Usage)?;
    if let Some(env) = args.environment {
        options.plugin_inputs.environment = env.to_string();
    }
    let started = Instant::now();
    tracing::info!(project = %project.display(), main = %args.main.display(), "compiling");
    let result = tokio::task::spawn_blocking(move || compiler::compile_project_with(&project, &options))
        .await
        .map_err(|e| CliError::Usage(format!("the compiler crashed: {e}")))?;
    match result {
        Ok(output) => {
            for module in &output.modules {
                tracing::info!(%module, "module used");
            }
            for warning in &output.warnings {
                eprintln!("{warning}");
            }
            for line in &output.printed {
                println!("{line}");
            }
            if args.export_compile_data {
                write_compile_data(args, &api::CompileData::default())?;
            }
            tracing::info!(
                resources = output.resources.len(),
                elapsed_ms = started.elapsed().as_millis() as u64,
                "compiled"
            );
            Ok(output)
        }
        Err(diagnostics) => {
            if args.extended_errors {
                eprint!("{}", extended_errors(&diagnostics));
            }
            if args.export_compile_data {
                write_compile_data(args, &diagnostics.to_compile_data())?;
            }
            Err(CliError::Compile(diagnostics))
        }
    }
}

fn write_compile_data(args: &CompileArgs, data: &api::CompileData) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(data).unwrap_or_default();
    std::fs::write(&args.export_compile_data_file, text)
        .map_err(|e| CliError::Usage(format!("cannot write {}: {e}", args.export_compile_data_file.display())))
}

pub async fn run_compile(args: CompileArgs) -> Result<(), CliError> {
    let output = compile(&args, true).await?;
    eprintln!("Compile succeeded: {} resources", output.resources.len());
    // the process ends here: the operating system takes the memory back faster than freeing
    let _kept = std::mem::ManuallyDrop::new(output);
    Ok(())
}

pub async fn run_export(mut args: ExportArgs, options: &Options) -> Result<(), CliError> {
    args.compile.configure(options);
    if !args.delete_resource_set.is_empty() && !args.partial {
        return Err(CliError::Usage("--delete-resource-set only works with --partial".into()));
    }
    if args.allow_handler_code_update && !args.partial {
        return Err(CliError::Usage("--allow-handler-code-update only works with --partial".into()));
    }
    if let Some(path) = &args.json {
        args.compile.instance_dump = args.json_instances.is_some();
        let output = compile(&args.compile, true).await?;
        if args.depgraph {
            write_graph(&output, 0)?;
        }
        output.write_export_json(path).map_err(|e| CliError::Usage(format!("cannot write {}: {e}", path.display())))?;
        if let Some(dir) = &args.json_files {
            std::fs::create_dir_all(dir)
                .map_err(|e| CliError::Usage(format!("cannot write {}: {e}", dir.display())))?;
            for (hash, content) in &output.files {
                std::fs::write(dir.join(hash), content)
                    .map_err(|e| CliError::Usage(format!("cannot write {}: {e}", dir.display())))?;
            }
        }
        if let (Some(file), Some(dump)) = (&args.json_instances, &output.instance_dump) {
            std::fs::write(file, dump.to_string())
                .map_err(|e| CliError::Usage(format!("cannot write {}: {e}", file.display())))?;
        }
        eprintln!("Wrote {} resources to {}", output.resources.len(), path.display());
        // the process ends here: the operating system takes the memory back faster than freeing
        let _kept = std::mem::ManuallyDrop::new(output);
        return Ok(());
    }
    // The environment is known before compiling: the model sees it (`std::environment()`, the
    // environment a fact reference reads its fact in), as in Inmanta.
    let target = Target::resolve(&args, options)?;
    let env = match Uuid::parse_str(&target.environment) {
        Ok(id) => id,
        Err(_) => {
            let ctx = super::Context { client: target.client.clone(), json: false };
            super::environment::find(&ctx, &target.environment).await.map_err(|e| target.explain(e))?.id
        }
    };
    args.compile.environment = Some(env);
    let output = compile(&args.compile, false).await?;
    // Inmanta writes the graph with the version's ids; the version is known once it is stored.
    let graph = args.depgraph.then(|| output.resources.clone());
    let push = Push {
        partial: args.partial,
        removed_resource_sets: args.delete_resource_set.clone(),
        allow_handler_code_update: args.allow_handler_code_update,
        release: args.deploy,
        message: args.message.clone().unwrap_or_else(|| "Manual compile on the CLI".into()),
        compile_id: args.compile_id,
    };
    let version =
        push_export(Destination::Api(&target.client), env, output, &push).await.map_err(|e| target.explain(e))?;
    if let Some(resources) = graph {
        // A partial export's resources keep version 0 in their ids, as in Inmanta.
        let graph_version = if args.partial { 0 } else { version as u64 };
        report_graph(&super::graph::write(std::path::Path::new(""), &resources, graph_version)?);
    }
    println!("{version}");
    Ok(())
}

/// Where an export goes.
struct Target {
    client: Client,
    environment: String,
    /// Which setting gave the token, for the message of a refusal.
    token_source: Option<&'static str>,
}

impl Target {
    /// Flags first, then `[compiler_rest_transport]` and `[config]` of `-c FILE`, then of `.inmanta`.
    fn resolve(args: &ExportArgs, options: &Options) -> Result<Target, CliError> {
        let dotfile = dot_inmanta();
        let setting = |section: &str, key: &str| {
            options
                .get(section, key)
                .map(str::to_string)
                .or_else(|| dotfile.as_ref().and_then(|d| d.get(section, key).map(str::to_string)))
        };
        let environment = args.environment.clone().or_else(|| setting("config", "environment")).ok_or_else(|| {
            CliError::Usage(
                "no environment: pass -e ENV or run `inmanta environment save ENV` to write it into .inmanta".into(),
            )
        })?;
        let host = args.server_address.clone().or_else(|| setting("compiler_rest_transport", "host"));
        let port = args.server_port.map(|p| p.to_string()).or_else(|| setting("compiler_rest_transport", "port"));
        let ssl = args.ssl || setting("compiler_rest_transport", "ssl").is_some_and(|v| super::is_true(&v));
        let ca_file = setting("compiler_rest_transport", "ssl-ca-cert-file").map(PathBuf::from);
        // Inmanta's exporter reads only [compiler_rest_transport]; a user who logged in with
        // `inmanta user login` has the CLI's token, which every other command reads: it comes next.
        let (token, token_source) = match args.token.clone() {
            Some(token) => (Some(token), Some("--token")),
            None => match setting("compiler_rest_transport", "token") {
                Some(token) => (Some(token), Some("[compiler_rest_transport] token")),
                None => match setting("cmdline_rest_transport", "token") {
                    Some(token) => (Some(token), Some("[cmdline_rest_transport] token")),
                    None => (None, None),
                },
            },
        };
        let scheme = if ssl { "https" } else { "http" };
        let base = format!(
            "{scheme}://{}:{}",
            host.unwrap_or_else(|| "127.0.0.1".into()),
            port.unwrap_or_else(|| "8888".into())
        );
        let client = Client::new(base)
            .with_token(token)
            .with_ca_file(ca_file.as_deref())
            .map_err(|e| CliError::Usage(format!("[compiler_rest_transport] {e}")))?;
        Ok(Target { client, environment, token_source })
    }

    /// A refusal for want of (usable) credentials says which settings were read and what was found, so
    /// the user knows what to set.
    fn explain(&self, error: CliError) -> CliError {
        match error {
            // 401: no token; 403: a token the server cannot use (Inmanta answers a malformed one so).
            CliError::Client(ClientError::Api { status, message })
                if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN =>
            {
                let found = match self.token_source {
                    Some(source) => format!("the token of {source} was refused"),
                    None => "none holds a token".to_string(),
                };
                CliError::Client(ClientError::Api {
                    status,
                    message: format!(
                        "{message}; inmanta export looked for a token in --token, [compiler_rest_transport] token \
                         (INMANTA_COMPILER_REST_TRANSPORT_TOKEN) and [cmdline_rest_transport] token \
                         (INMANTA_CMDLINE_REST_TRANSPORT_TOKEN, what `inmanta user login` prints) of -c FILE and \
                         .inmanta: {found}"
                    ),
                })
            }
            other => other,
        }
    }
}

fn write_graph(output: &CompileOutput, version: u64) -> Result<(), CliError> {
    report_graph(&super::graph::write(std::path::Path::new(""), &output.resources, version)?);
    Ok(())
}

fn report_graph(files: &[PathBuf]) {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    eprintln!("Dependency graph written to {}", names.join(" and "));
}

/// What `-X` adds before the errors, under Inmanta's banner: per error its exception's
/// qualified type, message and location, the stage that raised it and its notes.
pub fn extended_errors(diagnostics: &Diagnostics) -> String {
    let title = " EXCEPTION TRACE ";
    let side = "=".repeat((79 - title.len()) / 2);
    let mut out = format!("{side}{title}{side}\n");
    for d in diagnostics.errors() {
        let at =
            d.location.as_ref().map(|l| format!(" (reported at {}:{}:{})", l.file, l.line, l.col)).unwrap_or_default();
        out.push_str(&format!("{}: {}{at}\n", d.inmanta_type(), d.message));
        let stage = match (d.phase, d.origin) {
            (compiler::Phase::Export, _) => "export (after evaluation)",
            (_, compiler::Origin::FinalCheck) => "the final checks of the evaluation",
            (_, compiler::Origin::VariableLookup) => "evaluation (a variable lookup)",
            (_, compiler::Origin::Evaluation) => "evaluation",
        };
        let category = serde_json::to_value(d.category()).ok().and_then(|v| v.as_str().map(str::to_string));
        out.push_str(&format!("  raised in: {stage}; category: {}\n", category.unwrap_or_default()));
        for note in &d.notes {
            out.push_str(&format!("  note: {note}\n"));
        }
        out.push('\n');
    }
    out
}

/// What a failed compile prints: every error, rustc-style.
pub fn report(diagnostics: &Diagnostics) -> String {
    diagnostics.to_string()
}
