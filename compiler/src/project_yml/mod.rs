//! `project.yml`: the one reader of a project's metadata. The compiler, `inmanta project install`
//! and the server's compiles (which fetch the modules of `requires` from the `repo` entries) all
//! read it through [`read`], so a key means the same thing to each of them.

mod requirement;

use crate::diagnostics::ErrorKind;
use std::path::Path;

use serde_json::Value;

pub use requirement::{Requirement, Version};

use crate::diagnostics::{Diagnostic, Severity};

/// The project's own module directory: searched after `modulepath`, and where the server's
/// compiles fetch modules when neither `downloadpath` nor `modulepath` is set.
pub const LIBS: &str = "libs";

/// The parsed `project.yml`.
#[derive(Debug, Default, Clone)]
pub struct ProjectMetadata {
    pub name: String,
    pub description: Option<String>,
    /// Directories of v1 modules, relative to the project.
    pub modulepath: Vec<String>,
    /// Where the server's compiles fetch v1 modules into ([`ProjectMetadata::download_path`]).
    pub downloadpath: Option<String>,
    /// The `requires` entries as written: `name`, `name ~= 1.2`, `name >= 1.0, < 2`.
    pub requires: Vec<String>,
    /// Where modules come from, in order.
    pub repo: Vec<ModuleRepo>,
    /// How `inmanta project install` calls pip.
    pub pip: PipConfig,
    pub environment_settings: serde_json::Map<String, Value>,
    /// The whole file, for the keys only one reader needs (`relation_precedence_policy`).
    pub raw: Value,
}

/// One `repo` entry: a git URL (`{}` stands for the module name, else the name is appended), or
/// a package index (v2 modules).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleRepo {
    pub url: String,
    pub kind: RepoKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepoKind {
    Git,
    Package,
}

/// The `pip` section.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PipConfig {
    pub index_url: Option<String>,
    pub extra_index_url: Vec<String>,
    pub pre: bool,
    /// Keep pip's own configuration files and `PIP_*` variables (default: ignore them).
    pub use_system_config: bool,
}

impl ProjectMetadata {
    /// The `requires` entries that name a module.
    pub fn requirements(&self) -> Vec<Requirement> {
        // every entry was read when the file was (`parse` refuses one pip refuses)
        self.requires.iter().filter_map(|r| Requirement::parse(r).ok()).collect()
    }

    /// Where v1 modules are looked for, relative to the project: `modulepath`, then `libs`.
    pub fn module_path(&self) -> Vec<&str> {
        self.modulepath.iter().map(String::as_str).chain([LIBS]).collect()
    }

    /// The git repositories v1 modules are cloned from, in order.
    pub fn git_repos(&self) -> Vec<&str> {
        self.repo.iter().filter(|r| r.kind == RepoKind::Git).map(|r| r.url.as_str()).collect()
    }

    /// Where fetched v1 modules go: `downloadpath`, else the first `modulepath`, else `libs`.
    pub fn download_path(&self) -> &str {
        self.downloadpath.as_deref().or(self.modulepath.first().map(String::as_str)).unwrap_or(LIBS)
    }
}

/// Reads `project.yml` of the project in `dir`; what is read but ignored by the compiler is said
/// in `warnings`.
#[allow(clippy::result_large_err, reason = "a Diagnostic is the compiler's one error type")]
pub fn read(dir: &Path, warnings: &mut Vec<Diagnostic>) -> Result<ProjectMetadata, Diagnostic> {
    let path = dir.join("project.yml");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        Diagnostic::plain(
            ErrorKind::ProjectNotFoundException,
            format!("No project found in {}: can not read project.yml ({e})", dir.display()),
        )
    })?;
    parse(&text, &path, warnings)
}

