//! `inmanta module v1tov2`: a v1 module (module.yml, plugins/) turned into a v2 module in place,
//! as Inmanta 20.1's `ModuleConverter.convert_in_place` does: module.yml goes, its metadata
//! joins setup.cfg (an existing one is merged and written again as configparser writes it),
//! plugins/ becomes inmanta_plugins/<name>/, pyproject.toml gets setuptools as build system
//! (an existing one is merged and written again as Python's `toml.dumps` writes it) and
//! MANIFEST.in is written.

use std::path::{Path, PathBuf};

use serde_norway::Value;

use super::requirement::{ModuleRequirement, PythonRequirement, requirements_txt_lines, requirements_txt_modules};
use super::setup_cfg::SetupCfg;

/// Inmanta's exit code for "a module of the other generation" (`ModuleVersionException`).
pub const WRONG_GENERATION_EXIT: u8 = 5;

/// Why a conversion did not happen; `WrongGeneration` exits with 5 as Inmanta's does.
#[derive(Debug)]
pub enum ConvertError {
    WrongGeneration(String),
    Refused(String),
}

impl From<String> for ConvertError {
    fn from(message: String) -> Self {
        ConvertError::Refused(message)
    }
}

/// A log line as Inmanta's CLI prints a warning of `inmanta.moduletool` (on stdout).
fn warn(message: &str) {
    println!("inmanta.moduletool       WARNING {message}");
}

/// Whether `dir` holds a v2 module: a setup.cfg whose `[metadata]` names an Inmanta module.
fn is_v2(dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("setup.cfg")) else { return false };
    SetupCfg::parse(&text).is_ok_and(|cfg| {
        cfg.get("metadata", "name").is_some_and(|n| n.starts_with("inmanta-module-"))
            && cfg.get("metadata", "version").is_some()
            && cfg.get("metadata", "license").is_some()
    })
}

/// The module `-m NAME` names (on the project's module path), else the one in `dir`.
pub fn module_dir(dir: &Path, module: Option<&str>) -> Result<PathBuf, String> {
    let Some(name) = module else { return Ok(dir.to_path_buf()) };
    let project = dir
        .ancestors()
        .find(|d| d.join("project.yml").is_file())
        .ok_or_else(|| format!("-m {name}: no project.yml in {} or above", dir.display()))?;
    let metadata = compiler::read_project_metadata(project).map_err(|d| d.to_string())?;
    metadata
        .module_path()
        .iter()
        .map(|m| project.join(m).join(name))
        .find(|d| d.is_dir())
        .ok_or_else(|| format!("could not find module {name} on the module path of {}", project.display()))
}

