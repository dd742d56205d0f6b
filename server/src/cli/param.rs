//! `inmanta param list|get|set`: parameters of an environment.

use clap::Subcommand;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use super::version::{all_pages, text};
use super::{CliError, Context, output};

#[derive(Subcommand)]
pub enum ParamCommand {
    /// List the parameters (facts are listed by `resource show`).
    List,
    /// Print a parameter's value, or a fact's with --resource-id.
    Get {
        #[arg(long)]
        name: String,
        #[arg(long)]
        resource_id: Option<String>,
    },
    /// Set a parameter.
    Set {
        #[arg(long)]
        name: String,
        #[arg(long)]
        value: String,
        /// Where the value comes from: user, plugin, report or fact.
        #[arg(long, default_value = "user")]
        source: String,
        /// Make it a fact of this resource.
        #[arg(long)]
        resource_id: Option<String>,
    },
}

pub async fn run(command: ParamCommand, ctx: &Context, env: Uuid) -> Result<(), CliError> {
    match command {
        ParamCommand::List => {
            let params = all_pages(ctx, env, "/api/v2/parameters").await?;
            if ctx.json {
                output::json(&params);
                return Ok(());
            }
            let rows: Vec<Vec<String>> = params
                .iter()
                .map(|p| vec![text(&p["name"]), text(&p["value"]), text(&p["source"]), text(&p["updated"])])
                .collect();
            output::table(&["Name", "Value", "Source", "Updated"], &rows);
        }
        ParamCommand::Get { name, resource_id } => {
            let mut path = format!("/api/v1/parameter/{name}");
            if let Some(rid) = &resource_id {
                path.push_str(&format!("?resource_id={}", super::encode_segment(rid)));
            }
            let answer: Value = ctx.client.call(Method::GET, &path, Some(env), None::<&()>).await?;
            if ctx.json {
                output::json(&answer);
                return Ok(());
            }
            println!("{}", text(&answer["parameter"]["value"]));
        }
        ParamCommand::Set { name, value, source, resource_id } => {
            let (path, body) = match resource_id {
                Some(rid) => {
                    (format!("/api/v2/facts/{name}"), json!({"source": source, "value": value, "resource_id": rid}))
                }
                None => (format!("/api/v2/parameters/{name}"), json!({"source": source, "value": value})),
            };
            let answer: Value = ctx.client.data(Method::PUT, &path, Some(env), Some(&body)).await?;
            if ctx.json {
                output::json(&answer);
                return Ok(());
            }
            println!("{name} = {}", text(&answer["value"]));
        }
    }
    Ok(())
}
