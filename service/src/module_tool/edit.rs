//! `inmanta module add`: a module dependency written where Inmanta 20.1 writes it. In a project,
//! `requirements.txt` gets the module's Python package (replacing a line for the same package,
//! comments kept) and the project's modules are installed; in a v2 module, `[options]
//! install_requires` of setup.cfg (the file rewritten as Python's configparser writes it); in a v1
//! module, `requirements.txt`, and the module leaves `requires` of module.yml.

use std::path::{Path, PathBuf};

use super::requirement::{
    ModuleRequirement, PythonRequirement, canonical_name, requirements_txt_modules, yaml_requires,
};
use super::setup_cfg::SetupCfg;

enum ModuleLike {
    Project(PathBuf),
    V2Module(PathBuf),
    V1Module(PathBuf),
}

impl ModuleLike {
    fn find(dir: &Path) -> Option<Self> {
        if dir.join("project.yml").is_file() {
            Some(ModuleLike::Project(dir.to_path_buf()))
        } else if dir.join("setup.cfg").is_file() {
            Some(ModuleLike::V2Module(dir.to_path_buf()))
        } else if dir.join("module.yml").is_file() {
            Some(ModuleLike::V1Module(dir.to_path_buf()))
        } else {
            None
        }
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Inmanta's `RequirementsTxtFile.set_requirement_and_write`: every line on the same package
/// removed (comments and blank lines kept), the requirement appended, no newline at the end.
fn set_requirement(path: &Path, requirement: &PythonRequirement) -> Result<(), String> {
    let existing = if path.is_file() { read(path)? } else { String::new() };
    let package = canonical_name(&requirement.name);
    let mut kept = String::new();
    for line in existing.split_inclusive('\n') {
        let text = line.trim();
        let same_package = !text.is_empty()
            && !text.starts_with('#')
            && PythonRequirement::parse(text.split(" #").next().unwrap_or(text))
                .is_ok_and(|r| canonical_name(&r.name) == package);
        if !same_package {
            kept.push_str(line);
        }
    }
    let kept = kept.trim_end();
    let content = if kept.is_empty() { requirement.to_string() } else { format!("{kept}\n{requirement}") };
    write(path, &content)
}

pub fn add(module_req: &str, override_existing: bool, python: Option<&Path>) -> Result<(), String> {
    let dir = std::env::current_dir().map_err(|e| e.to_string())?;
    add_in(&dir, module_req, override_existing, python)
}

pub fn add_in(dir: &Path, module_req: &str, override_existing: bool, python: Option<&Path>) -> Result<(), String> {
    let Some(target) = ModuleLike::find(dir) else {
        return Err("Current working directory doesn't contain an Inmanta module or project".into());
    };
    let requirement =
        ModuleRequirement::parse(module_req).map_err(|_| format!("'{module_req}' is not a valid requirement"))?;
    let package = requirement.python_package().canonical();
    let existing: Vec<String> = match &target {
        ModuleLike::Project(d) | ModuleLike::V1Module(d) => {
            let file = if matches!(target, ModuleLike::Project(_)) { "project.yml" } else { "module.yml" };
            let mut names: Vec<String> = yaml_requires(&d.join(file))?
                .iter()
                .filter_map(|r| ModuleRequirement::parse(r).ok())
                .map(|r| r.name)
                .collect();
            names.extend(requirements_txt_modules(&d.join("requirements.txt")).into_iter().map(|r| r.name));
            names
        }
        ModuleLike::V2Module(d) => {
            let cfg = SetupCfg::parse(&read(&d.join("setup.cfg"))?)?;
            cfg.get_list("options", "install_requires")
                .iter()
                .filter_map(|l| PythonRequirement::parse(l).ok())
                .filter_map(|r| ModuleRequirement::from_python(&r))
                .map(|r| r.name)
                .collect()
        }
    };
    if !override_existing && existing.contains(&requirement.name) {
        return Err(
            "A dependency on the given module was already defined, use --override to override the version constraint"
                .into(),
        );
    }
    match &target {
        ModuleLike::Project(d) => {
            set_requirement(&d.join("requirements.txt"), &package)?;
            crate::python_install::install_with(d, python, false, &mut |line| eprintln!("{line}"))
                .map_err(|e| format!("Failed to install {requirement}: {e}"))?;
        }
        ModuleLike::V2Module(d) => {
            let path = d.join("setup.cfg");
            let mut cfg = SetupCfg::parse(&read(&path)?)?;
            let mut lines: Vec<String> = cfg
                .get("options", "install_requires")
                .unwrap_or_default()
                .split('\n')
                .filter(|l| !l.is_empty())
                .filter(|l| {
                    PythonRequirement::parse(l).map(|r| canonical_name(&r.name) != package.name).unwrap_or(true)
                })
                .map(str::to_string)
                .collect();
            lines.push(package.to_string());
            cfg.set("options", "install_requires", &lines.join("\n"));
            write(&path, &cfg.write())?;
        }
        ModuleLike::V1Module(d) => {
            set_requirement(&d.join("requirements.txt"), &package)?;
            remove_from_module_yml(&d.join("module.yml"), &requirement.name)?;
        }
    }
    Ok(())
}

/// Drops the `requires` entries on `module` from module.yml. When one goes, the file is written
/// again as Inmanta's ruamel round trip writes it (`indent(mapping=2, sequence=4, offset=2)`):
/// block sequence items as `  - item`, an emptied list as `[]`; other lines as they were.
fn remove_from_module_yml(path: &Path, module: &str) -> Result<(), String> {
    let text = read(path)?;
    let mut key = String::new();
    let mut removed = false;
    let mut lines: Vec<(String, String)> = Vec::new();
    for line in text.split('\n') {
        if !line.starts_with([' ', '-', '#']) && !line.is_empty() {
            key = line.split(':').next().unwrap_or("").trim().to_string();
        }
        let entry = line.trim_start().strip_prefix("- ").map(|e| e.trim().trim_matches(['"', '\'']));
        if key == "requires" && entry.and_then(|e| ModuleRequirement::parse(e).ok()).is_some_and(|r| r.name == module) {
            removed = true;
            continue;
        }
        lines.push((key.clone(), line.to_string()));
    }
    if !removed {
        return Ok(());
    }
    let mut out: Vec<String> = Vec::new();
    for (i, (key, line)) in lines.iter().enumerate() {
        let is_item = line.trim_start().starts_with("- ");
        if is_item {
            out.push(format!("  - {}", line.trim_start()[2..].trim_start()));
            continue;
        }
        let emptied = key == "requires"
            && line.trim_end() == "requires:"
            && !lines[i + 1..]
                .iter()
                .take_while(|(k, _)| k == "requires")
                .any(|(_, l)| l.trim_start().starts_with("- "));
        if emptied {
            out.push("requires: []".to_string());
        } else {
            out.push(line.clone());
        }
    }
    write(path, &out.join("\n"))
}
