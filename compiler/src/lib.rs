//! The `.cf` modelling language: from `main.cf` to resources.
//!
//! Pipeline: [`syntax`] (lexer, parser) → `model` (types built from every loaded file) →
//! `eval` (a task queue of waiting statements) → `export` (resources in Inmanta's JSON shape).
//! This crate does no network and no database work: it reads project files and returns a
//! [`CompileOutput`] or [`Diagnostics`].

mod attributes;
mod builtins;
pub mod conformance;
mod diagnostics;
mod eval;
mod export;
mod handlers;
mod model;
mod project;
pub mod project_yml;
pub mod python;
mod python_code;
mod references;
pub mod syntax;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

pub use attributes::Attributes;
pub use builtins::{BUILTIN_MODULES, builtin_model_sources};
pub use diagnostics::{Diagnostic, Diagnostics, ErrorKind, Origin, Phase, Severity};
pub use export::{ExportedResource, Wire};
pub use handlers::ShippedHandler;
pub use project::SourceOverlay;
pub use project_yml::ProjectMetadata;
pub use python_code::{ShippedPythonFile, ShippedPythonModule, module_version_info};
pub use syntax::Location;

/// Options of one compile.
#[derive(Debug, Clone)]
pub struct CompileOptions {
    /// The root model file; relative paths are resolved against the project directory. Default `main.cf`.
    pub main_file: Option<PathBuf>,
    /// Extra directories searched for modules (before the project's `modulepath` and `libs/`).
    pub module_path: Vec<PathBuf>,
    /// What the `std` plugins see of the world outside the model.
    pub plugin_inputs: PluginInputs,
    /// Safety net on the number of statement runs (Inmanta's `INMANTA_MAX_ITERATIONS`);
    /// default 20 000 000, or `INMANTA_COMPILER_MAX_STEPS`.
    pub max_steps: u64,
    /// Safety net on memory: the number of entity instances a compile may make (a model that
    /// recurses without end stops here, not when the machine runs out of memory); default
    /// 2 000 000, or `INMANTA_COMPILER_MAX_INSTANCES`.
    pub max_instances: u64,
    /// Safety net on recursion: how many implementations deep an instance may be made (an
    /// implementation that constructs its own entity stops here, with a few thousand instances
    /// instead of millions); default 10 000, or `INMANTA_COMPILER_MAX_DEPTH`.
    pub max_depth: u64,
    /// Safety net on memory: the bytes the evaluation may build in strings, lists and dicts
    /// (counted as they grow: `+`, interpolation, list literals and comprehensions, plugin
    /// results; see `eval/budget.rs`); default 1 GiB, or `INMANTA_COMPILER_MAX_MEMORY` (bytes, or
    /// with a unit: `512M`, `2G`).
    pub max_memory: u64,
    /// Stack size of the compile thread; deep nesting is rejected by depth limits before it matters.
    pub stack_size: usize,
    /// The Python interpreter whose environment holds the project's modules (`[compiler] python`);
    /// `None`: `INMANTA_COMPILER_PYTHON`, else the project's `.env` (see [`python::env`]).
    pub python: Option<PathBuf>,
    /// How long Python may take to answer one request (a plugin call, a resource export, loading
    /// the modules) before the compile fails and the process is stopped; default 300 s, or
    /// `INMANTA_COMPILER_PLUGIN_TIMEOUT` (seconds).
    pub plugin_timeout: std::time::Duration,
    /// Fill [`CompileOutput::variables`]. Tests and tooling read them; `inmanta compile` and
    /// `export` do not, and a 100 000-entry data list in `main.cf` costs about 100 MB as JSON.
    pub root_variables: bool,
    /// Keep every instance with its attributes in [`CompileOutput::instance_dump`] (`inmanta
    /// export -j F --json-instances F2`, for pytest-inmanta's `get_instances`).
    pub instance_dump: bool,
    /// Texts compiled instead of the files on disk (an editor's unsaved buffers); empty: the disk.
    pub overlay: SourceOverlay,
    /// Report every error the type build finds, not only the first as Inmanta does: an editor
    /// shows each where it is.
    pub every_error: bool,
    /// The process ends right after this compile (`inmanta compile` / `export`): the evaluated
    /// model is not freed (the operating system takes the memory back at once, where freeing
    /// it walks every instance and value). Off by default: a library user keeps its memory.
    pub process_exits_after: bool,
    /// Start the next compile's Python as soon as this compile has its own (see
    /// `python/spare.rs`): for a tool that compiles the same project again and again, the
    /// language server. Off by default: a single compile would leave a Python unused.
    pub keep_python_spare: bool,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            main_file: None,
            module_path: Vec::new(),
            plugin_inputs: PluginInputs::default(),
            max_steps: limit_from_env("INMANTA_COMPILER_MAX_STEPS", 20_000_000),
            max_instances: limit_from_env("INMANTA_COMPILER_MAX_INSTANCES", 2_000_000),
            max_depth: limit_from_env("INMANTA_COMPILER_MAX_DEPTH", 10_000),
            max_memory: std::env::var("INMANTA_COMPILER_MAX_MEMORY")
                .ok()
                .and_then(|v| eval::budget::parse_size(&v))
                .filter(|n| *n > 0)
                .unwrap_or(eval::budget::DEFAULT_MAX_MEMORY),
            stack_size: 64 * 1024 * 1024,
            python: None,
            plugin_timeout: std::time::Duration::from_secs(limit_from_env("INMANTA_COMPILER_PLUGIN_TIMEOUT", 300)),
            root_variables: true,
            instance_dump: false,
            overlay: SourceOverlay::default(),
            every_error: false,
            process_exits_after: false,
            keep_python_spare: false,
        }
    }
}

