//! `inmanta version list|show|release|report|diff`: the desired-state versions of an environment.

use api::client::ListQuery;
use clap::Subcommand;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{CliError, Context, output};

#[derive(Subcommand)]
pub enum VersionCommand {
    /// List the versions, newest first.
    List,
    /// Show one version.
    Show { version: i64 },
    /// Release a version so that it is deployed.
    Release {
        version: i64,
        /// Accepted for compatibility; the scheduler always deploys a released version.
        #[arg(short, long)]
        push: bool,
    },
    /// The resources of a version with their deploy status.
    Report {
        #[arg(short = 'i', long = "version")]
        version: i64,
    },
    /// What changed between two versions, attribute by attribute.
    Diff { from: i64, to: i64 },
}

pub async fn run(command: VersionCommand, ctx: &Context, env: Uuid) -> Result<(), CliError> {
    let client = &ctx.client;
    match command {
        VersionCommand::List => {
            let versions = client.follow(client.desired_state(env, &ListQuery::new()).await?, Some(env)).await?;
            if ctx.json {
                output::json(&versions);
                return Ok(());
            }
            let rows = versions
                .iter()
                .map(|v| {
                    let labels: Vec<String> = v.labels.iter().map(|l| l.message.clone()).collect();
                    vec![
                        v.version.to_string(),
                        text(&json!(v.status)),
                        v.date.to_string(),
                        v.total.to_string(),
                        labels.join("; "),
                    ]
                })
                .collect::<Vec<_>>();
            output::table(&["Version", "Status", "Date", "Resources", "Message"], &rows);
        }
        VersionCommand::Show { version } => {
            let answer = client.version(env, version).await?;
            if ctx.json {
                output::json(&answer);
                return Ok(());
            }
            let model = &answer.model;
            // Inmanta's v1 model has no status; the v2 listing of this one version has.
            let query =
                ListQuery::new().filter("version", format!("ge:{version}")).filter("version", format!("le:{version}"));
            let listed = client.desired_state(env, &query).await?.data;
            let status = listed.first().map(|v| text(&json!(v.status))).unwrap_or_default();
            output::fields(&[
                ("version", model.version.to_string()),
                ("status", status),
                ("date", model.date.to_string()),
                ("released", model.released.to_string()),
                ("resources", model.total.to_string()),
                ("undeployable", json!(model.undeployable).to_string()),
            ]);
        }
        VersionCommand::Release { version, push } => {
            let model = client.release_version(env, version, push).await?;
            if ctx.json {
                // The API's v1 answer.
                output::json(&json!({ "model": model }));
                return Ok(());
            }
            println!("Version {version} released");
        }
        VersionCommand::Report { version } => {
            let answer = client.version(env, version).await?;
            if ctx.json {
                output::json(&answer);
                return Ok(());
            }
            let field = |r: &serde_json::Map<String, Value>, key: &str| r.get(key).map(text).unwrap_or_default();
            let rows: Vec<Vec<String>> =
                answer.resources.iter().map(|r| vec![field(r, "resource_id"), field(r, "status")]).collect();
            output::table(&["Resource", "Status"], &rows);
        }
        VersionCommand::Diff { from, to } => {
            let diffs = client.version_diff(env, from, to).await?;
            if ctx.json {
                output::json(&diffs);
                return Ok(());
            }
            if diffs.is_empty() {
                println!("Versions {from} and {to} want the same");
            }
            for diff in diffs {
                println!("{} {}", diff.status.as_str(), diff.resource_id);
                for (name, change) in &diff.attributes {
                    let from = change.from_value.clone().unwrap_or_default();
                    let to = change.to_value.clone().unwrap_or_default();
                    println!("    {name}: {from} -> {to}");
                }
            }
        }
    }
    Ok(())
}

/// A JSON value as table text: strings without quotes, null as empty.
pub fn text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
