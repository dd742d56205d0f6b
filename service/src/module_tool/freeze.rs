//! `inmanta project freeze`: project.yml's `requires` set to the version of every module the
//! project imports (`-r`: every module it loads), `name OP version`, sorted, and the file written
//! again as PyYAML's `yaml.dump(..., default_flow_style=False, sort_keys=False)` writes it, as
//! Inmanta 20.1 does. `inmanta module freeze` does the same to a v1 module's module.yml, from the
//! imports of the module's own model files (Inmanta refuses it on v2 modules).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_norway::Value;

pub struct FreezeRequest<'a> {
    pub project_dir: &'a Path,
    /// `None`: project.yml; `-`: stdout.
    pub outfile: Option<&'a str>,
    pub recursive: Option<bool>,
    pub operator: Option<&'a str>,
    pub python: Option<&'a Path>,
}

/// The modules `import`ed by the project's main.cf (the first name of each import).
fn main_imports(main: &str) -> Vec<String> {
    let mut names = Vec::new();
    for line in main.lines() {
        let line = line.trim_start();
        if let Some(rest) = line.strip_prefix("import ") {
            let path = rest.split_whitespace().next().unwrap_or("");
            let module = path.split("::").next().unwrap_or("").to_string();
            if !module.is_empty() && !names.contains(&module) {
                names.push(module);
            }
        }
    }
    names
}

pub fn freeze(request: &FreezeRequest<'_>) -> Result<(), String> {
    let path = request.project_dir.join("project.yml");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut config: Value = serde_norway::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let setting = |key: &str| config.get(key).cloned();
    let recursive =
        request.recursive.unwrap_or_else(|| setting("freeze_recursive").and_then(|v| v.as_bool()).unwrap_or(false));
    let operator = request
        .operator
        .map(str::to_string)
        .or_else(|| setting("freeze_operator").and_then(|v| v.as_str().map(str::to_string)))
        .unwrap_or_else(|| "~=".to_string());
    let autostd = setting("autostd").and_then(|v| v.as_bool()).unwrap_or(true);
    let options = compiler::CompileOptions { python: request.python.map(Path::to_path_buf), ..Default::default() };
    let output = compiler::compile_project_with(request.project_dir, &options).map_err(|d| d.to_string())?;
    let version_of = |name: &str| output.modules.iter().find(|m| m.name == name).map(|m| m.version.clone());
    let mut names: Vec<String> = if recursive {
        output.modules.iter().map(|m| m.name.clone()).collect()
    } else {
        let main = std::fs::read_to_string(request.project_dir.join("main.cf")).unwrap_or_default();
        let mut names = main_imports(&main);
        if autostd && !names.iter().any(|n| n == "std") {
            names.insert(0, "std".into());
        }
        names
    };
    names.dedup();
    let mut requires: Vec<String> =
        names.iter().filter_map(|name| version_of(name).map(|v| format!("{name} {operator} {v}"))).collect();
    requires.sort();
    requires.dedup();
    let list = Value::Sequence(requires.into_iter().map(Value::String).collect());
    match &mut config {
        Value::Mapping(map) => {
            map.insert(Value::String("requires".into()), list);
        }
        _ => return Err(format!("{}: not a mapping", path.display())),
    }
    write_out(&config, request.outfile, &path)
}

/// `inmanta module freeze`: `module` is `-m NAME` (a module of the project), else the module in
/// the current directory.
pub struct ModuleFreezeRequest<'a> {
    pub dir: &'a Path,
    pub module: Option<&'a str>,
    pub outfile: Option<&'a str>,
    pub recursive: Option<bool>,
    pub operator: Option<&'a str>,
    pub python: Option<&'a Path>,
}

/// The project a module directory belongs to: the nearest directory upwards with a project.yml.
fn enclosing_project(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|d| d.join("project.yml").is_file()).map(Path::to_path_buf)
}

/// The submodules of a v1 module, as Inmanta names them (`name`, `name::sub`), with their files:
/// every `.cf` file of a model directory that has an `_init.cf`.
pub(crate) fn submodules(name: &str, model_dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut todo = vec![model_dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        if !dir.join("_init.cf").is_file() {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|e| e == "cf") {
                let relative = path.strip_prefix(model_dir).unwrap_or(&path).with_extension("");
                let mut parts: Vec<String> = vec![name.to_string()];
                parts.extend(relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()));
                if parts.last().is_some_and(|p| p == "_init") {
                    parts.pop();
                }
                out.push((parts.join("::"), path));
            }
        }
    }
    out
}

/// The modules a model file imports (`import a::b as c` counts as `a::b`), in file order.
pub(crate) fn imports_in(text: &str) -> Vec<String> {
    compiler::syntax::outline::outline(text)
        .definitions
        .into_iter()
        .filter(|d| d.kind == compiler::syntax::outline::DefinitionKind::Import)
        .filter_map(|d| d.value_type)
        .collect()
}

