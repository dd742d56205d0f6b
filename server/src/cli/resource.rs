//! `inmanta resource list|show|history|logs`: resources of the latest released version.

use clap::Subcommand;
use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;

use super::version::{all_pages, text};
use super::{CliError, Context, encode_segment as encode, output};

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
            let mut query = vec!["sort=resource_id.asc".to_string()];
            for (key, value) in [("status", status), ("agent", agent), ("resource_type", resource_type)] {
                if let Some(value) = value {
                    query.push(format!("filter.{key}={}", encode(&value)));
                }
            }
            let resources = all_pages(ctx, env, &format!("/api/v2/resource?{}", query.join("&"))).await?;
            if ctx.json {
                output::json(&resources);
                return Ok(());
            }
            let rows: Vec<Vec<String>> =
                resources.iter().map(|r| vec![text(&r["resource_id"]), text(&r["status"])]).collect();
            output::table(&["Resource", "Status"], &rows);
        }
        ResourceCommand::Show { resource_id } => {
            let path = format!("/api/v2/resource/{}", encode(&resource_id));
            let details: Value = ctx.client.data(Method::GET, &path, Some(env), None::<&()>).await?;
            if ctx.json {
                output::json(&details);
                return Ok(());
            }
            output::fields(&[
                ("resource", text(&details["resource_id"])),
                ("status", text(&details["status"])),
                ("last deploy", text(&details["last_deploy"])),
                ("first generated", text(&details["first_generated_time"])),
            ]);
            println!("\nattributes:");
            if let Some(attributes) = details["attributes"].as_object() {
                for (name, value) in attributes {
                    println!("  {name} = {value}");
                }
            }
            if let Some(requires) = details["requires_status"].as_object().filter(|r| !r.is_empty()) {
                println!("\nrequires:");
                for (rid, status) in requires {
                    println!("  {rid}: {}", text(status));
                }
            }
        }
        ResourceCommand::History { resource_id } => {
            let history = all_pages(ctx, env, &format!("/api/v2/resource/{}/history", encode(&resource_id))).await?;
            if ctx.json {
                output::json(&history);
                return Ok(());
            }
            let rows: Vec<Vec<String>> =
                history.iter().map(|h| vec![text(&h["date"]), text(&h["attribute_hash"])]).collect();
            output::table(&["Date", "Attribute hash"], &rows);
        }
        ResourceCommand::Logs { resource_id, level } => {
            let mut path = format!("/api/v2/resource/{}/logs", encode(&resource_id));
            if let Some(level) = level {
                path.push_str(&format!("?filter.minimal_log_level={}", encode(&level)));
            }
            let logs = all_pages(ctx, env, &path).await?;
            if ctx.json {
                output::json(&logs);
                return Ok(());
            }
            let rows: Vec<Vec<String>> = logs
                .iter()
                .map(|l| vec![text(&l["timestamp"]), text(&l["action"]), text(&l["level"]), text(&l["msg"])])
                .collect();
            output::table(&["Time", "Action", "Level", "Message"], &rows);
        }
    }
    Ok(())
}
