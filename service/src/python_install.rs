//! Installing a project's v2 modules (Python packages `inmanta-module-<name>`) and their Python
//! dependencies from the package index into the project's virtual environment: `inmanta project
//! install`, and the same step of the server's compiles.
//!
//! What is installed: every `requires` entry of project.yml that is not a v1 module present in
//! the module path (`apt ~= 1.0` becomes `inmanta-module-apt~=1.0`), and the lines of
//! `requirements.txt`. The `pip` section of project.yml is honoured: `index_url`,
//! `extra_index_url`, `pre`, `use_system_config` (false, the default: pip's own configuration
//! files and `PIP_*` variables are ignored, as Inmanta does).
//!
//! Where: the environment of the interpreter named by `[compiler] python` /
//! `INMANTA_COMPILER_PYTHON` when that is a virtual environment, else `<project>/.env`, created
//! with the first Python >= 3.12 found. The compiler finds the modules there (see
//! `compiler::python::env`).

use std::path::{Path, PathBuf};
use std::process::Command;

use compiler::python::env;

/// What an install does, decided before anything runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallPlan {
    /// The pip requirements, in order.
    pub requirements: Vec<String>,
    /// Extra pip arguments from the `pip` section.
    pub pip_args: Vec<String>,
    /// Keep pip's own configuration (`pip: use_system_config: true`).
    pub use_system_config: bool,
    /// Required modules that are not installed from the package index, and why.
    pub notes: Vec<String>,
}

/// Reads project.yml and requirements.txt of `dir`.
pub fn plan(dir: &Path) -> Result<InstallPlan, String> {
    let project = compiler::project_yml::read(dir, &mut Vec::new()).map_err(|e| e.message)?;
    let modulepath = project.module_path();
    let mut requirements = Vec::new();
    let mut notes = Vec::new();
    for requirement in project.requirements() {
        let name = &requirement.name;
        // A built-in module without a version constraint needs no install; one pinned to a
        // version is installed, and the installed copy is then what the compiler uses.
        if compiler::BUILTIN_MODULES.contains(&name.as_str()) && requirement.constraint.is_empty() {
            notes.push(format!(
                "module {name}: the compiler's built-in {name} is used (no version asked; native, no Python \
                 needed); name a version (`{name} ~= x.y`) to install and use that one instead"
            ));
            continue;
        }
        if modulepath.iter().any(|m| dir.join(m).join(name).join("module.yml").is_file()) {
            notes.push(format!("module {name}: a v1 module on the module path, not installed from the package index"));
            continue;
        }
        requirements.push(requirement.python_package());
    }
    if let Ok(text) = std::fs::read_to_string(dir.join("requirements.txt")) {
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if !line.is_empty() && !requirements.iter().any(|r| r == line) {
                requirements.push(line.to_string());
            }
        }
    }
    let pip = project.pip;
    let mut pip_args = Vec::new();
    if let Some(url) = pip.index_url {
        pip_args.extend(["--index-url".to_string(), url]);
    }
    for url in pip.extra_index_url {
        pip_args.extend(["--extra-index-url".to_string(), url]);
    }
    if pip.pre {
        pip_args.push("--pre".into());
    }
    Ok(InstallPlan { requirements, pip_args, use_system_config: pip.use_system_config, notes })
}

/// The interpreter of the environment to install into, creating `<dir>/.env` when needed.
pub fn target_environment(
    dir: &Path,
    configured: Option<&Path>,
    log: &mut dyn FnMut(String),
) -> Result<PathBuf, String> {
    if let Some((python, origin)) = env::configured_python(configured)
        && env::venv_root(&python).is_some()
    {
        log(format!("installing into the virtual environment of {} (from {origin})", python.display()));
        return Ok(python);
    }
    let venv = dir.join(env::PROJECT_VENV);
    let python = venv.join("bin").join("python");
    if python.exists() {
        return Ok(python);
    }
    let base = env::find_base_interpreter(configured).map_err(|e| e.to_string())?;
    log(format!("creating the virtual environment {} with {}", venv.display(), base.display()));
    run(Command::new(&base).arg("-m").arg("venv").arg(&venv), "python -m venv")?;
    Ok(python)
}

/// Installs what [`plan`] says; progress and notes go to `log`.
pub fn install(dir: &Path, configured: Option<&Path>, log: &mut dyn FnMut(String)) -> Result<(), String> {
    install_with(dir, configured, false, log)
}

/// [`install`], or with `update` (`inmanta project update`) also every installed module and
/// its Python dependencies to the newest versions the constraints allow (pip's eager upgrade,
/// as Inmanta does).
pub fn install_with(
    dir: &Path,
    configured: Option<&Path>,
    update: bool,
    log: &mut dyn FnMut(String),
) -> Result<(), String> {
    let plan = plan(dir)?;
    for note in &plan.notes {
        log(note.clone());
    }
    if plan.requirements.is_empty() {
        log("no Python packages to install: every required module is built in or on the module path".into());
        return Ok(());
    }
    let python = target_environment(dir, configured, log)?;
    log(format!("pip install {}{}", if update { "--upgrade " } else { "" }, plan.requirements.join(" ")));
    let mut cmd = Command::new(&python);
    cmd.args(["-m", "pip", "install", "--disable-pip-version-check", "--quiet"])
        .args(&plan.pip_args)
        .args(if update { &["--upgrade", "--upgrade-strategy", "eager"][..] } else { &[] })
        .args(&plan.requirements)
        .current_dir(dir);
    if !plan.use_system_config {
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("PIP_") {
                cmd.env_remove(name);
            }
        }
        cmd.env("PIP_CONFIG_FILE", "/dev/null");
    }
    run(&mut cmd, "pip install")
}

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{what}: cannot start: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
    Err(format!("{what} failed ({}):\n{}", out.status, tail.into_iter().rev().collect::<Vec<_>>().join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requires_become_packages_and_native_modules_are_explained() {
        let dir = std::env::temp_dir().join(format!("install-plan-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("libs/local/")).unwrap();
        std::fs::write(dir.join("libs/local/module.yml"), "name: local\n").unwrap();
        std::fs::write(
            dir.join("project.yml"),
            "name: p\nrequires:\n  - apt ~= 1.1\n  - std\n  - exec == 2.0.0\n  - local\n  - inmanta-module-yum>=2\npip:\n  index_url: https://pypi.example/simple\n  pre: true\n",
        )
        .unwrap();
        std::fs::write(dir.join("requirements.txt"), "# extra\ninmanta-module-podman==1.13.4\n").unwrap();
        let p = plan(&dir).unwrap();
        assert_eq!(
            p.requirements,
            [
                "inmanta-module-apt~=1.1",
                "inmanta-module-exec==2.0.0",
                "inmanta-module-yum>=2",
                "inmanta-module-podman==1.13.4"
            ]
        );
        assert_eq!(p.pip_args, ["--index-url", "https://pypi.example/simple", "--pre"]);
        assert!(!p.use_system_config);
        assert_eq!(p.notes.len(), 2);
        assert!(p.notes[0].contains("built-in std"), "{:?}", p.notes);
        std::fs::remove_dir_all(&dir).ok();
    }
}
