//! The project an editor works on: every `.cf` file a compile of it can load (`main.cf`, the
//! modules on its module path and in its Python environment, the built-in copies where none is
//! installed), each with its outline, and the resolution of the names they use.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use compiler::syntax::outline::{self, Definition, DefinitionKind, Outline, Receiver, Reference, ReferenceKind};

use crate::text::Lines;

/// One `.cf` file: its text as the editor shows it (or as on disk), and its outline.
pub(crate) struct Source {
    pub path: PathBuf,
    /// Its namespace: `__config__` for `main.cf`, `mod::sub` for `mod/model/sub.cf`.
    pub ns: String,
    pub text: String,
    pub lines: Lines,
    pub outline: Outline,
}

impl Source {
    fn new(path: PathBuf, ns: String, text: String) -> Source {
        let outline = outline::outline(&text);
        Source { lines: Lines::new(&text), path, ns, text, outline }
    }
}

/// A definition: the file it is in and its index among the file's definitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Loc {
    pub file: usize,
    pub def: usize,
}

pub(crate) struct Project {
    pub root: PathBuf,
    pub files: Vec<Source>,
    /// Module name -> its directory (for its Python plugins).
    pub module_dirs: HashMap<String, PathBuf>,
}

/// What a name in the text stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Def(Loc),
    /// A plugin: its qualified name.
    Plugin(String),
    /// A namespace (an import's module).
    Namespace(String),
}

impl Project {
    /// Finds the files of the project in `root`; `builtin_dir` receives copies of the built-in
    /// modules' sources, so that an editor can open what a definition points to.
    pub(crate) fn load(root: &Path, builtin_dir: &Path) -> Project {
        let mut p = Project { root: root.to_path_buf(), files: Vec::new(), module_dirs: HashMap::new() };
        let main = root.join("main.cf");
        if let Ok(text) = std::fs::read_to_string(&main) {
            p.files.push(Source::new(main, "__config__".into(), text));
        }
        let (search, editable) = search_path(root);
        let mut found: Vec<(String, PathBuf)> = Vec::new();
        for dir in search {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            let mut modules: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
            modules.sort();
            found.extend(modules.into_iter().filter_map(|m| Some((m.file_name()?.to_str()?.to_string(), m))));
        }
        for (name, m) in found.into_iter().chain(editable) {
            if p.module_dirs.contains_key(&name) || !m.join("model").join("_init.cf").is_file() {
                continue;
            }
            p.add_module(&name, &m);
            p.module_dirs.insert(name, m);
        }
        for module in compiler::BUILTIN_MODULES {
            if !p.module_dirs.contains_key(*module) {
                p.add_builtin(module, builtin_dir);
            }
        }
        p
    }