/// Where a loaded module's (sub)module `name` is defined: its model file's text.
fn loaded_source(modules: &[compiler::ModuleUsed], name: &str) -> Option<String> {
    let top = name.split("::").next().unwrap_or(name);
    let module = modules.iter().find(|m| m.name == top)?;
    match &module.origin {
        compiler::ModuleOrigin::Installed(dir) => {
            let mut path = dir.join("model");
            for part in name.split("::").skip(1) {
                path.push(part);
            }
            let file = if path.join("_init.cf").is_file() { path.join("_init.cf") } else { path.with_extension("cf") };
            std::fs::read_to_string(file).ok()
        }
        compiler::ModuleOrigin::BuiltIn => {
            compiler::builtin_model_sources().find(|(ns, _)| *ns == name).map(|(_, s)| s.to_string())
        }
    }
}

pub fn freeze_module(request: &ModuleFreezeRequest<'_>) -> Result<(), String> {
    let v2_refused = "The `inmanta module freeze` command is not supported on V2 modules. Use the `pip freeze` \
                      command instead.";
    if request.dir.join("setup.cfg").is_file()
        || request.module.is_some_and(|m| Path::new(m).join("setup.cfg").is_file())
    {
        return Err(v2_refused.into());
    }
    let project_dir = enclosing_project(request.dir)
        .ok_or("Can only get module's freeze in the context of a project: no project.yml here or above")?;
    let module_dir = match request.module {
        None => request.dir.to_path_buf(),
        Some(name) => {
            let metadata = compiler::read_project_metadata(&project_dir).map_err(|d| d.to_string())?;
            let found = metadata.module_path().iter().map(|m| project_dir.join(m).join(name)).find(|d| d.is_dir());
            match found {
                Some(dir) if dir.join("setup.cfg").is_file() => return Err(v2_refused.into()),
                Some(dir) => dir,
                None => return Err(format!("could not find module {name} on the module path of the project")),
            }
        }
    };
    let path = module_dir.join("module.yml");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("No module can be found at {}: {e}", module_dir.display()))?;
    let mut config: Value = serde_norway::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = config.get("name").and_then(Value::as_str).ok_or(format!("{}: no `name`", path.display()))?.to_string();
    let recursive =
        request.recursive.unwrap_or_else(|| config.get("freeze_recursive").and_then(Value::as_bool).unwrap_or(false));
    let operator = request
        .operator
        .map(str::to_string)
        .or_else(|| config.get("freeze_operator").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| "~=".to_string());
    let project_yml: Value =
        serde_norway::from_str(&std::fs::read_to_string(project_dir.join("project.yml")).unwrap_or_default())
            .unwrap_or(Value::Null);
    let autostd = project_yml.get("autostd").and_then(Value::as_bool).unwrap_or(true);
    let own = submodules(&name, &module_dir.join("model"));
    // Loading every submodule loads every module they import, at the version the project has.
    let main: String = own.iter().map(|(submodule, _)| format!("import {submodule}\n")).collect();
    let main_path = project_dir.join("main.cf");
    let mut overlay = HashMap::from([(main_path.clone(), main.clone())]);
    if let Ok(canonical) = std::fs::canonicalize(&main_path) {
        overlay.insert(canonical, main);
    }
    let options = compiler::CompileOptions {
        python: request.python.map(Path::to_path_buf),
        overlay: compiler::SourceOverlay::new(overlay),
        ..Default::default()
    };
    let output = compiler::compile_project_with(&project_dir, &options).map_err(|d| d.to_string())?;
    for module in &output.modules {
        if let compiler::ModuleOrigin::Installed(dir) = &module.origin
            && dir.join("module.yml").is_file()
        {
            // Inmanta's warning on loading a v1 module, on stdout as its log lines are.
            println!(
                "{:<25}{:<8}InmantaWarning: Loaded V1 module {}. The use of V1 modules is deprecated. Use the \
                 equivalent V2 module instead.",
                "inmanta.warnings", "WARNING", module.name
            );
        }
    }
    let imports_of = |module: &str, text: &str| {
        let mut imports = imports_in(text);
        if module.split("::").next() != Some("std") && autostd {
            imports.insert(0, "std".into());
        }
        imports
    };
    let mut frozen: Vec<(String, String)> = Vec::new();
    for (submodule, file) in &own {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let mut todo = imports_of(submodule, &text);
        let mut seen: Vec<String> = Vec::new();
        let mut index = 0;
        while index < todo.len() {
            let import = todo[index].clone();
            index += 1;
            if seen.contains(&import) {
                continue;
            }
            seen.push(import.clone());
            let top = import.split("::").next().unwrap_or(&import);
            let version = output
                .modules
                .iter()
                .find(|m| m.name == top)
                .map(|m| m.version.clone())
                .ok_or_else(|| format!("module {top} (imported by {submodule}) is not installed"))?;
            if !import.contains("::") {
                frozen.retain(|(n, _)| *n != import);
                frozen.push((import.clone(), format!("{operator} {version}")));
            }
            if recursive && let Some(source) = loaded_source(&output.modules, &import) {
                todo.extend(imports_of(&import, &source));
            }
        }
    }
    let mut requires: Vec<String> = frozen.iter().map(|(n, v)| format!("{n} {v}")).collect();
    requires.sort();
    let Value::Mapping(map) = &mut config else { return Err(format!("{}: not a mapping", path.display())) };
    map.insert(Value::String("requires".into()), Value::Sequence(requires.into_iter().map(Value::String).collect()));
    write_out(&config, request.outfile, &path)
}

