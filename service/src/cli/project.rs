//! `inmanta project list|show|create|modify|delete`.

use api::Project;
use clap::Subcommand;

use super::{CliError, Context, output};

#[derive(Subcommand)]
pub enum ProjectCommand {
    /// List all projects.
    List,
    /// Show one project, by name or id.
    Show { project: String },
    /// Create a project.
    Create {
        #[arg(short, long)]
        name: String,
    },
    /// Rename a project.
    Modify {
        #[arg(short, long)]
        name: String,
        project: String,
    },
    /// Delete a project (it must have no environments).
    Delete { project: String },
    /// Make a new project directory OUTPUT_DIR/NAME from Inmanta's project template (built in:
    /// works offline); asks the template's questions unless --default.
    Init {
        /// The name of the new project.
        #[arg(short, long)]
        name: String,
        /// Where the project directory is made.
        #[arg(short, long = "output-dir", default_value = "./")]
        output_dir: std::path::PathBuf,
        /// Take the template's default answers instead of asking.
        #[arg(long)]
        default: bool,
    },
    /// Like install, and update every module and its Python dependencies to the newest versions
    /// the constraints allow.
    Update {
        /// The project directory (with project.yml).
        #[arg(long = "project-dir", default_value = ".")]
        project_dir: std::path::PathBuf,
        #[command(flatten)]
        deps_check: DepsCheck,
    },
    /// Set `requires` of project.yml to the versions of the modules the project uses (as
    /// Inmanta 20.1).
    Freeze {
        /// File in which to put the new project.yml, default is the existing project.yml. Use -
        /// to write to stdout.
        #[arg(short, long)]
        outfile: Option<String>,
        /// Freeze dependencies recursively. If not set, freeze_recursive option in project.yml
        /// is used, which defaults to False
        #[arg(short, long)]
        recursive: bool,
        /// Comparison operator used to freeze versions, If not set, the freeze_operator option
        /// in project.yml is used which defaults to ~=
        #[arg(long, value_parser = ["==", "~=", ">="])]
        operator: Option<String>,
    },
    /// Download all dependencies of the Inmanta project from the pip index, extract them and
    /// convert them into their source format. The extracted modules will be stored in the
    /// directory indicated by the downloadpath option in the project.yml file or into
    /// <project-dir>/libs if the downloadpath option was not defined.
    Download {
        /// Install the downloaded module in editable mode into the active Python environment.
        #[arg(long)]
        install: bool,
    },
    /// Install the project's modules from the package index (`requires`, requirements.txt) into
    /// its Python environment (`.env`, or the one of [compiler] python). Runs locally.
    Install {
        /// The project directory (with project.yml).
        #[arg(long = "project-dir", default_value = ".")]
        project_dir: std::path::PathBuf,
        #[command(flatten)]
        deps_check: DepsCheck,
    },
}

/// Inmanta 20.1's deprecated flags of `project install` and `project update`, taken and ignored
/// as Inmanta does.
#[derive(clap::Args, Debug, Clone)]
pub struct DepsCheck {
    /// [Deprecated] This flag is ignored. It will be removed in a future version.
    #[arg(long = "no-strict-deps-check")]
    no_strict_deps_check: bool,
    /// [Deprecated] This flag is ignored. It will be removed in a future version.
    #[arg(long = "strict-deps-check")]
    strict_deps_check: bool,
}

/// `inmanta project install` (`update`: `project update`): local, no server involved.
pub async fn install(
    project_dir: std::path::PathBuf,
    python: Option<std::path::PathBuf>,
    update: bool,
) -> Result<(), CliError> {
    tokio::task::spawn_blocking(move || {
        crate::python_install::install_with(&project_dir, python.as_deref(), update, &mut |line| eprintln!("{line}"))
    })
    .await
    .map_err(|e| CliError::Usage(format!("the install crashed: {e}")))?
    .map_err(CliError::Usage)?;
    eprintln!("Modules installed");
    Ok(())
}

pub async fn run(command: ProjectCommand, ctx: &Context) -> Result<(), CliError> {
    let c = &ctx.client;
    match command {
        ProjectCommand::Install { .. }
        | ProjectCommand::Update { .. }
        | ProjectCommand::Init { .. }
        | ProjectCommand::Freeze { .. }
        | ProjectCommand::Download { .. } => {
            unreachable!("handled without a server by cli::run")
        }
        ProjectCommand::List => {
            let projects = c.projects().await?;
            output::list(ctx.json, &projects, &["ID", "NAME", "ENVIRONMENTS"], |p| {
                let envs: Vec<&str> = p.environments.iter().map(|e| e.name.as_str()).collect();
                vec![p.id.to_string(), p.name.clone(), envs.join(", ")]
            });
        }
        ProjectCommand::Show { project } => {
            let project = find(ctx, &project).await?;
            show(ctx, &project);
        }
        ProjectCommand::Create { name } => {
            let project = c.create_project(&name).await?;
            show(ctx, &project);
        }
        ProjectCommand::Modify { name, project } => {
            let id = find(ctx, &project).await?.id;
            let project = c.rename_project(id, &name).await?;
            show(ctx, &project);
        }
        ProjectCommand::Delete { project } => {
            let project = find(ctx, &project).await?;
            c.delete_project(project.id).await?;
            if !ctx.json {
                println!("Project {} ({}) deleted", project.name, project.id);
            }
        }
    }
    Ok(())
}

fn show(ctx: &Context, project: &Project) {
    if ctx.json {
        output::json(project);
    } else {
        let envs: Vec<String> = project.environments.iter().map(|e| format!("{} ({})", e.name, e.id)).collect();
        output::fields(&[
            ("id", project.id.to_string()),
            ("name", project.name.clone()),
            ("environments", envs.join(", ")),
        ]);
    }
}

/// A project by id or by name.
pub async fn find(ctx: &Context, key: &str) -> Result<Project, CliError> {
    let projects = ctx.client.projects().await?;
    projects.into_iter().find(|p| p.id.to_string() == key || p.name == key).ok_or_else(|| {
        CliError::Usage(format!("no project with name or id {key:?}: `inmanta project list` shows them"))
    })
}
