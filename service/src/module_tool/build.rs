//! `inmanta module build`: the wheel and the sdist Inmanta 20.1 makes of a v2 module, made here
//! without Python. Inmanta copies the module, moves `model/`, `files/` and `templates/` into
//! `inmanta_plugins/<name>/` with a copy of `setup.cfg`, and lets setuptools build the copy; this
//! reproduces what setuptools makes of a module's `setup.cfg` and `MANIFEST.in`: the packages of
//! `find_namespace:` (with `[options.packages.find]` include/exclude), their `.py` files, the
//! package data `include_package_data` takes from the manifest, the core metadata 2.4 file, the
//! license files, and the same file names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use sha2::Digest;

use super::archive::{TarGzWriter, ZipWriter};
use super::manifest::{FileTree, Manifest};
use super::setup_cfg::SetupCfg;

/// What a module build makes: a wheel, an sdist, or both (Inmanta's default).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    Wheel,
    Sdist,
}

pub struct BuildRequest<'a> {
    pub module_dir: &'a Path,
    pub output_dir: Option<&'a Path>,
    pub dev_build: bool,
    pub distributions: Vec<Distribution>,
    pub timestamp: chrono::DateTime<chrono::Utc>,
}

/// Builds the requested distributions; returns their paths, in the order asked.
pub fn build(request: &BuildRequest<'_>) -> Result<Vec<PathBuf>, String> {
    let module_dir = std::path::absolute(request.module_dir).map_err(|e| e.to_string())?;
    let module = V2Source::read(&module_dir)?;
    let output_dir = request.output_dir.map(Path::to_path_buf).unwrap_or_else(|| module_dir.join("dist"));
    if output_dir.exists() && !output_dir.is_dir() {
        return Err(format!("Given output directory is not a directory: {}", output_dir.display()));
    }
    let tree = module.build_tree(request.dev_build.then_some(request.timestamp))?;
    let project = Project::from_tree(&tree)?;
    std::fs::create_dir_all(&output_dir).map_err(|e| format!("{}: {e}", output_dir.display()))?;
    let mut made = Vec::new();
    for distribution in &request.distributions {
        let (name, bytes) = match distribution {
            Distribution::Wheel => project.wheel(&tree, request.timestamp)?,
            Distribution::Sdist => project.sdist(&tree, request.timestamp)?,
        };
        let path = output_dir.join(name);
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        made.push(path);
    }
    Ok(made)
}

/// A v2 module's source directory.
struct V2Source {
    dir: PathBuf,
    name: String,
    setup_cfg: String,
}

impl V2Source {
    fn read(dir: &Path) -> Result<Self, String> {
        let path = dir.join("setup.cfg");
        let setup_cfg = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(_) if dir.join("module.yml").is_file() => {
                return Err(format!(
                    "{} is a v1 module (module.yml): convert it first with `inmanta module v1tov2` (Inmanta's \
                     converter, docs/cli.md)",
                    dir.display()
                ));
            }
            Err(_) => return Err(format!("No module can be found at {}", dir.display())),
        };
        let cfg = SetupCfg::parse(&setup_cfg).map_err(|e| format!("{}: {e}", path.display()))?;
        let package =
            cfg.get("metadata", "name").ok_or_else(|| format!("{}: [metadata] has no name", path.display()))?;
        let name = package
            .strip_prefix(super::requirement::MODULE_PACKAGE_PREFIX)
            .ok_or_else(|| format!("{}: the name {package:?} should start with inmanta-module-", path.display()))?
            .replace('-', "_");
        if cfg.get("metadata", "version").is_none() {
            return Err(format!("{}: [metadata] has no version", path.display()));
        }
        Ok(V2Source { dir: dir.to_path_buf(), name, setup_cfg })
    }

    /// The directory setuptools builds, as Inmanta lays it out (in memory).
    fn build_tree(&self, dev_timestamp: Option<chrono::DateTime<chrono::Utc>>) -> Result<FileTree, String> {
        let mut tree = FileTree::from_dir(&self.dir)?;
        let plugins = format!("inmanta_plugins/{}", self.name);
        for reserved in ["model", "files", "templates"] {
            let inside = format!("{plugins}/{reserved}");
            if tree.has_dir(&inside) {
                return Err(format!(
                    "There is already a `{reserved}` directory in {}. The `inmanta_plugins.{}.{reserved}` package is \
                     reserved for bundling the module's {reserved}. Please use a different name for this Python package.",
                    self.dir.join(&plugins).display(),
                    self.name
                ));
            }
        }
        let mut setup_cfg = self.setup_cfg.clone().into_bytes();
        if let Some(timestamp) = dev_timestamp {
            let mut cfg = SetupCfg::parse(&self.setup_cfg)?;
            cfg.set("egg_info", "tag_build", &format!(".dev{}", timestamp.format("%Y%m%d%H%M%S")));
            setup_cfg = cfg.write().into_bytes();
            tree.put("setup.cfg", setup_cfg.clone());
        }
        if !tree.has_file(&format!("{plugins}/__init__.py")) {
            tree.put(&format!("{plugins}/__init__.py"), Vec::new());
        }
        for data in ["model", "files", "templates"] {
            tree.move_dir(data, &format!("{plugins}/{data}"));
        }
        tree.put(&format!("{plugins}/setup.cfg"), setup_cfg);
        Ok(tree)
    }
}