/// The YAML written where `-o` says: the metadata file itself, stdout (`-`) or another file.
fn write_out(config: &Value, outfile: Option<&str>, metadata_file: &Path) -> Result<(), String> {
    let dumped = dump(config);
    match outfile {
        Some("-") => print!("{dumped}"),
        Some(file) => std::fs::write(file, dumped).map_err(|e| format!("{file}: {e}"))?,
        None => std::fs::write(metadata_file, dumped).map_err(|e| format!("{}: {e}", metadata_file.display()))?,
    }
    Ok(())
}

/// PyYAML's block style: mappings `key: value`, sequences `- item` at the indentation of their
/// key, mappings inside sequences on the dash's line.
pub fn dump(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Mapping(_) | Value::Sequence(_) => write_block(value, 0, &mut out),
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
    out
}

fn write_block(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Mapping(map) if map.is_empty() => out.push_str(&format!("{pad}{{}}\n")),
        Value::Mapping(map) => {
            for (key, value) in map {
                out.push_str(&format!("{pad}{}:", scalar(key)));
                match value {
                    Value::Mapping(m) if !m.is_empty() => {
                        out.push('\n');
                        write_block(value, indent + 2, out);
                    }
                    Value::Sequence(s) if !s.is_empty() => {
                        out.push('\n');
                        write_block(value, indent, out);
                    }
                    Value::Mapping(_) => out.push_str(" {}\n"),
                    Value::Sequence(_) => out.push_str(" []\n"),
                    other => out.push_str(&format!(" {}\n", scalar(other))),
                }
            }
        }
        Value::Sequence(items) => {
            for item in items {
                match item {
                    Value::Mapping(m) if !m.is_empty() => {
                        let mut inner = String::new();
                        write_block(item, indent + 2, &mut inner);
                        // The first key goes on the dash's line.
                        let inner = inner.replacen(&format!("{pad}  "), &format!("{pad}- "), 1);
                        out.push_str(&inner);
                    }
                    Value::Sequence(s) if !s.is_empty() => {
                        let mut inner = String::new();
                        write_block(item, indent + 2, &mut inner);
                        let inner = inner.replacen(&format!("{pad}  "), &format!("{pad}- "), 1);
                        out.push_str(&inner);
                    }
                    other => out.push_str(&format!("{pad}- {}\n", scalar(other))),
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", scalar(other))),
    }
}

/// A scalar as PyYAML writes it: plain when it reads back as the same string, else quoted.
fn scalar(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => if *b { "true" } else { "false" }.into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Tagged(t) => scalar(&t.value),
        Value::Mapping(_) | Value::Sequence(_) => "{}".into(),
    }
}

fn string(s: &str) -> String {
    let lower = s.to_lowercase();
    let special_word =
        matches!(lower.as_str(), "" | "~" | "null" | "true" | "false" | "yes" | "no" | "on" | "off" | "y" | "n");
    let numeric = s.parse::<f64>().is_ok() || s.starts_with("0x") || s.starts_with("0o");
    let first = s.chars().next().unwrap_or(' ');
    let needs_quotes = special_word
        || numeric
        || "-?:,[]{}#&*!|>'\"%@`".contains(first) && !(first == '-' && s.len() > 1 && !s[1..].starts_with(' '))
        || s.contains(": ")
        || s.contains(" #")
        || s.ends_with(':')
        || s.starts_with(' ')
        || s.ends_with(' ')
        || s.contains('\n');
    if needs_quotes { format!("'{}'", s.replace('\'', "''")) } else { s.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dumps_as_pyyaml() {
        let value: Value = serde_norway::from_str(
            "name: p\nmodulepath: libs\nrepo:\n- type: package\n  url: https://x/\npip:\n  pre: true\nrequires:\n- std ~= 8.7.5\n",
        )
        .unwrap();
        assert_eq!(
            dump(&value),
            "name: p\nmodulepath: libs\nrepo:\n- type: package\n  url: https://x/\npip:\n  pre: true\nrequires:\n- std ~= 8.7.5\n"
        );
        assert_eq!(string("1.0"), "'1.0'");
        assert_eq!(string("yes"), "'yes'");
        assert_eq!(main_imports("import std::testing\nimport files as f\n"), vec!["std", "files"]);
    }
}
