//! `inmanta compile request|list|show`: the server's compiles of an environment. Without a
//! subcommand `inmanta compile` compiles the local project (cli/compile.rs).

use std::time::{Duration, Instant};

use api::client::ListQuery;
use api::compile::{CompileDetails, CompileReport, NotifyChange};
use clap::{Args, Subcommand};
use serde_json::json;
use uuid::Uuid;

use super::{CliError, Context, Scope, output};
use crate::config::Options;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct CompileCommand {
    #[command(subcommand)]
    command: Option<ServerCompileCommand>,
    #[command(flatten)]
    local: super::compile::CompileArgs,
}

#[derive(Subcommand)]
pub enum ServerCompileCommand {
    /// Ask the server to compile the environment from its repository.
    Request {
        #[command(flatten)]
        scope: Scope,
        #[command(flatten)]
        request: RequestArgs,
    },
    /// The environment's compiles, newest first.
    List {
        #[command(flatten)]
        scope: Scope,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// One compile with its stages and errors.
    Show {
        #[command(flatten)]
        scope: Scope,
        /// The compile id.
        id: Uuid,
    },
}

/// How to request a compile (shared with `inmanta environment recompile`).
#[derive(Args, Clone)]
pub struct RequestArgs {
    /// Compile what is checked out, without pulling the repository or updating modules.
    #[arg(long)]
    no_update: bool,
    /// Why, recorded with the compile.
    #[arg(short = 'm', long)]
    message: Option<String>,
    /// Wait until the compile finished and print its outcome (exit code 1 when it failed).
    #[arg(short = 'w', long)]
    wait: bool,
    /// With --wait: give up after this many seconds.
    #[arg(long, default_value_t = 1800)]
    timeout: u64,
}

pub async fn run(command: CompileCommand, options: &Options) -> Result<(), CliError> {
    let Some(command) = command.command else {
        let mut local = command.local;
        local.configure(options);
        return super::compile::run_compile(local).await;
    };
    match command {
        ServerCompileCommand::Request { scope, request: args } => {
            let (ctx, env) = super::scoped(&scope, options).await?;
            request(&ctx, env, &args).await
        }
        ServerCompileCommand::List { scope, limit } => {
            let (ctx, env) = super::scoped(&scope, options).await?;
            let query = ListQuery::new().limit(limit.into()).sort("requested.desc");
            let reports = ctx.client.compile_reports(env, &query).await?.data;
            output::list(ctx.json, &reports, &["ID", "REQUESTED", "STATE", "VERSION", "MESSAGE"], |r| {
                vec![
                    r.id.to_string(),
                    r.times.requested.map(|t| t.to_string()).unwrap_or_default(),
                    state(r).into(),
                    r.version.map(|v| v.to_string()).unwrap_or_default(),
                    r.metadata["message"].as_str().unwrap_or_default().to_string(),
                ]
            });
            Ok(())
        }
        ServerCompileCommand::Show { scope, id } => {
            let (ctx, env) = super::scoped(&scope, options).await?;
            show(&ctx, env, id).await.map(|_| ())
        }
    }
}

fn state(r: &CompileReport) -> &'static str {
    r.status().as_str()
}

/// Requests a compile and, with `--wait`, follows it to the end.
pub async fn request(ctx: &Context, env: Uuid, args: &RequestArgs) -> Result<(), CliError> {
    let body = NotifyChange {
        update: !args.no_update,
        metadata: args.message.as_ref().map(|message| json!({"type": "cli", "message": message})),
        ..Default::default()
    };
    let answer = ctx.client.notify(env, &body).await?;
    for warning in answer.warnings() {
        eprintln!("warning: {warning}");
    }
    let Some(id) = answer.compile_id else {
        return Err(CliError::Usage("the server did not queue a compile".into()));
    };
    if ctx.json && !args.wait {
        output::json(&answer);
    } else if !args.wait {
        println!("{id}");
    }
    if !args.wait {
        return Ok(());
    }
    let deadline = Instant::now() + Duration::from_secs(args.timeout);
    loop {
        let details = ctx.client.compile_report(env, id).await?;
        if details.report.times.completed.is_some() {
            let success = details.report.success == Some(true);
            print_details(ctx, &details);
            return if success { Ok(()) } else { Err(CliError::Usage(format!("compile {id} failed"))) };
        }
        if Instant::now() > deadline {
            return Err(CliError::Usage(format!("compile {id} did not finish within {} s", args.timeout)));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn show(ctx: &Context, env: Uuid, id: Uuid) -> Result<CompileDetails, CliError> {
    let details = ctx.client.compile_report(env, id).await?;
    print_details(ctx, &details);
    Ok(details)
}

fn print_details(ctx: &Context, details: &CompileDetails) {
    if ctx.json {
        output::json(details);
        return;
    }
    let r = &details.report;
    output::fields(&[
        ("id", r.id.to_string()),
        ("state", state(r).into()),
        ("requested", r.times.requested.map(|t| t.to_string()).unwrap_or_default()),
        ("started", r.times.started.map(|t| t.to_string()).unwrap_or_default()),
        ("completed", r.times.completed.map(|t| t.to_string()).unwrap_or_default()),
        ("version", r.version.map(|v| v.to_string()).unwrap_or_default()),
        ("update", r.force_update.to_string()),
        ("message", r.metadata["message"].as_str().unwrap_or_default().to_string()),
    ]);
    for stage in details.reports.iter().flatten() {
        println!();
        let code = stage.returncode.map(|c| c.to_string()).unwrap_or_else(|| "-".into());
        println!("== {} (return code {code})", stage.name);
        if !stage.command.is_empty() {
            println!("$ {}", stage.command);
        }
        for text in [&stage.outstream, &stage.errstream] {
            let text = text.trim_end();
            if !text.is_empty() {
                println!("{text}");
            }
        }
    }
    if let Some(errors) = details.compile_data.as_ref().map(|d| &d.errors)
        && !errors.is_empty()
    {
        println!();
        println!("== Errors");
        for e in errors {
            let place = match &e.location {
                Some(l) => format!("{}:{}:{}: ", l.uri, l.range.start.line + 1, l.range.start.character + 1),
                None => String::new(),
            };
            println!("{place}{}: {}", e.kind.inmanta_type(), e.message);
        }
    }
}