/// What setuptools reads of the build directory's `setup.cfg`.
struct Project {
    cfg: SetupCfg,
    name: String,
    version: String,
    packages: Vec<String>,
    install_requires: Vec<String>,
    extras: Vec<(String, Vec<String>)>,
    long_description: Option<String>,
    license_files: Vec<String>,
}

impl Project {
    fn from_tree(tree: &FileTree) -> Result<Self, String> {
        let text = tree.read_text("setup.cfg")?;
        let cfg = SetupCfg::parse(&text)?;
        let name = cfg.get("metadata", "name").unwrap_or_default().to_string();
        let raw_version = format!(
            "{}{}",
            cfg.get("metadata", "version").unwrap_or_default(),
            cfg.get("egg_info", "tag_build").unwrap_or_default()
        );
        let version = raw_version
            .parse::<pep508_rs::pep440_rs::Version>()
            .map_err(|e| format!("setup.cfg: the version {raw_version:?} is not PEP 440 compliant: {e}"))?
            .to_string();
        let packages = find_namespace_packages(tree, &cfg);
        let install_requires = requirement_lines(cfg.get("options", "install_requires").unwrap_or_default());
        let mut extras = Vec::new();
        if let Some(options) = cfg.section("options.extras_require") {
            for (extra, reqs) in options {
                extras.push((extra.clone(), requirement_lines(reqs)));
            }
        }
        let long_description = match cfg.get("metadata", "long_description") {
            Some(value) => match value.strip_prefix("file:") {
                Some(files) => {
                    let mut parts = Vec::new();
                    // setuptools reads the files of a `file:` directive that exist, the others
                    // silently not.
                    for file in files.split(',').map(str::trim).filter(|f| tree.has_file(f)) {
                        parts.push(tree.read_text(file)?);
                    }
                    Some(parts.join("\n"))
                }
                None => Some(value.to_string()),
            },
            None => None,
        };
        let patterns: Vec<String> = match cfg.get("metadata", "license_files").or(cfg.get("metadata", "license_file")) {
            Some(value) => {
                value.split([',', '\n']).map(str::trim).filter(|p| !p.is_empty()).map(str::to_string).collect()
            }
            None => ["LICEN[CS]E*", "COPYING*", "NOTICE*", "AUTHORS*"].map(str::to_string).to_vec(),
        };
        let mut license_files = Vec::new();
        for pattern in &patterns {
            for file in tree.glob(pattern) {
                if !license_files.contains(&file) {
                    license_files.push(file);
                }
            }
        }
        Ok(Project { cfg, name, version, packages, install_requires, extras, long_description, license_files })
    }

    /// `inmanta_module_x`: the name as file names of distributions spell it.
    fn file_name(&self) -> String {
        super::requirement::canonical_name(&self.name).replace('-', "_")
    }

    fn dist_name(&self) -> String {
        format!("{}-{}", self.file_name(), self.version.replace('-', "_"))
    }

    fn top_level(&self) -> Vec<String> {
        let set: BTreeSet<String> =
            self.packages.iter().map(|p| p.split('.').next().unwrap_or(p).to_string()).collect();
        set.into_iter().collect()
    }

