//! `inmanta agent list|pause|unpause` and `inmanta monitor` (a live view of a deploy).

use api::ResourceState;
use std::time::Duration;

use api::client::ListQuery;
use clap::Subcommand;
use uuid::Uuid;

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
            let agents = ctx.client.follow(ctx.client.agents(env, &ListQuery::new()).await?, Some(env)).await?;
            output::list(ctx.json, &agents, &["Agent", "Status", "Paused"], |a| {
                vec![a.name.clone(), a.status.as_str().to_string(), a.paused.to_string()]
            });
            return Ok(());
        }
        AgentCommand::Pause { agent, all } => ("pause", agent, all),
        AgentCommand::Unpause { agent, all } => ("unpause", agent, all),
    };
    let agent = agent.as_deref().filter(|_| !all);
    if action == "pause" {
        ctx.client.pause_agent(env, agent).await?;
    } else {
        ctx.client.unpause_agent(env, agent).await?;
    }
    println!("{action}d");
    Ok(())
}

/// Follows the deploy of the environment with a progress bar (on a terminal) until nothing is
/// waiting or deploying (or forever with `follow`), then prints the counts.
pub async fn monitor(ctx: &Context, env: Uuid, follow: bool) -> Result<(), CliError> {
    let mut bar: Option<indicatif::ProgressBar> = None;
    loop {
        let summary = ctx.client.deploy_summary(env).await?;
        let total = summary.total;
        let count = |state: ResourceState| summary.by_state.get(&state).copied().unwrap_or(0);
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
                output::json(&summary);
            } else {
                println!("{line}");
            }
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