/// What the `std` plugins of a compile see of the world outside the model: the process
/// environment, the known facts, and the environment and server the compile is for.
#[derive(Debug, Clone)]
pub struct PluginInputs {
    /// Environment variables seen by `std::get_env`; `None` reads the process environment.
    pub env: Option<HashMap<String, String>>,
    /// Known facts: unversioned resource id -> fact name -> value (for `std::getfact`).
    pub facts: HashMap<String, HashMap<String, serde_json::Value>>,
    /// Id and name of the target environment (`std::environment()`, `std::environment_name()`).
    pub environment: String,
    pub environment_name: String,
    /// Server address seen by `std::environment_server()` / `std::server_port()`.
    pub server_host: String,
    pub server_port: i64,
}

impl Default for PluginInputs {
    fn default() -> Self {
        PluginInputs {
            env: None,
            facts: HashMap::new(),
            environment: "00000000-0000-0000-0000-000000000000".into(),
            environment_name: "dev".into(),
            server_host: "localhost".into(),
            server_port: 8888,
        }
    }
}

impl PluginInputs {
    /// The environment variable `name` as `std::get_env` sees it.
    pub(crate) fn env_var(&self, name: &str) -> Option<String> {
        match &self.env {
            Some(vars) => vars.get(name).cloned(),
            None => std::env::var(name).ok(),
        }
    }
}

impl CompileOptions {
    /// The keys of a configuration's `[compiler]` section that [`CompileOptions::apply_limits`] reads.
    pub const LIMIT_KEYS: [&str; 4] = ["max-steps", "max-instances", "max-depth", "max-memory"];