    /// The manifest (`SOURCES.txt`) egg_info writes: the defaults, MANIFEST.in, pruned.
    fn manifest(&self, tree: &FileTree) -> Result<Vec<String>, String> {
        let mut manifest = Manifest::new(tree);
        for readme in ["README", "README.rst", "README.txt", "README.md"] {
            manifest.include_exact(readme);
        }
        for default in ["setup.py", "setup.cfg", "pyproject.toml"] {
            manifest.include_exact(default);
        }
        for package in &self.packages {
            manifest.include_modules_of(&package.replace('.', "/"));
        }
        if let Some(value) = self.cfg.get("metadata", "long_description")
            && let Some(files) = value.strip_prefix("file:")
        {
            for file in files.split(',').map(str::trim).filter(|f| !f.is_empty()) {
                manifest.include_exact(file);
            }
        }
        if tree.has_file("MANIFEST.in") {
            manifest.include_exact("MANIFEST.in");
            manifest.apply_template(&tree.read_text("MANIFEST.in")?)?;
        }
        for file in &self.license_files {
            manifest.include_exact(file);
        }
        manifest.prune_defaults(&self.dist_name());
        Ok(manifest.files())
    }

    /// The files of the wheel outside `.dist-info`: each package's modules and its data files.
    fn wheel_files(&self, tree: &FileTree) -> Result<Vec<String>, String> {
        let manifest = self.manifest(tree)?;
        let package_dirs: BTreeSet<String> = self.packages.iter().map(|p| p.replace('.', "/")).collect();
        let mut files: BTreeSet<String> = BTreeSet::new();
        for dir in &package_dirs {
            for file in tree.files_in(dir) {
                if file.ends_with(".py") {
                    files.insert(file);
                }
            }
        }
        for file in manifest {
            // Data of the nearest enclosing package directory, as build_py attributes it.
            let mut dir = parent(&file);
            while !dir.is_empty() && !package_dirs.contains(dir) {
                dir = parent(dir);
            }
            if !dir.is_empty() {
                files.insert(file);
            }
        }
        let mut files: Vec<String> = files.into_iter().collect();
        files.sort_by_key(|f| walk_order_key(f));
        Ok(files)
    }

    fn metadata(&self) -> String {
        let mut out = String::from("Metadata-Version: 2.4\n");
        let mut field = |name: &str, value: &str| out.push_str(&format!("{name}: {value}\n"));
        field("Name", &self.name);
        field("Version", &self.version);
        let get = |key: &str| self.cfg.get("metadata", key).filter(|v| !v.is_empty());
        if let Some(summary) = get("description") {
            field("Summary", &summary.lines().map(str::trim).collect::<Vec<_>>().join(" "));
        }
        for (name, key) in [
            ("Home-page", "url"),
            ("Download-URL", "download_url"),
            ("Author", "author"),
            ("Author-email", "author_email"),
            ("Maintainer", "maintainer"),
            ("Maintainer-email", "maintainer_email"),
        ] {
            if let Some(value) = get(key) {
                field(name, value);
            }
        }
        if let Some(expression) = get("license_expression") {
            field("License-Expression", expression);
        } else if let Some(license) = get("license") {
            field("License", &license.replace('\n', "\n        "));
        }
        if let Some(urls) = get("project_urls") {
            for line in urls.lines().map(str::trim).filter(|l| !l.is_empty()) {
                if let Some((label, url)) = line.split_once('=') {
                    field("Project-URL", &format!("{}, {}", label.trim(), url.trim()));
                }
            }
        }
        if let Some(keywords) = get("keywords") {
            let words: Vec<&str> = keywords.split([',', '\n']).map(str::trim).filter(|k| !k.is_empty()).collect();
            field("Keywords", &words.join(","));
        }
        if let Some(platforms) = get("platforms") {
            for platform in platforms.split([',', '\n']).map(str::trim).filter(|p| !p.is_empty()) {
                field("Platform", platform);
            }
        }
        if let Some(classifiers) = get("classifiers") {
            for classifier in classifiers.lines().map(str::trim).filter(|c| !c.is_empty()) {
                field("Classifier", classifier);
            }
        }
        if let Some(python) = self.cfg.get("options", "python_requires") {
            field("Requires-Python", python);
        }
        if let Some(content_type) = get("long_description_content_type") {
            field("Description-Content-Type", content_type);
        }
        for file in &self.license_files {
            field("License-File", file);
        }
        for requirement in &self.install_requires {
            field("Requires-Dist", requirement);
        }
        for (extra, requirements) in &self.extras {
            field("Provides-Extra", extra);
            for requirement in requirements {
                let (requirement, marker) = match requirement.split_once(';') {
                    Some((r, m)) => (r.trim().to_string(), format!("({}) and extra == \"{extra}\"", m.trim())),
                    None => (requirement.clone(), format!("extra == \"{extra}\"")),
                };
                field("Requires-Dist", &format!("{requirement}; {marker}"));
            }
        }
        if !self.license_files.is_empty() {
            // setuptools found them itself: it says so.
            field("Dynamic", "license-file");
        }
        if let Some(description) = self.long_description.as_ref().filter(|d| !d.is_empty()) {
            out.push('\n');
            out.push_str(description);
            if !description.ends_with('\n') {
                out.push('\n');
            }
        }
        out
    }

