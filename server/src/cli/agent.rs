//! `inmanta agent list|pause|unpause` and `inmanta monitor` (a live view of a deploy).

use std::io::Write;
use std::time::Duration;

use clap::Subcommand;
use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;

use super::version::text;
use super::{CliError, Context, output};

#[derive(Subcommand)]
pub enum AgentCommand {
    /// The agents of the environment with their state.
    List,
    /// Stop an agent (or all of them) from taking new work; running work finishes.
    Pause {
        #[arg(long, required_unless_present = "all")]
        agent: Option<String>,
        #[arg(long, conflicts_with = "agent")]
        all: bool,
    },
    /// Let a paused agent (or all of them) work again.
    Unpause {
        #[arg(long, required_unless_present = "all")]
        agent: Option<String>,
        #[arg(long, conflicts_with = "agent")]
        all: bool,
    },
}

pub async fn run(command: AgentCommand, ctx: &Context, env: Uuid) -> Result<(), CliError> {
    let (action, agent, all) = match command {
        AgentCommand::List => {
            let agents: Vec<Value> = super::version::all_pages(ctx, env, "/api/v2/agents").await?;
            if ctx.json {
                output::json(&agents);
                return Ok(());
            }
            let rows: Vec<Vec<String>> =
                agents.iter().map(|a| vec![text(&a["name"]), text(&a["status"]), text(&a["paused"])]).collect();
            output::table(&["Agent", "Status", "Paused"], &rows);
            return Ok(());
        }
        AgentCommand::Pause { agent, all } => ("pause", agent, all),
        AgentCommand::Unpause { agent, all } => ("unpause", agent, all),
    };
    let path = match (agent, all) {
        (Some(name), false) => format!("/api/v2/agent/{}/{action}", super::encode_segment(&name)),
        _ => format!("/api/v2/agents/{action}"),
    };
    ctx.client.call(Method::POST, &path, Some(env), None::<&()>).await?;
    println!("{action}d");
    Ok(())
}

/// Follows the deploy of the environment: a bar per state until nothing is waiting or
/// deploying (or forever with `follow`).
pub async fn monitor(ctx: &Context, env: Uuid, follow: bool) -> Result<(), CliError> {
    let interactive = std::io::IsTerminal::is_terminal(&std::io::stdout());
    loop {
        let page = ctx
            .client
            .call(Method::GET, "/api/v2/resource?limit=1&deploy_summary=true", Some(env), None::<&()>)
            .await?;
        let summary = &page["metadata"]["deploy_summary"];
        let total = summary["total"].as_u64().unwrap_or(0);
        let count = |state: &str| summary["by_state"][state].as_u64().unwrap_or(0);
        let (deployed, failed, pending) =
            (count("deployed"), count("failed") + count("unavailable"), count("available") + count("deploying"));
        let skipped = count("skipped") + count("skipped_for_undefined") + count("undefined");
        let width = 40u64;
        let bar = |n: u64| (n * width).checked_div(total).unwrap_or(0) as usize;
        let line = format!(
            "[{}{}{}{}] {deployed}/{total} deployed, {failed} failed, {skipped} skipped, {pending} in progress",
            "#".repeat(bar(deployed)),
            "!".repeat(bar(failed)),
            "-".repeat(bar(skipped)),
            " ".repeat((width as usize).saturating_sub(bar(deployed) + bar(failed) + bar(skipped))),
        );
        if interactive {
            print!("\r{line}");
            let _ = std::io::stdout().flush();
        }
        if pending == 0 && !follow {
            if interactive {
                println!();
            } else {
                println!("{line}");
            }
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
