//! A `requires` entry of `project.yml` and the version matcher for it: which tag of a v1 module
//! the server's compiles check out, and the constraint `inmanta project install` hands to pip.

use std::cmp::Ordering;
use std::fmt;

/// A module requirement: `name`, `name ~= 1.2`, `name >= 1.0, < 2`, also written with the
/// package name (`inmanta-module-name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The module's name (`my_mod` for `inmanta-module-my-mod`).
    pub name: String,
    /// The entry as written, trimmed.
    pub text: String,
    /// The version constraints as written, without spaces (`~=1.2`, `>=1.0,<2`); empty for none.
    pub constraint: String,
}

impl Requirement {
    /// `None` when the entry names no module.
    pub fn parse(text: &str) -> Option<Requirement> {
        let text = text.trim();
        let end = text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).unwrap_or(text.len());
        let name = text[..end].replace('-', "_");
        let name = name.strip_prefix("inmanta_module_").map(str::to_string).unwrap_or(name);
        if name.is_empty() {
            return None;
        }
        let constraint = text[end..].chars().filter(|c| !c.is_whitespace()).collect();
        Some(Requirement { name, text: text.to_string(), constraint })
    }

    /// The Python package of this module with the same constraint, as pip reads it.
    pub fn python_package(&self) -> String {
        format!("inmanta-module-{}{}", self.name.replace('_', "-"), self.constraint)
    }

    /// Whether `version` meets every constraint; an error names a constraint that is not one.
    pub fn allows(&self, version: &Version) -> Result<bool, String> {
        let mut allowed = true;
        for part in self.constraint.split(',').filter(|p| !p.is_empty()) {
            let op_end = part.find(|c: char| c.is_ascii_digit() || c == 'v').unwrap_or(part.len());
            let bound = Version::parse(&part[op_end..])
                .ok_or_else(|| format!("requirement {}: {part} is not a version constraint", self.text))?;
            let ord = version.cmp(&bound);
            allowed &= match &part[..op_end] {
                "" | "==" | "=" => ord.is_eq(),
                "!=" => !ord.is_eq(),
                ">=" => ord.is_ge(),
                "<=" => ord.is_le(),
                ">" => ord.is_gt(),
                "<" => ord.is_lt(),
                // Compatible release: at least the bound, with the same parts but the last.
                "~=" => {
                    let prefix = &bound.0[..bound.0.len().saturating_sub(1).max(1)];
                    ord.is_ge() && version.0.len() >= prefix.len() && &version.0[..prefix.len()] == prefix
                }
                op => return Err(format!("requirement {}: unknown operator {op}", self.text)),
            };
        }
        Ok(allowed)
    }
}

/// A release version (`1.2.3`, or a tag `v1.2.3`), compared part by part, missing parts as 0.
#[derive(Debug, Clone)]
pub struct Version(Vec<u64>);

impl Version {
    /// `None` for anything that is not dot-separated numbers.
    pub fn parse(text: &str) -> Option<Version> {
        let text = text.strip_prefix('v').unwrap_or(text);
        let parts: Option<Vec<u64>> = text.split('.').map(|p| p.parse().ok()).collect();
        parts.filter(|p| !p.is_empty()).map(Version)
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        let n = self.0.len().max(other.0.len());
        (0..n)
            .map(|i| self.0.get(i).unwrap_or(&0).cmp(other.0.get(i).unwrap_or(&0)))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Version {}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(u64::to_string).collect();
        f.write_str(&parts.join("."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    fn allows(requirement: &str, version: &str) -> bool {
        Requirement::parse(requirement).unwrap().allows(&v(version)).unwrap()
    }

    #[test]
    fn constraints_pick_the_allowed_versions() {
        assert!(allows("mymod ~= 1.2", "1.2"));
        assert!(allows("mymod ~= 1.2", "1.9.1"));
        assert!(!allows("mymod ~= 1.2", "2.0"));
        assert!(!allows("mymod ~= 1.2", "1.1.9"));
        assert!(allows("other>=1.0,<2", "1.5"));
        assert!(!allows("other>=1.0,<2", "2.0.0"));
        assert!(allows("plain", "0.1"));
        assert!(allows("x == 1.2.3", "1.2.3"));
        assert!(allows("x == 1.2", "1.2.0"));
        assert!(!allows("x != 1.2", "1.2.0"));
        assert!(Requirement::parse("x >= 1.0.dev0").unwrap().allows(&v("1.0")).is_err());
        assert_eq!(v("v1.2.3"), v("1.2.3"));
        assert!(v("1.10") > v("1.9"));
        assert!(Version::parse("release").is_none());
    }

    #[test]
    fn package_names_become_module_names_and_back() {
        let r = Requirement::parse("  inmanta-module-my-mod >= 2, < 3 ").unwrap();
        assert_eq!((r.name.as_str(), r.constraint.as_str()), ("my_mod", ">=2,<3"));
        assert_eq!(r.python_package(), "inmanta-module-my-mod>=2,<3");
        assert_eq!(Requirement::parse("apt ~= 1.1").unwrap().python_package(), "inmanta-module-apt~=1.1");
        assert!(Requirement::parse("~= 1.0").is_none());
    }
}
