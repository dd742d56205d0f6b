//! `inmanta module list` and `inmanta module status` on the modules our compiler loads for the
//! project in the current directory, with Inmanta 20.1's output: list's table is texttable's
//! (header, border, vertical lines, 80 columns at most, cells wrapped as `textwrap.wrap`), status
//! runs `git status --porcelain` in each v1 module and skips v2 modules with Inmanta's warning,
//! push runs `git push` in each v1 module the same way, verify loads the project.

use std::path::{Path, PathBuf};

use super::requirement::{ModuleRequirement, PythonRequirement, requirements_txt_modules, yaml_requires};

struct Loaded {
    name: String,
    version: String,
    /// The module's directory; None for a module built into the compiler.
    dir: Option<PathBuf>,
}

impl Loaded {
    fn is_v1(&self) -> bool {
        self.dir.as_ref().is_some_and(|d| d.join("module.yml").is_file())
    }

    /// An installed v2 module lives in site-packages; anywhere else it is an editable install.
    fn editable(&self) -> bool {
        match &self.dir {
            Some(dir) if !self.is_v1() => !dir.components().any(|c| c.as_os_str() == "site-packages"),
            Some(_) => true,
            None => false,
        }
    }

    /// The module requirements this module declares.
    fn requires(&self) -> Vec<ModuleRequirement> {
        let Some(dir) = &self.dir else { return Vec::new() };
        if self.is_v1() {
            let mut out = yaml_module_requires(&dir.join("module.yml"));
            out.extend(requirements_txt_modules(&dir.join("requirements.txt")));
            return out;
        }
        // site-packages/inmanta_plugins/<name> -> site-packages/inmanta_module_<name>-*.dist-info
        let Some(site) = dir.parent().and_then(Path::parent) else { return Vec::new() };
        let prefix = format!("inmanta_module_{}-", self.name);
        let Ok(entries) = std::fs::read_dir(site) else { return Vec::new() };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(&prefix) && name.ends_with(".dist-info") {
                let metadata = std::fs::read_to_string(entry.path().join("METADATA")).unwrap_or_default();
                return metadata
                    .lines()
                    .filter_map(|l| l.strip_prefix("Requires-Dist: "))
                    .filter(|r| !r.contains("extra =="))
                    .filter_map(|r| PythonRequirement::parse(r).ok())
                    .filter_map(|r| ModuleRequirement::from_python(&r))
                    .collect();
            }
        }
        Vec::new()
    }
}

/// The module requirements of a project.yml or module.yml; none when it cannot be read.
fn yaml_module_requires(path: &Path) -> Vec<ModuleRequirement> {
    yaml_requires(path).unwrap_or_default().iter().filter_map(|r| ModuleRequirement::parse(r).ok()).collect()
}

fn loaded_modules(project_dir: &Path, python: Option<&Path>) -> Result<Vec<Loaded>, String> {
    let options = compiler::CompileOptions { python: python.map(Path::to_path_buf), ..Default::default() };
    let output = compiler::compile_project_with(project_dir, &options).map_err(|d| d.to_string())?;
    let mut modules: Vec<Loaded> = output
        .modules
        .iter()
        .map(|m| Loaded {
            name: m.name.clone(),
            version: m.version.clone(),
            dir: match &m.origin {
                compiler::ModuleOrigin::Installed(dir) => Some(dir.clone()),
                compiler::ModuleOrigin::BuiltIn => None,
            },
        })
        .collect();
    modules.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(modules)
}

pub fn list(project_dir: &Path, python: Option<&Path>) -> Result<(), String> {
    let modules = loaded_modules(project_dir, python)?;
    let mut specs: Vec<ModuleRequirement> = yaml_module_requires(&project_dir.join("project.yml"));
    specs.extend(requirements_txt_modules(&project_dir.join("requirements.txt")));
    for module in &modules {
        specs.extend(module.requires());
    }
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_string();
    let mut rows = Vec::new();
    for module in &modules {
        let own: Vec<&ModuleRequirement> = specs.iter().filter(|r| r.name == module.name).collect();
        let (expected, matches) = if module.is_v1() {
            // Inmanta looks the version up in the module's git tags; here the installed one.
            (module.version.clone(), true)
        } else {
            let specifiers: Vec<String> = own.iter().map(|r| r.specifier()).filter(|s| !s.is_empty()).collect();
            let expected = if specifiers.is_empty() { "*".to_string() } else { specifiers.join(",") };
            (expected, own.iter().all(|r| r.allows(&module.version)))
        };
        rows.push(vec![
            module.name.clone(),
            if module.is_v1() { "v1" } else { "v2" }.to_string(),
            yes_no(module.editable()),
            module.version.clone(),
            expected,
            yes_no(matches),
        ]);
    }
    let header =
        ["Name", "Type", "Editable", "Installed version", "Expected in project", "Matches"].map(str::to_string);
    println!("{}", texttable(&header, &rows, 80));
    Ok(())
}

pub fn status(project_dir: &Path, module: Option<&str>, python: Option<&Path>) -> Result<(), String> {
    for module in selected(project_dir, module, python)? {
        let Some(dir) = module.dir.as_ref().filter(|_| module.is_v1()) else {
            // Inmanta logs to stdout.
            println!(
                "inmanta.moduletool       WARNING Skipping module {}: v2 modules do not support this operation.",
                module.name
            );
            continue;
        };
        let output = std::process::Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(dir)
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        if !output.status.success() {
            println!("Failed to get status of module");
            continue;
        }
        let text = String::from_utf8_lossy(&output.stdout);
        let files: Vec<&str> = text.split('\n').filter(|l| !l.is_empty()).map(str::trim).collect();
        if files.is_empty() {
            println!("Module {} ({}) has no changes", module.name, dir.display());
        } else {
            println!("Module {} ({})", module.name, dir.display());
            for file in files {
                println!("\t{file}");
            }
            println!();
        }
    }
    Ok(())
}

