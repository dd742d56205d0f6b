//! The file list setuptools' `egg_info` makes of a source tree (`SOURCES.txt`): defaults, then
//! `MANIFEST.in` (include, exclude, recursive-include, recursive-exclude, global-include,
//! global-exclude, graft, prune, with setuptools' glob semantics: `*` stays in one path
//! component, `**` spans directories, includes skip hidden names as Python's `glob` does), then
//! the build directories pruned.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A source tree in memory: relative paths (with `/`) of its files and where their bytes are.
pub struct FileTree {
    files: BTreeMap<String, Content>,
}

enum Content {
    Disk(PathBuf),
    Bytes(Vec<u8>),
}

impl FileTree {
    /// Every file under `dir` (following symbolic links, as `shutil.copytree` copies them),
    /// but the `.git` directory, which no build takes.
    pub fn from_dir(dir: &Path) -> Result<Self, String> {
        let mut files = BTreeMap::new();
        let mut pending = vec![(dir.to_path_buf(), String::new())];
        while let Some((path, relative)) = pending.pop() {
            let entries = std::fs::read_dir(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            for entry in entries {
                let entry = entry.map_err(|e| format!("{}: {e}", path.display()))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let child = if relative.is_empty() { name.clone() } else { format!("{relative}/{name}") };
                let full = entry.path();
                if full.is_dir() {
                    if relative.is_empty() && name == ".git" {
                        continue;
                    }
                    pending.push((full, child));
                } else if full.is_file() {
                    files.insert(child, Content::Disk(full));
                }
            }
        }
        Ok(FileTree { files })
    }

    pub fn has_file(&self, path: &str) -> bool {
        self.files.contains_key(path)
    }

    pub fn has_dir(&self, dir: &str) -> bool {
        let prefix = format!("{dir}/");
        self.files.keys().any(|f| f.starts_with(&prefix))
    }

    pub fn put(&mut self, path: &str, bytes: Vec<u8>) {
        self.files.insert(path.to_string(), Content::Bytes(bytes));
    }

    /// Moves every file under `from/` to under `to/`.
    pub fn move_dir(&mut self, from: &str, to: &str) {
        let prefix = format!("{from}/");
        let moved: Vec<String> = self.files.keys().filter(|f| f.starts_with(&prefix)).cloned().collect();
        for file in moved {
            if let Some(content) = self.files.remove(&file) {
                self.files.insert(format!("{to}/{}", &file[prefix.len()..]), content);
            }
        }
    }

    pub fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        match self.files.get(path) {
            Some(Content::Disk(disk)) => std::fs::read(disk).map_err(|e| format!("{}: {e}", disk.display())),
            Some(Content::Bytes(bytes)) => Ok(bytes.clone()),
            None => Err(format!("{path}: no such file in the module")),
        }
    }

    pub fn read_text(&self, path: &str) -> Result<String, String> {
        String::from_utf8(self.read(path)?).map_err(|_| format!("{path}: not UTF-8 text"))
    }

    /// The files directly in `dir` ("" is the root).
    pub fn files_in(&self, dir: &str) -> Vec<String> {
        self.files.keys().filter(|f| parent(f) == dir).cloned().collect()
    }

    /// The directories directly in `dir`.
    pub fn subdirs(&self, dir: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for file in self.files.keys() {
            let rest = if dir.is_empty() {
                file.as_str()
            } else {
                match file.strip_prefix(dir).and_then(|r| r.strip_prefix('/')) {
                    Some(rest) => rest,
                    None => continue,
                }
            };
            if let Some((sub, _)) = rest.split_once('/') {
                let sub = if dir.is_empty() { sub.to_string() } else { format!("{dir}/{sub}") };
                if out.last() != Some(&sub) && !out.contains(&sub) {
                    out.push(sub);
                }
            }
        }
        out
    }

    /// Python's `glob(pattern, recursive=True)` over the files: wildcards match no hidden name.
    pub fn glob(&self, pattern: &str) -> Vec<String> {
        let parts: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
        self.files.keys().filter(|f| matches_path(&parts, &f.split('/').collect::<Vec<_>>(), false)).cloned().collect()
    }

