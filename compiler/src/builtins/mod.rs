//! Built-in modules: the `.cf` sources of `std`, `fs`, `exec` and `mitogen` (embedded in the
//! binary) and their plugins, implemented natively.

mod exec;
mod jinja;
mod net;
pub(crate) mod std_plugins;

use crate::diagnostics::ErrorKind;
use std::collections::HashMap;
use std::rc::Rc;

use crate::eval::value::Value;
use crate::eval::{Flow, ScopeId, Wait};
use crate::syntax::Span;

/// The `.cf` source of a built-in namespace.
pub(crate) fn builtin_source(ns: &str) -> Option<&'static str> {
    Some(match ns {
        "std" => include_str!("cf/std.cf"),
        "std::testing" => include_str!("cf/std_testing.cf"),
        "fs" => include_str!("cf/fs.cf"),
        "exec" => include_str!("cf/exec.cf"),
        "mitogen" => include_str!("cf/mitogen.cf"),
        _ => return None,
    })
}

/// Every built-in namespace with its `.cf` source: what an editor shows of a built-in module.
pub fn builtin_model_sources() -> impl Iterator<Item = (&'static str, &'static str)> {
    ["std", "std::testing", "fs", "exec", "mitogen"].into_iter().filter_map(|ns| builtin_source(ns).map(|s| (ns, s)))
}

/// Modules whose copy the compiler carries: the server's compiles never fetch them, and
/// `inmanta project install` installs one only when `project.yml` asks a version of it.
pub const BUILTIN_MODULES: &[&str] = &["std", "fs", "exec", "mitogen"];

/// The built-in modules' versions that the built-in copies and the native plugins reproduce: the
/// conformance corpus is recorded with exactly these (`scripts/inmanta-reference.sh` pins them).
pub(crate) const BUILTIN_VERSIONS: &[(&str, &str)] =
    &[("std", "8.7.5"), ("fs", "1.2.0"), ("exec", "2.1.1"), ("mitogen", "0.2.5")];

/// The version of built-in module `module` that the built-in copy is.
pub(crate) fn builtin_version(module: &str) -> Option<&'static str> {
    BUILTIN_VERSIONS.iter().find(|(m, _)| *m == module).map(|(_, v)| *v)
}

/// Plugins whose Python needs what the Python bridge does not serve yet (the caller's scope for
/// Jinja, the module's files, the server, references as values): their native implementation
/// runs whatever version of the module is installed (`inmanta compile` warns when it differs).
const CONTEXT_PLUGINS: &[&str] = &[
    "std::template",
    "std::source",
    "std::file",
    "std::list_files",
    "std::password",
    "std::environment",
    "std::environment_name",
    "std::environment_server",
    "std::server_token",
    "std::server_ssl",
    "std::server_ca",
    "std::server_port",
    "std::getfact",
    "std::is_instance",
    "std::create_environment_reference",
    "std::create_int_reference",
    "std::create_fact_reference",
];

/// Who runs plugin `name` of an installed built-in module at `installed` version, when the
/// module's Python defines it and a native implementation exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PluginRunner {
    /// The native implementation, verified against this very version of the module's Python.
    Native,
    /// The native implementation of another version, because the bridge cannot run this one.
    NativeOfOtherVersion,
    /// The module's own Python.
    Python,
}

pub(crate) fn plugin_runner(name: &str, installed: &str) -> PluginRunner {
    let module = name.split("::").next().unwrap_or(name);
    if builtin_version(module) == Some(installed) {
        PluginRunner::Native
    } else if CONTEXT_PLUGINS.contains(&name) {
        PluginRunner::NativeOfOtherVersion
    } else {
        PluginRunner::Python
    }
}

/// What Inmanta's compiler itself defines in `std` (`std::Entity` and its `requires` /
/// `provides`): loaded before an installed std's model, whose files do not define them.
pub(crate) const STD_CORE: &str = include_str!("cf/std_core.cf");

/// A plugin failure.
pub(crate) enum PErr {
    Wait(Wait),
    Flow(Flow),
    /// Error kind and message; located at the call.
    Kind(ErrorKind, String),
}

impl From<Flow> for PErr {
    fn from(f: Flow) -> Self {
        match f {
            Flow::Wait(w) => PErr::Wait(w),
            f => PErr::Flow(f),
        }
    }
}

pub(crate) type PResult = Result<Value, PErr>;

/// Bound arguments of one plugin call.
#[derive(Default)]
pub(crate) struct PluginCall {
    pub args: Vec<Value>,
    pub varargs: Vec<Value>,
    pub kwargs: Vec<(String, Value)>,
    pub span: Span,
    pub scope: ScopeId,
}

