//! The commands of Inmanta's `inmanta` that this binary does not implement (`module ...`,
//! `project freeze`, `project download`): our binary takes the place of Inmanta's on the PATH,
//! so instead of refusing them it hands them to Inmanta's own CLI (`inmanta.app`) of
//! the project's Python environment, when inmanta-core is installed there. The exit code is
//! Inmanta's.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use compiler::python::env;

/// Runs `inmanta ARGS` with Inmanta's CLI of the interpreter of `[compiler] python` /
/// `INMANTA_COMPILER_PYTHON`, else of the project's `.env` in the current directory.
pub fn run(args: &[String], configured: Option<&Path>) -> ExitCode {
    let python = match env::configured_python(configured) {
        Some((python, _)) => python,
        None => PathBuf::from(env::PROJECT_VENV).join("bin").join("python"),
    };
    let shown = format!("inmanta {}", args.join(" "));
    let has_inmanta = Command::new(&python)
        .args(["-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('inmanta.app') is None)"])
        // Without the `inmanta` package find_spec raises: that is the answer, not an error to show.
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_inmanta {
        eprintln!(
            "error: `{shown}` is one of Inmanta's commands this binary runs through Inmanta's own CLI, and {} has \
             no inmanta-core: install it there (`{} -m pip install inmanta-core`) or name a Python that has it \
             with INMANTA_COMPILER_PYTHON or [compiler] python (docs/cli.md, \"Inmanta 20.1's commands\")",
            python.display(),
            python.display()
        );
        return ExitCode::from(2);
    }
    tracing::info!(python = %python.display(), command = %shown, "handing the command to Inmanta's CLI");
    // As Inmanta's `inmanta` script starts it, so its usage lines say `inmanta`, not `app.py`.
    let start = "import sys; from inmanta.app import app; sys.argv[0] = 'inmanta'; app()";
    match Command::new(&python).args(["-c", start]).args(args).status() {
        Ok(status) => ExitCode::from(status.code().and_then(|c| u8::try_from(c).ok()).unwrap_or(1)),
        Err(e) => {
            eprintln!("error: cannot run {}: {e}", python.display());
            ExitCode::from(2)
        }
    }
}
