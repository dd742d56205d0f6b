//! `inmanta migrate --from URL [--token T] [--users]`: moves what a running Inmanta server holds
//! (projects, environments with their repository, branch and settings, parameters, the latest
//! released version of each environment with its files, and optionally users with their roles)
//! into the database this server's configuration points at (docs/operations.md, "Move over").
//!
//! It writes through the orchestrator layer on that database, as `inmanta server backup` reads
//! through it, rather than through a running server's API: it needs no admin token of a server
//! that may not have been started yet, it keeps the source's ids and version numbers (agents'
//! configurations and scripts name environments by id), and it can create users that have no
//! usable password until an admin sets one, which the API rightly refuses. The server started
//! afterwards (or restarted) rebuilds its schedulers from the database and deploys the moved
//! versions without compiling.
//!
//! Every step compares first and writes only what differs, so a second run changes nothing and
//! says so. The source is only read ([`source::Source`] has GET requests only).

mod source;
mod version;

use std::collections::BTreeMap;
use std::process::ExitCode;

use api::environment::{EnvironmentCreate, EnvironmentModify};
use orchestrator::parameters::{NewParameter, ParamLookup};
use orchestrator::{EnvironmentQuery, Orchestrator};
use serde_json::Value;
use uuid::Uuid;

use crate::config::ServerConfig;
use source::Source;

#[derive(clap::Args)]
pub struct MigrateArgs {
    /// URL of the Inmanta server to move from, e.g. http://inmanta.example.com:8888.
    #[arg(long = "from", value_name = "URL")]
    from: String,
    /// Bearer token for the source server (an admin's, to read every environment and user).
    #[arg(long, env = "INMANTA_MIGRATE_TOKEN")]
    token: Option<String>,
    /// Also move the users and their roles. They are created without a usable password: an
    /// admin sets one (`inmanta user password NAME`), which the user changes at the first login.
    #[arg(long)]
    users: bool,
    /// Database URL to move into ([database] url); the configuration's database without it.
    #[arg(long)]
    database_url: Option<String>,
    /// State directory whose SQLite database to move into ([config] state-dir).
    #[arg(long)]
    state_dir: Option<std::path::PathBuf>,
}

impl MigrateArgs {
    /// The flags that choose the database, as (section, key, value) configuration overrides.
    pub fn overrides(&self) -> [(&'static str, &'static str, Option<String>); 2] {
        [
            ("database", "url", self.database_url.clone()),
            ("config", "state-dir", self.state_dir.as_ref().map(|p| p.display().to_string())),
        ]
    }
}

/// What happened to one thing of the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Moved,
    Updated,
    Unchanged,
    NotMoved,
}

/// The lines `inmanta migrate` prints, and its counts.
#[derive(Default)]
struct Report {
    counts: BTreeMap<&'static str, usize>,
    not_moved: usize,
    changed: usize,
}

impl Report {
    fn say(&mut self, outcome: Outcome, what: impl std::fmt::Display) {
        let word = match outcome {
            Outcome::Moved => "moved",
            Outcome::Updated => "updated",
            Outcome::Unchanged => "unchanged",
            Outcome::NotMoved => "NOT MOVED",
        };
        *self.counts.entry(word).or_default() += 1;
        match outcome {
            Outcome::NotMoved => self.not_moved += 1,
            Outcome::Moved | Outcome::Updated => self.changed += 1,
            Outcome::Unchanged => {}
        }
        println!("{word:>10}  {what}");
    }

    fn not_moved(&mut self, what: impl std::fmt::Display, why: impl std::fmt::Display) {
        self.say(Outcome::NotMoved, format!("{what}: {why}"));
    }

    fn note(&self, what: impl std::fmt::Display) {
        println!("{:>10}  {what}", "note");
    }
}