    fn wheel(&self, tree: &FileTree, timestamp: chrono::DateTime<chrono::Utc>) -> Result<(String, Vec<u8>), String> {
        let dist_info = format!("{}.dist-info", self.dist_name());
        let mut zip = ZipWriter::new(timestamp.naive_utc());
        let mut record = String::new();
        let mut add = |zip: &mut ZipWriter, name: &str, data: &[u8]| -> Result<(), String> {
            zip.add(name, data).map_err(|e| e.to_string())?;
            let digest =
                base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, sha2::Sha256::digest(data));
            record.push_str(&format!("{name},sha256={digest},{}\n", data.len()));
            Ok(())
        };
        // bdist_wheel walks its directory (the license files are in `.dist-info/licenses/`
        // there) and defers only the files directly in `.dist-info`.
        let mut walked: Vec<(String, String)> = self.wheel_files(tree)?.into_iter().map(|f| (f.clone(), f)).collect();
        for file in &self.license_files {
            walked.push((format!("{dist_info}/licenses/{file}"), file.clone()));
        }
        walked.sort_by_key(|(name, _)| walk_order_key(name));
        for (name, source) in &walked {
            add(&mut zip, name, &tree.read(source)?)?;
        }
        add(&mut zip, &format!("{dist_info}/METADATA"), self.metadata().as_bytes())?;
        let generator = format!(
            "Wheel-Version: 1.0\nGenerator: inmanta ({})\nRoot-Is-Purelib: true\nTag: py3-none-any\n\n",
            env!("CARGO_PKG_VERSION")
        );
        add(&mut zip, &format!("{dist_info}/WHEEL"), generator.as_bytes())?;
        let top_level: String = self.top_level().iter().map(|t| format!("{t}\n")).collect();
        add(&mut zip, &format!("{dist_info}/top_level.txt"), top_level.as_bytes())?;
        record.push_str(&format!("{dist_info}/RECORD,,\n"));
        zip.add(&format!("{dist_info}/RECORD"), record.as_bytes()).map_err(|e| e.to_string())?;
        let bytes = zip.finish().map_err(|e| e.to_string())?;
        Ok((format!("{}-py3-none-any.whl", self.dist_name()), bytes))
    }

    fn sdist(&self, tree: &FileTree, timestamp: chrono::DateTime<chrono::Utc>) -> Result<(String, Vec<u8>), String> {
        let base = format!("{}-{}", self.file_name(), self.version);
        let egg_info = format!("{}.egg-info", self.file_name());
        let metadata = self.metadata();
        let mut requires = self.install_requires.join("\n");
        if !requires.is_empty() {
            requires.push('\n');
        }
        for (extra, requirements) in &self.extras {
            requires.push_str(&format!("\n[{extra}]\n"));
            for requirement in requirements {
                requires.push_str(requirement);
                requires.push('\n');
            }
        }
        let zip_safe = self.cfg.get("options", "zip_safe").map(|v| v.eq_ignore_ascii_case("false"));
        let mut egg_files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        egg_files.insert("PKG-INFO".into(), metadata.clone().into_bytes());
        egg_files.insert("dependency_links.txt".into(), b"\n".to_vec());
        if zip_safe == Some(true) {
            egg_files.insert("not-zip-safe".into(), b"\n".to_vec());
        }
        if !requires.is_empty() {
            egg_files.insert("requires.txt".into(), requires.into_bytes());
        }
        let top_level: String = self.top_level().iter().map(|t| format!("{t}\n")).collect();
        egg_files.insert("top_level.txt".into(), top_level.into_bytes());
        // SOURCES.txt lists the manifest with the egg-info files, sorted as (directory, name).
        let mut sources: Vec<String> = self.manifest(tree)?;
        sources.extend(egg_files.keys().map(|f| format!("{egg_info}/{f}")));
        sources.push(format!("{egg_info}/SOURCES.txt"));
        sources.sort_by(|a, b| (parent(a), a).cmp(&(parent(b), b)));
        sources.dedup();
        egg_files.insert("SOURCES.txt".into(), sources.join("\n").into_bytes());

        let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        for file in &sources {
            if let Some(name) = file.strip_prefix(&format!("{egg_info}/")) {
                files.insert(file.clone(), egg_files[name].clone());
            } else {
                files.insert(file.clone(), tree.read(file)?);
            }
        }
        files.insert("PKG-INFO".into(), metadata.into_bytes());
        // The release tree's setup.cfg gets the build tag materialized (`tag_build` the tag,
        // `dev0` or none, `tag_date = 0`), as setuptools' `egg_info.save_version_info` writes it.
        let mut cfg = self.cfg.clone();
        let tag = cfg.get("egg_info", "tag_build").unwrap_or_default().to_string();
        cfg.set("egg_info", "tag_build", &tag);
        cfg.set("egg_info", "tag_date", "0");
        files.insert("setup.cfg".into(), cfg.write().into_bytes());

        let mut tar = TarGzWriter::new(timestamp.timestamp().max(0) as u64);
        tar.add_dir(&base).map_err(|e| e.to_string())?;
        let mut dirs_done: BTreeSet<String> = BTreeSet::new();
        let mut ordered: Vec<&String> = files.keys().collect();
        ordered.sort_by_key(|f| tar_order_key(f));
        for file in ordered {
            let mut dir = String::new();
            for part in file.split('/').collect::<Vec<_>>().split_last().map(|(_, d)| d).unwrap_or(&[]) {
                dir = if dir.is_empty() { part.to_string() } else { format!("{dir}/{part}") };
                if dirs_done.insert(dir.clone()) {
                    tar.add_dir(&format!("{base}/{dir}")).map_err(|e| e.to_string())?;
                }
            }
            tar.add_file(&format!("{base}/{file}"), &files[file]).map_err(|e| e.to_string())?;
        }
        let bytes = tar.finish().map_err(|e| e.to_string())?;
        Ok((format!("{base}.tar.gz"), bytes))
    }
}

