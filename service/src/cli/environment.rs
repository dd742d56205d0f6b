//! `inmanta environment create|list|show|modify|delete|save|setting ...`.

use api::Environment;
use api::environment::{EnvironmentCreate, EnvironmentModify};
use clap::Subcommand;

use super::{CliError, Context, output, project};

#[derive(Subcommand)]
pub enum EnvironmentCommand {
    /// Create an environment in a project.
    Create {
        #[arg(short, long)]
        name: String,
        /// Project name or id.
        #[arg(short, long)]
        project: String,
        /// Git repository the server compiles from.
        #[arg(short = 'r', long)]
        repo_url: Option<String>,
        /// Branch of that repository.
        #[arg(short = 'b', long)]
        branch: Option<String>,
        /// Also write the environment into `.inmanta` in the current directory.
        #[arg(short, long)]
        save: bool,
    },
    /// List all environments.
    List,
    /// Show one environment, by name or id.
    Show { environment: String },
    /// Change an environment's name, repository or branch.
    Modify {
        #[arg(short, long)]
        name: String,
        #[arg(short = 'r', long)]
        repo_url: Option<String>,
        #[arg(short = 'b', long)]
        branch: Option<String>,
        environment: String,
    },
    /// Delete an environment with all its data.
    Delete { environment: String },
    /// Write the environment into `.inmanta` in the current directory, for compile and export.
    Save { environment: String },
    /// Ask the server to compile the environment from its repository.
    Recompile {
        environment: String,
        #[command(flatten)]
        request: super::compiles::RequestArgs,
    },
    /// Read and change environment settings.
    Setting {
        #[command(subcommand)]
        command: SettingCommand,
    },
}

#[derive(Subcommand)]
pub enum SettingCommand {
    /// List every setting with its value and default.
    List {
        #[arg(short, long)]
        environment: String,
    },
    /// Print one setting's value.
    Get {
        #[arg(short, long)]
        environment: String,
        #[arg(short, long)]
        key: String,
    },
    /// Change a setting.
    Set {
        #[arg(short, long)]
        environment: String,
        #[arg(short, long)]
        key: String,
        #[arg(short = 'o', long)]
        value: String,
    },
    /// Reset a setting to its default.
    Delete {
        #[arg(short, long)]
        environment: String,
        #[arg(short, long)]
        key: String,
    },
}

pub async fn run(command: EnvironmentCommand, ctx: &Context) -> Result<(), CliError> {
    let c = &ctx.client;
    match command {
        EnvironmentCommand::Create { name, project, repo_url, branch, save: write } => {
            let project = project::find(ctx, &project).await?;
            let body =
                EnvironmentCreate { project_id: project.id, name, repository: repo_url, branch, ..Default::default() };
            let env = c.create_environment(&body).await?;
            show(ctx, &env, &project.name);
            if write {
                save(&env)?;
            }
        }
        EnvironmentCommand::List => {
            let envs = c.environments().await?;
            if ctx.json {
                output::json(&envs);
            } else {
                let projects = project_names(ctx).await?;
                let rows: Vec<Vec<String>> = envs
                    .iter()
                    .map(|e| {
                        vec![
                            projects.get(&e.project_id).cloned().unwrap_or_default(),
                            e.name.clone(),
                            e.id.to_string(),
                            if e.halted { "halted".into() } else { "running".into() },
                        ]
                    })
                    .collect();
                output::table(&["PROJECT", "NAME", "ID", "STATE"], &rows);
            }
        }
        EnvironmentCommand::Recompile { environment, request } => {
            let env = find(ctx, &environment).await?;
            super::compiles::request(ctx, env.id, &request).await?;
        }
        EnvironmentCommand::Show { environment } => {
            let env = find(ctx, &environment).await?;
            let projects = project_names(ctx).await?;
            show(ctx, &env, projects.get(&env.project_id).map(String::as_str).unwrap_or(""));
        }
        EnvironmentCommand::Modify { name, repo_url, branch, environment } => {
            let env = find(ctx, &environment).await?;
            let body = EnvironmentModify { name, repository: repo_url, branch, ..Default::default() };
            let env = c.modify_environment(env.id, &body).await?;
            let projects = project_names(ctx).await?;
            show(ctx, &env, projects.get(&env.project_id).map(String::as_str).unwrap_or(""));
        }
        EnvironmentCommand::Delete { environment } => {
            let env = find(ctx, &environment).await?;
            c.delete_environment(env.id).await?;
            if !ctx.json {
                println!("Environment {} ({}) deleted", env.name, env.id);
            }
        }
        EnvironmentCommand::Save { environment } => save(&find(ctx, &environment).await?)?,
        EnvironmentCommand::Setting { command } => setting(command, ctx).await?,
    }
    Ok(())
}

