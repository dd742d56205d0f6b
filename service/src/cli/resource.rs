//! `inmanta resource list|show|history|logs`: resources of the latest released version.

use api::client::ListQuery;
use clap::Subcommand;
use uuid::Uuid;

use super::{CliError, Context, output};

#[derive(Subcommand)]
pub enum ResourceCommand {
    /// List resources with their status (the latest released version plus orphans).
    List {
        /// Only this status (e.g. failed, deployed, available; !orphaned excludes).
        #[arg(long)]
        status: Option<String>,
        /// Only agents whose name contains this.
        #[arg(long)]
        agent: Option<String>,
        /// Only resource types that contain this.
        #[arg(long = "type")]
        resource_type: Option<String>,
    },
    /// Show one resource: attributes, status and the status of what it requires.
    Show { resource_id: String },
    /// The distinct desired states the resource has had.
    History { resource_id: String },
    /// Log lines of the resource's actions, newest first.
    Logs {
        resource_id: String,
        /// Minimal level (DEBUG, INFO, WARNING, ERROR).
        #[arg(long)]
        level: Option<String>,
    },
}

pub async fn run(command: ResourceCommand, ctx: &Context, env: Uuid) -> Result<(), CliError> {
    match command {
        ResourceCommand::List { status, agent, resource_type } => {
            let mut query = ListQuery::new().sort("resource_id.asc");
            for (key, value) in [("status", status), ("agent", agent), ("resource_type", resource_type)] {
                if let Some(value) = value {
                    query = query.filter(key, value);
                }
            }
            let resources = ctx.client.follow(ctx.client.resources(env, &query).await?, Some(env)).await?;
            output::list(ctx.json, &resources, &["Resource", "Status"], |r| {
                vec![r.resource_id.to_string(), r.status.as_str().to_string()]
            });
        }
        ResourceCommand::Show { resource_id } => {
            let details = ctx.client.resource(env, &resource_id).await?;
            if ctx.json {
                output::json(&details);
                return Ok(());
            }
            output::fields(&[
                ("resource", details.resource_id.to_string()),
                ("status", details.status.as_str().to_string()),
                ("last deploy", details.last_deploy.map(|t| t.to_string()).unwrap_or_default()),
                ("first generated", details.first_generated_time.to_string()),
            ]);
            println!("\nattributes:");
            // an attribute filled from a reference at deploy shows the reference, not `null`
            let referenced = api::references::referenced_attributes(&details.attributes);
            for (name, value) in &details.attributes {
                let shown = api::references::shown_value(value, referenced.get(name), |v| v.to_string());
                println!("  {name} = {shown}");
            }
            if !details.requires_status.is_empty() {
                println!("\nrequires:");
                for (rid, status) in &details.requires_status {
                    println!("  {rid}: {}", status.as_str());
                }
            }
        }
        ResourceCommand::History { resource_id } => {
            let page = ctx.client.resource_history(env, &resource_id, &ListQuery::new()).await?;
            let history = ctx.client.follow(page, Some(env)).await?;
            output::list(ctx.json, &history, &["Date", "Attribute hash"], |h| {
                vec![h.date.to_string(), h.attribute_hash.clone()]
            });
        }
        ResourceCommand::Logs { resource_id, level } => {
            let query = level.map_or_else(ListQuery::new, |level| ListQuery::new().filter("minimal_log_level", level));
            let page = ctx.client.resource_logs(env, &resource_id, &query).await?;
            let logs = ctx.client.follow(page, Some(env)).await?;
            if ctx.json {
                output::json(&logs);
                return Ok(());
            }
            let rows: Vec<Vec<String>> = logs
                .iter()
                .map(|l| vec![l.timestamp.to_string(), l.action.clone(), l.level.clone(), l.msg.clone()])
                .collect();
            output::table(&["Time", "Action", "Level", "Message"], &rows);
        }
    }
    Ok(())
}
