//! `inmanta module release`: Inmanta 20.1's stable and dev releases of a module in a git
//! repository. A stable release commits the version without its dev tag, tags it (annotated,
//! with the CHANGELOG.md section as message), then bumps to the next dev version (one patch, or
//! one revision for four-digit versions) in a second commit; `--dev` only moves the version to
//! the dev version at least the asked bump (default patch) ahead of the last stable tag.

use std::path::Path;
use std::process::Command;

use pep508_rs::pep440_rs::Version;

use super::setup_cfg::SetupCfg;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChangeType {
    Revision,
    Patch,
    Minor,
    Major,
}

impl ChangeType {
    /// The one flag set, None without any; more than one is refused by [`release`].
    pub fn from_flags(revision: bool, patch: bool, minor: bool, major: bool) -> Result<Option<Self>, String> {
        if [revision, patch, minor, major].iter().filter(|b| **b).count() > 1 {
            return Err(
                "Error: Only one of --revision, --patch, --minor and --major can be set at the same time.".into()
            );
        }
        Ok(if revision {
            Some(ChangeType::Revision)
        } else if patch {
            Some(ChangeType::Patch)
        } else if minor {
            Some(ChangeType::Minor)
        } else if major {
            Some(ChangeType::Major)
        } else {
            None
        })
    }

    fn index(self) -> usize {
        match self {
            ChangeType::Major => 0,
            ChangeType::Minor => 1,
            ChangeType::Patch => 2,
            ChangeType::Revision => 3,
        }
    }

    /// The size of the step from `low` to `high` (None: the same release numbers).
    fn diff(low: &Version, high: &Version) -> Option<Self> {
        let (l, h) = (padded(low, 4), padded(high, 4));
        if low.release() == high.release() || l == h {
            return None;
        }
        [ChangeType::Major, ChangeType::Minor, ChangeType::Patch, ChangeType::Revision]
            .into_iter()
            .find(|c| h[c.index()] > l[c.index()])
    }
}

fn padded(version: &Version, len: usize) -> Vec<u64> {
    let mut parts = version.release().to_vec();
    parts.resize(parts.len().max(len), 0);
    parts
}

fn bump(change: ChangeType, version: &Version, dev: bool) -> Version {
    let index = change.index();
    let base = version.release();
    let digits = (index + 1).max(3).max(base.len());
    let mut parts: Vec<u64> =
        (0..digits).map(|i| if i <= index { base.get(i).copied().unwrap_or(0) } else { 0 }).collect();
    parts[index] += 1;
    while parts.len() > 3 && parts.last() == Some(&0) {
        parts.pop();
    }
    let bumped = Version::new(parts);
    if dev { bumped.with_dev(Some(0)) } else { bumped }
}

fn release_only(version: &Version) -> Version {
    Version::new(version.release().to_vec())
}

fn base_version(version: &Version) -> String {
    version.release().iter().map(u64::to_string).collect::<Vec<_>>().join(".")
}

pub struct ReleaseRequest<'a> {
    pub dir: &'a Path,
    pub dev: bool,
    pub bump: Result<Option<ChangeType>, String>,
    pub message: Option<&'a str>,
    pub changelog_message: Option<&'a str>,
    pub commit_all: bool,
}

/// The module's metadata file and how its version is written there.
struct ModuleFile {
    path: std::path::PathBuf,
    v2: bool,
    four_digits: bool,
}

impl ModuleFile {
    fn find(dir: &Path) -> Result<Self, String> {
        let setup_cfg = dir.join("setup.cfg");
        if setup_cfg.is_file() {
            let cfg = SetupCfg::parse(&read(&setup_cfg)?)?;
            let four_digits = cfg.get("metadata", "four_digit_version").is_some_and(|v| v.eq_ignore_ascii_case("true"));
            return Ok(ModuleFile { path: setup_cfg, v2: true, four_digits });
        }
        let module_yml = dir.join("module.yml");
        if module_yml.is_file() {
            return Ok(ModuleFile { path: module_yml, v2: false, four_digits: false });
        }
        Err(format!("No module can be found at {}", dir.display()))
    }

    fn version(&self) -> Result<Version, String> {
        let text = read(&self.path)?;
        let raw = if self.v2 {
            let cfg = SetupCfg::parse(&text)?;
            let tag = cfg.get("egg_info", "tag_build").unwrap_or_default().trim_start_matches('.').to_string();
            let version = cfg.get("metadata", "version").unwrap_or_default().to_string();
            if tag.is_empty() { version } else { format!("{version}.{tag}") }
        } else {
            text.lines()
                .find_map(|l| l.strip_prefix("version:"))
                .map(|v| v.trim().trim_matches(['"', '\'']).to_string())
                .unwrap_or_default()
        };
        raw.parse().map_err(|e| format!("{}: the version {raw:?} is not PEP 440 compliant: {e}", self.path.display()))
    }

