//! `inmanta project freeze`: project.yml's `requires` set to the version of every module the
//! project imports (`-r`: every module it loads), `name OP version`, sorted, and the file written
//! again as PyYAML's `yaml.dump(..., default_flow_style=False, sort_keys=False)` writes it, as
//! Inmanta 20.1 does.

use std::path::Path;

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
    let dumped = dump(&config);
    match request.outfile {
        Some("-") => print!("{dumped}"),
        Some(file) => std::fs::write(file, dumped).map_err(|e| format!("{file}: {e}"))?,
        None => std::fs::write(&path, dumped).map_err(|e| format!("{}: {e}", path.display()))?,
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