pub fn v1tov2(dir: &Path) -> Result<(), ConvertError> {
    if is_v2(dir) {
        return Err(ConvertError::WrongGeneration("Expected a v1 module, but found v2 module".into()));
    }
    let module_yml = dir.join("module.yml");
    if !module_yml.is_file() {
        return Err(ConvertError::Refused(format!("No module can be found at {}", dir.display())));
    }
    for (file, what) in [("MANIFEST.in", "file"), ("inmanta_plugins", "folder")] {
        if dir.join(file).exists() {
            let kind = if what == "file" { "MANIFEST.in" } else { "inmanta_plugins folder" };
            return Err(ConvertError::Refused(format!(
                "{kind} already exists, aborting. Please remove/rename this file"
            )));
        }
    }
    if dir.join("setup.py").exists() {
        return Err(ConvertError::Refused(format!(
            "Cannot convert v1 module at {} to v2 because a setup.py file is present. Please remove/rename this file",
            dir.display()
        )));
    }
    let text = std::fs::read_to_string(&module_yml).map_err(|e| format!("{}: {e}", module_yml.display()))?;
    let metadata: Value = serde_norway::from_str(&text).map_err(|e| format!("{}: {e}", module_yml.display()))?;
    let name = text_of(&metadata, "name").ok_or_else(|| format!("{}: no `name`", module_yml.display()))?;
    let setup_cfg = setup_cfg(dir, &name, &metadata)?;
    let pyproject = pyproject(dir)?;
    std::fs::remove_file(&module_yml).map_err(|e| format!("{}: {e}", module_yml.display()))?;
    let plugins = dir.join("plugins");
    let namespace = dir.join("inmanta_plugins");
    let new_plugins = namespace.join(&name);
    std::fs::create_dir_all(&namespace).map_err(|e| format!("{}: {e}", namespace.display()))?;
    if plugins.exists() {
        std::fs::rename(&plugins, &new_plugins).map_err(|e| format!("{}: {e}", plugins.display()))?;
    } else {
        std::fs::create_dir_all(&new_plugins).map_err(|e| format!("{}: {e}", new_plugins.display()))?;
        write(&new_plugins.join("__init__.py"), "")?;
    }
    write(&dir.join("pyproject.toml"), &pyproject)?;
    write(&dir.join("setup.cfg"), &setup_cfg.write())?;
    let manifest = format!(
        "include inmanta_plugins/{name}/setup.cfg\ninclude inmanta_plugins/{name}/py.typed\nrecursive-include \
         inmanta_plugins/{name}/model *.cf\ngraft inmanta_plugins/{name}/files\ngraft inmanta_plugins/{name}/templates\n"
    );
    write(&dir.join("MANIFEST.in"), &manifest)?;
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// A metadata field as pydantic coerces it to a string (`version: 1.0` is a YAML number).
fn text_of(metadata: &Value, key: &str) -> Option<String> {
    match metadata.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(if *b { "True" } else { "False" }.into()),
        _ => None,
    }
}

/// Python's `str(bool)`.
fn python_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// A version split as Inmanta's `ModuleV2Metadata.split_version`: the base version and its tag
/// (`dev0`, `rc1`, `post2`).
fn split_version(version: &str) -> Result<(String, String), String> {
    let parsed: pep508_rs::pep440_rs::Version =
        version.parse().map_err(|_| format!("Version {version} is not PEP440 compliant"))?;
    let release: Vec<String> = parsed.release().iter().map(u64::to_string).collect();
    let mut base = release.join(".");
    if parsed.epoch() != 0 {
        base = format!("{}!{base}", parsed.epoch());
    }
    let tag = if let Some(dev) = parsed.dev() {
        format!("dev{dev}")
    } else if let Some(pre) = parsed.pre() {
        let kind = match pre.kind {
            pep508_rs::pep440_rs::PrereleaseKind::Alpha => "a",
            pep508_rs::pep440_rs::PrereleaseKind::Beta => "b",
            pep508_rs::pep440_rs::PrereleaseKind::Rc => "rc",
        };
        format!("{kind}{}", pre.number)
    } else if let Some(post) = parsed.post() {
        format!("post{post}")
    } else {
        String::new()
    };
    Ok((base, tag))
}

/// The modules a v1 module's model files import (the top names), each with the constraint its
/// `requires` (module.yml, requirements.txt) gives, as Python package requirements, sorted.
fn module_install_requires(dir: &Path, name: &str, metadata: &Value) -> Vec<String> {
    let mut spec: Vec<ModuleRequirement> = match metadata.get("requires") {
        Some(Value::Sequence(items)) => {
            items.iter().filter_map(Value::as_str).filter_map(|r| ModuleRequirement::parse(r).ok()).collect()
        }
        Some(Value::String(one)) => ModuleRequirement::parse(one).into_iter().collect(),
        _ => Vec::new(),
    };
    spec.extend(requirements_txt_modules(&dir.join("requirements.txt")));
    let autostd = dir
        .ancestors()
        .find(|d| d.join("project.yml").is_file())
        .and_then(|p| std::fs::read_to_string(p.join("project.yml")).ok())
        .and_then(|t| serde_norway::from_str::<Value>(&t).ok())
        .and_then(|v| v.get("autostd").and_then(Value::as_bool))
        .unwrap_or(true);
    let mut imports: Vec<String> = Vec::new();
    for (_, file) in super::freeze::submodules(name, &dir.join("model")) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let mut found = super::freeze::imports_in(&text);
        if name != "std" && autostd {
            found.push("std".into());
        }
        for import in found {
            let top = import.split("::").next().unwrap_or(&import).to_string();
            if top != name && !imports.contains(&top) {
                imports.push(top);
            }
        }
    }
    let mut out: Vec<String> = imports
        .iter()
        .map(|import| {
            // The last requirement on the module wins, as in Inmanta's dict of them (module.yml's
            // first, then requirements.txt's).
            let requirement = spec
                .iter()
                .rev()
                .find(|r| r.name == *import)
                .cloned()
                .unwrap_or_else(|| ModuleRequirement::parse(import).expect("a module name is a requirement"));
            requirement.python_package().canonical().to_string()
        })
        .collect();
    out.sort();
    out
}