pub async fn run(config: &ServerConfig, args: &MigrateArgs) -> ExitCode {
    let source = Source::new(&args.from, args.token.clone());
    let source_version = match source.version().await {
        Ok(version) => version,
        Err(e) => return cannot(format!("cannot read the Inmanta server at {}: {e}", source.url())),
    };
    let target = match Orchestrator::open(&config.storage.database_url).await {
        Ok(o) => o,
        Err(e) => return cannot(format!("cannot open {}: {e}", config.storage.database_display())),
    };
    println!(
        "moving from Inmanta {source_version} at {} into {} (the source is only read)",
        source.url(),
        config.storage.database_display()
    );
    let mut report = Report::default();
    let result = migrate(&source, &target, args.users, &mut report).await;
    target.store().close().await;
    if let Err(e) = result {
        return cannot(e);
    }
    let counts: Vec<String> = report.counts.iter().map(|(word, n)| format!("{n} {}", word.to_lowercase())).collect();
    println!("done: {}", counts.join(", "));
    if report.changed == 0 && report.not_moved == 0 {
        println!("nothing changed: everything was moved already");
    }
    if report.not_moved > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// Why the whole move stopped (the source or the database failed, not one item).
type Fatal = String;

async fn migrate(source: &Source, target: &Orchestrator, users: bool, report: &mut Report) -> Result<(), Fatal> {
    let projects = source.projects().await.map_err(|e| format!("cannot list the source's projects: {e}"))?;
    let mut project_ids = BTreeMap::new();
    for project in &projects {
        if let (Some(source_id), Some(id)) = (uuid_of(&project["id"]), project_into(target, project, report).await?) {
            project_ids.insert(source_id, id);
        }
    }
    let environments =
        source.environments().await.map_err(|e| format!("cannot list the source's environments: {e}"))?;
    let mut moved_envs = Vec::new();
    for env in &environments {
        let name = env["name"].as_str().unwrap_or_default();
        let Some(project) = uuid_of(&env["project_id"]).and_then(|p| project_ids.get(&p).copied()) else {
            report.not_moved(format!("environment {name}"), "its project was not moved");
            continue;
        };
        let Some(id) = uuid_of(&env["id"]) else {
            report.not_moved(format!("environment {name}"), "the source gave no id");
            continue;
        };
        if environment_into(target, env, id, project, report).await? {
            moved_envs.push((id, name.to_string()));
        }
    }
    for (env, name) in &moved_envs {
        let moving = EnvMove { source, target, env: *env, name };
        settings_into(moving, report).await?;
        parameters_into(moving, report).await?;
        version::latest_released_into(moving, report).await?;
    }
    if users {
        users_into(source, target, &moved_envs, report).await?;
    } else {
        report.note("users not moved (add --users to move them and their roles)");
    }
    report.note("facts are not moved: handlers report them again");
    Ok(())
}

/// One environment whose content is being moved: from where, to where, its id (the same on
/// both sides) and its name for the report.
#[derive(Clone, Copy)]
struct EnvMove<'a> {
    source: &'a Source,
    target: &'a Orchestrator,
    env: Uuid,
    name: &'a str,
}

fn uuid_of(value: &Value) -> Option<Uuid> {
    value.as_str().and_then(|s| s.parse().ok())
}

/// The project here that stands for the source's `project`: the one with its id, else the one
/// with its name, else a new one with its id and name.
async fn project_into(target: &Orchestrator, project: &Value, report: &mut Report) -> Result<Option<Uuid>, Fatal> {
    let name = project["name"].as_str().unwrap_or_default();
    let Some(id) = uuid_of(&project["id"]) else {
        report.not_moved(format!("project {name}"), "the source gave no id");
        return Ok(None);
    };
    let here = target.list_projects().await.map_err(|e| e.to_string())?;
    if let Some(same) = here.iter().find(|p| p.id == id || p.name == name) {
        let what = if same.id == id {
            format!("project {name}")
        } else {
            format!("project {name} (here with id {}: its environments go there)", same.id)
        };
        report.say(Outcome::Unchanged, what);
        return Ok(Some(same.id));
    }
    match target.create_project(name, Some(id)).await {
        Ok(_) => {
            report.say(Outcome::Moved, format!("project {name}"));
            Ok(Some(id))
        }
        Err(e) => {
            report.not_moved(format!("project {name}"), e);
            Ok(None)
        }
    }
}

