//! The `inmantals` package (packaging/inmantals) started the way vscode-inmanta and the Zed
//! extension start their language server: installed with pip in a virtual environment, then
//! `<venv python> -m inmantals.pipeserver`, which must speak LSP on its stdin/stdout.

mod client;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use client::{Client, file_uri};

fn python3() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).map(|d| d.join("python3")).find(|p| p.is_file());
    test_support::require("python3 on PATH", found.ok_or("not found"))
}

fn run(command: &mut Command) -> Result<(), String> {
    let out = command.output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    }
}

#[test]
fn python_m_inmantals_pipeserver_speaks_lsp_after_pip_install() {
    let Some(python) = python3() else { return };
    let work = tempfile::tempdir().expect("temp dir");
    let venv = work.path().join("venv");
    let made = run(Command::new(&python).args(["-m", "venv"]).arg(&venv));
    let Some(()) = test_support::require("python3 -m venv", made) else { return };
    let vpython = venv.join("bin/python");
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/inmantals");
    let installed = run(Command::new(&vpython)
        .args(["-m", "pip", "install", "--quiet"])
        .arg(&package)
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1"));
    installed.expect("pip installs packaging/inmantals");
    // what the extension checks before it starts the server
    let show = Command::new(&vpython).args(["-m", "pip", "show", "inmantals"]).output().expect("pip show");
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(shown.contains("Version: 1.8.0+rust"), "{shown}");

    let project = work.path().join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    std::fs::write(project.join("project.yml"), "name: demo\n").expect("write");
    std::fs::write(project.join("main.cf"), "x = 1\n").expect("write");
    let main = project.join("main.cf");
    let mut command = Command::new(&vpython);
    command
        .args(["-m", "inmantals.pipeserver"])
        .current_dir(&project)
        .env("INMANTALS_INMANTA", env!("CARGO_BIN_EXE_inmanta-lsp"))
        .env("XDG_CACHE_HOME", work.path().join("cache"));
    let (mut c, init) = Client::start(command, &project);
    assert_eq!(init["capabilities"]["hoverProvider"], true, "{init}");
    c.open(&main, "x = \ny = 1\n");
    let found = c
        .diagnostics_until(&file_uri(&main), Duration::from_secs(60), |d| !d.is_empty())
        .expect("diagnostics through the pipe server");
    assert_eq!(found[0]["range"]["start"]["line"], 0, "{found:?}");
    assert!(c.stop().success());
}