/// Parses the text of `project.yml` (read from `path`, named in errors).
#[allow(clippy::result_large_err, reason = "a Diagnostic is the compiler's one error type")]
pub fn parse(text: &str, path: &Path, warnings: &mut Vec<Diagnostic>) -> Result<ProjectMetadata, Diagnostic> {
    let raw: Value = serde_norway::from_str(text).map_err(|e| {
        Diagnostic::plain(ErrorKind::InvalidMetadata, format!("Invalid project metadata in {}: {e}", path.display()))
    })?;
    let obj = raw.as_object().cloned().unwrap_or_default();
    let invalid = |m: String| {
        Diagnostic::plain(ErrorKind::InvalidMetadata, format!("Invalid project metadata in {}: {m}", path.display()))
    };
    let name = match obj.get("name") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err(invalid("name must be a string".into())),
        None => return Err(invalid("the field 'name' is required".into())),
    };
    let modulepath = match obj.get("modulepath") {
        None | Some(Value::Null) => vec![],
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect(),
        Some(_) => return Err(invalid("modulepath must be a string or a list of strings".into())),
    };
    let requires = match obj.get("requires") {
        Some(Value::Array(a)) => a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect(),
        _ => vec![],
    };
    for entry in &requires {
        Requirement::parse(entry).map_err(|e| invalid(format!("requires: {e}")))?;
    }
    let repo = module_repos(obj.get("repo"));
    if repo.iter().any(|r| r.kind == RepoKind::Package) {
        warnings.push(warning(
            "repo entries of type 'package' are ignored: modules are built in or read from the module path".into(),
        ));
    }
    for key in ["pip", "install_mode", "agent_install_dependency_modules"] {
        if obj.contains_key(key) {
            warnings.push(warning(format!("project.yml key '{key}' only matters to Python packaging and is ignored")));
        }
    }
    let environment_settings = obj.get("environment_settings").and_then(|v| v.as_object()).cloned().unwrap_or_default();
    Ok(ProjectMetadata {
        name,
        description: obj.get("description").and_then(|v| v.as_str()).map(str::to_string),
        modulepath,
        downloadpath: obj.get("downloadpath").and_then(|v| v.as_str()).map(str::to_string),
        requires,
        repo,
        pip: pip_config(obj.get("pip").unwrap_or(&Value::Null)),
        environment_settings,
        raw,
    })
}

fn warning(message: String) -> Diagnostic {
    Diagnostic { severity: Severity::Warning, ..Diagnostic::plain(ErrorKind::CompilerRuntimeWarning, message) }
}

/// `repo`: a URL, or a list of URLs and `{url, type}` entries (`type` git by default).
fn module_repos(value: Option<&Value>) -> Vec<ModuleRepo> {
    let entries = match value {
        Some(Value::Array(a)) => a.as_slice(),
        Some(v @ Value::String(_)) => std::slice::from_ref(v),
        _ => &[],
    };
    entries
        .iter()
        .filter_map(|e| match e {
            Value::String(url) => Some(ModuleRepo { url: url.clone(), kind: RepoKind::Git }),
            Value::Object(o) => {
                let kind = if o.get("type").and_then(Value::as_str) == Some("package") {
                    RepoKind::Package
                } else {
                    RepoKind::Git
                };
                Some(ModuleRepo { url: o.get("url")?.as_str()?.to_string(), kind })
            }
            _ => None,
        })
        .collect()
}

fn pip_config(pip: &Value) -> PipConfig {
    let extra_index_url = match &pip["extra_index_url"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect(),
        _ => vec![],
    };
    PipConfig {
        index_url: pip["index_url"].as_str().map(str::to_string),
        extra_index_url,
        pre: pip["pre"].as_bool() == Some(true),
        use_system_config: pip["use_system_config"].as_bool().unwrap_or(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> ProjectMetadata {
        parse(text, Path::new("project.yml"), &mut Vec::new()).unwrap()
    }

    #[test]
    fn repos_download_path_and_pip_are_read() {
        let p = parsed(
            "name: p\nmodulepath: [mods, other]\nrepo:\n  - https://git.example/{}.git\n  - url: https://pypi.example\n    type: package\n  - url: https://git.example/more/\nrequires:\n  - apt ~= 1.1\n  - std\npip:\n  extra_index_url: https://extra.example\n  pre: true\n",
        );
        assert_eq!(p.git_repos(), ["https://git.example/{}.git", "https://git.example/more/"]);
        assert_eq!(p.download_path(), "mods");
        assert_eq!(p.requirements().iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["apt", "std"]);
        assert_eq!(
            p.pip,
            PipConfig {
                index_url: None,
                extra_index_url: vec!["https://extra.example".into()],
                pre: true,
                use_system_config: false
            }
        );
        assert_eq!(parsed("name: p\nrepo: https://one.example/\n").git_repos(), ["https://one.example/"]);
        assert_eq!(parsed("name: p\ndownloadpath: dl\nmodulepath: libs2\n").download_path(), "dl");
        assert_eq!(parsed("name: p\n").download_path(), LIBS);
        assert_eq!(parsed("name: p\nmodulepath: m\n").module_path(), ["m", LIBS]);
    }

    #[test]
    fn a_requirement_pip_refuses_makes_the_project_invalid() {
        let e = parse("name: p\nrequires:\n  - std ~= 1\n", Path::new("x/project.yml"), &mut Vec::new()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidMetadata);
        assert!(e.message.contains("std ~= 1"), "{}", e.message);
    }

    #[test]
    fn a_project_without_a_name_is_invalid() {
        let e = parse("modulepath: libs\n", Path::new("x/project.yml"), &mut Vec::new()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidMetadata);
        assert!(e.message.contains("'name' is required"), "{}", e.message);
    }
}
