//! The Python code a version needs: the modules of its `module_version_info` (Inmanta's
//! `put_version` field), and their source files laid out on disk, each fetched by sha1 and checked.
//!
//! A module either ships its files (`files_in_module`: path and sha1 of every file, uploaded to
//! the file store at export, which is what Inmanta's exporter does for modules installed in editable
//! mode), or is installed as a package (`files_in_module` null): then its code must already be
//! importable by the executor's Python.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::resource::FileSource;

/// One Python source file of a module: where it goes under the code directory and its sha1.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ModuleFile {
    /// Posix path relative to the code directory, e.g. `inmanta_plugins/kv/__init__.py`.
    pub path: String,
    pub sha1: String,
}

/// One module of a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonModule {
    pub name: String,
    pub version: String,
    /// The Python files the version ships for it; empty for a module installed as a package.
    pub files: Vec<ModuleFile>,
}

/// The Python modules of one version; [`PythonCode::id`] names it (the "code version").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonCode {
    modules: Vec<PythonModule>,
    id: String,
}

impl PythonCode {
    /// Reads Inmanta's `module_version_info`: `{module: {name, version, files_in_module: [{path,
    /// hash_value}] | null, requirements}}`. The older file form `{name, hash_value}` (a dotted
    /// module name instead of a path) is accepted too. Files other than Python sources (the
    /// packaging files Inmanta also lists) are not needed to import a module and are left out.
    pub fn from_module_version_info(info: &Value) -> Result<PythonCode, String> {
        let Value::Object(modules) = info else {
            return Err("module_version_info must be an object of modules".into());
        };
        let mut out = Vec::new();
        for (key, module) in modules {
            let name = module.get("name").and_then(Value::as_str).unwrap_or(key).to_string();
            if !is_identifier(&name) {
                return Err(format!("module_version_info: {name:?} is not a module name"));
            }
            let version = module.get("version").and_then(Value::as_str).unwrap_or_default().to_string();
            let files = match module.get("files_in_module") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(files)) => module_files(&name, files)?,
                Some(other) => return Err(format!("module_version_info: files_in_module of {name} is {other}")),
            };
            out.push(PythonModule { name, version, files });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        let mut digest = sha1_smol::Sha1::new();
        for module in &out {
            digest.update(format!("module\0{}\0{}\0", module.name, module.version).as_bytes());
            for file in &module.files {
                digest.update(format!("{}\0{}\0", file.path, file.sha1).as_bytes());
            }
        }
        Ok(PythonCode { modules: out, id: digest.digest().to_string() })
    }

    /// The code as `module_version_info` again (only what the agent uses), e.g. to send it to a
    /// remote agent; [`PythonCode::from_module_version_info`] reads it back to the same code.
    pub fn to_module_version_info(&self) -> Value {
        let modules = self.modules.iter().map(|m| {
            let files: Vec<Value> =
                m.files.iter().map(|f| serde_json::json!({"path": f.path, "hash_value": f.sha1})).collect();
            let files = if m.files.is_empty() { Value::Null } else { Value::Array(files) };
            (m.name.clone(), serde_json::json!({"name": m.name, "version": m.version, "files_in_module": files}))
        });
        Value::Object(modules.collect())
    }

    /// A sha1 over every module's name, version and files: equal code, equal id.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn modules(&self) -> &[PythonModule] {
        &self.modules
    }

    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    /// Whether any module ships files (else there is nothing to lay out on disk).
    pub fn ships_files(&self) -> bool {
        self.modules.iter().any(|m| !m.files.is_empty())
    }

    /// Lays the shipped files out as `<root>/<id>/<path>`, each fetched through `files` and checked
    /// against its sha1, unless an earlier call completed that directory. Returns the directory.
    pub fn materialize(&self, root: &Path, files: &dyn FileSource) -> Result<PathBuf, String> {
        let dir = root.join(&self.id);
        let done = dir.join(".complete");
        if done.is_file() {
            return Ok(dir);
        }
        let temp = root.join(format!(".{}.{}.tmp", self.id, std::process::id()));
        let _ = std::fs::remove_dir_all(&temp);
        let result = (|| {
            for module in &self.modules {
                for file in &module.files {
                    let content = files.get(&file.sha1).map_err(|e| {
                        format!("cannot fetch {} of module {} ({}): {e}", file.path, module.name, file.sha1)
                    })?;
                    let actual = sha1_smol::Sha1::from(&content).digest().to_string();
                    if actual != file.sha1 {
                        return Err(format!(
                            "{} of module {} was fetched as {} but has sha1 {actual}; refusing to run it",
                            file.path, module.name, file.sha1
                        ));
                    }
                    let path = temp.join(&file.path);
                    if let Some(parent) = path.parent() {
                        std::fs::create_dir_all(parent)
                            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
                    }
                    std::fs::write(&path, &content).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                }
            }
            std::fs::write(temp.join(".complete"), self.id.as_bytes())
                .map_err(|e| format!("cannot write in {}: {e}", temp.display()))?;
            // Another process may have laid out the same code meanwhile: theirs is as good as ours.
            if std::fs::rename(&temp, &dir).is_err() && done.is_file() {
                let _ = std::fs::remove_dir_all(&temp);
            }
            if done.is_file() { Ok(dir.clone()) } else { Err(format!("cannot move the code to {}", dir.display())) }
        })();
        if result.is_err() {
            let _ = std::fs::remove_dir_all(&temp);
        }
        result
    }
}