pub(crate) type PluginFn = fn(&mut crate::eval::Evaluator<'_>, &mut PluginCall) -> PResult;

#[derive(Clone)]
pub(crate) struct Plugin {
    pub params: Vec<(&'static str, Option<Value>)>,
    pub varargs: bool,
    pub kwargs: bool,
    pub accepts_unknown: bool,
    pub side_effect: bool,
    pub f: PluginFn,
    /// Defined in a module's Python code: called through the Python process, which binds the
    /// arguments itself.
    pub python: bool,
}

impl Plugin {
    pub(crate) fn bind(&self, name: &str, pos: Vec<Value>, kw: Vec<(String, Value)>) -> Result<PluginCall, String> {
        let mut args: Vec<Option<Value>> = vec![None; self.params.len()];
        let mut varargs = Vec::new();
        for (i, v) in pos.into_iter().enumerate() {
            if i < args.len() {
                args[i] = Some(v);
            } else if self.varargs {
                varargs.push(v);
            } else {
                return Err(format!("{name}() takes {} positional arguments but more were given", self.params.len()));
            }
        }
        let mut kwargs = Vec::new();
        for (k, v) in kw {
            match self.params.iter().position(|(p, _)| *p == k) {
                Some(i) => {
                    if args[i].is_some() {
                        return Err(format!("{name}() got multiple values for argument '{k}'"));
                    }
                    args[i] = Some(v);
                }
                None if self.kwargs => kwargs.push((k, v)),
                None => return Err(format!("{name}() got an unexpected keyword argument '{k}'")),
            }
        }
        let mut out = Vec::with_capacity(args.len());
        for (i, a) in args.into_iter().enumerate() {
            match a.or_else(|| self.params[i].1.clone()) {
                Some(v) => out.push(v),
                None => return Err(format!("{name}() missing required argument '{}'", self.params[i].0)),
            }
        }
        Ok(PluginCall { args: out, varargs, kwargs, ..PluginCall::default() })
    }
}

/// The plugin registry, by fully qualified name (casts by their short name).
pub(crate) struct Plugins {
    map: HashMap<String, Plugin>,
}

impl Plugins {
    pub(crate) fn new() -> Self {
        let mut p = Plugins { map: HashMap::new() };
        std_plugins::register(&mut p);
        exec::register(&mut p);
        crate::references::register(&mut p);
        p
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Plugin> {
        self.map.get(name)
    }

    /// Every plugin with its full name, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &Plugin)> {
        self.map.iter()
    }

    pub(crate) fn add(&mut self, name: &str, params: &[(&'static str, Option<Value>)], f: PluginFn) -> &mut Plugin {
        self.map.insert(
            name.to_string(),
            Plugin {
                params: params.to_vec(),
                varargs: false,
                kwargs: false,
                accepts_unknown: false,
                side_effect: false,
                f,
                python: false,
            },
        );
        self.map.get_mut(name).expect("just inserted")
    }
}

impl Plugins {
    /// Drops the native plugins of `module` that `keep` refuses (those an installed version of a
    /// built-in module does not define).
    pub(crate) fn drop_natives_of(&mut self, module: &str, keep: impl Fn(&str) -> bool) {
        let prefix = format!("{module}::");
        self.map.retain(|name, plugin| plugin.python || !name.starts_with(&prefix) || keep(name));
    }

    /// Registers a plugin of a module's Python code.
    pub(crate) fn add_python(&mut self, name: &str, allow_unknown: bool) {
        let p = self.add(name, &[], python_plugin);
        p.python = true;
        p.accepts_unknown = allow_unknown;
    }
}

/// Stands in for the function of a Python plugin; the evaluator calls those through Python.
fn python_plugin(_: &mut crate::eval::Evaluator<'_>, _: &mut PluginCall) -> PResult {
    Err(PErr::Kind(ErrorKind::CompilerException, "a Python plugin was called without its Python process".into()))
}

pub(crate) fn s(v: &str) -> Value {
    Value::Str(Rc::from(v))
}

/// Deprecated std plugins and what replaces them.
pub(crate) fn deprecated_plugin(name: &str) -> Option<&'static str> {
    Some(match name {
        "std::equals" => "use the == operator",
        "std::select" => "use a list comprehension",
        "std::filter" => "use a list comprehension",
        "std::dict_get" => "use a dict lookup d[key]",
        "std::contains" => "use the in operator",
        "std::invert" => "use not",
        "std::get_env_int" => "use int(std::get_env(...))",
        _ => return None,
    })
}