    fn add_module(&mut self, name: &str, dir: &Path) {
        let model = dir.join("model");
        let mut stack = vec![model.clone()];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else { continue };
            for e in entries.flatten() {
                let path = e.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|x| x == "cf")
                    && let Some(ns) = namespace_in_module(name, &model, &path)
                    && let Ok(text) = std::fs::read_to_string(&path)
                {
                    self.files.push(Source::new(path, ns, text));
                }
            }
        }
    }

    fn add_builtin(&mut self, module: &str, builtin_dir: &Path) {
        for (ns, text) in compiler::builtin_model_sources().filter(|(ns, _)| ns.split("::").next() == Some(module)) {
            let path = builtin_dir.join(format!("{}.cf", ns.replace("::", "/")));
            let current = std::fs::read_to_string(&path).ok();
            if current.as_deref() != Some(text) {
                let written =
                    path.parent().map(std::fs::create_dir_all).transpose().and_then(|_| std::fs::write(&path, text));
                if let Err(e) = written {
                    tracing::warn!(path = %path.display(), "can not write the built-in module's source: {e}");
                }
            }
            self.files.push(Source::new(path, ns.to_string(), text.to_string()));
        }
    }

    pub(crate) fn file(&self, path: &Path) -> Option<usize> {
        self.files.iter().position(|f| f.path == path)
    }

    pub(crate) fn ns_file(&self, ns: &str) -> Option<usize> {
        self.files.iter().position(|f| f.ns == ns)
    }

    /// Sets the text of `path` (an editor's buffer), adding the file when it is new.
    pub(crate) fn set_text(&mut self, path: &Path, text: String) -> usize {
        match self.file(path) {
            Some(i) => {
                let ns = std::mem::take(&mut self.files[i].ns);
                self.files[i] = Source::new(path.to_path_buf(), ns, text);
                i
            }
            None => {
                let ns = self.namespace_of(path);
                self.files.push(Source::new(path.to_path_buf(), ns, text));
                self.files.len() - 1
            }
        }
    }

    fn namespace_of(&self, path: &Path) -> String {
        for (name, dir) in &self.module_dirs {
            if let Some(ns) = namespace_in_module(name, &dir.join("model"), path) {
                return ns;
            }
        }
        // a module opened on its own: `<module>/model/...`
        let model = path.ancestors().find(|a| a.file_name().is_some_and(|n| n == "model"));
        let module = model.and_then(|m| m.parent()).and_then(|m| m.file_name()).and_then(|n| n.to_str());
        match (model, module) {
            (Some(model), Some(module)) => {
                namespace_in_module(module, model, path).unwrap_or_else(|| "__config__".into())
            }
            _ => "__config__".into(),
        }
    }

    pub(crate) fn def(&self, loc: Loc) -> &Definition {
        &self.files[loc.file].outline.definitions[loc.def]
    }

    /// Every definition, with its place.
    pub(crate) fn definitions(&self) -> impl Iterator<Item = (Loc, &Definition)> {
        self.files
            .iter()
            .enumerate()
            .flat_map(|(file, f)| f.outline.definitions.iter().enumerate().map(move |(def, d)| (Loc { file, def }, d)))
    }

    /// The namespace that `prefix` (an alias or a module path, as written in `file`) names.
    pub(crate) fn namespace(&self, file: usize, prefix: &str) -> String {
        let aliased =
            self.files[file].outline.definitions.iter().find(|d| {
                d.kind == DefinitionKind::Import && d.name == prefix && d.value_type.as_deref() != Some(prefix)
            });
        aliased.and_then(|d| d.value_type.clone()).unwrap_or_else(|| prefix.to_string())
    }

    /// A top-level definition of one of `kinds` named `name` (as written in `file`): in the
    /// file's namespace, then in `std`; `a::B` in the namespace `a` names.
    pub(crate) fn resolve_top(&self, file: usize, name: &str, kinds: &[DefinitionKind]) -> Option<Loc> {
        let (namespaces, member) = match name.rsplit_once("::") {
            Some((prefix, member)) => (vec![self.namespace(file, prefix)], member),
            None => (vec![self.files[file].ns.clone(), "std".to_string()], name),
        };
        namespaces.iter().find_map(|ns| {
            let f = self.ns_file(ns)?;
            let def = self.files[f]
                .outline
                .definitions
                .iter()
                .position(|d| kinds.contains(&d.kind) && d.name == member && d.scope == 0 && d.owner.is_none())?;
            Some(Loc { file: f, def })
        })
    }

    pub(crate) fn resolve_type(&self, file: usize, name: &str) -> Option<Loc> {
        self.resolve_top(file, name, &[DefinitionKind::Entity, DefinitionKind::Typedef])
    }

    /// The variable `name` seen from `scope` of `file`: the innermost scope that defines it.
    pub(crate) fn resolve_variable(&self, file: usize, scope: usize, name: &str) -> Option<Loc> {
        if name.contains("::") {
            return self.resolve_top(file, name, &[DefinitionKind::Variable]);
        }
        let outline = &self.files[file].outline;
        let mut at = Some(scope);
        while let Some(s) = at {
            let found = outline
                .definitions
                .iter()
                .position(|d| d.kind == DefinitionKind::Variable && d.scope == s && d.name == name);
            if let Some(def) = found {
                return Some(Loc { file, def });
            }
            at = outline.scopes.get(s).and_then(|sc| sc.parent);
        }
        None
    }

    /// The entity `self` is in `scope` of `file`.
    fn self_entity(&self, file: usize, scope: usize) -> Option<Loc> {
        let outline = &self.files[file].outline;
        let mut at = Some(scope);
        while let Some(s) = at {
            let sc = outline.scopes.get(s)?;
            if let Some(e) = &sc.entity {
                return self.resolve_type(file, e);
            }
            at = sc.parent;
        }
        None
    }

    /// An entity and its ancestors, nearest first; every entity extends `std::Entity`.
    pub(crate) fn ancestors(&self, entity: Loc) -> Vec<Loc> {
        let mut out = vec![entity];
        let mut i = 0;
        while i < out.len() && out.len() < 64 {
            let at = out[i];
            for p in &self.def(at).parents {
                if let Some(l) = self.resolve_type(at.file, p)
                    && !out.contains(&l)
                {
                    out.push(l);
                }
            }
            i += 1;
        }
        if let Some(base) = self.ns_file("std").and_then(|f| self.resolve_top(f, "Entity", &[DefinitionKind::Entity]))
            && !out.contains(&base)
        {
            out.push(base);
        }
        out
    }

    /// The attributes and relation ends of `entity` and its ancestors (its own first).
    pub(crate) fn members(&self, entity: Loc) -> Vec<Loc> {
        let ancestors = self.ancestors(entity);
        let mut out = Vec::new();
        for a in ancestors {
            for (loc, d) in self.definitions() {
                let member = matches!(d.kind, DefinitionKind::Attribute | DefinitionKind::Relation);
                if member
                    && d.owner.as_ref().and_then(|o| self.resolve_type(loc.file, o)) == Some(a)
                    && !out.iter().any(|l: &Loc| self.def(*l).name == d.name)
                {
                    out.push(loc);
                }
            }
        }
        out
    }

    pub(crate) fn member(&self, entity: Loc, name: &str) -> Option<Loc> {
        self.members(entity).into_iter().find(|l| self.def(*l).name == name)
    }

    /// The entity a value of this definition is an instance of (a relation's other end, a
    /// variable assigned a constructor).
    pub(crate) fn value_entity(&self, loc: Loc) -> Option<Loc> {
        let d = self.def(loc);
        let ty = d.value_type.as_ref()?;
        self.resolve_type(loc.file, ty).filter(|l| self.def(*l).kind == DefinitionKind::Entity)
    }

    /// The entity of the instance a path (`x.a`, `self.b`) leads to.
    pub(crate) fn path_entity(&self, file: usize, scope: usize, path: &[String]) -> Option<Loc> {
        let (first, rest) = path.split_first()?;
        let mut entity = if first == "self" {
            self.self_entity(file, scope)?
        } else {
            self.value_entity(self.resolve_variable(file, scope, first)?)?
        };
        for seg in rest {
            entity = self.value_entity(self.member(entity, seg)?)?;
        }
        Some(entity)
    }

    /// What reference `r` of `file` stands for.
    pub(crate) fn resolve(&self, file: usize, r: &Reference) -> Option<Target> {
        match r.kind {
            ReferenceKind::Type => self.resolve_type(file, &r.name).map(Target::Def),
            ReferenceKind::Implementation => {
                self.resolve_top(file, &r.name, &[DefinitionKind::Implementation]).map(Target::Def)
            }
            ReferenceKind::Variable if r.name == "self" => self.self_entity(file, r.scope).map(Target::Def),
            ReferenceKind::Variable => self.resolve_variable(file, r.scope, &r.name).map(Target::Def),
            ReferenceKind::Attribute => {
                let entity = match r.receiver.as_ref()? {
                    Receiver::Class(c) => self.resolve_type(file, c)?,
                    Receiver::Path(p) => self.path_entity(file, r.scope, p)?,
                };
                self.member(entity, &r.name).map(Target::Def)
            }
            ReferenceKind::Call => Some(Target::Plugin(self.plugin_name(file, &r.name))),
            ReferenceKind::Module => Some(Target::Namespace(r.name.clone())),
        }
    }

    /// The qualified name of a plugin called as `name` in `file`.
    pub(crate) fn plugin_name(&self, file: usize, name: &str) -> String {
        match name.rsplit_once("::") {
            Some((prefix, member)) => format!("{}::{member}", self.namespace(file, prefix)),
            None => {
                let module = self.files[file].ns.split("::").next().unwrap_or("std");
                let own = format!("{module}::{name}");
                if crate::plugins::find(self, &own).is_some() { own } else { format!("std::{name}") }
            }
        }
    }

    /// The reference or definition name at byte `offset` of `file`.
    pub(crate) fn at(&self, file: usize, offset: usize) -> Option<At<'_>> {
        let outline = &self.files[file].outline;
        let inside = |(s, e): (usize, usize)| s <= offset && offset <= e;
        if let Some(r) = outline.references.iter().find(|r| inside(r.range)) {
            return Some(At::Reference(r));
        }
        outline.definitions.iter().position(|d| inside(d.name_range)).map(|def| At::Definition(Loc { file, def }))
    }

    /// What is at `offset`: the definition a reference there stands for, or the definition there.
    pub(crate) fn target_at(&self, file: usize, offset: usize) -> Option<Target> {
        match self.at(file, offset)? {
            At::Reference(r) => self.resolve(file, r),
            At::Definition(loc) => Some(Target::Def(loc)),
        }
    }
}