/// setup.cfg as Inmanta's `ModuleConverter.get_setup_cfg` makes it.
fn setup_cfg(dir: &Path, name: &str, metadata: &Value) -> Result<SetupCfg, String> {
    let path = dir.join("setup.cfg");
    let mut cfg = match std::fs::read_to_string(&path) {
        Ok(text) => {
            warn("setup.cfg file already exists, merging. This will remove all comments from the file");
            SetupCfg::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?
        }
        Err(_) => SetupCfg::default(),
    };
    let version = text_of(metadata, "version").ok_or("module.yml: no `version`")?;
    let (base, tag) = split_version(&version)?;
    let license = text_of(metadata, "license").ok_or("module.yml: no `license`")?;
    let package = format!("inmanta-module-{}", name.replace('_', "-"));
    cfg.set("metadata", "name", &package);
    if let Some(description) = text_of(metadata, "description") {
        cfg.set("metadata", "description", &description.replace('\n', " "));
    }
    let recursive = metadata.get("freeze_recursive").and_then(Value::as_bool).unwrap_or(false);
    cfg.set("metadata", "freeze_recursive", python_bool(recursive));
    cfg.set("metadata", "freeze_operator", &text_of(metadata, "freeze_operator").unwrap_or_else(|| "~=".into()));
    cfg.set("metadata", "version", &base);
    cfg.set("metadata", "license", &license);
    if let Some(deprecated) = metadata.get("deprecated").and_then(Value::as_bool) {
        cfg.set("metadata", "deprecated", python_bool(deprecated));
    }
    cfg.set("metadata", "four_digit_version", "False");
    if !tag.is_empty() {
        cfg.set("egg_info", "tag_build", &tag);
    }
    for section in ["options", "options.packages.find"] {
        if cfg.has_section(section) {
            return Err(format!("{}: Section '{section}' already exists", path.display()));
        }
    }
    let mut requires = module_install_requires(dir, name, metadata);
    requires.extend(
        requirements_txt_lines(&dir.join("requirements.txt"))
            .iter()
            .filter(|l| !l.starts_with("inmanta-module-"))
            .map(|l| PythonRequirement::parse(l).map(|r| r.to_string()).unwrap_or_else(|_| l.clone())),
    );
    if !requires.is_empty() {
        cfg.set("options", "install_requires", &requires.join("\n"));
    }
    cfg.set("options", "zip_safe", "False");
    cfg.set("options", "include_package_data", "True");
    cfg.set("options", "packages", "find_namespace:");
    cfg.set("options.packages.find", "include", "inmanta_plugins*");
    Ok(cfg)
}