    /// Takes the limits from a configuration's `[compiler]` section (`max-steps`,
    /// `max-instances`, `max-depth`, `max-memory`; `get` looks a key up there). Values must be
    /// positive integers; `max-memory` is in bytes and may have a unit (`512M`, `2G`).
    pub fn apply_limits(&mut self, get: impl Fn(&str) -> Option<String>) -> Result<(), String> {
        for (key, field) in [
            ("max-steps", &mut self.max_steps),
            ("max-instances", &mut self.max_instances),
            ("max-depth", &mut self.max_depth),
        ] {
            if let Some(v) = get(key) {
                *field = v
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("[compiler] {key} must be a positive integer, got {v:?}"))?;
            }
        }
        if let Some(v) = get("max-memory") {
            self.max_memory = eval::budget::parse_size(&v).filter(|n| *n > 0).ok_or_else(|| {
                format!("[compiler] max-memory must be a positive size in bytes (units K, M, G allowed), got {v:?}")
            })?;
        }
        Ok(())
    }
}

/// A limit from the environment when it holds a positive number, else `default`.
fn limit_from_env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).filter(|n| *n > 0).unwrap_or(default)
}

/// Counters of one compile.
#[derive(Debug, Clone, Default)]
pub struct CompileStats {
    pub files: usize,
    pub instances: usize,
    pub statements_run: u64,
    /// Variable entries compared while looking names up: grows linearly with the model (a
    /// quadratic count here is a quadratic compile).
    pub variable_probes: u64,
    pub resources: usize,
    /// Time spent loading and parsing, building types, evaluating and exporting.
    pub parse_time: std::time::Duration,
    pub build_time: std::time::Duration,
    pub eval_time: std::time::Duration,
    pub export_time: std::time::Duration,
}

/// The result of a successful compile and export.
#[derive(Debug, Clone, Default)]
pub struct CompileOutput {
    /// The resources, sorted by id text; [`ExportedResource::into_wire`] gives Inmanta's export
    /// shape of a version.
    pub resources: Vec<ExportedResource>,
    /// File contents by sha1 hex digest, for upload.
    pub files: BTreeMap<String, Vec<u8>>,
    /// Unversioned resource id -> `"undefined"` for resources with unknown values.
    pub resource_state: BTreeMap<String, String>,
    /// What the compile waited on: `{"parameter", "source", "resource", "metadata"}`.
    pub unknowns: Vec<serde_json::Value>,
    /// Unversioned resource id -> resource set name.
    pub resource_sets: BTreeMap<String, String>,
    /// Resource type -> the handler executable a loaded module ships for it
    /// (`handlers/<namespace>__<Type>`), to upload with the version.
    pub handlers: BTreeMap<String, ShippedHandler>,
    /// Module name -> the Python code of a loaded module (`inmanta_plugins/<module>/` or
    /// `plugins/`), to upload with the version for the agents' Python handlers.
    pub python_modules: BTreeMap<String, ShippedPythonModule>,
    pub warnings: Vec<Diagnostic>,
    /// Lines printed by `std::print`.
    pub printed: Vec<String>,
    /// Variables of `main.cf` (instances as `"<Entity instance>"`, ints exact at any size), for
    /// tests and tooling; empty
    /// unless [`CompileOptions::root_variables`].
    pub variables: BTreeMap<String, serde_json::Value>,
    pub metadata: ProjectMetadata,
    /// Every loaded module: its version and whether the installed copy or the built-in one
    /// was used (`inmanta compile -v` lists them).
    pub modules: Vec<ModuleUsed>,
    pub stats: CompileStats,
    /// Every instance (entity, ancestors, attributes), when [`CompileOptions::instance_dump`].
    pub instance_dump: Option<serde_json::Value>,
}

/// A module a compile loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleUsed {
    pub name: String,
    pub version: String,
    pub origin: ModuleOrigin,
}

/// Where a loaded module's model came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModuleOrigin {
    /// The copy built into the compiler (std, fs, exec and mitogen, where none is installed).
    BuiltIn,
    /// The module's directory on the module path or in the Python environment.
    Installed(PathBuf),
}

impl std::fmt::Display for ModuleUsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.origin {
            ModuleOrigin::BuiltIn => write!(f, "{} {} (built in)", self.name, self.version),
            ModuleOrigin::Installed(dir) => write!(f, "{} {} ({})", self.name, self.version, dir.display()),
        }
    }
}

