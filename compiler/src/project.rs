//! Loading a project's modules: `main.cf`, the module path and the built-in modules
//! (`project.yml` itself is read by `crate::project_yml`).

use crate::diagnostics::ErrorKind;
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};

use crate::builtins::{BUILTIN_MODULES, STD_CORE, builtin_source};
use crate::diagnostics::Diagnostic;
use crate::syntax::ast::{File, Top};
use crate::syntax::parser::parse;
use crate::syntax::{SourceMap, Span};

/// One loaded namespace.
pub(crate) struct LoadedNs {
    pub name: String,
    pub file: File,
}

/// Texts that stand in for files on disk, by path: an editor's unsaved buffers, compiled as
/// they are shown rather than as last saved.
#[derive(Debug, Clone, Default)]
pub struct SourceOverlay(std::sync::Arc<HashMap<PathBuf, String>>);

impl SourceOverlay {
    /// `files`: absolute path -> text.
    pub fn new(files: HashMap<PathBuf, String>) -> Self {
        SourceOverlay(std::sync::Arc::new(files))
    }

    /// The text of `path`: the overlay's when it has the file (under this path or the one it
    /// resolves to), else the disk's.
    pub(crate) fn read(&self, path: &Path) -> std::io::Result<String> {
        if !self.0.is_empty() {
            let found = self.0.get(path).or_else(|| std::fs::canonicalize(path).ok().and_then(|p| self.0.get(&p)));
            if let Some(text) = found {
                return Ok(text.clone());
            }
        }
        std::fs::read_to_string(path)
    }
}

pub(crate) struct Loader {
    pub sources: SourceMap,
    pub overlay: SourceOverlay,
    pub namespaces: Vec<LoadedNs>,
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    pub module_dirs: HashMap<String, PathBuf>,
    search: Vec<PathBuf>,
    /// Modules installed in editable mode: name and source directory, after the search path.
    editable: Vec<(String, PathBuf)>,
    next_id: u32,
}

impl Loader {
    pub(crate) fn new(search: Vec<PathBuf>) -> Self {
        Loader {
            sources: SourceMap::default(),
            namespaces: Vec::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
            module_dirs: HashMap::new(),
            overlay: SourceOverlay::default(),
            search,
            editable: Vec::new(),
            next_id: 0,
        }
    }

    /// Also finds the modules installed in editable mode (name, source directory).
    pub(crate) fn with_editable(mut self, editable: Vec<(String, PathBuf)>) -> Self {
        self.editable = editable;
        self
    }

    /// Where module `top` may be, in the order they are tried: `<dir>/<top>` of each directory
    /// of the search path, then its editable install.
    fn candidates(&self, top: &str) -> Vec<PathBuf> {
        let editable = self.editable.iter().filter(|(name, _)| name == top).map(|(_, root)| root.clone());
        self.search.iter().map(|dir| dir.join(top)).chain(editable).collect()
    }

    fn parse_into(&mut self, ns: &str, path: PathBuf, text: String, builtin: bool) {
        let file_id = self.sources.add(path, text);
        let src = self.sources.get(file_id).text.clone();
        match parse(file_id, &src, &mut self.next_id) {
            Ok(p) => {
                if !builtin {
                    for w in p.warnings {
                        self.warnings.push(Diagnostic::warning(
                            ErrorKind::ParserWarning,
                            w.message,
                            Some(w.span),
                            &self.sources,
                        ));
                    }
                }
                for e in p.errors {
                    self.errors.push(Diagnostic::error(e.kind, e.message, Some(e.span), &self.sources));
                }
                self.namespaces.push(LoadedNs { name: ns.to_string(), file: p.file });
            }
            Err(e) => self.errors.push(Diagnostic::error(e.kind, e.message, Some(e.span), &self.sources)),
        }
    }

    /// Loads the root file and every namespace it imports, transitively.
    pub(crate) fn load(&mut self, main: &Path, text: String) -> Result<(), ()> {
        self.parse_into("__config__", main.to_path_buf(), text, false);
        let mut loaded: HashSet<String> = HashSet::from(["__config__".to_string()]);
        let mut failed: HashSet<String> = HashSet::new();
        let mut queue: VecDeque<(String, Option<Span>)> = VecDeque::from([("std".to_string(), None)]);
        let mut idx = 0;
        loop {
            while idx < self.namespaces.len() {
                let imports: Vec<(String, Span)> = self.namespaces[idx]
                    .file
                    .items
                    .iter()
                    .filter_map(|t| {
                        if let Top::Import { path, span, .. } = t { Some((path.name.clone(), *span)) } else { None }
                    })
                    .collect();
                for (name, span) in imports {
                    // parents of a sub-namespace are loaded too
                    let segs: Vec<&str> = name.split("::").collect();
                    for n in 1..=segs.len() {
                        queue.push_back((segs[..n].join("::"), Some(span)));
                    }
                }
                idx += 1;
            }
            let Some((ns, span)) = queue.pop_front() else { break };
            if !loaded.insert(ns.clone()) {
                continue;
            }
            // a module that failed to load is reported once, not again for each sub-namespace
            let top = ns.split("::").next().unwrap_or(&ns).to_string();
            if failed.contains(&top) {
                continue;
            }
            let before = self.errors.len();
            self.load_ns(&ns, span);
            if self.errors.len() > before {
                failed.insert(top);
            }
        }
        if self.errors.is_empty() { Ok(()) } else { Err(()) }
    }

