//! A `requires` entry of `project.yml` and the version matcher for it: which tag of a v1 module
//! the server's compiles check out, and the requirement `inmanta project install` hands to pip.
//! Both read the entry as pip does (PEP 508 requirements, PEP 440 versions and specifiers, through
//! `pep508_rs`), so an entry pip refuses (`mod ~= 1`) is refused here too.

use std::fmt;
use std::str::FromStr;

use pep508_rs::VersionOrUrl;
use pep508_rs::pep440_rs;

/// A module requirement: `name`, `name ~= 1.2`, `name >= 1.0, < 2`, `name == 1.*`, with extras
/// (`name[extra]`) and markers (`; python_version >= "3.8"`), also written with the package name
/// (`inmanta-module-name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The module's name (`my_mod` for `inmanta-module-my-mod`).
    pub name: String,
    /// The entry as written, trimmed.
    pub text: String,
    /// The version constraints as pip writes them (`~=1.2`, `<2,>=1.0`); empty for none.
    pub constraint: String,
    parsed: pep508_rs::Requirement,
}

impl Requirement {
    /// The entry read as pip reads it; an error says why pip would refuse it.
    pub fn parse(text: &str) -> Result<Requirement, String> {
        let text = text.trim();
        let parsed = pep508_rs::Requirement::from_str(text)
            .map_err(|e| format!("requirement `{text}` is not one pip accepts: {}", first_line(&e.to_string())))?;
        if let Some(VersionOrUrl::Url(_)) = parsed.version_or_url {
            return Err(format!("requirement `{text}`: a module is required by name and version, not by URL"));
        }
        let name = parsed.name.to_string().replace('-', "_");
        let name = name.strip_prefix("inmanta_module_").map(str::to_string).unwrap_or(name);
        let constraint = match &parsed.version_or_url {
            Some(VersionOrUrl::VersionSpecifier(specifiers)) => {
                specifiers.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
            }
            _ => String::new(),
        };
        Ok(Requirement { name, text: text.to_string(), constraint, parsed })
    }

    /// The Python package of this module with the same extras, constraint and markers, as pip
    /// reads it (`inmanta-module-my-mod[extra]>=1; python_version >= "3.8"`).
    pub fn python_package(&self) -> String {
        let mut package = self.parsed.clone();
        let module = self.name.replace('_', "-");
        // the name is a module's, so it is a valid package name with the prefix
        if let Ok(name) = pep508_rs::PackageName::from_str(&format!("inmanta-module-{module}")) {
            package.name = name;
        }
        package.to_string()
    }

    /// Whether `version` meets every constraint, as Inmanta's release install mode picks a v1
    /// module's tag: pre-releases (`1.0rc1`, `1.0.dev0`) never, whatever the constraint says.
    pub fn allows(&self, version: &Version) -> bool {
        if version.0.any_prerelease() {
            return false;
        }
        match &self.parsed.version_or_url {
            Some(VersionOrUrl::VersionSpecifier(specifiers)) => specifiers.contains(&version.0),
            _ => true,
        }
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

/// A PEP 440 version: a module's tag (`1.2.3`, `v1.2.3`, `1.0rc1`), ordered as pip orders them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pep440_rs::Version);

impl Version {
    /// `None` for a tag that is no version (`release`).
    pub fn parse(text: &str) -> Option<Version> {
        pep440_rs::Version::from_str(text.trim()).ok().map(Version)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    /// Each verdict is pip's: `packaging` 26.3 (the reference venv's) `Requirement(r).specifier
    /// .contains(v, prereleases=True)`, and `Version(v).is_prerelease` for the versions the release
    /// install mode leaves out.
    #[test]
    fn constraints_pick_the_versions_pip_allows() {
        let cases: &[(&str, &[(&str, bool)])] = &[
            ("mymod ~= 1.2", &[("1.2", true), ("1.9.1", true), ("2.0", false), ("1.1.9", false), ("1.2.post1", true)]),
            ("mymod >= 1.0, < 2", &[("1.5", true), ("2.0.0", false), ("1.0", true), ("0.9", false)]),
            ("mymod == 1.*", &[("1.0", true), ("1.9.3", true), ("2.0", false), ("0.1", false)]),
            ("mymod != 1.2.*", &[("1.2.5", false), ("1.3", true)]),
            ("mymod == 1.2", &[("1.2.0", true), ("1.2.0+local", true), ("1.2.1", false)]),
            ("mymod >= 1.0.dev0", &[("1.0", true), ("0.9", false)]),
            ("mymod[extra] >= 2; python_version >= '3.8'", &[("2.1", true), ("1.9", false)]),
            ("mymod > 1.0", &[("1.0.post1", false), ("1.0.1", true)]),
            ("mymod", &[("0.1", true)]),
        ];
        for (requirement, versions) in cases {
            let r = Requirement::parse(requirement).unwrap();
            for (version, allowed) in *versions {
                assert_eq!(r.allows(&v(version)), *allowed, "{requirement} allows {version}");
            }
        }
        // pre-releases pip's specifiers contain, left out as Inmanta's release install mode does
        assert!(!Requirement::parse("mymod ~= 1.2").unwrap().allows(&v("1.3rc1")));
        assert!(!Requirement::parse("mymod == 1.*").unwrap().allows(&v("1.5.dev0")));
        assert!(!Requirement::parse("mymod >= 1.0.dev0").unwrap().allows(&v("1.0.dev0")));
        assert!(!Requirement::parse("mymod").unwrap().allows(&v("2.0b1")));
    }

    #[test]
    fn entries_pip_refuses_are_refused() {
        // packaging: "Expected semicolon (after name with no version specifier) or end"
        for text in ["mymod ~= 1", "mymod >= x", "~= 1.0", "mymod @ https://example.com/x.tar.gz"] {
            assert!(Requirement::parse(text).is_err(), "{text} is refused");
        }
        let e = Requirement::parse("mymod ~= 1").unwrap_err();
        assert!(e.contains("mymod ~= 1"), "{e}");
    }

    #[test]
    fn tags_are_versions_as_pip_reads_them() {
        // packaging's Version: v1.2.3 -> 1.2.3, 1.0-1 -> 1.0.post1, V2 -> 2, release invalid
        assert_eq!(v("v1.2.3"), v("1.2.3"));
        assert_eq!(v("1.0-1").to_string(), "1.0.post1");
        assert_eq!(v("V2"), v("2"));
        assert!(v("1.10") > v("1.9"));
        assert!(v("1.0rc1") < v("1.0"));
        assert_eq!(v("1.2"), v("1.2.0"));
        assert!(Version::parse("release").is_none());
    }

    #[test]
    fn package_names_become_module_names_and_back() {
        let r = Requirement::parse("  inmanta-module-my-mod >= 2, < 3 ").unwrap();
        assert_eq!(r.name, "my_mod");
        assert_eq!(r.python_package(), "inmanta-module-my-mod>=2,<3");
        assert_eq!(Requirement::parse("apt ~= 1.1").unwrap().python_package(), "inmanta-module-apt~=1.1");
        assert_eq!(Requirement::parse("my_mod").unwrap().python_package(), "inmanta-module-my-mod");
        // extras and markers kept: packaging reads this as the entry with the package's name
        // (same name, extras and specifier; the marker false on Python 3.7.9, true on 3.13)
        assert_eq!(
            Requirement::parse("mymod[extra] >= 2; python_version >= '3.8'").unwrap().python_package(),
            "inmanta-module-mymod[extra]>=2 ; python_full_version >= '3.8'"
        );
    }
}