impl CompileOutput {
    /// The JSON that `inmanta export -j FILE` writes: the list of resources, of no version yet
    /// (version 0 of [`ExportedResource::into_wire`]).
    pub fn export_json(&self) -> String {
        let resources: Vec<_> = self.resources.iter().map(|r| r.wire(0)).collect();
        serde_json::to_string_pretty(&resources).unwrap_or_else(|_| "[]".into())
    }

    /// Writes the `-j` file (the text of [`CompileOutput::export_json`]), serialised straight
    /// into the file instead of a string of it first.
    pub fn write_export_json(&self, path: &Path) -> std::io::Result<()> {
        use std::io::Write;
        let resources: Vec<_> = self.resources.iter().map(|r| r.wire(0)).collect();
        let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
        serde_json::to_writer_pretty(&mut out, &resources)?;
        out.flush()
    }
}

/// Compiles the project in `project_dir` (`project.yml` + `main.cf`) and exports it.
pub fn compile_project(project_dir: &Path) -> Result<CompileOutput, Diagnostics> {
    compile_project_with(project_dir, &CompileOptions::default())
}

/// Reads the project's `project.yml` alone (its name, for instance), without compiling: what
/// `inmanta deploy` needs to pick its embedded environment before the compile that is for it.
pub fn read_project_metadata(project_dir: &Path) -> Result<ProjectMetadata, Diagnostics> {
    project_yml::read(project_dir, &mut Vec::new()).map_err(|d| Diagnostics(vec![d]))
}

/// Compiles with options. Runs on its own thread with a large stack.
pub fn compile_project_with(project_dir: &Path, options: &CompileOptions) -> Result<CompileOutput, Diagnostics> {
    let dir = project_dir.to_path_buf();
    let opts = options.clone();
    on_big_stack(options.stack_size, move || compile_project_inner(&dir, &opts))
}

/// Compiles a single model given as text (no project.yml; modules from `options.module_path`).
pub fn compile_source(source: &str, options: &CompileOptions) -> Result<CompileOutput, Diagnostics> {
    let src = source.to_string();
    let opts = options.clone();
    on_big_stack(options.stack_size, move || {
        let main = opts.main_file.clone().unwrap_or_else(|| PathBuf::from("main.cf"));
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let python = python::env::discover(&cwd, opts.python.as_deref()).map_err(env_error)?;
        let mut search = opts.module_path.clone();
        if let Some(env) = &python {
            search.extend(env.module_dirs());
        }
        compile_inner(
            &main,
            src,
            search,
            &opts,
            ProjectMetadata::default(),
            Vec::new(),
            PythonSetting { env: python, project_dir: &cwd },
        )
    })
}

fn on_big_stack<F>(stack: usize, f: F) -> Result<CompileOutput, Diagnostics>
where
    F: FnOnce() -> Result<CompileOutput, Diagnostics> + Send + 'static,
{
    let handle = std::thread::Builder::new().name("compile".into()).stack_size(stack.max(2 << 20)).spawn(f);
    match handle {
        Ok(h) => h.join().unwrap_or_else(|p| {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            Err(Diagnostics(vec![Diagnostic::plain(
                ErrorKind::CompilerException,
                format!("internal compiler error: {}", msg.unwrap_or_else(|| "panic".into())),
            )]))
        }),
        Err(e) => Err(Diagnostics(vec![Diagnostic::plain(
            ErrorKind::CompilerException,
            format!("can not start the compile thread: {e}"),
        )])),
    }
}