/// Creates the environment with the source's id, or brings an existing one's name, repository,
/// branch and description in line. False when it could not be moved.
async fn environment_into(
    target: &Orchestrator,
    env: &Value,
    id: Uuid,
    project: Uuid,
    report: &mut Report,
) -> Result<bool, Fatal> {
    let text = |key: &str| env[key].as_str().unwrap_or_default().to_string();
    let (name, repository, branch, description) =
        (text("name"), text("repo_url"), text("repo_branch"), text("description"));
    let icon = text("icon");
    let what = format!("environment {name} ({id}): repository {repository:?}, branch {branch:?}");
    match target.get_environment(id, EnvironmentQuery { details: true }).await {
        Ok(here) => {
            let same = here.name == name
                && here.repo_url == repository
                && here.repo_branch == branch
                && here.description.as_deref().unwrap_or_default() == description;
            if same {
                report.say(Outcome::Unchanged, what);
                return Ok(true);
            }
            let change = EnvironmentModify {
                name: name.clone(),
                repository: Some(repository.clone()),
                branch: Some(branch.clone()),
                description: Some(description.clone()),
                ..Default::default()
            };
            match target.modify_environment(id, change).await {
                Ok(_) => report.say(Outcome::Updated, what),
                Err(e) => report.not_moved(what, e),
            }
            Ok(true)
        }
        Err(orchestrator::Error::NotFound(_)) => {
            let create = EnvironmentCreate {
                project_id: project,
                name: name.clone(),
                repository: Some(repository.clone()),
                branch: Some(branch.clone()),
                environment_id: Some(id),
                description: Some(description.clone()),
                icon: (!icon.is_empty()).then_some(icon),
            };
            match target.create_environment(create).await {
                Ok(_) => {
                    report.say(Outcome::Moved, what);
                    Ok(true)
                }
                Err(e) => {
                    report.not_moved(what, e);
                    Ok(false)
                }
            }
        }
        Err(e) => Err(e.to_string()),
    }
}

/// The source's explicit settings; a setting this server does not know, or whose value it
/// refuses, is reported and skipped.
async fn settings_into(moving: EnvMove<'_>, report: &mut Report) -> Result<(), Fatal> {
    let EnvMove { source, target, env, name: env_name } = moving;
    let wanted = source.settings(env).await.map_err(|e| format!("cannot read the settings of {env_name}: {e}"))?;
    let here = target.environment_settings(env).await.map_err(|e| e.to_string())?;
    for (name, value) in wanted {
        let what = format!("setting {name} = {value} of {env_name}");
        if !here.definition.contains_key(&name) {
            report.not_moved(what, "this server has no such setting");
            continue;
        }
        let current = here.settings.get(&name).and_then(|v| serde_json::to_value(v).ok());
        if current.as_ref() == Some(&value) {
            report.say(Outcome::Unchanged, what);
            continue;
        }
        match target.set_environment_setting(env, &name, &value).await {
            Ok(()) => report.say(Outcome::Moved, what),
            Err(e) => report.not_moved(what, e),
        }
    }
    Ok(())
}

async fn parameters_into(moving: EnvMove<'_>, report: &mut Report) -> Result<(), Fatal> {
    let EnvMove { source, target, env, name: env_name } = moving;
    let parameters =
        source.parameters(env).await.map_err(|e| format!("cannot read the parameters of {env_name}: {e}"))?;
    for parameter in parameters {
        let name = parameter["name"].as_str().unwrap_or_default().to_string();
        let value = parameter["value"].clone();
        let source_name = parameter["source"].as_str().unwrap_or("user").to_string();
        let metadata = parameter.get("metadata").filter(|m| m.is_object()).cloned();
        let what = format!("parameter {name} of {env_name}");
        let current = match target.get_param(env, &name, None).await {
            Ok(ParamLookup::Found(fact)) => Some(fact),
            Ok(ParamLookup::AskAgents) | Err(orchestrator::Error::NotFound(_)) => None,
            Err(e) => return Err(e.to_string()),
        };
        if let Some(current) = current
            && Some(current.value.as_str()) == value.as_str()
            && current.source == source_name
        {
            report.say(Outcome::Unchanged, what);
            continue;
        }
        let new = NewParameter {
            name: name.clone(),
            source: source_name,
            value,
            resource_id: None,
            metadata,
            expires: None,
            recompile: false,
        };
        match target.set_parameter(env, new).await {
            Ok(_) => report.say(Outcome::Moved, what),
            Err(e) => report.not_moved(what, e),
        }
    }
    Ok(())
}

