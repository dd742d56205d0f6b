//! What the `.pth` files of a site directory add to Python's import path, read from disk as
//! Python's `site` module would run them, for the cases that put v2 modules within reach:
//!
//! - a line that is a directory: added to `sys.path` (`pip install -e .` of a legacy setuptools
//!   project, or a `.pth` written by hand): `<dir>/inmanta_plugins/<name>/` is a module package;
//! - `site.addsitedir("<dir>")`: another site directory, its own `.pth` files read too (how
//!   Inmanta's project venv inherits the packages of the venv it was made from);
//! - `import __editable___<dist>_finder; ...install()`: setuptools' editable finder, whose
//!   `MAPPING` names the source directory of each top-level package (`inmanta_plugins` or
//!   `inmanta_plugins.<name>`) and whose `NAMESPACES` names namespace portions.
//!
//! Any other `import` line runs code this reader does not: it is skipped, as the packages it may
//! add are not modules Inmanta finds either without running it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The Python package v2 modules are installed in.
const PLUGINS_PACKAGE: &str = "inmanta_plugins";

/// What the `.pth` files of some site directories add.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PthEntries {
    /// Site directories named by `site.addsitedir`, in the order Python adds them.
    pub site_dirs: Vec<PathBuf>,
    /// Directories where the `inmanta_plugins` namespace has a portion: `<portion>/<name>/` is
    /// the package of module `<name>`.
    pub plugin_portions: Vec<PathBuf>,
    /// Packages `inmanta_plugins.<name>` mapped to their directory by an editable finder.
    pub plugin_packages: Vec<(String, PathBuf)>,
}

/// Reads the `.pth` files of `site_dirs` and of every site directory they add, once each.
pub fn read(site_dirs: &[PathBuf]) -> PthEntries {
    let mut entries = PthEntries::default();
    let mut seen: HashSet<PathBuf> = site_dirs.iter().cloned().collect();
    let mut queue: Vec<PathBuf> = site_dirs.to_vec();
    let mut i = 0;
    while i < queue.len() {
        let dir = queue[i].clone();
        i += 1;
        for added in read_site_dir(&dir, &mut entries) {
            if seen.insert(added.clone()) {
                entries.site_dirs.push(added.clone());
                queue.push(added);
            }
        }
    }
    entries
}

/// One site directory's `.pth` files, in name order (as `site.addsitedir` takes them, skipping
/// hidden ones); returns the site directories they add.
fn read_site_dir(dir: &Path, entries: &mut PthEntries) -> Vec<PathBuf> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pth") && !n.starts_with('.'))
        .collect();
    names.sort();
    let mut added = Vec::new();
    for name in names {
        let Ok(text) = std::fs::read_to_string(dir.join(&name)) else { continue };
        for line in text.lines() {
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if line.starts_with("import ") || line.starts_with("import\t") {
                read_import_line(dir, line, entries, &mut added);
                continue;
            }
            let path = dir.join(line);
            if path.join(PLUGINS_PACKAGE).is_dir() {
                entries.plugin_portions.push(path.join(PLUGINS_PACKAGE));
            }
        }
    }
    added
}

fn read_import_line(dir: &Path, line: &str, entries: &mut PthEntries, added: &mut Vec<PathBuf>) {
    if let Some(rest) = line.split_once("site.addsitedir(").map(|(_, r)| r) {
        if let Some((target, _)) = python_string(rest.trim_start()) {
            added.push(dir.join(target));
        }
        return;
    }
    let Some(finder) = line
        .strip_prefix("import")
        .and_then(|r| r.split(';').next())
        .map(str::trim)
        .filter(|m| m.starts_with("__editable__") && m.chars().all(|c| c.is_alphanumeric() || c == '_'))
    else {
        return;
    };
    let Ok(source) = std::fs::read_to_string(dir.join(format!("{finder}.py"))) else { return };
    for (key, path) in dict_after(&source, "MAPPING") {
        if key == PLUGINS_PACKAGE {
            entries.plugin_portions.push(PathBuf::from(path));
        } else if let Some(name) = key.strip_prefix("inmanta_plugins.").filter(|n| !n.contains('.')) {
            entries.plugin_packages.push((name.to_string(), PathBuf::from(path)));
        }
    }
    for (key, paths) in namespaces_after(&source, "NAMESPACES") {
        if key == PLUGINS_PACKAGE {
            entries.plugin_portions.extend(paths.into_iter().map(PathBuf::from));
        }
    }
}

/// The `{'key': 'value', ...}` literal assigned to `name` in a finder module.
fn dict_after(source: &str, name: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(mut rest) = literal_after(source, name) else { return out };
    while let Some((key, after)) = python_string(rest) {
        let Some(after) = after.trim_start().strip_prefix(':') else { break };
        let Some((value, after)) = python_string(after.trim_start()) else { break };
        out.push((key, value));
        rest = after.trim_start().strip_prefix(',').unwrap_or(after).trim_start();
    }
    out
}