fn module_files(module: &str, files: &[Value]) -> Result<Vec<ModuleFile>, String> {
    let named: Vec<(Option<&str>, Option<&str>, &str)> = files
        .iter()
        .map(|f| {
            let hash = f.get("hash_value").and_then(Value::as_str).unwrap_or_default();
            (f.get("path").and_then(Value::as_str), f.get("name").and_then(Value::as_str), hash)
        })
        .collect();
    // Older form: dotted names; a name is a package when another name lies below it.
    let dotted: Vec<&str> =
        named.iter().filter_map(|(path, name, _)| path.is_none().then_some(*name).flatten()).collect();
    let mut out = BTreeMap::new();
    for (path, name, hash) in &named {
        let path = match (path, name) {
            (Some(path), _) => path.to_string(),
            (None, Some(name)) => {
                let package = dotted.iter().any(|other| other.starts_with(&format!("{name}.")))
                    || *name == format!("inmanta_plugins.{module}");
                let base = name.replace('.', "/");
                if package { format!("{base}/__init__.py") } else { format!("{base}.py") }
            }
            (None, None) => return Err(format!("module_version_info: a file of module {module} has no path")),
        };
        if !path.ends_with(".py") {
            continue;
        }
        if !is_safe_relative(&path) || !path.starts_with("inmanta_plugins/") {
            return Err(format!(
                "module_version_info: file {path:?} of module {module} is not a path below inmanta_plugins/"
            ));
        }
        if hash.len() != 40 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("module_version_info: file {path} of module {module} has no sha1 hash_value"));
        }
        out.insert(path.clone(), ModuleFile { path, sha1: hash.to_ascii_lowercase() });
    }
    Ok(out.into_values().collect())
}

fn is_identifier(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_safe_relative(path: &str) -> bool {
    Path::new(path).components().all(|c| matches!(c, Component::Normal(_)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const H: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn reads_both_file_forms_and_names_the_code() {
        let info = json!({
            "kv": {"name": "kv", "version": "1.0", "requirements": [],
                   "files_in_module": [{"path": "inmanta_plugins/kv/__init__.py", "hash_value": H},
                                       {"path": "setup.cfg", "hash_value": H}]},
            "old": {"name": "old", "version": "2.0",
                    "files_in_module": [{"name": "inmanta_plugins.old", "hash_value": H},
                                        {"name": "inmanta_plugins.old.sub", "hash_value": H},
                                        {"name": "inmanta_plugins.old.sub.x", "hash_value": H}]},
            "apt": {"name": "apt", "version": "1.1.0", "files_in_module": null},
        });
        let code = PythonCode::from_module_version_info(&info).unwrap();
        let names: Vec<_> = code.modules().iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["apt", "kv", "old"]);
        assert!(code.modules()[0].files.is_empty());
        assert_eq!(code.modules()[1].files.len(), 1, "setup.cfg is not needed to import");
        let old: Vec<_> = code.modules()[2].files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            old,
            ["inmanta_plugins/old/__init__.py", "inmanta_plugins/old/sub/__init__.py", "inmanta_plugins/old/sub/x.py"]
        );
        let same = PythonCode::from_module_version_info(&info).unwrap();
        assert_eq!(code.id(), same.id());
        let again = PythonCode::from_module_version_info(&code.to_module_version_info()).unwrap();
        assert_eq!(again, code, "what a remote agent receives is the same code");
        let mut changed = info.clone();
        changed["apt"]["version"] = json!("1.2.0");
        assert_ne!(code.id(), PythonCode::from_module_version_info(&changed).unwrap().id());
    }

    #[test]
    fn refuses_paths_outside_the_package_and_missing_hashes() {
        let escape = json!({"kv": {"files_in_module": [{"path": "inmanta_plugins/../../x.py", "hash_value": H}]}});
        assert!(PythonCode::from_module_version_info(&escape).unwrap_err().contains("below inmanta_plugins/"));
        let no_hash = json!({"kv": {"files_in_module": [{"path": "inmanta_plugins/kv/__init__.py"}]}});
        assert!(PythonCode::from_module_version_info(&no_hash).unwrap_err().contains("sha1"));
        assert!(PythonCode::from_module_version_info(&json!([])).is_err());
    }
}