pub(crate) enum At<'p> {
    Reference(&'p Reference),
    Definition(Loc),
}

/// The namespace of `path` in module `name` whose `model` directory is `model`.
fn namespace_in_module(name: &str, model: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(model).ok()?;
    let mut segs: Vec<String> = rel.iter().map(|s| s.to_string_lossy().to_string()).collect();
    let last = segs.pop()?;
    let stem = last.strip_suffix(".cf")?;
    if stem != "_init" {
        segs.push(stem.to_string());
    }
    Some(std::iter::once(name.to_string()).chain(segs).collect::<Vec<_>>().join("::"))
}

/// The directories a compile of the project in `root` looks for modules in, in its order, and
/// the modules installed in editable mode (name, source directory), tried after them.
fn search_path(root: &Path) -> (Vec<PathBuf>, Vec<(String, PathBuf)>) {
    let mut out: Vec<PathBuf> = match compiler::read_project_metadata(root) {
        Ok(meta) => meta.module_path().into_iter().map(|m| root.join(m)).collect(),
        Err(_) => vec![root.join(compiler::project_yml::LIBS)],
    };
    let mut editable = Vec::new();
    if let Ok(Some(env)) = compiler::python::env::discover(root, None) {
        out.extend(env.module_dirs());
        editable = env.editable_modules;
    }
    (out, editable)
}