    /// The directories `pattern` names (for graft), by glob.
    fn glob_dirs(&self, pattern: &str) -> Vec<String> {
        let parts: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
        let mut dirs: Vec<String> = Vec::new();
        for file in self.files.keys() {
            let components: Vec<&str> = file.split('/').collect();
            for depth in 1..components.len() {
                let dir = &components[..depth];
                if matches_path(&parts, dir, false) {
                    let dir = dir.join("/");
                    if !dirs.contains(&dir) {
                        dirs.push(dir);
                    }
                }
            }
        }
        dirs
    }
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map(|(d, _)| d).unwrap_or("")
}

/// Whether a path (its components) matches a pattern's components; `**` spans zero or more
/// components (as the last component: anything below). With `hidden`, wildcards also match
/// names starting with `.` (setuptools' regex translation); without, not (Python's glob).
fn matches_path(pattern: &[&str], path: &[&str], hidden: bool) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => {
            if rest.is_empty() {
                return !path.is_empty() && (hidden || path.iter().all(|p| !p.starts_with('.')));
            }
            (0..=path.len()).any(|skip| {
                (hidden || path[..skip].iter().all(|p| !p.starts_with('.')))
                    && matches_path(rest, &path[skip..], hidden)
            })
        }
        Some((first, rest)) => match path.split_first() {
            Some((name, path_rest)) => {
                let wildcard_on_hidden = name.starts_with('.') && !first.starts_with('.') && !hidden;
                !wildcard_on_hidden && wildcard(first, name) && matches_path(rest, path_rest, hidden)
            }
            None => false,
        },
    }
}

/// `fnmatch.fnmatchcase`: `*` matches anything (dots and slashes too), `?` one character,
/// `[seq]` / `[!seq]` a set.
pub fn fnmatch(pattern: &str, name: &str) -> bool {
    wildcard(pattern, name)
}

fn wildcard(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    wildcard_at(&p, &t)
}

fn wildcard_at(p: &[char], t: &[char]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') => (0..=t.len()).any(|skip| wildcard_at(&p[1..], &t[skip..])),
        Some('?') => !t.is_empty() && wildcard_at(&p[1..], &t[1..]),
        Some('[') => {
            let Some(close) = p.iter().skip(2).position(|&c| c == ']').map(|i| i + 2) else {
                return t.first() == Some(&'[') && wildcard_at(&p[1..], &t[1..]);
            };
            let Some(&c) = t.first() else { return false };
            let (negate, set) = match p[1] {
                '!' => (true, &p[2..close]),
                _ => (false, &p[1..close]),
            };
            let mut found = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == '-' {
                    found |= set[i] <= c && c <= set[i + 2];
                    i += 3;
                } else {
                    found |= set[i] == c;
                    i += 1;
                }
            }
            found != negate && wildcard_at(&p[close + 1..], &t[1..])
        }
        Some(&c) => t.first() == Some(&c) && wildcard_at(&p[1..], &t[1..]),
    }
}

/// The manifest being built: an ordered set of files of a [`FileTree`].
pub struct Manifest<'a> {
    tree: &'a FileTree,
    files: Vec<String>,
}

impl<'a> Manifest<'a> {
    pub fn new(tree: &'a FileTree) -> Self {
        Manifest { tree, files: Vec::new() }
    }

    fn add(&mut self, file: String) {
        if !self.files.contains(&file) {
            self.files.push(file);
        }
    }

    fn remove_matching(&mut self, pattern: &str) {
        let parts: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
        self.files.retain(|f| !matches_path(&parts, &f.split('/').collect::<Vec<_>>(), true));
    }

    pub fn include_exact(&mut self, file: &str) {
        if self.tree.has_file(file) {
            self.add(file.to_string());
        }
    }

    pub fn include_modules_of(&mut self, dir: &str) {
        for file in self.tree.files_in(dir) {
            if file.ends_with(".py") {
                self.add(file);
            }
        }
    }

