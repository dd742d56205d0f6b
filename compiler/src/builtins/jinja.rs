//! `std::template`: a Jinja template rendered with minijinja, as std's Python renders it with
//! Jinja2. Every plugin of the model is a filter named `ns.plugin` there (`ssh_keys |
//! std.key_sort("name")`), as std registers `Compiler.get_plugins()`; an instance stays an
//! instance on its way through a filter (a map of its set attributes to the template).
//!
//! minijinja calls a filter from inside `render`, and a filter that is a plugin needs the
//! evaluator, which minijinja's `'static + Send` filters can not hold: a template that names a
//! plugin filter renders on a scoped thread, and each filter call comes back to this thread as a
//! message, answered with the evaluator.

use crate::diagnostics::ErrorKind;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::{Arc, mpsc};

use minijinja::value::{Enumerator, Object, ObjectRepr, Rest, ValueKind};
use minijinja::{ErrorKind as JinjaErrorKind, Value as J};

use super::std_plugins::{charge_conversion, module_file, text};
use super::{PErr, PResult, PluginCall, s};
use crate::eval::value::{InstId, Value};
use crate::eval::{Evaluator, Flow, Wait};

thread_local! {
    /// The first attribute a template's instances did not have yet (an unset value, a relation to
    /// one instance still empty): a template that then fails on an undefined value waits for it,
    /// as Inmanta's template plugin is run again when an attribute it read is set.
    static NOT_SET_YET: std::cell::RefCell<Option<Wait>> = const { std::cell::RefCell::new(None) };
}

fn note_not_set(w: Wait) {
    NOT_SET_YET.with(|n| {
        n.borrow_mut().get_or_insert(w);
    });
}

/// An instance in a template: a map of its set attributes, which keeps the instance's id so that a
/// plugin filter gets the instance back.
#[derive(Debug)]
struct InstanceObject {
    id: InstId,
    attributes: BTreeMap<String, J>,
}

impl Object for InstanceObject {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &J) -> Option<J> {
        self.attributes.get(key.as_str()?).cloned()
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.attributes.keys().map(|k| J::from(k.as_str())).collect())
    }
}

