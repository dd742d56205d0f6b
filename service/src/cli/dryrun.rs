//! `inmanta dryrun create|list|show`: what a version would change, without changing anything.

use std::time::Duration;

use api::version::DryRunReport;
use clap::Subcommand;
use uuid::Uuid;

use super::{CliError, Context, output};

#[derive(Subcommand)]
pub enum DryrunCommand {
    /// Start a dry run of a version, wait for it and print the report.
    Create {
        version: i64,
        /// Print the report id and return at once.
        #[arg(long)]
        no_wait: bool,
    },
    /// The dry runs of a version, newest first.
    List { version: i64 },
    /// One report: every resource with what would change.
    Show { version: i64, id: Uuid },
}

pub async fn run(command: DryrunCommand, ctx: &Context, env: Uuid) -> Result<(), CliError> {
    match command {
        DryrunCommand::Create { version, no_wait } => {
            let id = ctx.client.dry_run(env, version).await?;
            if no_wait {
                println!("{id}");
                return Ok(());
            }
            loop {
                let report = ctx.client.dry_run_report(env, version, id).await?;
                if report.summary.todo == 0 {
                    return print_report(ctx, &report);
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        DryrunCommand::List { version } => {
            let runs = ctx.client.dry_runs(env, version).await?;
            output::list(ctx.json, &runs, &["Id", "Date", "Resources", "Todo"], |r| {
                vec![
                    r.id.to_string(),
                    r.date.map(|t| t.to_string()).unwrap_or_default(),
                    r.total.to_string(),
                    r.todo.to_string(),
                ]
            });
        }
        DryrunCommand::Show { version, id } => {
            let report = ctx.client.dry_run_report(env, version, id).await?;
            print_report(ctx, &report)?;
        }
    }
    Ok(())
}

fn print_report(ctx: &Context, report: &DryRunReport) -> Result<(), CliError> {
    if ctx.json {
        output::json(report);
        return Ok(());
    }
    for diff in &report.diff {
        println!("{} {}", diff.status.as_str(), diff.resource_id);
        for (name, change) in &diff.attributes {
            if name == "content" {
                // File contents: a unified diff reads better than two strings.
                let (from, to) = (&change.from_value_compare, &change.to_value_compare);
                let unified = similar::TextDiff::from_lines(from, to).unified_diff().context_radius(3).to_string();
                for line in unified.lines() {
                    println!("      {line}");
                }
            } else {
                let (from, to) =
                    (change.from_value.clone().unwrap_or_default(), change.to_value.clone().unwrap_or_default());
                println!("    {name}: {from} -> {to}");
            }
        }
    }
    Ok(())
}