/// pyproject.toml as Inmanta's `ModuleConverter.get_pyproject` makes it: setuptools and wheel
/// added to `build-system.requires`, the setuptools backend.
fn pyproject(dir: &Path) -> Result<String, String> {
    let path = dir.join("pyproject.toml");
    let mut config = match std::fs::read_to_string(&path) {
        Ok(text) => {
            warn("pyproject.toml file already exists, merging. This will remove all comments from the file");
            text.parse::<toml::Table>().map_err(|e| format!("{}: {e}", path.display()))?
        }
        Err(_) => toml::Table::new(),
    };
    let build_system = config.entry("build-system").or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let toml::Value::Table(build_system) = build_system else {
        return Err("Invalid pyproject.toml: 'build-system' should be of type dict".into());
    };
    let requires = build_system.entry("requires").or_insert_with(|| toml::Value::Array(Vec::new()));
    if let toml::Value::String(one) = requires {
        *requires = toml::Value::Array(vec![toml::Value::String(one.clone())]);
    }
    let toml::Value::Array(requires) = requires else {
        return Err("Invalid pyproject.toml: 'build-system.requires' should be of type list".into());
    };
    for wanted in ["setuptools", "wheel"] {
        if !requires.iter().any(|r| r.as_str() == Some(wanted)) {
            requires.push(toml::Value::String(wanted.into()));
        }
    }
    build_system.insert("build-backend".into(), toml::Value::String("setuptools.build_meta".into()));
    Ok(python_toml_dumps(&config))
}

/// Python's `toml.dumps` (uiri/toml 0.10): a table's plain keys first, then its sub-tables as
/// `[a.b]` headers (a header only for a table with plain keys or none at all), arrays as
/// `[ a, b,]`.
pub fn python_toml_dumps(table: &toml::Table) -> String {
    let (mut out, mut sections) = dump_section(table);
    while !sections.is_empty() {
        let mut next = Vec::new();
        for (name, section) in sections {
            let (plain, subsections) = dump_section(section);
            if !plain.is_empty() || subsections.is_empty() {
                if !out.is_empty() && !out.ends_with("\n\n") {
                    out.push('\n');
                }
                out.push_str(&format!("[{name}]\n{plain}"));
            }
            next.extend(subsections.into_iter().map(|(sub, t)| (format!("{name}.{sub}"), t)));
        }
        sections = next;
    }
    out
}

fn dump_section(table: &toml::Table) -> (String, Vec<(String, &toml::Table)>) {
    let mut plain = String::new();
    let mut sections = Vec::new();
    for (key, value) in table {
        let key = if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            key.clone()
        } else {
            toml_string(key)
        };
        match value {
            toml::Value::Table(t) => sections.push((key, t)),
            other => plain.push_str(&format!("{key} = {}\n", toml_value(other))),
        }
    }
    (plain, sections)
}

fn toml_value(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => toml_string(s),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) => format!("{f:?}"),
        toml::Value::Boolean(b) => b.to_string(),
        toml::Value::Datetime(d) => d.to_string(),
        toml::Value::Array(items) => {
            let mut out = "[".to_string();
            for item in items {
                out.push_str(&format!(" {},", toml_value(item)));
            }
            out.push(']');
            out
        }
        toml::Value::Table(t) => {
            let inner: Vec<String> = t.iter().map(|(k, v)| format!("{k} = {}", toml_value(v))).collect();
            format!("{{ {} }}", inner.join(", "))
        }
    }
}

/// A basic string as `toml` quotes it: double quotes, `\\`, `"` and control characters escaped.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_is_dumped_as_python_toml_dumps_it() {
        let table: toml::Table =
            "[build-system]\nrequires = \"setuptools\"\n[tool.black]\nline-length = 128\n".parse().unwrap();
        assert_eq!(
            python_toml_dumps(&table),
            "[build-system]\nrequires = \"setuptools\"\n\n[tool.black]\nline-length = 128\n"
        );
        assert_eq!(split_version("1.2.3.dev0").unwrap(), ("1.2.3".into(), "dev0".into()));
        assert_eq!(split_version("2.0rc1").unwrap(), ("2.0".into(), "rc1".into()));
        assert_eq!(split_version("1.0").unwrap(), ("1.0".into(), String::new()));
    }
}
