//! Calls: plugins (Rust builtins and Python), casts, and the resolution of a plugin's name.

use super::*;
use crate::diagnostics::ErrorKind;

impl<'a> Evaluator<'a> {
    pub(super) fn call(&mut self, name: &'a Ident, args: &'a Args, span: Span, cx: &mut Cx<'_>) -> EResult<Value> {
        // the primitive types: a cast for some, callable by no other
        match name.name.as_str() {
            "bool" | "int" | "float" | "string" | "number" if !args.keyword.is_empty() || !args.spread.is_empty() => {
                return Err(error(
                    ErrorKind::RuntimeException,
                    "Only positional arguments allowed in type cast".to_string(),
                    span,
                    self.m.sources,
                ));
            }
            "list" | "dict" => {
                return Err(error(
                    ErrorKind::RuntimeException,
                    format!("Can not call '{}', can only call plugin or primitive type cast", name.name),
                    span,
                    self.m.sources,
                ));
            }
            _ => {}
        }
        let full = self.resolve_plugin(cx.ns, name)?;
        let plugin = self.plugins.get(&full).expect("resolved").clone();
        if let Some(instead) = crate::builtins::deprecated_plugin(&full) {
            self.warn(
                ErrorKind::CompilerDeprecationWarning,
                format!("Plugin {full} is deprecated: {instead}"),
                name.span,
            );
        }
        let mut pos = Vec::with_capacity(args.positional.len());
        for a in &args.positional {
            pos.push(self.eval(a, cx)?);
        }
        let mut kw: Vec<(String, Value)> = Vec::new();
        for KwArg { name, value } in &args.keyword {
            kw.push((name.name.clone(), self.eval(value, cx)?));
        }
        for sp in &args.spread {
            match self.eval(sp, cx)? {
                Value::Dict(d) => kw.extend(d.iter().map(|(k, v)| (k.to_string(), v.clone()))),
                Value::Unknown(u) => return Ok(Value::Unknown(u)),
                other => return Err(typing(format!("** needs a dict, got {}", self.repr(&other)), sp.span, self)),
            }
        }
        self.call_plugin(&full, &plugin, pos, kw, span, cx.scope, Some((&mut cx.seq, &mut *cx.cache)))
    }

    /// Calls plugin `full` with evaluated arguments. `replay` is the statement's cache of values
    /// with a side effect (a statement that runs again gets the same answer); a call made from
    /// Python (a Jinja filter, `Compiler.get_plugins()`) has none.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn call_plugin(
        &mut self,
        full: &str,
        plugin: &crate::builtins::Plugin,
        pos: Vec<Value>,
        kw: Vec<(String, Value)>,
        span: Span,
        scope: ScopeId,
        replay: Option<(&mut usize, &mut Vec<Value>)>,
    ) -> EResult<Value> {
        if plugin.python {
            // as Inmanta's `check_args`: only an argument that is unknown itself makes the call
            // unknown; an unknown inside a list or dict reaches the plugin, which raises
            // `UnknownException` (an unknown result) when it reads it, or catches it
            if !plugin.accepts_unknown
                && let Some(u) = pos.iter().chain(kw.iter().map(|(_, v)| v)).find(|v| v.is_unknown())
            {
                return Ok(Value::Unknown(unknown_of(u, u)));
            }
            // a Python plugin may print or make instances (a dataclass it returns): as in Inmanta,
            // a statement that runs again after a wait gets the answer of the call it made
            let mut replay = replay;
            if let Some((seq, cache)) = replay.as_mut() {
                let at = **seq;
                **seq += 1;
                if let Some(v) = cache.get(at) {
                    return Ok(v.clone());
                }
            }
            let v = self.call_python(full, pos, kw, span)?;
            self.charge_result(&v, span)?;
            if let Some((_, cache)) = replay {
                cache.push(v.clone());
            }
            return Ok(v);
        }
        let call =
            plugin.bind(full, pos, kw).map_err(|m| error(ErrorKind::RuntimeException, m, span, self.m.sources))?;
        crate::references::check_plugin_args(self, full, plugin, &call, span)?;
        if !plugin.accepts_unknown
            && let Some(u) = call
                .args
                .iter()
                .chain(call.varargs.iter())
                .chain(call.kwargs.iter().map(|(_, v)| v))
                .find(|v| v.contains_unknown())
        {
            let u = match u {
                Value::Unknown(u) => u.clone(),
                other => unknown_of(other, other),
            };
            return Ok(Value::Unknown(u));
        }
        let mut replay = replay.filter(|_| plugin.side_effect);
        if let Some((seq, cache)) = replay.as_mut() {
            let at = **seq;
            **seq += 1;
            if let Some(v) = cache.get(at) {
                return Ok(v.clone());
            }
        }
        let mut call = PluginCall { span, scope, ..call };
        match (plugin.f)(self, &mut call) {
            Ok(v) => {
                self.charge_result(&v, span)?;
                if let Some((_, cache)) = replay {
                    cache.push(v.clone());
                }
                Ok(v)
            }
            Err(PErr::Wait(w)) => Err(Flow::Wait(w)),
            Err(PErr::Flow(f)) => Err(f),
            Err(PErr::Kind(kind, m)) => Err(error(kind, m, span, self.m.sources)),
        }
    }

    pub(crate) fn resolve_plugin(&self, ns: NsId, name: &Ident) -> EResult<String> {
        let n = &name.name;
        match n.rfind("::") {
            None => {
                if self.plugins.get(n).is_some() {
                    return Ok(n.clone());
                }
                // Inmanta looks an unqualified name up in the namespace, then in each enclosing one.
                if let Some(full) =
                    self.m.types.short_candidates(ns, n).into_iter().find(|full| self.plugins.get(full).is_some())
                {
                    return Ok(full);
                }
                Err(error(
                    ErrorKind::TypeNotFoundException,
                    format!("Plugin or function {n} not found; plugins are called as module::name(...)"),
                    name.span,
                    self.m.sources,
                ))
            }
            Some(p) => {
                let (prefix, short) = (&n[..p], &n[p + 2..]);
                let target = self.m.types.visible_namespace(ns, prefix);
                match target {
                    Some(t) => {
                        let full = format!("{t}::{short}");
                        if self.plugins.get(&full).is_some() {
                            Ok(full)
                        } else {
                            Err(error(
                                ErrorKind::TypeNotFoundException,
                                format!(
                                    "Plugin {short} not found in module {t} (neither built in nor defined by the module's Python code)"
                                ),
                                name.span,
                                self.m.sources,
                            ))
                        }
                    }
                    None => Err(error(
                        ErrorKind::MissingImportException,
                        format!("Plugin {n} is used but module {prefix} is not imported (import {prefix})"),
                        name.span,
                        self.m.sources,
                    )),
                }
            }
        }
    }
}