/// Users with their roles in the moved environments. A new user gets a random password nobody
/// is told and must change it at the first login: an admin sets a real one first.
async fn users_into(
    source: &Source,
    target: &Orchestrator,
    environments: &[(Uuid, String)],
    report: &mut Report,
) -> Result<(), Fatal> {
    let users = match source.users().await {
        Ok(users) => users,
        Err(e) => {
            report.not_moved("users", format!("the source did not list them: {e}"));
            return Ok(());
        }
    };
    let roles_here = target.list_roles().await.map_err(|e| e.to_string())?;
    match source.roles().await {
        Ok(roles) => {
            for role in roles {
                if roles_here.contains(&role) {
                    report.say(Outcome::Unchanged, format!("role {role}"));
                } else {
                    match target.create_role(&role).await {
                        Ok(()) => report.say(Outcome::Moved, format!("role {role}")),
                        Err(e) => report.not_moved(format!("role {role}"), e),
                    }
                }
            }
        }
        Err(e) => report.not_moved("roles", format!("the source did not list them: {e}")),
    }
    for user in users {
        let username = user["username"].as_str().unwrap_or_default().to_string();
        let is_admin = user["is_admin"].as_bool().unwrap_or(false);
        let what = format!("user {username}{}", if is_admin { " (admin)" } else { "" });
        let method = user["auth_method"].as_str().unwrap_or("database");
        if method != "database" {
            report.not_moved(what, format!("signs in through {method}, not with a password of the server"));
            continue;
        }
        let exists = target.user_record(&username).await.map_err(|e| e.to_string())?;
        if let Some(here) = exists {
            if here.is_admin == is_admin {
                report.say(Outcome::Unchanged, what);
            } else {
                match target.set_is_admin(&username, is_admin).await {
                    Ok(()) => report.say(Outcome::Updated, what),
                    Err(e) => report.not_moved(what, e),
                }
            }
        } else {
            match target.create_user(&username, &unusable_password(), is_admin, true).await {
                Ok(_) => {
                    report.say(Outcome::Moved, format!("{what}: no password yet (inmanta user password {username})"))
                }
                Err(e) => {
                    report.not_moved(what, e);
                    continue;
                }
            }
        }
        let assigned = target.role_assignments(&username).await.map_err(|e| e.to_string())?.assignments;
        let roles = user["roles"].as_object().cloned().unwrap_or_default();
        for (env_text, env_roles) in roles {
            let Ok(env) = env_text.parse::<Uuid>() else { continue };
            let Some((_, env_name)) = environments.iter().find(|(id, _)| *id == env) else {
                report.not_moved(format!("roles of {username} in environment {env}"), "that environment was not moved");
                continue;
            };
            for role in env_roles.as_array().into_iter().flatten().filter_map(Value::as_str) {
                let what = format!("role {role} of {username} in {env_name}");
                if assigned.get(&env).is_some_and(|r| r.iter().any(|r| r == role)) {
                    report.say(Outcome::Unchanged, what);
                    continue;
                }
                match target.assign_role(&username, env, role).await {
                    Ok(()) => report.say(Outcome::Moved, what),
                    Err(e) => report.not_moved(what, e),
                }
            }
        }
    }
    Ok(())
}

/// A password no one knows (the user cannot sign in until an admin sets one), which still
/// passes the password policy: random, long, four character classes.
fn unusable_password() -> String {
    format!("Moved-{}-{}!", Uuid::new_v4().simple(), Uuid::new_v4().simple())
}

fn cannot(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(2)
}
