//! Inmanta 20.1's module commands (`inmanta module ...`), made here without Inmanta's Python:
//! `build` (the wheel and sdist setuptools makes of a v2 module, [`build`]), `add` (setup.cfg,
//! requirements.txt as Inmanta rewrites them), `release` (git commits and tags, version bumps,
//! CHANGELOG.md), `list`, `status`, `push` and `verify` (on the modules our compiler loads),
//! `install` (Inmanta's refusal), `create` (from a template built in), `freeze` (v1 modules),
//! `v1tov2`, `download` (pip fetches the sdist; [`download`] unpacks it). The names, options and
//! outputs are Inmanta's (`inmanta/moduletool.py`).

mod archive;
pub mod build;
mod convert;
mod create;
pub mod download;
mod edit;
pub mod freeze;
mod listing;
mod manifest;
mod release;
pub mod requirement;
pub mod setup_cfg;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

/// `inmanta module` as Inmanta's argparse defines it.
#[derive(Parser)]
#[command(name = "inmanta module", about = "Subcommand to manage modules")]
pub struct ModuleArgs {
    /// Module to apply this command to
    #[arg(short, long)]
    pub module: Option<String>,
    /// Log level for messages going to the console (accepted as Inmanta's; this tool logs only
    /// warnings).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: ModuleCommand,
}

#[derive(Subcommand)]
pub enum ModuleCommand {
    /// Add a module dependency to an Inmanta module or project. When executed on a project, the
    /// module is installed as well.
    Add {
        /// The name of the module, optionally with a version constraint.
        module_req: String,
        /// Add the given module as a V2 module (the only kind; kept for compatibility).
        #[arg(long)]
        v2: bool,
        /// Override the version constraint when the given module dependency already exists.
        #[arg(long)]
        r#override: bool,
    },
    /// List all modules used in this project in a table
    List,
    /// Run a git status on all modules and report
    Status,
    /// Run a git push on all modules and report
    Push,
    /// Verify dependencies and frozen module versions
    Verify,
    /// Create a new module
    Create {
        /// The name of the module
        name: String,
        /// Create a v1 module. By default a v2 module is created.
        #[arg(long)]
        v1: bool,
    },
    /// Freeze all version numbers in module.yml. This command is only supported on v1 modules.
    /// On v2 modules use the pip freeze command instead.
    Freeze {
        /// File in which to put the new module.yml, default is the existing module.yml. Use - to
        /// write to stdout.
        #[arg(short, long)]
        outfile: Option<String>,
        /// Freeze dependencies recursively. If not set, freeze_recursive option in module.yml is
        /// used, which defaults to False
        #[arg(short, long)]
        recursive: bool,
        /// Comparison operator used to freeze versions, If not set, the freeze_operator option in
        /// module.yml is used which defaults to ~=
        #[arg(long, value_parser = ["==", "~=", ">="])]
        operator: Option<String>,
    },
    /// Convert a V1 module to a V2 module in place
    V1tov2,
    /// Download the source distribution of an Inmanta module from a Python package repository,
    /// extract it and convert it to its source format.
    Download {
        /// The name of the module, optionally with a version constraint.
        module_req: String,
        /// Install the downloaded module in editable mode into the active Python environment.
        #[arg(long)]
        install: bool,
        /// Download the module in this directory instead of the current working directory.
        #[arg(short, long)]
        directory: Option<PathBuf>,
    },
    /// This command is no longer supported.
    Install {
        /// Install in editable mode.
        #[arg(short, long)]
        editable: bool,
        /// The path to the module.
        path: Option<PathBuf>,
    },
    /// Build a Python package from a V2 module. By default, a wheel and a sdist package is built.
    Build {
        /// The path to the module that should be built. By default, the current working
        /// directory is used.
        path: Option<PathBuf>,
        /// The directory where the Python package will be stored. Default: <module_root>/dist
        #[arg(short, long = "output-dir")]
        output_dir: Option<PathBuf>,
        /// Perform a development build of the module. This adds the build tag
        /// `.dev<timestamp>` to the package name. The timestamp has the form %Y%m%d%H%M%S.
        #[arg(long = "dev")]
        dev_build: bool,
        /// Produce a module wheel that contains only python bytecode for the plugins.
        #[arg(short, long = "byte-code")]
        byte_code: bool,
        /// Build a wheel.
        #[arg(short, long)]
        wheel: bool,
        /// Build a sdist.
        #[arg(short, long)]
        sdist: bool,
    },
    /// Release a new stable or dev release for this module.
    Release {
        /// Create a development version. The new version number will have the .dev0 build tag.
        #[arg(long)]
        dev: bool,
        /// Do a major version bump compared to the previous stable release.
        #[arg(long)]
        major: bool,
        /// Do a minor version bump compared to the previous stable release.
        #[arg(long)]
        minor: bool,
        /// Do a patch version bump compared to the previous stable release.
        #[arg(long)]
        patch: bool,
        /// Do a revision version bump compared to the previous stable release (only with 4
        /// digits version).
        #[arg(long)]
        revision: bool,
        /// Commit message
        #[arg(short, long)]
        message: Option<String>,
        /// This changelog message will be written to the changelog file. If the -m option is
        /// not provided, this message will also be used as the commit message.
        #[arg(short, long = "changelog-message")]
        changelog_message: Option<String>,
        /// Use commit -a
        #[arg(short = 'a', long = "all")]
        commit_all: bool,
    },
}

