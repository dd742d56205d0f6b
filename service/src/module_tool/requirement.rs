//! Requirements as Inmanta writes them: a Python requirement in its canonical form (the name
//! lower case with `-`, extras and specifiers sorted, as `packaging`'s `Requirement` prints it),
//! and a module requirement (`std ~= 8.6`) with its Python package (`inmanta-module-std~=8.6`).

use std::fmt;
use std::path::Path;

#[derive(Debug, Clone, PartialEq)]
pub struct PythonRequirement {
    pub name: String,
    extras: Vec<String>,
    specifiers: Vec<String>,
    marker: Option<String>,
}

/// `packaging.utils.canonicalize_name`: lower case, runs of `-`, `_`, `.` become one `-`.
pub fn canonical_name(name: &str) -> String {
    let mut out = String::new();
    let mut separator = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            separator = true;
        } else {
            if separator && !out.is_empty() {
                out.push('-');
            }
            separator = false;
            out.extend(c.to_lowercase());
        }
    }
    out
}

impl PythonRequirement {
    /// Parses `name[extras] specifiers; marker`, keeping the name as written.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (main, marker) = match text.split_once(';') {
            Some((main, marker)) => (main.trim(), Some(marker.trim().to_string()).filter(|m| !m.is_empty())),
            None => (text.trim(), None),
        };
        let name_end =
            main.find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))).unwrap_or(main.len());
        let name = main[..name_end].to_string();
        if name.is_empty() {
            return Err(format!("'{text}' is not a valid requirement"));
        }
        let mut rest = main[name_end..].trim_start();
        let mut extras = Vec::new();
        if let Some(after) = rest.strip_prefix('[') {
            let close = after.find(']').ok_or_else(|| format!("'{text}' is not a valid requirement: no `]`"))?;
            extras = after[..close].split(',').map(|e| e.trim().to_string()).filter(|e| !e.is_empty()).collect();
            extras.sort();
            rest = after[close + 1..].trim_start();
        }
        let mut specifiers = Vec::new();
        for part in rest.split(',') {
            let spec: String = part.chars().filter(|c| !c.is_whitespace()).collect();
            if spec.is_empty() {
                continue;
            }
            if !spec.starts_with(['<', '>', '=', '!', '~']) {
                return Err(format!("'{text}' is not a valid requirement: {part:?} is not a version specifier"));
            }
            specifiers.push(spec);
        }
        specifiers.sort();
        Ok(PythonRequirement { name, extras, specifiers, marker })
    }

    /// The same requirement under its canonical name (`inmanta.util.parse_requirement`).
    pub fn canonical(mut self) -> Self {
        self.name = canonical_name(&self.name);
        self
    }

    pub fn specifier(&self) -> String {
        self.specifiers.join(",")
    }

    /// The `==` pin of the requirement, if it has exactly that.
    pub fn pinned_version(&self) -> Option<&str> {
        match self.specifiers.as_slice() {
            [only] => only.strip_prefix("==").filter(|v| !v.starts_with('=')),
            _ => None,
        }
    }
}

impl fmt::Display for PythonRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name)?;
        if !self.extras.is_empty() {
            write!(f, "[{}]", self.extras.join(","))?;
        }
        write!(f, "{}", self.specifiers.join(","))?;
        if let Some(marker) = &self.marker {
            write!(f, "; {marker}")?;
        }
        Ok(())
    }
}

pub const MODULE_PACKAGE_PREFIX: &str = "inmanta-module-";

/// A requirement on an Inmanta module (`std`, `foo_bar>=1.0`).
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleRequirement {
    /// The module name: lower case, `_` between words.
    pub name: String,
    requirement: PythonRequirement,
}