/// The modules `inmanta module status|push` work on: `-m NAME` only, else every module the
/// project loads.
fn selected(project_dir: &Path, module: Option<&str>, python: Option<&Path>) -> Result<Vec<Loaded>, String> {
    let mut modules = loaded_modules(project_dir, python)?;
    if let Some(name) = module {
        modules.retain(|m| m.name == name);
        if modules.is_empty() {
            return Err(format!("could not find module {name}: the project does not load it"));
        }
    }
    Ok(modules)
}

/// `inmanta module push`: `git push --follow-tags --porcelain` in each v1 module, with Inmanta's
/// lines (`NAME (PATH) ` then git's output and `done`, or `Cloud not push module NAME`, sic).
pub fn push(project_dir: &Path, module: Option<&str>, python: Option<&Path>) -> Result<(), String> {
    for module in selected(project_dir, module, python)? {
        let Some(dir) = module.dir.as_ref().filter(|_| module.is_v1()) else {
            println!(
                "inmanta.moduletool       WARNING Skipping module {}: v2 modules do not support this operation.",
                module.name
            );
            continue;
        };
        print!("{} ({}) ", module.name, dir.display());
        let output = std::process::Command::new("git")
            .args(["push", "--follow-tags", "--porcelain"])
            .current_dir(dir)
            .stderr(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        if output.status.success() {
            println!("{}", String::from_utf8_lossy(&output.stdout));
            println!("done");
        } else {
            println!("Cloud not push module {}", module.name);
        }
        println!();
    }
    Ok(())
}

/// `inmanta module verify`: the project loads (every module it imports found and accepted).
pub fn verify(project_dir: &Path, python: Option<&Path>) -> Result<(), String> {
    loaded_modules(project_dir, python).map(|_| ())
}

/// `textwrap.wrap(text, width)`: words filled greedily, a word longer than the width broken.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word = word.to_string();
        loop {
            let needed =
                if line.is_empty() { word.chars().count() } else { line.chars().count() + 1 + word.chars().count() };
            if needed <= width {
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(&word);
                break;
            }
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
                continue;
            }
            let head: String = word.chars().take(width).collect();
            word = word.chars().skip(width).collect();
            lines.push(head);
            if word.is_empty() {
                break;
            }
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// texttable with HEADER | BORDER | VLINES: header cells centred, others left-aligned.
fn texttable(header: &[String], rows: &[Vec<String>], max_width: usize) -> String {
    let columns = header.len();
    let cell_len = |c: &str| c.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    let mut widths: Vec<usize> = header.iter().map(|h| cell_len(h)).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell_len(cell));
        }
    }
    let deco = 3 * (columns - 1) + 4;
    if widths.iter().sum::<usize>() + deco > max_width {
        let mut available = max_width.saturating_sub(deco);
        let mut fitted = vec![0; columns];
        let mut i = 0;
        while available > 0 && fitted.iter().zip(&widths).any(|(f, w)| f < w) {
            if fitted[i] < widths[i] {
                fitted[i] += 1;
                available -= 1;
            }
            i = (i + 1) % columns;
        }
        widths = fitted;
    }
    let line = |c: char| {
        let inner: Vec<String> = widths.iter().map(|w| c.to_string().repeat(*w)).collect();
        format!("+{c}{}{c}+\n", inner.join(&format!("{c}+{c}")))
    };
    let draw = |cells: &[String], centred: bool| {
        let wrapped: Vec<Vec<String>> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, w)| {
                cell.split('\n')
                    .flat_map(|c| if c.trim().is_empty() { vec![String::new()] } else { wrap(c, *w) })
                    .collect()
            })
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        let mut out = String::new();
        for n in 0..height {
            out.push_str("| ");
            let parts: Vec<String> = wrapped
                .iter()
                .zip(&widths)
                .map(|(lines, w)| {
                    let text = lines.get(n).cloned().unwrap_or_default();
                    let fill = w.saturating_sub(text.chars().count());
                    if centred {
                        format!("{}{text}{}", " ".repeat(fill / 2), " ".repeat(fill / 2 + fill % 2))
                    } else {
                        format!("{text}{}", " ".repeat(fill))
                    }
                })
                .collect();
            out.push_str(&parts.join(" | "));
            out.push_str(" |\n");
        }
        out
    };
    let mut out = line('-');
    out.push_str(&draw(header, true));
    out.push_str(&line('='));
    for row in rows {
        out.push_str(&draw(row, false));
    }
    out.push_str(&line('-'));
    out.pop();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texttable_as_inmanta_prints_module_list() {
        let header =
            ["Name", "Type", "Editable", "Installed version", "Expected in project", "Matches"].map(str::to_string);
        let rows = vec![vec!["std".into(), "v2".into(), "no".into(), "8.7.5".into(), "~=8.0".into(), "yes".into()]];
        let table = texttable(&header, &rows, 80);
        let expected = "\
+------+------+----------+-------------------+---------------------+---------+
| Name | Type | Editable | Installed version | Expected in project | Matches |
+======+======+==========+===================+=====================+=========+
| std  | v2   | no       | 8.7.5             | ~=8.0               | yes     |
+------+------+----------+-------------------+---------------------+---------+";
        assert_eq!(table, expected);
    }
}
