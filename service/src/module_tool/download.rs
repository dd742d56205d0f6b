//! `inmanta module download` and `inmanta project download`: a module's source distribution
//! fetched from the package index with pip, unpacked and laid out again in the module's source
//! form, as Inmanta 20.1's `PythonPackageToSourceConverter` does (model/, files/, templates/ and
//! setup.cfg moved from inmanta_plugins/<name>/ to the top). pip is the one of the Python
//! environment the modules live in (`[compiler] python`, else the project's `.env`, else the
//! first Python found), as Inmanta runs the pip of its own environment.

use std::path::{Path, PathBuf};
use std::process::Command;

use compiler::python::env;

use super::requirement::{ModuleRequirement, PythonRequirement, canonical_name};

/// How pip is run: with which Python, index arguments, and whether pip's own configuration
/// counts (a project's `pip.use_system_config`; a plain `module download` keeps it, as Inmanta).
pub struct Pip {
    pub python: PathBuf,
    pub index_args: Vec<String>,
    pub use_system_config: bool,
}

impl Pip {
    /// The pip of the environment of `dir` (see the module documentation).
    pub fn of(dir: &Path, configured: Option<&Path>) -> Result<Pip, String> {
        let python = match env::configured_python(configured) {
            Some((python, _)) => python,
            None => {
                let venv = dir.join(env::PROJECT_VENV).join("bin").join("python");
                if venv.exists() { venv } else { env::find_base_interpreter(configured).map_err(|e| e.to_string())? }
            }
        };
        Ok(Pip { python, index_args: Vec::new(), use_system_config: true })
    }

    fn command(&self, cwd: &Path) -> Command {
        let mut command = Command::new(&self.python);
        command.args(["-m", "pip"]).current_dir(cwd);
        if !self.use_system_config {
            for (name, _) in std::env::vars_os() {
                if name.to_string_lossy().starts_with("PIP_") {
                    command.env_remove(name);
                }
            }
            command.env("PIP_CONFIG_FILE", "/dev/null");
        }
        command
    }

    /// `pip download` into `output_dir` (pip's working directory, as Inmanta runs it).
    fn download(&self, output_dir: &Path, request: &DownloadRequest<'_>) -> Result<(), PipError> {
        let constraints_file = tempfile::NamedTempFile::new().map_err(|e| PipError::Failed(e.to_string()))?;
        let mut command = self.command(output_dir);
        command.arg("download").args(&self.index_args);
        if request.no_deps {
            command.arg("--no-deps");
        }
        if let Some(name) = request.no_binary {
            command.args(["--no-binary", name]);
        }
        if !request.constraints.is_empty() {
            let text: Vec<String> = request.constraints.iter().map(ToString::to_string).collect();
            std::fs::write(constraints_file.path(), text.join("\n")).map_err(|e| PipError::Failed(e.to_string()))?;
            command.arg("-c").arg(constraints_file.path());
        }
        command.args(request.dependencies.iter().map(ToString::to_string));
        let output = command.output().map_err(|e| PipError::Failed(format!("{}: {e}", self.python.display())))?;
        if output.status.success() {
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        if stderr.contains("No matching distribution found") {
            return Err(PipError::NotFound);
        }
        Err(PipError::Failed(format!("pip download failed ({}):\n{}", output.status, stderr.trim_end())))
    }

    /// `pip install -e PATH...` (with `-c` constraints), as `--install` does.
    pub fn install_editable(&self, paths: &[PathBuf], constraints: &[PythonRequirement]) -> Result<(), String> {
        let constraints_file = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
        let mut command = self.command(Path::new("."));
        command.args(["install", "--quiet"]).args(&self.index_args);
        if !constraints.is_empty() {
            let text: Vec<String> = constraints.iter().map(ToString::to_string).collect();
            std::fs::write(constraints_file.path(), text.join("\n")).map_err(|e| e.to_string())?;
            command.arg("-c").arg(constraints_file.path());
        }
        for path in paths {
            command.arg("-e").arg(path);
        }
        let output = command.output().map_err(|e| format!("{}: {e}", self.python.display()))?;
        if output.status.success() {
            return Ok(());
        }
        Err(format!("pip install failed ({}):\n{}", output.status, String::from_utf8_lossy(&output.stderr).trim_end()))
    }
}

enum PipError {
    /// pip's "No matching distribution found": Inmanta's `PackageNotFound`.
    NotFound,
    Failed(String),
}

struct DownloadRequest<'a> {
    dependencies: &'a [PythonRequirement],
    constraints: &'a [PythonRequirement],
    no_deps: bool,
    no_binary: Option<&'a str>,
}