async fn setting(command: SettingCommand, ctx: &Context) -> Result<(), CliError> {
    let c = &ctx.client;
    match command {
        SettingCommand::List { environment } => {
            let env = find(ctx, &environment).await?;
            let all = c.environment_settings(env.id).await?;
            if ctx.json {
                output::json(&all);
            } else {
                let rows: Vec<Vec<String>> = all
                    .definition
                    .values()
                    .map(|d| {
                        let value = all.settings.get(&d.name).map(|v| v.to_string()).unwrap_or_default();
                        let protected =
                            d.protected_by.clone().map(|by| format!("protected by {by}")).unwrap_or_default();
                        vec![d.name.clone(), value, d.default.to_string(), protected]
                    })
                    .collect();
                output::table(&["SETTING", "VALUE", "DEFAULT", "NOTE"], &rows);
            }
        }
        SettingCommand::Get { environment, key } => {
            let env = find(ctx, &environment).await?;
            let one = c.environment_setting(env.id, &key).await?;
            match one.settings.get(&key) {
                Some(v) if ctx.json => output::json(v),
                Some(v) => println!("{v}"),
                None => return Err(CliError::Usage(format!("setting {key} has no value"))),
            }
        }
        SettingCommand::Set { environment, key, value } => {
            let env = find(ctx, &environment).await?;
            c.set_environment_setting(env.id, &key, value.as_str()).await?;
            if !ctx.json {
                println!("{key} set to {value} in {}", env.name);
            }
        }
        SettingCommand::Delete { environment, key } => {
            let env = find(ctx, &environment).await?;
            c.delete_environment_setting(env.id, &key).await?;
            if !ctx.json {
                println!("{key} reset to its default in {}", env.name);
            }
        }
    }
    Ok(())
}

fn show(ctx: &Context, env: &Environment, project: &str) {
    if ctx.json {
        output::json(env);
    } else {
        output::fields(&[
            ("id", env.id.to_string()),
            ("name", env.name.clone()),
            ("project", format!("{project} ({})", env.project_id)),
            ("repository", env.repo_url.clone()),
            ("branch", env.repo_branch.clone()),
            ("halted", env.halted.to_string()),
        ]);
    }
}

async fn project_names(ctx: &Context) -> Result<std::collections::HashMap<uuid::Uuid, String>, CliError> {
    let projects = ctx.client.projects().await?;
    Ok(projects.into_iter().map(|p| (p.id, p.name)).collect())
}

/// An environment by id, by name, or by `project/name` when a name is used in several projects.
pub async fn find(ctx: &Context, key: &str) -> Result<Environment, CliError> {
    let envs = ctx.client.environments().await?;
    if let Some(env) = envs.iter().find(|e| e.id.to_string() == key) {
        return Ok(env.clone());
    }
    let projects = project_names(ctx).await?;
    let matches: Vec<&Environment> = envs
        .iter()
        .filter(|e| e.name == key || projects.get(&e.project_id).is_some_and(|p| format!("{p}/{}", e.name) == key))
        .collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(CliError::Usage(format!(
            "no environment with name or id {key:?}: `inmanta environment list` shows them"
        ))),
        several => Err(CliError::Usage(format!(
            "{key:?} names {} environments; use the id or PROJECT/NAME: {}",
            several.len(),
            several.iter().map(|e| e.id.to_string()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// Writes `[config] environment = <id>` into `.inmanta`, keeping the file's other sections.
fn save(env: &Environment) -> Result<(), CliError> {
    let path = std::path::Path::new(".inmanta");
    let existing = std::fs::read_to_string(path).unwrap_or_default();
    let mut out = String::new();
    let mut in_config = false;
    let mut written = false;
    for line in existing.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            if in_config && !written {
                out.push_str(&format!("environment = {}\n", env.id));
                written = true;
            }
            in_config = trimmed == "[config]";
        } else if in_config && trimmed.split(['=', ':']).next().map(str::trim) == Some("environment") {
            out.push_str(&format!("environment = {}\n", env.id));
            written = true;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if !written {
        if !in_config {
            out.push_str("[config]\n");
        }
        out.push_str(&format!("environment = {}\n", env.id));
    }
    std::fs::write(path, out)?;
    println!("Environment {} ({}) saved in .inmanta", env.name, env.id);
    Ok(())
}
