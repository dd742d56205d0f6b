//! Which Python runs a project's module code, and where its installed modules are.
//!
//! Self-contained (standard library only) so the agent side can use the same rules:
//!
//! 1. the interpreter named by `[compiler] python` (passed in by the caller) or by the
//!    `INMANTA_COMPILER_PYTHON` environment variable;
//! 2. otherwise the project's own virtual environment, `<project>/.env` (where
//!    `inmanta project install` puts it, as Inmanta does).
//!
//! Nothing is started to find an environment that is a virtual environment: its site-packages
//! directory is found on disk. A model without Python modules never pays for Python.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The environment variable naming the interpreter (same as `[compiler] python`).
pub const PYTHON_ENV_VAR: &str = "INMANTA_COMPILER_PYTHON";

/// The project's own virtual environment, relative to the project directory.
pub const PROJECT_VENV: &str = ".env";

/// The oldest Python that the modules of the package index run on (std 8.7.5 needs 3.12).
pub const MIN_VERSION: (u32, u32) = (3, 12);

/// A Python environment: its interpreter and the directories its packages are installed in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonEnv {
    pub python: PathBuf,
    /// `site-packages` directories (the `inmanta_plugins/` of v2 modules is inside), and those
    /// their `.pth` files add with `site.addsitedir` (a venv inheriting another's packages).
    pub site_packages: Vec<PathBuf>,
    /// Modules installed in editable mode (`pip install -e .`): name and source directory (the
    /// one with `model/` and `setup.cfg`), reached through a `.pth` file as Python reaches them.
    pub editable_modules: Vec<(String, PathBuf)>,
    /// Where the interpreter was named (for messages).
    pub origin: Origin,
}

/// Where the interpreter came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Configured,
    EnvironmentVariable,
    ProjectVenv,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Configured => "[compiler] python",
            Origin::EnvironmentVariable => PYTHON_ENV_VAR,
            Origin::ProjectVenv => "the project's virtual environment (.env)",
        })
    }
}

/// Why no usable environment was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvError {
    /// The named interpreter does not exist or does not run.
    NotRunnable { python: PathBuf, origin: Origin, reason: String },
    /// Nothing was configured and the project has no virtual environment.
    Missing { project_venv: PathBuf },
    /// No interpreter of at least [`MIN_VERSION`] to create a virtual environment with.
    NoInterpreter { tried: Vec<String> },
}

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvError::NotRunnable { python, origin, reason } => {
                write!(f, "the Python interpreter {} (from {origin}) can not be used: {reason}", python.display())
            }
            EnvError::Missing { project_venv } => write!(
                f,
                "no Python environment: {} does not exist; run `inmanta project install` in the project, \
                 or name an interpreter with [compiler] python or {PYTHON_ENV_VAR}",
                project_venv.display()
            ),
            EnvError::NoInterpreter { tried } => write!(
                f,
                "no Python {}.{} or newer found (tried {}); install one (e.g. `pyenv install 3.13`) or name it with \
                 [compiler] python or {PYTHON_ENV_VAR}",
                MIN_VERSION.0,
                MIN_VERSION.1,
                tried.join(", ")
            ),
        }
    }
}

impl std::error::Error for EnvError {}

/// The interpreter named by configuration or the environment variable, if any.
pub fn configured_python(configured: Option<&Path>) -> Option<(PathBuf, Origin)> {
    if let Some(p) = configured.filter(|p| !p.as_os_str().is_empty()) {
        return Some((p.to_path_buf(), Origin::Configured));
    }
    std::env::var_os(PYTHON_ENV_VAR).filter(|v| !v.is_empty()).map(|v| (PathBuf::from(v), Origin::EnvironmentVariable))
}

/// The environment whose modules a compile of `project_dir` uses: `Ok(None)` when nothing is
/// configured and the project has no virtual environment (fine for models without Python).
pub fn discover(project_dir: &Path, configured: Option<&Path>) -> Result<Option<PythonEnv>, EnvError> {
    if let Some((python, origin)) = configured_python(configured) {
        return from_interpreter(&python, origin).map(Some);
    }
    let venv = project_dir.join(PROJECT_VENV);
    let python = venv.join("bin").join("python");
    if !python.exists() {
        return Ok(None);
    }
    from_interpreter(&python, Origin::ProjectVenv).map(Some)
}

