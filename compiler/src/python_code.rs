//! The Python code of the loaded modules, shipped with the version so that the agents can run
//! the modules' `@provider` handlers (docs/modules.md, "Python handlers"). A module's Python is
//! its `inmanta_plugins/<module>/` package (v2 layout) or its `plugins/` directory (v1 layout,
//! imported as `inmanta_plugins.<module>`). The export uploads every file and names them in
//! `module_version_info`, as Inmanta's exporter does for a module installed in editable mode.

use crate::diagnostics::ErrorKind;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::diagnostics::Diagnostic;

/// One Python file of a module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShippedPythonFile {
    /// Where it is imported from: `inmanta_plugins/<module>/...py`.
    pub path: String,
    pub content: Vec<u8>,
    /// sha1 of the content (its id in the file store).
    pub hash: String,
}

/// A module's Python code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShippedPythonModule {
    pub version: String,
    pub files: Vec<ShippedPythonFile>,
}

/// Every loaded module that has Python code, by module name; one installed as a package has no
/// files.
#[allow(clippy::result_large_err)]
pub(crate) fn collect(
    module_dirs: &HashMap<String, PathBuf>,
) -> Result<BTreeMap<String, ShippedPythonModule>, Diagnostic> {
    let mut out = BTreeMap::new();
    for (module, dir) in module_dirs {
        let (source, prefix) = if dir.join("inmanta_plugins").join(module).is_dir() {
            (dir.join("inmanta_plugins").join(module), format!("inmanta_plugins/{module}"))
        } else if dir.join("plugins").is_dir() {
            (dir.join("plugins"), format!("inmanta_plugins/{module}"))
        } else if dir.join("__init__.py").is_file() && dir.parent().is_some_and(|p| p.ends_with("inmanta_plugins")) {
            // Installed as a package (the index's wheels): the agents import it from their own
            // Python environment, so it is named without files (`files_in_module` null); its
            // reference classes and handlers are then found there.
            out.insert(module.clone(), ShippedPythonModule { version: module_version(dir), files: Vec::new() });
            continue;
        } else {
            continue;
        };
        let mut files = Vec::new();
        walk(&source, &prefix, &mut files)?;
        if files.is_empty() {
            continue;
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        out.insert(module.clone(), ShippedPythonModule { version: module_version(dir), files });
    }
    Ok(out)
}

/// `module_version_info` for `put_version`: `{module: {name, version, files_in_module: [{path,
/// hash_value}], requirements}}`.
pub fn module_version_info(modules: &BTreeMap<String, ShippedPythonModule>) -> serde_json::Value {
    let entries = modules.iter().map(|(name, module)| {
        let files: Vec<serde_json::Value> =
            module.files.iter().map(|f| serde_json::json!({"path": f.path, "hash_value": f.hash})).collect();
        // no files: installed as a package where the agents run
        let files = if files.is_empty() { serde_json::Value::Null } else { serde_json::Value::Array(files) };
        let entry = serde_json::json!({
            "name": name, "version": module.version, "files_in_module": files, "requirements": [],
        });
        (name.clone(), entry)
    });
    serde_json::Value::Object(entries.collect())
}

#[allow(clippy::result_large_err, reason = "a Diagnostic is the compile's error; errors are rare")]
fn walk(dir: &Path, prefix: &str, out: &mut Vec<ShippedPythonFile>) -> Result<(), Diagnostic> {
    let entries = std::fs::read_dir(dir).map_err(|e| unreadable(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| unreadable(dir, e))?;
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_string) else { continue };
        if name.starts_with('.') || name == "__pycache__" {
            continue;
        }
        if path.is_dir() {
            walk(&path, &format!("{prefix}/{name}"), out)?;
        } else if name.ends_with(".py") {
            let content = std::fs::read(&path).map_err(|e| unreadable(&path, e))?;
            let hash = sha1_smol::Sha1::from(&content).hexdigest();
            out.push(ShippedPythonFile { path: format!("{prefix}/{name}"), content, hash });
        }
    }
    Ok(())
}

/// The version in `setup.cfg` (`[metadata] version`) or `module.yml` (`version:`), else 0.0.0.
pub(crate) fn module_version(dir: &Path) -> String {
    let from = |file: &str, separator: char| {
        std::fs::read_to_string(dir.join(file)).ok().and_then(|text| {
            text.lines().find_map(|line| {
                let (key, value) = line.split_once(separator)?;
                (key.trim() == "version").then(|| value.trim().trim_matches(['"', '\'']).to_string())
            })
        })
    };
    from("setup.cfg", '=').or_else(|| from("module.yml", ':')).unwrap_or_else(|| "0.0.0".into())
}

fn unreadable(path: &Path, e: std::io::Error) -> Diagnostic {
    Diagnostic::plain(ErrorKind::ModuleLoadingException, format!("cannot read the module code {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_both_layouts_with_their_versions() {
        let root = std::env::temp_dir().join(format!("inmanta-python-code-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let v2 = root.join("kv");
        std::fs::create_dir_all(v2.join("inmanta_plugins/kv/sub/__pycache__")).unwrap();
        std::fs::write(v2.join("setup.cfg"), "[metadata]\nname = inmanta-module-kv\nversion = 1.2.3\n").unwrap();
        std::fs::write(v2.join("inmanta_plugins/kv/__init__.py"), "X = 1\n").unwrap();
        std::fs::write(v2.join("inmanta_plugins/kv/sub/x.py"), "Y = 2\n").unwrap();
        std::fs::write(v2.join("inmanta_plugins/kv/sub/__pycache__/x.cpython-313.pyc"), "junk").unwrap();
        let v1 = root.join("old");
        std::fs::create_dir_all(v1.join("plugins")).unwrap();
        std::fs::write(v1.join("module.yml"), "name: old\nversion: 0.5\n").unwrap();
        std::fs::write(v1.join("plugins/__init__.py"), "Z = 3\n").unwrap();
        let none = root.join("plain");
        std::fs::create_dir_all(none.join("model")).unwrap();
        let dirs = HashMap::from([("kv".to_string(), v2), ("old".to_string(), v1), ("plain".to_string(), none)]);
        let modules = collect(&dirs).unwrap();
        assert_eq!(modules.keys().collect::<Vec<_>>(), ["kv", "old"]);
        assert_eq!(modules["kv"].version, "1.2.3");
        let paths: Vec<&str> = modules["kv"].files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["inmanta_plugins/kv/__init__.py", "inmanta_plugins/kv/sub/x.py"]);
        assert_eq!(modules["old"].files[0].path, "inmanta_plugins/old/__init__.py");
        assert_eq!(modules["old"].version, "0.5");
        let info = module_version_info(&modules);
        assert_eq!(info["kv"]["files_in_module"][0]["hash_value"], sha1_smol::Sha1::from("X = 1\n").hexdigest());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