/// The `{'key': ['a', 'b'], ...}` literal assigned to `name` in a finder module.
fn namespaces_after(source: &str, name: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let Some(mut rest) = literal_after(source, name) else { return out };
    while let Some((key, after)) = python_string(rest) {
        let Some(mut after) = after.trim_start().strip_prefix(':').and_then(|a| a.trim_start().strip_prefix('['))
        else {
            break;
        };
        let mut values = Vec::new();
        while let Some((value, next)) = python_string(after.trim_start()) {
            values.push(value);
            after = next.trim_start().strip_prefix(',').unwrap_or(next);
        }
        out.push((key, values));
        let Some(after) = after.trim_start().strip_prefix(']') else { break };
        rest = after.trim_start().strip_prefix(',').unwrap_or(after).trim_start();
    }
    out
}

/// The text just inside the `{` of `name: ... = {` (or `name = {`) at the start of a line.
fn literal_after<'s>(source: &'s str, name: &str) -> Option<&'s str> {
    let start = source
        .lines()
        .find(|l| l.strip_prefix(name).is_some_and(|r| r.starts_with(':') || r.trim_start().starts_with('=')))?;
    let offset = start.as_ptr() as usize - source.as_ptr() as usize;
    let from_eq = &source[offset..][start.find('=')? + 1..];
    Some(from_eq.trim_start().strip_prefix('{')?.trim_start())
}

/// A Python string literal at the start of `text` (as `repr` writes one: single or double
/// quotes, backslash escapes of the quote and the backslash) and the text after it.
fn python_string(text: &str) -> Option<(String, &str)> {
    let quote = text.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let mut value = String::new();
    let mut chars = text[1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => value.push(chars.next()?.1),
            c if c == quote => return Some((value, &text[1 + i + 1..])),
            c => value.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory for one test (the crate has no temporary-directory dependency).
    fn scratch(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pth-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The finder module setuptools 80 writes for `pip install -e .` of inmanta-module-files'
    /// source tree (its head, where the literals are).
    const FINDER: &str = r#"from __future__ import annotations
import sys
MAPPING: dict[str, str] = {'inmanta_files': '/src/files/inmanta_files', 'inmanta_plugins': '/src/files/inmanta_plugins'}
NAMESPACES: dict[str, list[str]] = {'inmanta_plugins': ['/src/files/inmanta_plugins'], 'inmanta_plugins.files.model': ['/src/files/inmanta_plugins/files/model']}
PATH_PLACEHOLDER = '__editable__.inmanta_module_files-2.11.1.finder' + ".__path_hook__"
"#;

    #[test]
    fn an_editable_finder_names_the_plugin_namespace_of_the_source_tree() {
        let dir = scratch("finder");
        std::fs::write(
            dir.join("__editable__.inmanta_module_files-2.11.1.pth"),
            "import __editable___inmanta_module_files_2_11_1_finder; __editable___inmanta_module_files_2_11_1_finder.install()\n",
        )
        .unwrap();
        std::fs::write(dir.join("__editable___inmanta_module_files_2_11_1_finder.py"), FINDER).unwrap();
        let found = read(std::slice::from_ref(&dir));
        assert_eq!(
            found.plugin_portions,
            vec![PathBuf::from("/src/files/inmanta_plugins"), PathBuf::from("/src/files/inmanta_plugins")]
        );
        assert!(found.plugin_packages.is_empty() && found.site_dirs.is_empty());
    }

    #[test]
    fn a_package_mapped_alone_and_an_inherited_site_dir_and_a_path_line() {
        let dir = scratch("inherit");
        let (site, parent, src) = (dir.join("site"), dir.join("parent"), dir.join("src"));
        for d in [&site, &parent, &src.join("inmanta_plugins/legacy")] {
            std::fs::create_dir_all(d).unwrap();
        }
        // Inmanta's project venv, made from another venv
        std::fs::write(
            site.join("inmanta-inherit-from-parent-venv.pth"),
            format!(
                "import os; import site; import sys; site.addsitedir(\"{0}\") if \"{0}\" not in sys.path else None\n",
                parent.display()
            ),
        )
        .unwrap();
        std::fs::write(
            parent.join("a.pth"),
            format!("# a comment\n{}\nimport __editable___kv_finder\n", src.display()),
        )
        .unwrap();
        std::fs::write(
            parent.join("__editable___kv_finder.py"),
            "MAPPING = {'inmanta_plugins.kv': '/src/kv/it\\'s'}\n",
        )
        .unwrap();
        let found = read(std::slice::from_ref(&site));
        assert_eq!(found.site_dirs, vec![parent.clone()]);
        assert_eq!(found.plugin_portions, vec![src.join("inmanta_plugins")]);
        assert_eq!(found.plugin_packages, vec![("kv".to_string(), PathBuf::from("/src/kv/it's"))]);
    }
}