    /// Whether a copy of module `top` is on the module path (the project's `libs/` and
    /// `modulepath`, or the Python environment's `inmanta_plugins` and editable installs).
    fn is_installed(&self, top: &str) -> bool {
        self.candidates(top).iter().any(|mdir| mdir.join("model").join("_init.cf").is_file())
    }

    fn load_ns(&mut self, ns: &str, span: Option<Span>) {
        let top = ns.split("::").next().unwrap_or(ns);
        // The installed module is the truth: a built-in copy serves only where none is installed.
        if BUILTIN_MODULES.contains(&top) && !self.is_installed(top) {
            match builtin_source(ns) {
                Some(src) => {
                    let rel = ns.replace("::", "/");
                    self.parse_into(ns, PathBuf::from(format!("<builtin>/{rel}.cf")), src.to_string(), true);
                }
                None => self.errors.push(Diagnostic::error(
                    ErrorKind::ModuleLoadingException,
                    format!("Could not find namespace {ns}: the built-in module {top} has no such sub-namespace"),
                    span,
                    &self.sources,
                )),
            }
            return;
        }
        let mut searched = Vec::new();
        for mdir in self.candidates(top) {
            searched.push(mdir.display().to_string());
            let model = mdir.join("model");
            if !model.join("_init.cf").is_file() {
                let is_module = ["module.yml", "setup.cfg", "pyproject.toml"].iter().any(|f| mdir.join(f).is_file());
                if is_module {
                    self.errors.push(Diagnostic::error(
                        ErrorKind::ModuleLoadingException,
                        format!("Module {top} in {} is invalid: it has no model/_init.cf", mdir.display()),
                        span,
                        &self.sources,
                    ));
                    return;
                }
                continue;
            }
            self.module_dirs.insert(top.to_string(), mdir.clone());
            if ns == "std" {
                self.parse_into(ns, PathBuf::from("<builtin>/std_core.cf"), STD_CORE.to_string(), true);
            }
            let rest: Vec<&str> = ns.split("::").skip(1).collect();
            let candidates = if rest.is_empty() {
                vec![model.join("_init.cf")]
            } else {
                let base = rest.join("/");
                vec![model.join(format!("{base}.cf")), model.join(&base).join("_init.cf")]
            };
            for c in &candidates {
                if let Ok(text) = self.overlay.read(c) {
                    self.parse_into(ns, c.clone(), text, false);
                    return;
                }
            }
            self.errors.push(Diagnostic::error(
                ErrorKind::ModuleLoadingException,
                format!(
                    "Could not find namespace {ns} in module {top}: looked for {}",
                    candidates.iter().map(|c| c.display().to_string()).collect::<Vec<_>>().join(" and ")
                ),
                span,
                &self.sources,
            ));
            return;
        }
        let places = if searched.is_empty() { "(the module path is empty)".to_string() } else { searched.join(", ") };
        self.errors.push(Diagnostic::error(
            ErrorKind::ModuleLoadingException,
            format!(
                "Could not find module {top}: it is not built in ({}) and not on the module path; looked for {top}/model/_init.cf in: {places}",
                BUILTIN_MODULES.join(", ")
            ),
            span,
            &self.sources,
        ));
    }
}

/// The resource mappings that loaded modules declare in their `module.yml`, the counterpart of
/// Inmanta's Python `@resource` decorator:
///
/// ```yaml
/// resources:
///   keyvalue::Line:
///     agent: host.name        # attribute path of the agent name
///     id_attribute: key       # identifies the resource on its agent
///     fields: [path, key, value]
/// ```
///
/// A module maps only entities of its own namespaces.
#[allow(clippy::result_large_err)]
pub(crate) fn module_resource_mappings(
    module_dirs: &HashMap<String, PathBuf>,
) -> Result<Vec<crate::export::Mapping>, Diagnostic> {
    let mut modules: Vec<(&String, &PathBuf)> = module_dirs.iter().collect();
    modules.sort();
    let mut mappings = Vec::new();
    for (module, dir) in modules {
        let path = dir.join("module.yml");
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let invalid = |m: String| {
            Diagnostic::plain(ErrorKind::InvalidMetadata, format!("Invalid module metadata in {}: {m}", path.display()))
        };
        let raw: serde_json::Value = serde_norway::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        let Some(resources) = raw.get("resources") else { continue };
        let resources =
            resources.as_object().ok_or_else(|| invalid("resources must map entity names to mappings".into()))?;
        for (entity, spec) in resources {
            if entity.split("::").next() != Some(module.as_str()) || !entity.contains("::") {
                return Err(invalid(format!(
                    "resource {entity:?} is not an entity of module {module} ({module}::<Entity>)"
                )));
            }
            let text = |key: &str| {
                spec.get(key)
                    .and_then(|v| v.as_str())
                    .filter(|v| !v.is_empty())
                    .map(str::to_string)
                    .ok_or_else(|| invalid(format!("resource {entity} needs `{key}` (a string)")))
            };
            let fields = spec
                .get("fields")
                .and_then(|f| f.as_array())
                .and_then(|f| f.iter().map(|x| x.as_str().map(str::to_string)).collect::<Option<Vec<_>>>())
                .ok_or_else(|| invalid(format!("resource {entity} needs `fields` (a list of attribute names)")))?;
            mappings.push(crate::export::Mapping {
                entity: entity.clone(),
                agent: text("agent")?,
                id_attr: text("id_attribute")?,
                fields,
                builtin: false,
                python: false,
            });
        }
    }
    Ok(mappings)
}