/// `inmanta module download MODULE_REQ [--install] [-d DIR]`.
pub fn download_module(
    dir: &Path,
    module_req: &str,
    install: bool,
    directory: Option<&Path>,
    python: Option<&Path>,
) -> Result<(), String> {
    let requirement =
        ModuleRequirement::parse(module_req).map_err(|_| format!("'{module_req}' is not a valid requirement"))?;
    let output_dir = directory.map_or_else(|| dir.to_path_buf(), Path::to_path_buf);
    let pip = Pip::of(dir, python)?;
    let dependencies = [requirement.python_package().canonical()];
    let paths = download_in_source_format(&pip, &output_dir, &dependencies, &[], true, false)?;
    let [path] = paths.as_slice() else {
        return Err(format!("{module_req}: no source distribution of the module on the package index"));
    };
    if install {
        pip.install_editable(std::slice::from_ref(path), &[])?;
    }
    Ok(())
}

/// `inmanta project download [--install]`: every module among the project's dependencies
/// (requirements.txt) and theirs, within the constraints of project.yml's `requires`, into the
/// project's `downloadpath` (default `libs`), each replacing a directory of the same name.
pub fn download_project(dir: &Path, install: bool, python: Option<&Path>) -> Result<(), String> {
    let metadata = compiler::read_project_metadata(dir).map_err(|d| d.to_string())?;
    let downloadpath = metadata.downloadpath.as_deref().map_or_else(|| dir.join("libs"), |p| dir.join(p));
    std::fs::create_dir_all(&downloadpath).map_err(|e| format!("{}: {e}", downloadpath.display()))?;
    let dependencies: Vec<PythonRequirement> =
        super::requirement::requirements_txt_lines(&dir.join("requirements.txt"))
            .iter()
            .filter_map(|l| PythonRequirement::parse(l).ok())
            .map(PythonRequirement::canonical)
            .collect();
    if dependencies.is_empty() {
        return Ok(());
    }
    let constraints: Vec<PythonRequirement> = metadata
        .requires
        .iter()
        .filter_map(|r| ModuleRequirement::parse(r).ok())
        .map(|r| r.python_package().canonical())
        .collect();
    let plan = crate::python_install::plan(dir)?;
    let mut pip = Pip::of(dir, python)?;
    pip.index_args = plan.pip_args;
    pip.use_system_config = plan.use_system_config;
    let paths = download_in_source_format(&pip, &downloadpath, &dependencies, &constraints, false, true)?;
    if install && !paths.is_empty() {
        let mut all = dependencies;
        all.extend(constraints);
        pip.install_editable(&paths, &all)?;
    }
    Ok(())
}