impl ModuleRequirement {
    pub fn parse(text: &str) -> Result<Self, String> {
        let requirement = PythonRequirement::parse(text)?;
        if requirement.name.to_lowercase().starts_with(MODULE_PACKAGE_PREFIX) {
            return Err(format!(
                "'{text}' is a Python package name: name the module ({})",
                requirement.name[MODULE_PACKAGE_PREFIX.len()..].replace('-', "_")
            ));
        }
        let name = requirement.name.to_lowercase().replace('-', "_");
        Ok(ModuleRequirement { name, requirement })
    }

    /// From a Python requirement on `inmanta-module-<name>`; None for any other package.
    pub fn from_python(requirement: &PythonRequirement) -> Option<Self> {
        let canonical = canonical_name(&requirement.name);
        let module = canonical.strip_prefix(MODULE_PACKAGE_PREFIX)?.replace('-', "_");
        let mut requirement = requirement.clone();
        requirement.name.clone_from(&module);
        Some(ModuleRequirement { name: module, requirement })
    }

    /// `inmanta-module-<name with ->` and the same specifiers, canonical.
    pub fn python_package(&self) -> PythonRequirement {
        let mut requirement = self.requirement.clone();
        requirement.name = format!("{MODULE_PACKAGE_PREFIX}{}", self.name.replace('_', "-"));
        requirement
    }

    pub fn specifier(&self) -> String {
        self.requirement.specifier()
    }

    /// Whether `version` satisfies every specifier.
    pub fn allows(&self, version: &str) -> bool {
        let Ok(version) = version.parse::<pep508_rs::pep440_rs::Version>() else {
            return false;
        };
        self.requirement.specifiers.iter().all(|spec| {
            spec.parse::<pep508_rs::pep440_rs::VersionSpecifier>().map(|s| s.contains(&version)).unwrap_or(false)
        })
    }
}

impl fmt::Display for ModuleRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut requirement = self.requirement.clone();
        requirement.name.clone_from(&self.name);
        requirement.fmt(f)
    }
}

/// The requirement lines of a requirements.txt as pip reads them: comments (`#` at the start or
/// after a space), blank lines and options (`-r`, `-c`, `--index-url`) left out; none when the
/// file is missing.
pub fn requirements_txt_lines(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    text.lines()
        .map(|l| l.split(" #").next().unwrap_or("").trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('-'))
        .map(str::to_string)
        .collect()
}

/// The module requirements (`inmanta-module-*`) among a requirements.txt's lines.
pub fn requirements_txt_modules(path: &Path) -> Vec<ModuleRequirement> {
    requirements_txt_lines(path)
        .iter()
        .filter_map(|l| PythonRequirement::parse(l).ok())
        .filter_map(|r| ModuleRequirement::from_python(&r))
        .collect()
}

/// The `requires` list of a project.yml or module.yml, as written (a single string counts as a
/// list of one, as Inmanta reads it).
pub fn yaml_requires(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let value: serde_norway::Value = serde_norway::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(match value.get("requires") {
        Some(serde_norway::Value::Sequence(items)) => {
            items.iter().filter_map(|r| r.as_str().map(str::to_string)).collect()
        }
        Some(serde_norway::Value::String(one)) => vec![one.clone()],
        _ => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms_as_packaging_prints_them() {
        let r = PythonRequirement::parse("Foo_Bar >= 1.0, <2").unwrap().canonical();
        assert_eq!(r.to_string(), "foo-bar<2,>=1.0");
        assert_eq!(PythonRequirement::parse("x[b,a]>1").unwrap().to_string(), "x[a,b]>1");
        let m = ModuleRequirement::parse("foo_bar>=1.0").unwrap();
        assert_eq!(m.python_package().to_string(), "inmanta-module-foo-bar>=1.0");
        assert_eq!(m.to_string(), "foo_bar>=1.0");
        assert_eq!(ModuleRequirement::parse("std ~= 8.6").unwrap().to_string(), "std~=8.6");
        assert!(ModuleRequirement::parse("std ~= 8.6").unwrap().allows("8.7.5"));
        assert!(!ModuleRequirement::parse("std<8").unwrap().allows("8.7.5"));
    }
}