/// An environment from its interpreter: a virtual environment's site-packages is read from
/// disk; any other interpreter is asked.
pub fn from_interpreter(python: &Path, origin: Origin) -> Result<PythonEnv, EnvError> {
    let not_runnable = |reason: String| EnvError::NotRunnable { python: python.to_path_buf(), origin, reason };
    if python.components().count() > 1 && !python.exists() {
        return Err(not_runnable("the file does not exist".into()));
    }
    if let Some(root) = venv_root(python) {
        let site = venv_site_packages(&root);
        if !site.is_empty() {
            return Ok(PythonEnv::new(python, site, origin));
        }
    }
    let out = Command::new(python)
        .args(["-c", "import site, sys; print('\\n'.join(site.getsitepackages()))"])
        .output()
        .map_err(|e| not_runnable(e.to_string()))?;
    if !out.status.success() {
        return Err(not_runnable(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    let site_packages =
        String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.is_empty()).map(PathBuf::from).collect();
    Ok(PythonEnv::new(python, site_packages, origin))
}

/// The root of the virtual environment an interpreter belongs to (`<root>/bin/python`, with a
/// `pyvenv.cfg` in `<root>`).
pub fn venv_root(python: &Path) -> Option<PathBuf> {
    let root = python.parent()?.parent()?;
    root.join("pyvenv.cfg").is_file().then(|| root.to_path_buf())
}

fn venv_site_packages(root: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(root.join("lib"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
        .map(|e| e.path().join("site-packages"))
        .filter(|p| p.is_dir())
        .collect();
    found.sort();
    found
}

impl PythonEnv {
    /// The environment of `python` whose site directories are `site`, with what their `.pth`
    /// files add.
    fn new(python: &Path, mut site: Vec<PathBuf>, origin: Origin) -> PythonEnv {
        let added = super::pth::read(&site);
        site.extend(added.site_dirs);
        let installed: Vec<PathBuf> = site.iter().map(|s| s.join(PLUGINS_PACKAGE)).collect();
        let mut packages: Vec<(String, PathBuf)> = Vec::new();
        for portion in added.plugin_portions.iter().filter(|p| !installed.contains(p)) {
            let mut children: Vec<(String, PathBuf)> = std::fs::read_dir(portion)
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok())
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                .collect();
            children.sort();
            packages.extend(children);
        }
        packages.extend(added.plugin_packages);
        let mut editable_modules: Vec<(String, PathBuf)> = Vec::new();
        for (name, package) in packages {
            if let Some(root) = module_root(&package)
                && !editable_modules.iter().any(|(n, _)| *n == name)
            {
                editable_modules.push((name, root));
            }
        }
        PythonEnv { python: python.to_path_buf(), site_packages: site, editable_modules, origin }
    }

    /// The directories v2 modules are installed in (`site-packages/inmanta_plugins`).
    pub fn module_dirs(&self) -> Vec<PathBuf> {
        self.site_packages.iter().map(|s| s.join(PLUGINS_PACKAGE)).filter(|p| p.is_dir()).collect()
    }
}

/// The Python package v2 modules are installed in.
const PLUGINS_PACKAGE: &str = "inmanta_plugins";

/// The module whose Python package is `package` (`inmanta_plugins/<name>/`), as Inmanta finds
/// it: the package itself when it holds `setup.cfg` (an installed wheel, `model/` inside), else
/// the source tree two levels up when that holds `setup.cfg` (an editable install). Symbolic
/// links are resolved first: the model files are beside the real package, not the link.
fn module_root(package: &Path) -> Option<PathBuf> {
    let package = std::fs::canonicalize(package).ok()?;
    if !package.join("__init__.py").is_file() {
        return None;
    }
    if package.join("setup.cfg").is_file() {
        return Some(package);
    }
    let root = package.parent()?.parent()?;
    root.join("setup.cfg").is_file().then(|| root.to_path_buf())
}

/// The interpreter's `major.minor`, by running it.
pub fn version_of(python: &Path) -> Option<(u32, u32)> {
    let out = Command::new(python)
        .args(["-c", "import sys; print(sys.version_info[0], sys.version_info[1])"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text.split_whitespace().map(|p| p.parse::<u32>().ok());
    Some((parts.next()??, parts.next()??))
}

/// A base interpreter of at least [`MIN_VERSION`] to create a virtual environment with: the
/// configured one, then `python3.13`, `python3.12` (PATH, then pyenv's versions), then `python3`.
pub fn find_base_interpreter(configured: Option<&Path>) -> Result<PathBuf, EnvError> {
    if let Some((python, origin)) = configured_python(configured) {
        return match version_of(&python) {
            Some(v) if v >= MIN_VERSION => Ok(python),
            Some((a, b)) => Err(EnvError::NotRunnable {
                python,
                origin,
                reason: format!("it is Python {a}.{b}; {}.{} or newer is needed", MIN_VERSION.0, MIN_VERSION.1),
            }),
            None => Err(EnvError::NotRunnable { python, origin, reason: "it does not run".into() }),
        };
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    for name in ["python3.13", "python3.12"] {
        candidates.extend(which(name));
    }
    let pyenv_root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")));
    if let Some(root) = pyenv_root {
        let mut versions: Vec<PathBuf> = std::fs::read_dir(root.join("versions"))
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("3."))
            .map(|e| e.path().join("bin").join("python"))
            .collect();
        versions.sort();
        versions.reverse();
        candidates.extend(versions);
    }
    candidates.extend(which("python3"));
    let mut tried = Vec::new();
    for c in candidates {
        match version_of(&c) {
            Some(v) if v >= MIN_VERSION => return Ok(c),
            Some((a, b)) => tried.push(format!("{} ({a}.{b})", c.display())),
            None => tried.push(format!("{} (does not run)", c.display())),
        }
    }
    if tried.is_empty() {
        tried.push("python3.13, python3.12, python3 on PATH and pyenv".into());
    }
    Err(EnvError::NoInterpreter { tried })
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_without_venv_has_no_environment() {
        let dir = std::env::temp_dir().join(format!("pyenv-none-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // the variable may be set by whoever runs the tests: only check the project rule
        if configured_python(None).is_none() {
            assert_eq!(discover(&dir, None), Ok(None));
        }
        let err = discover(&dir, Some(Path::new("/nonexistent/bin/python"))).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/bin/python"), "{err}");
        assert!(err.to_string().contains("[compiler] python"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_venv_is_found_on_disk() {
        let dir = std::env::temp_dir().join(format!("pyenv-venv-{}", std::process::id()));
        let site = dir.join(".env/lib/python3.12/site-packages");
        std::fs::create_dir_all(site.join("inmanta_plugins")).unwrap();
        std::fs::create_dir_all(dir.join(".env/bin")).unwrap();
        std::fs::write(dir.join(".env/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        std::fs::write(dir.join(".env/bin/python"), "").unwrap();
        if configured_python(None).is_none() {
            let env = discover(&dir, None).unwrap().unwrap();
            assert_eq!(env.origin, Origin::ProjectVenv);
            assert_eq!(env.site_packages, vec![site.clone()]);
            assert_eq!(env.module_dirs(), vec![site.join("inmanta_plugins")]);
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
