//! `inmanta agent list|pause|unpause` and `inmanta monitor` (a live view of a deploy).

use api::ResourceState;
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

/// Follows the deploy of the environment with a progress bar (on a terminal) until nothing is
/// waiting or deploying (or forever with `follow`), then prints the counts.
pub async fn monitor(ctx: &Context, env: Uuid, follow: bool) -> Result<(), CliError> {
    let mut bar: Option<indicatif::ProgressBar> = None;
    loop {
        let page = ctx
            .client
            .call(Method::GET, "/api/v2/resource?limit=1&deploy_summary=true", Some(env), None::<&()>)
            .await?;
        let summary = &page["metadata"]["deploy_summary"];
        let total = summary["total"].as_u64().unwrap_or(0);
        let count = |state: ResourceState| summary["by_state"][state.as_str()].as_u64().unwrap_or(0);
        let deployed = count(ResourceState::Deployed);
        let failed = count(ResourceState::Failed) + count(ResourceState::Unavailable);
        let pending = count(ResourceState::Available) + count(ResourceState::Deploying);
        let skipped =
            count(ResourceState::Skipped) + count(ResourceState::SkippedForUndefined) + count(ResourceState::Undefined);
        let line = format!("{deployed}/{total} deployed, {failed} failed, {skipped} skipped, {pending} in progress");
        let progress = bar.get_or_insert_with(|| output::progress(total, "done"));
        progress.set_length(total);
        progress.set_position(total - pending);
        progress.set_message(format!("({failed} failed, {skipped} skipped)"));
        if pending == 0 && !follow {
            progress.finish_and_clear();
            if ctx.json {
                output::json(summary);
            } else {
                println!("{line}");
            }
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