    /// Inmanta's `rewrite_version`: the version (and for v2 `[egg_info] tag_build`) replaced in
    /// the text, the rest of the file as it was.
    fn rewrite(&self, version: &str, tag: &str) -> Result<(), String> {
        let text = read(&self.path)?;
        let new = if self.v2 { substitute_v2(&text, version, tag) } else { substitute_v1(&text, version, tag) };
        std::fs::write(&self.path, new).map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn substitute_v2(text: &str, version: &str, tag: &str) -> String {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut tag_written = false;
    let mut has_egg_info = false;
    for line in text.split('\n') {
        let trimmed = line.trim();
        if trimmed.starts_with('[') && trimmed.ends_with(']') {
            section = trimmed[1..trimmed.len() - 1].to_string();
            out.push(line.to_string());
            if section == "egg_info" {
                has_egg_info = true;
            }
            continue;
        }
        let key = line.split(['=', ':']).next().unwrap_or("").trim();
        let indented = line.starts_with([' ', '\t']);
        if !indented && section == "metadata" && key == "version" && line.contains('=') {
            let prefix = &line[..=line.find('=').unwrap_or(0)];
            out.push(format!("{prefix} {version}"));
        } else if !indented && section == "egg_info" && key == "tag_build" && !tag_written {
            out.push(format!("tag_build = {tag}"));
            tag_written = true;
        } else {
            out.push(line.to_string());
        }
    }
    let mut result = out.join("\n");
    if !has_egg_info {
        result = format!("{result}\n[egg_info]\ntag_build = {tag}");
    } else if !tag_written {
        result = result.replacen("[egg_info]", &format!("[egg_info]\ntag_build = {tag}"), 1);
    }
    result
}

fn substitute_v1(text: &str, version: &str, tag: &str) -> String {
    let full = if tag.is_empty() { version.to_string() } else { format!("{version}.{}", tag.trim_start_matches('.')) };
    let full = full.parse::<Version>().map(|v| v.to_string()).unwrap_or(full);
    text.split('\n')
        .map(|line| match line.strip_prefix("version:") {
            Some(rest) => {
                let quote = rest.trim().chars().next().filter(|c| *c == '"' || *c == '\'');
                match quote {
                    Some(q) => format!("version: {q}{full}{q}"),
                    None => format!("version: {full}"),
                }
            }
            None => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_ASKPASS", "true")
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !output.status.success() {
        return Err(format!("`git {}` failed: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn stable_tags(dir: &Path) -> Result<Vec<Version>, String> {
    let mut versions: Vec<Version> = git(dir, &["tag"])?
        .lines()
        .filter_map(|t| t.trim().parse::<Version>().ok())
        .filter(|v| !v.any_prerelease())
        .collect();
    versions.sort();
    Ok(versions)
}

fn commit(dir: &Path, message: &str, all: bool, add: &[&Path]) -> Result<(), String> {
    for file in add {
        git(dir, &["add", &file.to_string_lossy()])?;
    }
    if git(dir, &["status", "--porcelain", "--untracked-files=no"])?.trim().is_empty() {
        return Ok(());
    }
    if all { git(dir, &["commit", "-a", "-m", message]) } else { git(dir, &["commit", "-m", message]) }.map(|_| ())
}

/// The dev version at least `minimal` ahead of the last stable release at or below `current`.
fn next_dev_version(current: &Version, stable: &[Version], minimal: ChangeType) -> Result<Version, String> {
    let previous = stable.iter().filter(|v| *v <= current).max().cloned().unwrap_or_else(|| Version::new([0, 0, 0]));
    let new = match ChangeType::diff(&previous, current) {
        Some(diff) if diff >= minimal => {
            if current.dev().is_some() {
                current.clone()
            } else {
                bump(ChangeType::Patch, current, true)
            }
        }
        _ => bump(minimal, current, true),
    };
    if let Some(between) = stable.iter().find(|v| *v > current && **v <= new) {
        return Err(format!(
            "Error: Stable release {between} exists between current version {current} and new version {new}. Make \
             sure your branch is up-to-update with the remote repository."
        ));
    }
    Ok(new)
}

pub fn release(request: &ReleaseRequest<'_>) -> Result<(), String> {
    let dir = std::path::absolute(request.dir).map_err(|e| e.to_string())?;
    let bump_asked = request.bump.clone()?;
    let file = ModuleFile::find(&dir)?;
    if git(&dir, &["rev-parse", "--git-dir"]).is_err() {
        return Err(format!("Error: Directory {} is not a git repository.", dir.display()));
    }
    let current = file.version()?;
    if current.epoch() != 0 {
        return Err("Error: Version with an epoch value larger than zero are not supported by this tool.".into());
    }
    // Inmanta fetches the tags first; a repository without a remote has nothing to fetch.
    if !git(&dir, &["remote"])?.trim().is_empty() {
        git(&dir, &["fetch", "--tags"])?;
    }
    let stable = stable_tags(&dir)?;
    let changelog_path = dir.join("CHANGELOG.md");
    let mut changelog = changelog_path.is_file().then(|| Changelog { path: changelog_path.clone() });
    let bump_asked = match bump_asked {
        None if request.dev => Some(if file.four_digits { ChangeType::Revision } else { ChangeType::Patch }),
        other => other,
    };
    let new = match bump_asked {
        Some(minimal) => next_dev_version(&current, &stable, minimal)?,
        None => current.clone(),
    };
    match (&changelog, request.changelog_message) {
        (None, Some(message)) => {
            Changelog::create(&changelog_path, &new, message)?;
            changelog = Some(Changelog { path: changelog_path.clone() });
        }
        (Some(log), message) => {
            if current.dev().is_some() {
                log.rewrite_version(&current, &new)?;
            } else {
                log.add_section(&current, &new)?;
            }
            if let Some(message) = message {
                log.add_entry(&current, &new, message)?;
            }
        }
        (None, None) => {}
    }
    let mut add: Vec<&Path> = vec![file.path.as_path()];
    if changelog.is_some() {
        add.push(changelog_path.as_path());
    }
    if request.dev {
        file.rewrite(&base_version(&new), "dev0")?;
        let default = format!("Bump version to {new}");
        let message = request.changelog_message.or(request.message).unwrap_or(&default);
        commit(&dir, message, request.commit_all, &add)?;
        return Ok(());
    }
    let tag = release_only(&new);
    if stable.contains(&tag) {
        return Err(format!("Error: A Git version tag already exists for version {tag}"));
    }
    file.rewrite(&tag.to_string(), "")?;
    if let Some(log) = &changelog {
        log.set_release_date(&tag)?;
    }
    let default = format!("Release version {}", file.version()?);
    commit(&dir, request.message.unwrap_or(&default), request.commit_all, &add)?;
    let tag_message = changelog
        .as_ref()
        .and_then(|log| log.section(&tag).ok().flatten())
        .unwrap_or_else(|| "auto tag by module tool".to_string());
    git(&dir, &["tag", "-a", "-m", &tag_message, &tag.to_string()])?;
    println!("Tag created successfully: {tag}");
    release(&ReleaseRequest {
        dir: &dir,
        dev: true,
        bump: Ok(Some(if file.four_digits { ChangeType::Revision } else { ChangeType::Patch })),
        message: Some("Bump version to next development version"),
        changelog_message: None,
        commit_all: request.commit_all,
    })
}

/// CHANGELOG.md with `# Changelog` and `## vX.Y.Z - ?` / `## vX.Y.Z - YYYY-MM-DD` sections.
struct Changelog {
    path: std::path::PathBuf,
}

fn header(version: &Version) -> String {
    format!("## v{} - ?", base_version(version))
}

/// Where the header line of `version`'s section is: `#` or `##`, an optional `v`, the version.
fn header_line(content: &str, version: &Version) -> Option<(usize, usize)> {
    let base = base_version(version);
    let mut offset = 0;
    for line in content.split_inclusive('\n') {
        let text = line.trim_end_matches('\n');
        let rest = text.strip_prefix("## ").or_else(|| text.strip_prefix("# "));
        if let Some(rest) = rest {
            let rest = rest.strip_prefix(['v', 'V']).unwrap_or(rest);
            if rest.starts_with(&base) {
                return Some((offset, offset + text.len()));
            }
        }
        offset += line.len();
    }
    None
}

impl Changelog {
    fn read(&self) -> Result<String, String> {
        read(&self.path)
    }

    fn write(&self, content: &str) -> Result<(), String> {
        std::fs::write(&self.path, content).map_err(|e| format!("{}: {e}", self.path.display()))
    }

    fn create(path: &Path, version: &Version, message: &str) -> Result<(), String> {
        std::fs::write(path, format!("# Changelog\n\n{}\n\n- {message}", header(version)))
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    fn add_section(&self, old: &Version, new: &Version) -> Result<(), String> {
        let content = self.read()?;
        let new_header = header(new);
        let updated = if let Some((start, _)) = header_line(&content, old) {
            format!("{}{new_header}\n\n\n{}", &content[..start], &content[start..])
        } else if let Some(end) = content
            .split_inclusive('\n')
            .scan(0, |o, l| {
                let start = *o;
                *o += l.len();
                Some((start, l))
            })
            .find(|(_, l)| l.starts_with("# "))
            .map(|(start, l)| start + l.trim_end_matches('\n').len())
        {
            format!("{}\n\n{new_header}\n\n\n{}", &content[..end], &content[end..])
        } else {
            format!("# Changelog\n\n{new_header}\n\n\n{content}")
        };
        self.write(&updated)
    }

    fn rewrite_version(&self, old: &Version, new: &Version) -> Result<(), String> {
        let content = self.read()?;
        let updated = content.replacen(&base_version(old), &base_version(new), 1);
        if updated != content { self.write(&updated) } else { Ok(()) }
    }

    fn set_release_date(&self, version: &Version) -> Result<(), String> {
        let content = self.read()?;
        let wanted = format!("## v{version} - ?");
        let today = chrono::Local::now().format("%Y-%m-%d").to_string();
        let mut done = false;
        let updated: String = content
            .split_inclusive('\n')
            .map(|line| {
                let text = line.trim_end_matches('\n');
                if !done && text.trim_end_matches(' ') == wanted {
                    done = true;
                    let spaces = &text[wanted.len()..];
                    format!("## v{version} - {today}{spaces}{}", &line[text.len()..])
                } else {
                    line.to_string()
                }
            })
            .collect();
        if done {
            self.write(&updated)
        } else {
            eprintln!("Failed to set the release date in the changelog for version {}.", base_version(version));
            Ok(())
        }
    }

    fn add_entry(&self, old: &Version, version: &Version, message: &str) -> Result<(), String> {
        if header_line(&self.read()?, version).is_none() {
            self.add_section(old, version)?;
        }
        let content = self.read()?;
        let head = header(version);
        let Some(position) = content.find(&head) else {
            eprintln!("Failed to add changelog entry to section for version {}.", base_version(version));
            return Ok(());
        };
        let after = &content[position + head.len()..];
        let spaces = after.len() - after.trim_start_matches(' ').len();
        if !after[spaces..].starts_with("\n\n") {
            eprintln!("Failed to add changelog entry to section for version {}.", base_version(version));
            return Ok(());
        }
        let insert = position + head.len() + spaces + 2;
        self.write(&format!("{}- {message}\n{}", &content[..insert], &content[insert..]))
    }

    /// The text of `version`'s section, without its header; None when empty or absent.
    fn section(&self, version: &Version) -> Result<Option<String>, String> {
        let content = self.read()?;
        let Some((_, end)) = header_line(&content, version) else { return Ok(None) };
        let rest = &content[end..];
        let mut stop = rest.len();
        let mut offset = 0;
        for line in rest.split_inclusive('\n') {
            if offset > 0 && (line.starts_with("# ") || line.starts_with("## ")) {
                stop = offset;
                break;
            }
            offset += line.len();
        }
        let section = rest[..stop].trim();
        Ok((!section.is_empty()).then(|| section.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    #[test]
    fn dev_versions_as_inmanta_computes_them() {
        assert_eq!(next_dev_version(&v("1.2.3"), &[v("1.2.3")], ChangeType::Patch).unwrap(), v("1.2.4.dev0"));
        assert_eq!(next_dev_version(&v("1.2.4.dev0"), &[v("1.2.3")], ChangeType::Patch).unwrap(), v("1.2.4.dev0"));
        assert_eq!(next_dev_version(&v("1.2.4.dev0"), &[v("1.2.3")], ChangeType::Minor).unwrap(), v("1.3.0.dev0"));
        assert_eq!(next_dev_version(&v("1.2.4.dev0"), &[v("1.2.3")], ChangeType::Major).unwrap(), v("2.0.0.dev0"));
        assert_eq!(next_dev_version(&v("1.0.0"), &[v("1.0.0")], ChangeType::Revision).unwrap(), v("1.0.0.1.dev0"));
        // Far enough ahead of the last release (none: 0.0.0): the next patch.
        assert_eq!(next_dev_version(&v("1.0.0"), &[], ChangeType::Revision).unwrap(), v("1.0.1.dev0"));
        assert_eq!(next_dev_version(&v("1.2.3"), &[v("1.2.4")], ChangeType::Patch).unwrap(), v("1.2.4.dev0"));
        // A stable release between the current and the new version: refused, as Inmanta.
        assert!(next_dev_version(&v("1.2.3"), &[v("1.2.3"), v("1.2.4")], ChangeType::Minor).is_err());
    }

    #[test]
    fn version_substitution_keeps_the_rest_of_setup_cfg() {
        let text = "[metadata]\nname = inmanta-module-x\nversion = 1.0.0\n\n[egg_info]\ntag_build = .dev0\n";
        assert_eq!(
            substitute_v2(text, "1.0.0", ""),
            "[metadata]\nname = inmanta-module-x\nversion = 1.0.0\n\n[egg_info]\ntag_build = \n"
        );
        assert_eq!(
            substitute_v2("[metadata]\nversion = 1.0", "1.1", "dev0"),
            "[metadata]\nversion = 1.1\n[egg_info]\ntag_build = dev0"
        );
    }
}
