//! `inmanta param list|get|set`: parameters of an environment.

use api::client::ListQuery;
use api::operations::SetParameter;
use clap::Subcommand;
use serde_json::json;
use uuid::Uuid;

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
            let params = ctx.client.follow(ctx.client.parameters(env, &ListQuery::new()).await?, Some(env)).await?;
            output::list(ctx.json, &params, &["Name", "Value", "Source", "Updated"], |p| {
                vec![
                    p.name.clone(),
                    p.value.clone(),
                    p.source.clone(),
                    p.updated.map(|t| t.to_string()).unwrap_or_default(),
                ]
            });
        }
        ParamCommand::Get { name, resource_id } => {
            let parameter = ctx.client.parameter(env, &name, resource_id.as_deref()).await?;
            if ctx.json {
                // The API's v1 answer.
                output::json(&json!({ "parameter": parameter }));
                return Ok(());
            }
            println!("{}", parameter.value);
        }
        ParamCommand::Set { name, value, source, resource_id } => {
            let is_fact = resource_id.is_some();
            let body = SetParameter { source, value: json!(value), resource_id, ..Default::default() };
            let value = if is_fact {
                let fact = ctx.client.set_fact(env, &name, &body).await?;
                if ctx.json {
                    output::json(&fact);
                    return Ok(());
                }
                fact.value
            } else {
                let parameter = ctx.client.set_parameter(env, &name, &body).await?;
                if ctx.json {
                    output::json(&parameter);
                    return Ok(());
                }
                parameter.value
            };
            println!("{name} = {value}");
        }
    }
    Ok(())
}