/// The requirement lines of a setup.cfg list: comments after ` #` dropped, each as packaging
/// prints it.
fn requirement_lines(value: &str) -> Vec<String> {
    value
        .lines()
        .map(|l| match l.find(" #") {
            Some(i) => l[..i].trim(),
            None => l.trim(),
        })
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            super::requirement::PythonRequirement::parse(l).map(|r| r.to_string()).unwrap_or_else(|_| l.to_string())
        })
        .collect()
}

/// setuptools' `find_namespace_packages(where=".", include, exclude)`: every directory whose
/// dotted path matches an include pattern and no exclude pattern; directories with a `.` in
/// their name are neither packages nor searched.
fn find_namespace_packages(tree: &FileTree, cfg: &SetupCfg) -> Vec<String> {
    let packages_option = cfg.get("options", "packages").unwrap_or_default().trim().to_string();
    if packages_option != "find_namespace:" && packages_option != "find:" {
        return packages_option
            .split([',', '\n'])
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect();
    }
    let mut include = cfg.get_list("options.packages.find", "include");
    if include.is_empty() {
        include.push("*".into());
    }
    let mut exclude = cfg.get_list("options.packages.find", "exclude");
    exclude.extend(["ez_setup".to_string(), "*__pycache__".to_string()]);
    let namespace = packages_option == "find_namespace:";
    let mut found = Vec::new();
    let mut pending: Vec<String> = tree.subdirs("");
    while let Some(dir) = pending.pop() {
        let name = dir.rsplit('/').next().unwrap_or(&dir);
        if name.contains('.') || (!namespace && !tree.has_file(&format!("{dir}/__init__.py"))) {
            continue;
        }
        let package = dir.replace('/', ".");
        if include.iter().any(|p| super::manifest::fnmatch(p, &package))
            && !exclude.iter().any(|p| super::manifest::fnmatch(p, &package))
        {
            found.push(package);
        }
        pending.extend(tree.subdirs(&dir));
    }
    found.sort();
    found
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map(|(d, _)| d).unwrap_or("")
}

/// The order bdist_wheel walks its directory in: in each directory its files (sorted), then its
/// subdirectories (sorted).
fn walk_order_key(path: &str) -> Vec<(u8, String)> {
    let parts: Vec<&str> = path.split('/').collect();
    let last = parts.len() - 1;
    parts.iter().enumerate().map(|(i, p)| (u8::from(i != last), p.to_string())).collect()
}

/// tarfile adds a directory's entries sorted by name, depth first.
fn tar_order_key(path: &str) -> Vec<String> {
    path.split('/').map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_order_puts_files_before_subdirectories() {
        let mut files = vec!["a/model/x.cf", "a/z.py", "a/b.py", "b.py"];
        files.sort_by_key(|f| walk_order_key(f));
        assert_eq!(files, vec!["b.py", "a/b.py", "a/z.py", "a/model/x.cf"]);
    }
}