/// Downloads the sdists of `dependencies` (and, unless `ignore_transitive`, of the modules they
/// need), unpacks each into `output_dir/<module>` in source form; the paths made.
fn download_in_source_format(
    pip: &Pip,
    output_dir: &Path,
    dependencies: &[PythonRequirement],
    constraints: &[PythonRequirement],
    ignore_transitive: bool,
    replace_existing: bool,
) -> Result<Vec<PathBuf>, String> {
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (resolved, download) = (work.path().join("resolved"), work.path().join("download"));
    for d in [&resolved, &download] {
        std::fs::create_dir(d).map_err(|e| e.to_string())?;
    }
    // Which versions: with one dependency and no constraints it is the dependency itself; else
    // pip resolves them all and the module packages among its downloads are pinned.
    let requirements: Vec<PythonRequirement> = if dependencies.len() == 1 && constraints.is_empty() {
        dependencies.to_vec()
    } else {
        let request = DownloadRequest { dependencies, constraints, no_deps: false, no_binary: None };
        pip.download(&resolved, &request).map_err(|e| match e {
            PipError::NotFound => "pip found no distribution for the dependencies".to_string(),
            PipError::Failed(message) => message,
        })?;
        let names: Vec<String> = dependencies.iter().map(|d| canonical_name(&d.name)).collect();
        let mut pinned = Vec::new();
        for file in sorted_files(&resolved)? {
            let Some((package, version)) = package_and_version(&file) else { continue };
            if !package.starts_with("inmanta-module-") || ignore_transitive && !names.contains(&package) {
                continue;
            }
            pinned.extend(PythonRequirement::parse(&format!("{package}=={version}")));
        }
        pinned
    };
    for requirement in &requirements {
        let name = canonical_name(&requirement.name);
        let request = DownloadRequest {
            dependencies: std::slice::from_ref(requirement),
            constraints,
            no_deps: true,
            no_binary: Some(&name),
        };
        match pip.download(&download, &request) {
            Ok(()) => {}
            Err(PipError::NotFound) => println!(
                "inmanta.moduletool       WARNING Package {requirement} is not available as a source distribution \
                 package. Skipping it."
            ),
            Err(PipError::Failed(message)) => return Err(message),
        }
    }
    let mut made = Vec::new();
    for file in sorted_files(&download)? {
        let Some((package, _)) = package_and_version(&file) else { continue };
        let Some(module) = package.strip_prefix("inmanta-module-").map(|m| m.replace('-', "_")) else { continue };
        let target = output_dir.join(&module);
        if target.exists() {
            if !replace_existing {
                return Err(format!("Directory {} already exists", target.display()));
            }
            std::fs::remove_dir_all(&target).map_err(|e| format!("{}: {e}", target.display()))?;
        }
        unpack_in_source_format(&download.join(&file), &target, &module)?;
        made.push(target);
    }
    Ok(made)
}

fn sorted_files(dir: &Path) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// The package (canonical) and version of a wheel or sdist file name.
fn package_and_version(file: &str) -> Option<(String, String)> {
    let stem =
        file.strip_suffix(".whl").or_else(|| file.strip_suffix(".tar.gz")).or_else(|| file.strip_suffix(".zip"))?;
    let mut parts = stem.splitn(3, '-');
    let (name, version) = (parts.next()?, parts.next()?);
    Some((canonical_name(name), version.to_string()))
}

/// The sdist unpacked into `target`: its one top directory's content, with setup.cfg, model/,
/// files/ and templates/ of inmanta_plugins/<module>/ moved to the top (the top setup.cfg,
/// which setuptools wrote, replaced by the module's own).
fn unpack_in_source_format(sdist: &Path, target: &Path, module: &str) -> Result<(), String> {
    let bytes = std::fs::read(sdist).map_err(|e| format!("{}: {e}", sdist.display()))?;
    let entries = super::archive::read_tar_gz(&bytes).map_err(|e| format!("{}: {e}", sdist.display()))?;
    let inner = format!("inmanta_plugins/{module}/");
    let moved = ["model", "templates", "files", "setup.cfg"];
    for entry in entries {
        let Some((_, relative)) = entry.path.split_once('/') else { continue };
        let relative = match relative.strip_prefix(&inner) {
            Some(rest) if moved.iter().any(|m| rest == *m || rest.starts_with(&format!("{m}/"))) => rest,
            _ if relative == "setup.cfg" => continue,
            _ => relative,
        };
        let path = target.join(relative);
        if entry.is_dir {
            std::fs::create_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&path, &entry.data).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    std::fs::create_dir_all(target).map_err(|e| format!("{}: {e}", target.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_file_names_give_package_and_version() {
        assert_eq!(
            package_and_version("inmanta_module_files-2.11.1.tar.gz"),
            Some(("inmanta-module-files".into(), "2.11.1".into()))
        );
        assert_eq!(
            package_and_version("inmanta_module_std-8.7.5-py3-none-any.whl"),
            Some(("inmanta-module-std".into(), "8.7.5".into()))
        );
    }
}