/// A Python method a template calls on a value. Inmanta hands a template its strings and dicts
/// (a `DictProxy`, a mapping) with their methods, but a list is a `SequenceProxy` and an instance a
/// `DynamicProxy`, neither with Python's methods (`ports.count(80)` fails there).
fn python_method(state: &minijinja::State<'_, '_>, value: &J, method: &str, args: &[J]) -> Result<J, minijinja::Error> {
    if value.kind() == ValueKind::Seq || value.downcast_object_ref::<InstanceObject>().is_some() {
        return Err(minijinja::Error::from(JinjaErrorKind::UnknownMethod));
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

/// A model value as a template sees it. Instances deeper than three levels are their name, as
/// they were before filters could take them.
fn to_jinja(ev: &mut Evaluator<'_>, v: &Value, depth: usize) -> Result<J, PErr> {
    charge_conversion(ev, v)?;
    Ok(match v {
        Value::Instance(i) => {
            if depth > 3 {
                return Ok(J::from(ev.inst_name(*i)));
            }
            let mut attributes = BTreeMap::new();
            for (n, name) in ev.m.plugin_attributes(*i) {
                let read = ev.m.read_attribute(*i, n);
                if let Some(wait) = read.pending {
                    note_not_set(wait);
                }
                if let Some(val) = read.value {
                    attributes.insert(name, to_jinja(ev, &val, depth + 1)?);
                }
            }
            J::from_object(InstanceObject { id: *i, attributes })
        }
        Value::List(l) => J::from(l.iter().map(|x| to_jinja(ev, x, depth)).collect::<Result<Vec<_>, _>>()?),
        Value::Dict(d) => {
            let map: BTreeMap<String, J> =
                d.iter().map(|(k, x)| Ok((k.to_string(), to_jinja(ev, x, depth)?))).collect::<Result<_, PErr>>()?;
            J::from(map)
        }
        other => scalar(&other.to_json()),
    })
}

/// A scalar as a template value. Not through serde: with serde_json's `arbitrary_precision` (on in
/// the workspace) a number serialises to any other format as a map holding its digits.
fn scalar(v: &serde_json::Value) -> J {
    match v {
        serde_json::Value::Bool(b) => J::from(*b),
        serde_json::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                J::from(i)
            } else if let Some(u) = n.as_u64() {
                J::from(u)
            } else if let Some(i) = n.as_i128().filter(|_| !n.is_f64()) {
                J::from(i)
            } else {
                // a float, or an int past 128 bits: minijinja's ints stop there
                J::from(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        serde_json::Value::String(s) => J::from(s.as_str()),
        _ => J::from(()),
    }
}

/// A template value given to a plugin filter, as a model value.
fn from_jinja(v: &J) -> Result<Value, String> {
    if let Some(inst) = v.downcast_object_ref::<InstanceObject>() {
        return Ok(Value::Instance(inst.id));
    }
    Ok(match v.kind() {
        ValueKind::Undefined | ValueKind::None => Value::Null,
        ValueKind::Bool => Value::Bool(v.is_true()),
        ValueKind::Number => match v.as_i64() {
            Some(i) => Value::Int(i),
            None => match f64::try_from(v.clone()) {
                Ok(f) => Value::Float(f),
                Err(_) => return Err(format!("the number {v} does not fit the model")),
            },
        },
        ValueKind::String => Value::Str(Rc::from(v.as_str().unwrap_or_default())),
        ValueKind::Seq | ValueKind::Iterable => {
            let items = v.try_iter().map_err(|e| e.to_string())?;
            Value::list(items.map(|x| from_jinja(&x)).collect::<Result<_, _>>()?)
        }
        ValueKind::Map => {
            let mut items = Vec::new();
            for key in v.try_iter().map_err(|e| e.to_string())? {
                let value = v.get_item(&key).map_err(|e| e.to_string())?;
                let key = key.as_str().map(str::to_string).unwrap_or_else(|| key.to_string());
                items.push((Rc::from(key.as_str()), from_jinja(&value)?));
            }
            Value::Dict(Rc::new(items))
        }
        other => return Err(format!("a template value of kind {other} can not be given to a plugin")),
    })
}

/// What the rendering thread sends back: a plugin filter's call, or the rendered text.
enum FromRender {
    Call { plugin: String, args: Vec<J>, reply: mpsc::Sender<Result<J, String>> },
    Done(Result<String, minijinja::Error>),
}

/// The plugins the template names as filters: (Jinja name, plugin).
fn plugin_filters(ev: &Evaluator<'_>, src: &str) -> Vec<(String, String)> {
    if !src.contains('|') {
        return Vec::new();
    }
    let mut found: Vec<(String, String)> = ev
        .plugins
        .iter()
        .filter(|(name, _)| ev.m.types.ns_by_name.contains_key(name.split("::").next().unwrap_or_default()))
        .map(|(name, _)| (name.replace("::", "."), name.clone()))
        .filter(|(jinja_name, _)| src.contains(jinja_name.as_str()))
        .collect();
    found.sort();
    found
}

/// A plugin filter's call, answered on the compile's thread.
fn call_filter(ev: &mut Evaluator<'_>, plugin: &str, args: &[J], call: &PluginCall) -> Result<J, PErr> {
    let failed =
        |m: String| PErr::Kind(ErrorKind::RuntimeException, format!("Jinja filter {}: {m}", plugin.replace("::", ".")));
    let pos = args.iter().map(from_jinja).collect::<Result<Vec<_>, _>>().map_err(failed)?;
    let Some(p) = ev.plugins.get(plugin).cloned() else { return Err(failed("no such plugin".into())) };
    match ev.call_plugin(plugin, &p, pos, Vec::new(), call.span, call.scope, None) {
        Ok(v) => to_jinja(ev, &v, 0),
        Err(Flow::Wait(w)) => Err(PErr::Wait(w)),
        Err(f) => Err(PErr::Flow(f)),
    }
}

pub(super) fn render_template(ev: &mut Evaluator<'_>, call: &mut PluginCall) -> PResult {
    NOT_SET_YET.with(|n| n.borrow_mut().take());
    let result = render(ev, call);
    match (result, NOT_SET_YET.with(|n| n.borrow_mut().take())) {
        (Err(PErr::Kind(_, m)), Some(w)) if m.contains("undefined value") => Err(PErr::Wait(w)),
        (result, _) => result,
    }
}

fn render(ev: &mut Evaluator<'_>, call: &mut PluginCall) -> PResult {
    let path = text(&call.args[0], "template path")?;
    let bytes = module_file(ev, &path, "templates")?;
    let src = String::from_utf8_lossy(&bytes).into_owned();
    let mut ctx = BTreeMap::new();
    if call.kwargs.is_empty() {
        // the caller's scope: every assigned variable of the enclosing scopes
        let mut sc = Some(call.scope);
        let mut vars: Vec<(Rc<str>, Value)> = Vec::new();
        while let Some(id) = sc {
            let scope = &ev.m.scopes[id as usize];
            for (k, v) in scope.vars_iter() {
                if !vars.iter().any(|(n, _)| *n == k) {
                    vars.push((k, v));
                }
            }
            sc = scope.parent_id();
        }
        for (k, v) in vars {
            // `self` is Jinja2's reference to the template itself: a model's `self` never reaches it
            if &*k == "self" {
                continue;
            }
            let j = to_jinja(ev, &v, 0)?;
            ctx.insert(k.to_string(), j);
        }
    } else {
        for (k, v) in call.kwargs.clone() {
            let j = to_jinja(ev, &v, 0)?;
            ctx.insert(k, j);
        }
    }
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    // Jinja2 (and so Inmanta) drops one trailing newline of a template
    env.set_keep_trailing_newline(false);
    // Jinja2 renders Python objects: a template calls their methods (`.items()`, `.upper()`)
    env.set_unknown_method_callback(python_method);
    // print booleans and none the way Jinja2 (Python) does
    env.set_formatter(|out, state, value| match value.kind() {
        ValueKind::Bool => out.write_str(if value.is_true() { "True" } else { "False" }).map_err(Into::into),
        ValueKind::None => out.write_str("None").map_err(Into::into),
        _ => minijinja::escape_formatter(out, state, value),
    });
    let filters = plugin_filters(ev, &src);
    let (to_compile, from_render) = mpsc::channel::<FromRender>();
    for (jinja_name, plugin) in &filters {
        let (to_compile, plugin) = (to_compile.clone(), plugin.clone());
        env.add_filter(jinja_name.clone(), move |args: Rest<J>| -> Result<J, minijinja::Error> {
            let (reply, answer) = mpsc::channel();
            let stopped = || minijinja::Error::new(JinjaErrorKind::InvalidOperation, "the compile stopped");
            to_compile.send(FromRender::Call { plugin: plugin.clone(), args: args.0, reply }).map_err(|_| stopped())?;
            answer
                .recv()
                .map_err(|_| stopped())?
                .map_err(|m| minijinja::Error::new(JinjaErrorKind::InvalidOperation, m))
        });
    }
    let failed = |e: minijinja::Error| {
        PErr::Kind(ErrorKind::WrappingRuntimeException, format!("Failed to render template {path}: {e}"))
    };
    let template = env.template_from_str(&src).map_err(failed)?;
    if call.kwargs.is_empty() {
        // in an implementation, a bare name is also an attribute of `self` (waiting until it is
        // set); an optional relation that holds nothing is undefined, as std's ResolverContext
        // makes it
        let mut needed: Vec<String> = template.undeclared_variables(false).into_iter().collect();
        needed.sort();
        for name in needed {
            if ctx.contains_key(&name) {
                continue;
            }
            // a variable of the scope that is not set yet: the template waits for it
            if ev.is_var_declared(call.scope, &name) {
                let v = ev.read_var(call.scope, &name, call.span)?;
                let j = to_jinja(ev, &v, 0)?;
                ctx.insert(name, j);
                continue;
            }
            if let Some(inst) = ev.self_attr_in_scope(call.scope, &name) {
                let v = match ev.read_attr_span(&Value::Instance(inst), &name, call.span) {
                    Ok(v) => v,
                    Err(Flow::Err(d)) if d.kind == ErrorKind::OptionalValueException => continue,
                    Err(f) => return Err(f.into()),
                };
                let j = to_jinja(ev, &v, 0)?;
                ctx.insert(name, j);
            }
        }
    }
    let context = J::from(ctx);
    if filters.is_empty() {
        return template.render(context).map(|out| s(&out)).map_err(failed);
    }
    // the first failure of a plugin filter: the call's own error (or wait), not Jinja's
    let mut filter_failure: Option<PErr> = None;
    let rendered = std::thread::scope(|threads| {
        let done = to_compile.clone();
        let template = &template;
        threads.spawn(move || {
            let rendered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| template.render(context)))
                .unwrap_or_else(|_| Err(minijinja::Error::new(JinjaErrorKind::InvalidOperation, "rendering panicked")));
            let _ = done.send(FromRender::Done(rendered));
        });
        loop {
            match from_render.recv() {
                Ok(FromRender::Done(rendered)) => break rendered,
                Ok(FromRender::Call { plugin, args, reply }) => {
                    let answer = if filter_failure.is_some() {
                        Err("an earlier filter failed".to_string())
                    } else {
                        call_filter(ev, &plugin, &args, call).map_err(|e| {
                            let message = match &e {
                                PErr::Kind(_, m) => m.clone(),
                                PErr::Flow(Flow::Err(d)) => d.message.clone(),
                                _ => format!("plugin {plugin} waits for a value"),
                            };
                            filter_failure = Some(e);
                            message
                        })
                    };
                    let _ = reply.send(answer);
                }
                Err(_) => break Err(minijinja::Error::new(JinjaErrorKind::InvalidOperation, "the rendering stopped")),
            }
        }
    });
    if let Some(e) = filter_failure {
        return Err(e);
    }
    rendered.map(|out| s(&out)).map_err(failed)
}
