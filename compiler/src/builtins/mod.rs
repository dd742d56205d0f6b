//! Built-in modules: the `.cf` sources of `std`, `fs`, `exec` and `mitogen` (embedded in the
//! binary) and their plugins, implemented natively.

mod exec;
mod net;
pub(crate) mod std_plugins;

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

pub(crate) const BUILTIN_MODULES: &[&str] = &["std", "fs", "exec", "mitogen"];

/// A plugin failure.
pub(crate) enum PErr {
    Wait(Wait),
    Flow(Flow),
    /// Error kind and message; located at the call.
    Kind(&'static str, String),
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
    /// Registers a plugin of a module's Python code.
    pub(crate) fn add_python(&mut self, name: &str, allow_unknown: bool) {
        let p = self.add(name, &[], python_plugin);
        p.python = true;
        p.accepts_unknown = allow_unknown;
    }
}

/// Stands in for the function of a Python plugin; the evaluator calls those through Python.
fn python_plugin(_: &mut crate::eval::Evaluator<'_>, _: &mut PluginCall) -> PResult {
    Err(PErr::Kind("CompilerException", "a Python plugin was called without its Python process".into()))
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