fn compile_project_inner(dir: &Path, options: &CompileOptions) -> Result<CompileOutput, Diagnostics> {
    // The Python process runs in the project directory: a relative one would be joined twice.
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let dir = absolute.as_path();
    let mut warnings = Vec::new();
    let meta = if options.main_file.is_some() && !dir.join("project.yml").exists() {
        ProjectMetadata::default()
    } else {
        project_yml::read(dir, &mut warnings).map_err(|d| Diagnostics(vec![d]))?
    };
    let mut search: Vec<PathBuf> = options.module_path.clone();
    search.extend(meta.module_path().into_iter().map(|m| dir.join(m)));
    // modules installed in the project's Python environment (v2 modules) come last
    let python = python::env::discover(dir, options.python.as_deref()).map_err(env_error)?;
    if let Some(env) = &python {
        search.extend(env.module_dirs());
    }
    search.dedup();
    let main = match &options.main_file {
        Some(p) if p.is_absolute() => p.clone(),
        Some(p) => dir.join(p),
        None => dir.join("main.cf"),
    };
    let text = options.overlay.read(&main).map_err(|e| {
        Diagnostics(vec![Diagnostic::plain(
            ErrorKind::ProjectNotFoundException,
            format!("Can not read {}: {e}", main.display()),
        )])
    })?;
    compile_inner(&main, text, search, options, meta, warnings, PythonSetting { env: python, project_dir: dir })
}

/// The Python environment of a compile (if any) and the directory its plugins run in.
struct PythonSetting<'p> {
    env: Option<python::env::PythonEnv>,
    project_dir: &'p Path,
}

fn env_error(e: python::env::EnvError) -> Diagnostics {
    Diagnostics(vec![Diagnostic::plain(ErrorKind::ModuleLoadingException, e.to_string())])
}

fn is_builtin(d: &Diagnostic) -> bool {
    d.location.as_ref().is_some_and(|l| l.file.starts_with("<builtin>"))
}

