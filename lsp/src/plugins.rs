//! Plugins in a module's Python source: where `def name` of an `@plugin` function is, its
//! signature and its docstring. Read as text: the language server starts no Python.

use std::path::{Path, PathBuf};

use crate::project::Project;

/// One plugin found in Python source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PluginSource {
    pub name: String,
    pub file: PathBuf,
    /// 0-based line of the `def`.
    pub line: usize,
    /// `def name(a: "string", b: int = 1) -> "string"` as written (joined onto one line).
    pub signature: String,
    pub doc: Option<String>,
}

/// The Python files a module's plugins are in: `plugins/` (v1), the package itself (an installed
/// v2 module, `inmanta_plugins/<name>/`) or `inmanta_plugins/<name>/` of a v2 source tree.
fn python_files(module: &str, dir: &Path) -> Vec<PathBuf> {
    let roots = [dir.join("plugins"), dir.join("inmanta_plugins").join(module), dir.to_path_buf()];
    let mut out = Vec::new();
    for root in roots.iter().filter(|r| r.join("__init__.py").is_file()) {
        let mut stack = vec![root.clone()];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else { continue };
            for e in entries.flatten() {
                let p = e.path();
                let name = e.file_name();
                if p.is_dir() && name != "__pycache__" && name != "model" && name != "inmanta_plugins" {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "py") {
                    out.push(p);
                }
            }
        }
        if !out.is_empty() {
            break;
        }
    }
    out.sort();
    out
}

/// Every plugin of module `module`.
pub(crate) fn of_module(project: &Project, module: &str) -> Vec<PluginSource> {
    let Some(dir) = project.module_dirs.get(module) else { return Vec::new() };
    let mut out = Vec::new();
    for file in python_files(module, dir) {
        let Ok(text) = std::fs::read_to_string(&file) else { continue };
        scan(&text, &file, module, &mut out);
    }
    out
}

/// The plugin `qualified` (`module::name`).
pub(crate) fn find(project: &Project, qualified: &str) -> Option<PluginSource> {
    let (module, _) = qualified.split_once("::")?;
    of_module(project, module).into_iter().find(|p| p.name == qualified)
}

fn scan(text: &str, file: &Path, module: &str, out: &mut Vec<PluginSource>) {
    let lines: Vec<&str> = text.lines().collect();
    let mut decorated: Option<Option<String>> = None;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        if line.starts_with("@plugin") {
            // `@plugin("other_name")` renames the plugin
            let named = t.split('"').nth(1).or_else(|| t.split('\'').nth(1)).filter(|_| t.contains('('));
            decorated = Some(named.map(str::to_string));
            continue;
        }
        if t.starts_with('@') {
            continue;
        }
        let Some(named) = decorated.take() else { continue };
        let Some(rest) = line.strip_prefix("def ") else { continue };
        let fname = rest.split('(').next().unwrap_or(rest).trim();
        let (signature, body) = signature(&lines, i);
        out.push(PluginSource {
            name: format!("{module}::{}", named.unwrap_or_else(|| fname.to_string())),
            file: file.to_path_buf(),
            line: i,
            signature,
            doc: docstring(&lines, body),
        });
    }
}

/// The `def` from line `i` up to its colon, on one line, and the line after it.
fn signature(lines: &[&str], i: usize) -> (String, usize) {
    let mut sig = String::new();
    let mut depth = 0i32;
    for (j, l) in lines.iter().enumerate().skip(i).take(40) {
        for c in l.trim().chars() {
            match c {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                _ => {}
            }
        }
        if !sig.is_empty() && !sig.ends_with('(') {
            sig.push(' ');
        }
        sig.push_str(l.trim());
        if depth <= 0 && l.trim_end().ends_with(':') {
            let sig = sig.trim_end_matches(':').replace("( ", "(").replace(", )", ")");
            return (sig, j + 1);
        }
    }
    (sig, i + 1)
}

fn docstring(lines: &[&str], from: usize) -> Option<String> {
    let first = lines.get(from)?.trim();
    let quote = ["\"\"\"", "'''"].into_iter().find(|q| first.starts_with(q))?;
    let rest = &first[3..];
    if let Some(end) = rest.find(quote) {
        return Some(rest[..end].trim().to_string());
    }
    let mut doc = vec![rest.to_string()];
    for l in lines.iter().skip(from + 1).take(200) {
        if let Some(end) = l.find(quote) {
            doc.push(l[..end].to_string());
            break;
        }
        doc.push(l.to_string());
    }
    let indent = doc.iter().skip(1).filter(|l| !l.trim().is_empty()).map(|l| l.len() - l.trim_start().len()).min();
    let doc: Vec<&str> = doc
        .iter()
        .enumerate()
        .map(|(k, l)| if k == 0 { l.as_str() } else { &l[indent.unwrap_or(0).min(l.len())..] })
        .collect();
    Some(doc.join("\n").trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_decorated_functions_with_signature_and_doc() {
        let src = "from inmanta.plugins import plugin\n\n@plugin\ndef greet(\n    name: \"string\",\n    times: \"int\" = 1,\n) -> \"string\":\n    \"\"\"\n    Say hello.\n\n    :param name: who\n    \"\"\"\n    return name\n\ndef helper():\n    pass\n\n@plugin(\"other\")\ndef renamed() -> None:\n    '''One line.'''\n";
        let mut out = Vec::new();
        scan(src, Path::new("/m/plugins/__init__.py"), "m", &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].name, "m::greet");
        assert_eq!(out[0].line, 3);
        assert_eq!(out[0].signature, "def greet(name: \"string\", times: \"int\" = 1) -> \"string\"");
        assert_eq!(out[0].doc.as_deref(), Some("Say hello.\n\n:param name: who"));
        assert_eq!(out[1].name, "m::other");
        assert_eq!(out[1].doc.as_deref(), Some("One line."));
    }
}