/// Runs `inmanta module ARGS` (ARGS without `module`); `python` is `[compiler] python`.
pub fn run(args: &[String], python: Option<&std::path::Path>) -> std::process::ExitCode {
    let parsed =
        match ModuleArgs::try_parse_from(std::iter::once("inmanta module".to_string()).chain(args.iter().cloned())) {
            Ok(parsed) => parsed,
            Err(e) => {
                let _ = e.print();
                return std::process::ExitCode::from(if e.use_stderr() { 2 } else { 0 });
            }
        };
    let here = std::env::current_dir().unwrap_or_default();
    let module = parsed.module.as_deref();
    let result = match parsed.command {
        ModuleCommand::Add { module_req, v2: _, r#override } => edit::add(&module_req, r#override, python),
        ModuleCommand::List => listing::list(Path::new("."), python),
        ModuleCommand::Status => listing::status(Path::new("."), module, python),
        ModuleCommand::Push => listing::push(Path::new("."), module, python),
        ModuleCommand::Verify => listing::verify(Path::new("."), python),
        ModuleCommand::Create { name, v1 } => create::create(&here, &name, v1),
        ModuleCommand::Freeze { outfile, recursive, operator } => freeze::freeze_module(&freeze::ModuleFreezeRequest {
            dir: &here,
            module,
            outfile: outfile.as_deref(),
            recursive: recursive.then_some(true),
            operator: operator.as_deref(),
            python,
        }),
        ModuleCommand::V1tov2 => return v1tov2_command(&here, module),
        ModuleCommand::Download { module_req, install, directory } => {
            download::download_module(&here, &module_req, install, directory.as_deref(), python)
        }
        ModuleCommand::Install { .. } => Err(
            "The 'inmanta module install' command is no longer supported. For editable mode installation, use 'pip \
             install -e .'. For a regular installation, first run 'inmanta module build' and then 'pip install \
             ./dist/<dist-package>'."
                .to_string(),
        ),
        ModuleCommand::Build { path, output_dir, dev_build, byte_code, wheel, sdist } => {
            build_command(path, output_dir, dev_build, byte_code, wheel, sdist)
        }
        ModuleCommand::Release { dev, major, minor, patch, revision, message, changelog_message, commit_all } => {
            release::release(&release::ReleaseRequest {
                dir: &std::env::current_dir().unwrap_or_default(),
                dev,
                bump: release::ChangeType::from_flags(revision, patch, minor, major),
                message: message.as_deref(),
                changelog_message: changelog_message.as_deref(),
                commit_all,
            })
        }
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            std::process::ExitCode::from(1)
        }
    }
}

/// `inmanta module v1tov2`: exit 5 for a module that is v2 already, as Inmanta's
/// `ModuleVersionException`.
fn v1tov2_command(dir: &Path, module: Option<&str>) -> std::process::ExitCode {
    let result =
        convert::module_dir(dir, module).map_err(convert::ConvertError::Refused).and_then(|d| convert::v1tov2(&d));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(convert::ConvertError::WrongGeneration(message)) => {
            eprintln!("{message}");
            std::process::ExitCode::from(convert::WRONG_GENERATION_EXIT)
        }
        Err(convert::ConvertError::Refused(message)) => {
            eprintln!("{message}");
            std::process::ExitCode::from(1)
        }
    }
}

fn build_command(
    path: Option<PathBuf>,
    output_dir: Option<PathBuf>,
    dev_build: bool,
    byte_code: bool,
    wheel: bool,
    sdist: bool,
) -> Result<(), String> {
    if byte_code {
        return Err(
            "`inmanta module build --byte-code` compiles the plugins with Python and Cython: this binary does not \
             (docs/cli.md); build without -b"
                .to_string(),
        );
    }
    let distributions = match (wheel, sdist) {
        (true, false) => vec![build::Distribution::Wheel],
        (false, true) => vec![build::Distribution::Sdist],
        _ => vec![build::Distribution::Wheel, build::Distribution::Sdist],
    };
    let dir = path.unwrap_or_else(|| std::env::current_dir().unwrap_or_default());
    let made = build::build(&build::BuildRequest {
        module_dir: &dir,
        output_dir: output_dir.as_deref(),
        dev_build,
        distributions,
        timestamp: chrono::Utc::now(),
    })
    .map_err(|e| format!("Module build failed: {e}"))?;
    for path in made {
        eprintln!("Built {}", path.display());
    }
    Ok(())
}