fn compile_inner(
    main: &Path,
    text: String,
    search: Vec<PathBuf>,
    options: &CompileOptions,
    meta: ProjectMetadata,
    mut warnings: Vec<Diagnostic>,
    python: PythonSetting<'_>,
) -> Result<CompileOutput, Diagnostics> {
    let PythonSetting { env: python_env, project_dir } = python;
    let t0 = std::time::Instant::now();
    let editable = python_env.as_ref().map(|env| env.editable_modules.clone()).unwrap_or_default();
    let mut loader = project::Loader::new(search).with_editable(editable);
    loader.overlay = options.overlay.clone();
    let loaded = loader.load(main, text);
    let parse_time = t0.elapsed();
    warnings.append(&mut loader.warnings);
    if loaded.is_err() {
        return Err(Diagnostics(loader.errors));
    }
    let sources = std::mem::take(&mut loader.sources);
    let namespaces = std::mem::take(&mut loader.namespaces);
    let mut builder = eval::build::Builder::new(&sources);
    for ns in &namespaces {
        builder.add_namespace(&ns.name, &ns.file);
    }
    builder.build();
    let build_time = t0.elapsed() - parse_time;
    warnings.extend(builder.warnings.drain(..).filter(|w| !is_builtin(w)));
    if !builder.errors.is_empty() {
        let own_clash = builder.errors.iter().any(|e| e.kind == ErrorKind::DuplicateException);
        let plugin_clash = (!own_clash)
            .then(|| plugin_name_clash(&namespaces, &loader, python_env.as_ref(), project_dir, options))
            .flatten();
        let errors = if options.every_error { dedup_every(builder.errors) } else { dedup(builder.errors) };
        return Err(plugin_clash.unwrap_or(Diagnostics(errors)));
    }
    let mut resource_mappings =
        project::module_resource_mappings(&loader.module_dirs).map_err(|d| Diagnostics(vec![d]))?;
    let python_side = start_python(&loader.module_dirs, python_env.as_ref(), project_dir, options)?;
    let modules = modules_used(&namespaces, &loader.module_dirs);
    if let Some(side) = &python_side {
        python::check_signatures(&builder.types, &side.plugins).map_err(|d| Diagnostics(vec![*d]))?;
        // a module's Python `@resource` wins over a module.yml `resources:` entry, and over the
        // built-in mapping unless the installed module is the version that one reproduces
        let reproduced = |entity: &str| {
            let module = entity.split("::").next().unwrap_or(entity);
            let installed = modules.iter().find(|m| m.name == module).map(|m| m.version.as_str());
            installed.is_some() && builtins::builtin_version(module) == installed
        };
        let mut mappings: Vec<export::Mapping> = side
            .resources
            .iter()
            .filter(|r| !reproduced(&r.entity))
            .map(|r| export::Mapping {
                entity: r.entity.clone(),
                agent: r.agent.clone(),
                id_attr: r.id_attr.clone(),
                fields: r.fields.clone(),
                builtin: false,
                python: true,
            })
            .collect();
        mappings.append(&mut resource_mappings);
        resource_mappings = mappings;
    }
    let mut python_side = python_side;
    python::pair_dataclasses(&builder.types, &sources, python_side.as_mut().map(|s| &mut s.bridge))
        .map_err(|d| Diagnostics(vec![*d]))?;
    let ctx = eval::ProjectCtx {
        resource_mappings,
        module_dirs: loader.module_dirs.clone(),
        plugin_inputs: options.plugin_inputs.clone(),
        project_dir: project_dir.to_path_buf(),
    };
    let mut ev = eval::Evaluator::new(builder.types, &sources, ctx);
    if let Some(side) = python_side {
        if let Some(plugins) = std::rc::Rc::get_mut(&mut ev.plugins) {
            register_python_plugins(plugins, &side.plugins, &modules, &mut warnings);
        }
        let mut bridge = side.bridge;
        bridge.set_max_answer(options.max_memory);
        ev.python = Some(bridge);
    }
    ev.limits.max_steps = options.max_steps;
    ev.limits.max_instances = options.max_instances;
    ev.limits.max_depth = options.max_depth;
    ev.limits.budget = eval::budget::Budget::new(options.max_memory);
    let rules: Vec<String> = meta.raw["relation_precedence_policy"]
        .as_array()
        .map(|a| a.iter().filter_map(|r| r.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    if let Err(errors) = ev.set_precedence(&rules) {
        return Err(Diagnostics(errors));
    }
    eval::VAR_PROBES.with(|p| p.set(0));
    ev.run();
    let variable_probes = eval::VAR_PROBES.with(|p| p.get());
    let eval_time = t0.elapsed() - parse_time - build_time;
    warnings.extend(ev.warnings.drain(..).filter(|w| !is_builtin(w)));
    if !ev.errors.is_empty() {
        return Err(Diagnostics(dedup(std::mem::take(&mut ev.errors))));
    }
    let python_exports = export::export_python_resources(&mut ev).map_err(|e| Diagnostics(dedup(e)).in_export())?;
    ev.release_queue(options.root_variables);
    let mut ex = export::export(&export::View::of(&ev), &python_exports, &ev.python_files, &ev.unknowns);
    if ex.errors.is_empty() {
        python::run_dependency_managers(&mut ev, &python_exports, &mut ex.resources)
            .map_err(|d| Diagnostics(vec![*d]).in_export())?;
    }
    ev.python = None;
    let export_time = t0.elapsed() - parse_time - build_time - eval_time;
    if !ex.errors.is_empty() {
        return Err(Diagnostics(dedup(ex.errors)).in_export());
    }
    if let Some(cycle) = export::find_cycle(&ex.resources) {
        return Err(Diagnostics(vec![Diagnostic::plain(
            ErrorKind::DependencyCycleException,
            format!("A dependency cycle was found between resources: {}", cycle.join(" -> ")),
        )])
        .in_export());
    }
    warnings.extend(ex.warnings);
    let shipped =
        handlers::collect(&loader.module_dirs, &mut warnings).map_err(|d| Diagnostics(vec![d]).in_export())?;
    let python_modules = python_code::collect(&loader.module_dirs).map_err(|d| Diagnostics(vec![d]).in_export())?;
    let variables = if options.root_variables { ev.root_variables() } else { BTreeMap::new() };
    let instance_dump = if options.instance_dump { Some(ev.instances_json()) } else { None };
    let instances = ev.m.instances.len();
    let statements_run = ev.limits.steps;
    let files = namespaces.len();
    let printed = std::mem::take(&mut ev.printed);
    if options.process_exits_after {
        // the process ends soon: freeing millions of values and syntax nodes would only cost time
        // (ManuallyDrop, as `mem::forget`: the evaluator first, it borrows the namespaces)
        let _ = std::mem::ManuallyDrop::new(ev);
        let _ = std::mem::ManuallyDrop::new(namespaces);
        let _ = std::mem::ManuallyDrop::new(loader);
    }
    let stats = CompileStats {
        files,
        instances,
        statements_run,
        variable_probes,
        resources: ex.resources.len(),
        parse_time,
        build_time,
        eval_time,
        export_time,
    };
    Ok(CompileOutput {
        resources: ex.resources,
        files: ex.files,
        resource_state: ex.resource_state,
        unknowns: ex.unknowns,
        resource_sets: ex.resource_sets,
        handlers: shipped,
        python_modules,
        warnings,
        printed,
        variables,
        metadata: meta,
        modules,
        stats,
        instance_dump,
    })
}

/// Every loaded module, with the version used and where it came from.
fn modules_used(namespaces: &[project::LoadedNs], module_dirs: &HashMap<String, PathBuf>) -> Vec<ModuleUsed> {
    let mut names: Vec<&str> = namespaces
        .iter()
        .map(|ns| ns.name.split("::").next().unwrap_or(&ns.name))
        .filter(|n| *n != "__config__")
        .collect();
    names.sort_unstable();
    names.dedup();
    names
        .into_iter()
        .map(|name| match module_dirs.get(name) {
            Some(dir) => ModuleUsed {
                name: name.to_string(),
                version: python_code::module_version(dir),
                origin: ModuleOrigin::Installed(dir.clone()),
            },
            None => ModuleUsed {
                name: name.to_string(),
                version: builtins::builtin_version(name).unwrap_or("0.0.0").to_string(),
                origin: ModuleOrigin::BuiltIn,
            },
        })
        .collect()
}

/// Registers the plugins that the modules' Python code defines. Where a native implementation of
/// a built-in module's plugin exists, it stands in only for the version it reproduces
/// ([`builtins::plugin_runner`]); a native one kept for another version is a warning.
fn register_python_plugins(
    plugins: &mut builtins::Plugins,
    python: &[python::PySignature],
    modules: &[ModuleUsed],
    warnings: &mut Vec<Diagnostic>,
) {
    // An installed built-in module defines its plugins itself: a native one it lacks is gone.
    for module in modules.iter().filter(|m| m.origin != ModuleOrigin::BuiltIn) {
        if builtins::builtin_version(&module.name).is_some() {
            let prefix = format!("{}::", module.name);
            let defined: HashSet<&str> =
                python.iter().map(|p| p.name.as_str()).filter(|n| n.starts_with(&prefix)).collect();
            plugins.drop_natives_of(&module.name, |name| defined.contains(name));
        }
    }
    let mut kept_for_other_version = Vec::new();
    for p in python {
        let native = plugins.get(&p.name).is_some_and(|existing| !existing.python);
        if native {
            let module = p.name.split("::").next().unwrap_or(&p.name);
            let installed = modules.iter().find(|m| m.name == module).map(|m| m.version.as_str()).unwrap_or("");
            match builtins::plugin_runner(&p.name, installed) {
                builtins::PluginRunner::Native => continue,
                builtins::PluginRunner::NativeOfOtherVersion => {
                    kept_for_other_version.push(format!("{} ({module} {installed})", p.name));
                    continue;
                }
                builtins::PluginRunner::Python => {}
            }
        }
        plugins.add_python(&p.name, p.allow_unknown);
    }
    if !kept_for_other_version.is_empty() {
        warnings.push(Diagnostic::plain_warning(
            ErrorKind::CompilerWarning,
            format!(
                "these plugins run as in the built-in module version (std {}), not from the installed module's Python, \
                 which the compiler can not run yet: {}",
                builtins::builtin_version("std").unwrap_or_default(),
                kept_for_other_version.join(", ")
            ),
        ));
    }
}

/// Inmanta registers the plugins with the model's names before it resolves any type: a plugin
/// named like a type or implementation is refused before what the model's build found wrong
/// (an implementation for an unknown entity), unless that is a clash of the model's own names.
fn plugin_name_clash(
    namespaces: &[project::LoadedNs],
    loader: &project::Loader,
    env: Option<&python::env::PythonEnv>,
    project_dir: &Path,
    options: &CompileOptions,
) -> Option<Diagnostics> {
    let side = start_python(&loader.module_dirs, env, project_dir, options).ok()??;
    let mut declared = std::collections::HashSet::new();
    for ns in namespaces {
        for item in &ns.file.items {
            let name = match item {
                syntax::ast::Top::Entity(def) => &def.name.name,
                syntax::ast::Top::Implementation { name, .. } | syntax::ast::Top::Typedef { name, .. } => &name.name,
                _ => continue,
            };
            declared.insert(format!("{}::{name}", ns.name));
        }
    }
    python::check_plugin_names(&declared, &side.plugins).err().map(|d| Diagnostics(vec![*d]))
}

/// Starts Python when a loaded module has Python code.
fn start_python(
    module_dirs: &std::collections::HashMap<String, PathBuf>,
    env: Option<&python::env::PythonEnv>,
    project_dir: &Path,
    options: &CompileOptions,
) -> Result<Option<python::PythonSide>, Diagnostics> {
    let editable = env.map(|env| env.editable_modules.as_slice()).unwrap_or_default();
    let modules = python::python_modules(module_dirs, editable);
    if modules.is_empty() {
        return Ok(None);
    }
    let Some(env) = env else {
        let names: Vec<String> = modules.iter().map(|m| format!("{} ({})", m.name, m.dir.display())).collect();
        let missing = python::env::EnvError::Missing { project_venv: project_dir.join(python::env::PROJECT_VENV) };
        return Err(Diagnostics(vec![Diagnostic::plain(
            ErrorKind::ModuleLoadingException,
            format!("module {} has Python code, but {missing}", names.join(", ")),
        )]));
    };
    python::start(
        &env.python,
        project_dir,
        &modules,
        module_dirs,
        &options.plugin_inputs.environment,
        options.plugin_timeout,
        options.keep_python_spare,
    )
    .map(Some)
    .map_err(|d| Diagnostics(vec![*d]))
}

/// The errors without repeats, all of them ([`CompileOptions::every_error`]).
fn dedup_every(errors: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut seen = HashSet::new();
    errors
        .into_iter()
        .filter(|e| {
            seen.insert((
                e.kind.clone(),
                e.location.as_ref().map(|l| (l.file.clone(), l.line, l.col)),
                e.message.clone(),
            ))
        })
        .take(100)
        .collect()
}

fn dedup(errors: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for e in errors {
        let key = (e.kind.clone(), e.location.as_ref().map(|l| (l.file.clone(), l.line, l.col)), e.message.clone());
        if seen.insert(key) {
            out.push(e);
        }
        if out.len() >= 100 {
            break;
        }
    }
    // Inmanta stops at the first error; only what its final check finds at the end of the
    // compile (incomplete instances, unmatched index lookups) is reported together (its MultiException)
    if !out.iter().all(eval::is_end_of_compile) {
        out.truncate(1);
    }
    out
}
