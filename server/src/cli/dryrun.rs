//! `inmanta dryrun create|list|show`: what a version would change, without changing anything.

use std::time::Duration;

use clap::Subcommand;
use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;

use super::version::text;
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
            let id: Uuid =
                ctx.client.data(Method::POST, &format!("/api/v2/dryrun/{version}"), Some(env), None::<&()>).await?;
            if no_wait {
                println!("{id}");
                return Ok(());
            }
            let path = format!("/api/v2/dryrun/{version}/{id}");
            loop {
                let report: Value = ctx.client.data(Method::GET, &path, Some(env), None::<&()>).await?;
                if report["summary"]["todo"].as_i64() == Some(0) {
                    return print_report(ctx, &report);
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        DryrunCommand::List { version } => {
            let runs: Vec<Value> =
                ctx.client.data(Method::GET, &format!("/api/v2/dryrun/{version}"), Some(env), None::<&()>).await?;
            if ctx.json {
                output::json(&runs);
                return Ok(());
            }
            let rows: Vec<Vec<String>> = runs
                .iter()
                .map(|r| vec![text(&r["id"]), text(&r["date"]), text(&r["total"]), text(&r["todo"])])
                .collect();
            output::table(&["Id", "Date", "Resources", "Todo"], &rows);
        }
        DryrunCommand::Show { version, id } => {
            let path = format!("/api/v2/dryrun/{version}/{id}");
            let report: Value = ctx.client.data(Method::GET, &path, Some(env), None::<&()>).await?;
            print_report(ctx, &report)?;
        }
    }
    Ok(())
}

fn print_report(ctx: &Context, report: &Value) -> Result<(), CliError> {
    if ctx.json {
        output::json(report);
        return Ok(());
    }
    for diff in report["diff"].as_array().into_iter().flatten() {
        println!("{} {}", text(&diff["status"]), text(&diff["resource_id"]));
        if let Some(attributes) = diff["attributes"].as_object() {
            for (name, change) in attributes {
                if name == "content" {
                    // File contents: a unified diff reads better than two strings.
                    let (from, to) = (text(&change["from_value_compare"]), text(&change["to_value_compare"]));
                    let unified =
                        similar::TextDiff::from_lines(&from, &to).unified_diff().context_radius(3).to_string();
                    for line in unified.lines() {
                        println!("      {line}");
                    }
                } else {
                    println!("    {name}: {} -> {}", change["from_value"], change["to_value"]);
                }
            }
        }
    }
    Ok(())
}
