//! `inmanta version list|show|release|report|diff`: the desired-state versions of an environment.

use clap::Subcommand;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use api::version::DesiredStateVersion;

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
            let versions: Vec<Value> = all_pages(ctx, env, "/api/v2/desiredstate").await?;
            if ctx.json {
                output::json(&versions);
                return Ok(());
            }
            let rows = versions
                .iter()
                .map(|v| {
                    let labels: Vec<String> = v["labels"]
                        .as_array()
                        .map(|l| l.iter().map(|l| text(&l["message"])).collect())
                        .unwrap_or_default();
                    vec![
                        text(&v["version"]),
                        text(&v["status"]),
                        text(&v["date"]),
                        text(&v["total"]),
                        labels.join("; "),
                    ]
                })
                .collect::<Vec<_>>();
            output::table(&["Version", "Status", "Date", "Resources", "Message"], &rows);
        }
        VersionCommand::Show { version } => {
            let answer =
                client.call(Method::GET, &format!("/api/v1/version/{version}"), Some(env), None::<&()>).await?;
            if ctx.json {
                output::json(&answer);
                return Ok(());
            }
            let model = &answer["model"];
            // Inmanta's v1 model has no status; the v2 listing of this one version has.
            let listed: Vec<DesiredStateVersion> = client
                .data(
                    Method::GET,
                    &format!("/api/v2/desiredstate?filter.version=ge:{version}&filter.version=le:{version}"),
                    Some(env),
                    None::<&()>,
                )
                .await?;
            let status = listed.first().map(|v| text(&json!(v.status))).unwrap_or_default();
            output::fields(&[
                ("version", text(&model["version"])),
                ("status", status),
                ("date", text(&model["date"])),
                ("released", text(&model["released"])),
                ("resources", text(&model["total"])),
                ("undeployable", text(&model["undeployable"])),
            ]);
        }
        VersionCommand::Release { version, push } => {
            let path = format!("/api/v1/version/{version}");
            let answer = client.call(Method::POST, &path, Some(env), Some(&json!({"push": push}))).await?;
            if ctx.json {
                output::json(&answer);
                return Ok(());
            }
            println!("Version {version} released");
        }
        VersionCommand::Report { version } => {
            let answer =
                client.call(Method::GET, &format!("/api/v1/version/{version}"), Some(env), None::<&()>).await?;
            if ctx.json {
                output::json(&answer);
                return Ok(());
            }
            let rows: Vec<Vec<String>> = answer["resources"]
                .as_array()
                .map(|rs| rs.iter().map(|r| vec![text(&r["resource_id"]), text(&r["status"])]).collect())
                .unwrap_or_default();
            output::table(&["Resource", "Status"], &rows);
        }
        VersionCommand::Diff { from, to } => {
            let path = format!("/api/v2/desiredstate/diff/{from}/{to}");
            let diffs: Vec<Value> = client.data(Method::GET, &path, Some(env), None::<&()>).await?;
            if ctx.json {
                output::json(&diffs);
                return Ok(());
            }
            if diffs.is_empty() {
                println!("Versions {from} and {to} want the same");
            }
            for diff in diffs {
                println!("{} {}", text(&diff["status"]), text(&diff["resource_id"]));
                if let Some(attributes) = diff["attributes"].as_object() {
                    for (name, change) in attributes {
                        println!("    {name}: {} -> {}", change["from_value"], change["to_value"]);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Follows `links.next` until the last page.
pub async fn all_pages(ctx: &Context, env: Uuid, first: &str) -> Result<Vec<Value>, CliError> {
    let mut items = Vec::new();
    let mut next = Some(first.to_string());
    while let Some(path) = next {
        let page = ctx.client.call(Method::GET, &path, Some(env), None::<&()>).await?;
        items.extend(page["data"].as_array().cloned().unwrap_or_default());
        next = page["links"]["next"].as_str().map(str::to_string);
    }
    Ok(items)
}

/// A JSON value as table text: strings without quotes, null as empty.
pub fn text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