    /// Applies `MANIFEST.in`, line by line (a `\` at the end of a line continues it).
    pub fn apply_template(&mut self, template: &str) -> Result<(), String> {
        let joined = template.replace("\\\n", " ");
        for (number, line) in joined.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let bad = |what: &str| format!("MANIFEST.in line {}: `{}` needs {what}", number + 1, words[0]);
            match (words[0], &words[1..]) {
                ("include", patterns) if !patterns.is_empty() => {
                    for pattern in patterns {
                        for file in self.tree.glob(pattern) {
                            self.add(file);
                        }
                    }
                }
                ("exclude", patterns) if !patterns.is_empty() => {
                    for pattern in patterns {
                        self.remove_matching(pattern);
                    }
                }
                ("recursive-include", [dir, patterns @ ..]) if !patterns.is_empty() => {
                    for pattern in patterns {
                        for file in self.tree.glob(&format!("{dir}/**/{pattern}")) {
                            self.add(file);
                        }
                    }
                }
                ("recursive-exclude", [dir, patterns @ ..]) if !patterns.is_empty() => {
                    for pattern in patterns {
                        self.remove_matching(&format!("{dir}/**/{pattern}"));
                    }
                }
                ("global-include", patterns) if !patterns.is_empty() => {
                    for pattern in patterns {
                        let parts: Vec<&str> = vec!["**", pattern];
                        let found: Vec<String> = self
                            .tree
                            .files
                            .keys()
                            .filter(|f| matches_path(&parts, &f.split('/').collect::<Vec<_>>(), true))
                            .cloned()
                            .collect();
                        for file in found {
                            self.add(file);
                        }
                    }
                }
                ("global-exclude", patterns) if !patterns.is_empty() => {
                    for pattern in patterns {
                        self.remove_matching(&format!("**/{pattern}"));
                    }
                }
                ("graft", [dir]) => {
                    for matched in self.tree.glob_dirs(dir) {
                        let prefix = format!("{matched}/");
                        let found: Vec<String> =
                            self.tree.files.keys().filter(|f| f.starts_with(&prefix)).cloned().collect();
                        for file in found {
                            self.add(file);
                        }
                    }
                }
                ("prune", [dir]) => self.remove_matching(&format!("{dir}/**")),
                ("include" | "exclude" | "global-include" | "global-exclude", _) => return Err(bad("patterns")),
                ("recursive-include" | "recursive-exclude", _) => return Err(bad("a directory and patterns")),
                ("graft" | "prune", _) => return Err(bad("one directory")),
                (other, _) => return Err(format!("MANIFEST.in line {}: unknown action {other:?}", number + 1)),
            }
        }
        Ok(())
    }

    /// What egg_info always prunes: the build directory, the release tree, version control.
    pub fn prune_defaults(&mut self, release_dir: &str) {
        self.remove_matching("build/**");
        self.remove_matching(&format!("{release_dir}/**"));
        self.files.retain(|f| !f.split('/').rev().skip(1).any(|d| matches!(d, "RCS" | "CVS" | ".svn")));
    }

    pub fn files(self) -> Vec<String> {
        self.files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_as_python_and_setuptools() {
        assert!(matches_path(&["a", "**", "*.cf"], &["a", "x.cf"], false));
        assert!(matches_path(&["a", "**", "*.cf"], &["a", "b", "c", "x.cf"], false));
        assert!(!matches_path(&["a", "**", "*.cf"], &["a", ".b", "x.cf"], false));
        assert!(!matches_path(&["a", "*"], &["a", ".gitkeep"], false));
        assert!(matches_path(&["**", "*.pyc"], &["a", "__pycache__", "x.pyc"], true));
        assert!(fnmatch("inmanta_plugins*", "inmanta_plugins.x.model"));
        assert!(fnmatch("LICEN[CS]E*", "LICENSE.txt"));
        assert!(!fnmatch("LICEN[CS]E*", "LICENXE"));
    }
}
