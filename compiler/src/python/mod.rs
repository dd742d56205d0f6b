//! Modules with Python code: their `@plugin` functions and `@resource` classes, run unchanged in
//! a Python process next to the compiler ([`bridge`]). Started only when a loaded module has
//! Python code, so a model without Python modules never pays for it.
//!
//! Values cross as JSON (see the Python package `inmanta_rs_bridge/`); entity instances stay here
//! and cross as their id: plugins read their attributes through inmanta-core's own `DynamicProxy`,
//! each read a question back to the evaluator, answered like a read in the model (value, not set
//! yet, optional none, unknown, not found). A call that reads an attribute that is not set yet is run again when it is.

pub(crate) mod bridge;
mod dataclasses;
pub mod env;
mod package;
mod protocol;
mod pth;
mod signatures;
mod spare;

pub(crate) use dataclasses::pair_dataclasses;
pub(crate) use signatures::{check_plugin_names, check_signatures};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde_json::{Map, Value as Json, json};

use crate::diagnostics::{Diagnostic, ErrorKind};
use crate::eval::value::{InstId, UnknownSource, Value};
use crate::eval::{Evaluator, Flow, Slot, Wait, error};
use crate::export::ExportedResource;
use crate::syntax::Span;
use bridge::{Bridge, BridgeError, Questions};
use protocol::{
    AttributeShape, Exported, GetReply, LoadConfig, LoadModule, Loaded, Outcome, PyError, Request, TypeReply,
};

/// A loaded module with Python code.
#[derive(Debug, Clone)]
pub(crate) struct PythonModule {
    pub name: String,
    pub dir: PathBuf,
    /// A v1 module (`plugins/__init__.py`) rather than an installed package (`__init__.py`).
    pub v1: bool,
}

/// The loaded modules that carry Python code. A v2 module's source tree counts only when it is the
/// environment's editable install of that module (`editable`): one on the module path, such as
/// `libs/`, is not imported by Inmanta either.
pub(crate) fn python_modules(
    module_dirs: &HashMap<String, PathBuf>,
    editable: &[(String, PathBuf)],
) -> Vec<PythonModule> {
    let mut found: Vec<PythonModule> = module_dirs
        .iter()
        .filter_map(|(name, dir)| {
            if dir.join("plugins").join("__init__.py").is_file() {
                Some(PythonModule { name: name.clone(), dir: dir.clone(), v1: true })
            } else if dir.join("__init__.py").is_file()
                || (editable.iter().any(|(n, root)| n == name && root == dir)
                    && dir.join("inmanta_plugins").join(name).join("__init__.py").is_file())
            {
                // an installed package, or the source tree of an editable install
                Some(PythonModule { name: name.clone(), dir: dir.clone(), v1: false })
            } else {
                None
            }
        })
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// A plugin defined in Python, as its signature was reported.
#[derive(Debug, Clone)]
pub(crate) struct PySignature {
    pub name: String,
    pub allow_unknown: bool,
    /// Where the plugin's function is defined: its file and the line Inmanta gives (the `def`).
    pub file: String,
    pub line: u64,
    /// The model types (`ns::Name`) its annotations name.
    pub model_types: Vec<String>,
}

/// How a Python `@resource` class maps an entity (the export asks Python for the values).
#[derive(Debug, Clone)]
pub(crate) struct PyResource {
    pub entity: String,
    pub agent: String,
    pub id_attr: String,
    pub fields: Vec<String>,
}

/// The running Python side of a compile and what its modules define.
pub(crate) struct PythonSide {
    pub bridge: Bridge,
    pub plugins: Vec<PySignature>,
    pub resources: Vec<PyResource>,
}

/// Starts Python for the given modules and imports them.
pub(crate) fn start(
    python: &Path,
    cwd: &Path,
    modules: &[PythonModule],
    module_dirs: &HashMap<String, PathBuf>,
    environment: &str,
    limit: std::time::Duration,
    keep_spare: bool,
) -> Result<PythonSide, Box<Diagnostic>> {
    let fail = |m: String| Box::new(Diagnostic::plain(ErrorKind::ModuleLoadingException, m));
    let request = Request::Load {
        modules: modules.iter().map(|m| LoadModule { name: m.name.clone(), path: m.dir.clone(), v1: m.v1 }).collect(),
        config: LoadConfig { environment, project_dir: cwd, module_paths: module_paths(module_dirs) },
    };
    let dirs: Vec<&Path> = modules.iter().map(|m| m.dir.as_path()).collect();
    let changed = |since| spare::python_changed_since(&dirs, since);
    let (mut bridge, preloaded) = spare::take_or_start(python, cwd, limit, keep_spare, &request, changed)
        .map_err(|e| fail(format!("Python for the modules' plugins: {e}")))?;
    let answer = match preloaded {
        Some(answer) => answer,
        None => bridge
            .request::<Loaded>(&request, &mut NoQuestions)
            .map_err(|e| fail(format!("importing the Python code of the modules: {e}")))?,
    };
    let loaded = match answer.outcome {
        Outcome::Ok(loaded) => loaded,
        Outcome::Error(e) if e.unlocated => {
            // an error of Inmanta's plugin loader, which gives no location
            return Err(Box::new(Diagnostic::plain(e.kind, e.message)));
        }
        Outcome::Error(PyError { kind, message, file: Some(file), line, .. }) if !file.is_empty() => {
            // Inmanta's CompilerException at the line of the module's file that failed to import
            return Err(Box::new(python_file_error(&kind, &message, &file, line.unwrap_or(0))));
        }
        Outcome::Error(e) => {
            let frame = if e.frame.is_empty() { String::new() } else { format!(" ({})", e.frame) };
            return Err(fail(format!("{}{frame}", e.message)));
        }
        Outcome::Unset(_) => return Err(fail("importing the modules' Python code read an unset value".into())),
    };
    bridge.set_limit(limit);
    let plugins = loaded
        .plugins
        .into_iter()
        .map(|p| PySignature {
            name: p.name,
            allow_unknown: p.allow_unknown,
            file: p.file,
            line: p.line,
            model_types: p.model_types,
        })
        .collect();
    let resources = loaded
        .resources
        .into_iter()
        .map(|r| PyResource { entity: r.entity, agent: r.agent, id_attr: r.id_attribute, fields: r.fields })
        .collect();
    Ok(PythonSide { bridge, plugins, resources })
}

/// An error located in a Python file of a module (its line, as the Python traceback gives it).
pub(crate) fn python_file_error(kind: &str, message: &str, file: &str, line: u64) -> Diagnostic {
    let line = line.max(1) as usize;
    let source_line = std::fs::read_to_string(file)
        .ok()
        .and_then(|text| text.lines().nth(line - 1).map(str::to_string))
        .unwrap_or_default();
    let mut d = Diagnostic::plain(kind, message);
    d.location = Some(crate::syntax::Location {
        file: file.to_string(),
        line,
        col: 1,
        end_line: line,
        end_col: source_line.chars().count() + 1,
        source_line,
    });
    d
}

/// Every loaded module's directory, built-in ones (which have none) as "".
fn module_paths(module_dirs: &HashMap<String, PathBuf>) -> std::collections::BTreeMap<String, String> {
    let mut paths: std::collections::BTreeMap<String, String> =
        crate::builtins::BUILTIN_MODULES.iter().map(|m| (m.to_string(), String::new())).collect();
    for (name, dir) in module_dirs {
        paths.insert(name.clone(), dir.display().to_string());
    }
    paths
}

struct NoQuestions;

impl Questions for NoQuestions {
    fn get(&mut self, _: u32, _: &str) -> GetReply {
        GetReply::Error("no instance exists while modules load".into())
    }
    fn entity_type(&mut self, _: &str) -> TypeReply {
        TypeReply::NoEntity {}
    }
    fn file(&mut self, _: String, _: Vec<u8>) {}
    fn conforms(&mut self, _: &str, _: &Json) -> Option<bool> {
        None
    }
    fn call(&mut self, plugin: &str, _: &[Json], _: &Map<String, Json>) -> Outcome<Json> {
        Outcome::Error(PyError::new("RuntimeException", format!("plugin {plugin} can not be called here")))
    }
    fn plugins(&mut self) -> Vec<String> {
        Vec::new()
    }
}

/// Answers Python's questions from the evaluator.
struct Asker<'e, 'a> {
    ev: &'e mut Evaluator<'a>,
    span: Span,
    /// The first attribute read that was not set yet: the call waits on it.
    wait: Option<Wait>,
    files: Vec<(String, Vec<u8>)>,
}

impl Questions for Asker<'_, '_> {
    fn get(&mut self, instance: u32, attribute: &str) -> GetReply {
        if instance as usize >= self.ev.m.instances.len() {
            return GetReply::NotFound(format!("no instance {instance}"));
        }
        match self.ev.read_attr_span(&Value::Instance(instance), attribute, self.span) {
            Ok(Value::Unknown(_)) => GetReply::Unknown(true),
            Ok(v) => GetReply::V(encode(self.ev, &v)),
            Err(Flow::Wait(w)) => {
                self.wait.get_or_insert(w);
                GetReply::Unset(true)
            }
            Err(Flow::Err(d)) => match d.kind {
                ErrorKind::OptionalValueException => GetReply::None(true),
                ErrorKind::NotFoundException => GetReply::NotFound(d.message),
                _ => GetReply::Error(d.message),
            },
        }
    }

    fn entity_type(&mut self, entity: &str) -> TypeReply {
        let types = &self.ev.m.types;
        let Some(&e) = types.entity_by_name.get(entity) else { return TypeReply::NoEntity {} };
        let ent = &types.entities[e];
        let parents: Vec<String> = ent.ancestors.iter().map(|a| types.entities[*a].name.clone()).collect();
        let attributes = ent
            .attrs
            .iter()
            .map(|a| {
                let shape = match &a.kind {
                    crate::model::AttrKind::Rel { lo, hi, target, reverse } => {
                        AttributeShape::Relation(*lo, *hi, types.entities[*target].name.clone(), reverse.clone())
                    }
                    crate::model::AttrKind::Prim { .. } => AttributeShape::Plain(false),
                };
                (a.name.clone(), shape)
            })
            .collect();
        // every index on the entity or a parent, its attribute names sorted (Entity.get_indices())
        let indices: Vec<Vec<String>> = ent
            .indexes
            .iter()
            .map(|i| {
                let mut fields: Vec<String> = types.indexes[*i].fields.clone();
                fields.sort_unstable();
                fields
            })
            .collect();
        // the direct parents (an entity without `extends` has std::Entity) and the attributes the
        // entity declares itself: Entity.parent_entities and Entity.attributes
        let mut bases: Vec<String> = ent.parents.iter().map(|p| types.entities[*p].name.clone()).collect();
        if bases.is_empty() && ent.name != "std::Entity" && types.entity_by_name.contains_key("std::Entity") {
            bases.push("std::Entity".into());
        }
        let own: Vec<String> = ent.own.iter().map(|a| a.name.clone()).collect();
        TypeReply::Entity { parents, bases, own, attributes, indices }
    }

    fn file(&mut self, hash: String, content: Vec<u8>) {
        self.files.push((hash, content));
    }

    fn conforms(&mut self, typedef: &str, value: &Json) -> Option<bool> {
        let &id = self.ev.m.types.typedef_by_name.get(typedef)?;
        let Ok(value) = decode(self.ev, value) else { return Some(false) };
        // the constraint may call a plugin, Python's included: the bridge serves that call
        // while Python waits for this answer
        Some(self.ev.check_type(&value, &crate::model::Type::Typedef(id), self.span).is_ok())
    }

    fn call(&mut self, name: &str, args: &[Json], kwargs: &Map<String, Json>) -> Outcome<Json> {
        let Some(plugin) = self.ev.plugins.get(name).cloned() else {
            return Outcome::Error(PyError::new("NotFoundException", format!("no plugin {name}")));
        };
        let decoded = (|| -> Result<_, String> {
            let pos = args.iter().map(|a| decode(self.ev, a)).collect::<Result<Vec<_>, _>>()?;
            let mut kw = Vec::new();
            for (k, v) in kwargs {
                kw.push((k.clone(), decode(self.ev, v)?));
            }
            Ok((pos, kw))
        })();
        let (pos, kw) = match decoded {
            Ok(x) => x,
            Err(m) => return Outcome::Error(PyError::new("PluginTypeException", m)),
        };
        match self.ev.call_plugin(name, &plugin, pos, kw, self.span, 0, None) {
            Ok(v) => Outcome::Ok(encode(self.ev, &v)),
            Err(Flow::Wait(w)) => {
                self.wait.get_or_insert(w);
                Outcome::Unset(true)
            }
            Err(Flow::Err(d)) => Outcome::Error(PyError::new(d.kind.as_str(), d.message)),
        }
    }

    fn plugins(&mut self) -> Vec<String> {
        let loaded = &self.ev.m.types.ns_by_name;
        let mut names: Vec<String> = self
            .ev
            .plugins
            .iter()
            .filter(|(name, p)| !p.python && loaded.contains_key(name.split("::").next().unwrap_or_default()))
            .map(|(name, _)| name.clone())
            .collect();
        names.sort_unstable();
        names
    }
}

/// A value as it crosses to Python. An instance carries the plain attributes that are set
/// already (they never change again), which saves plugins a round trip for each.
pub(crate) fn encode(ev: &Evaluator<'_>, v: &Value) -> Json {
    encode_at(ev, v, true)
}

fn encode_at(ev: &Evaluator<'_>, v: &Value, with_attributes: bool) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => json!(i),
        // exact at any size (see Value::to_json)
        Value::BigInt(_) => v.to_json(),
        Value::Float(f) => json!(f),
        Value::Str(s) => Json::String(s.to_string()),
        Value::List(l) => Json::Array(l.iter().map(|x| encode_at(ev, x, with_attributes)).collect()),
        // pairs, not an object: serde_json's map would sort the keys, and a dict keeps its
        // insertion order in Inmanta (a plugin that writes a dict as text shows it)
        Value::Dict(d) => {
            json!({"$d": d.iter().map(|(k, x)| json!([k.as_ref(), encode_at(ev, x, with_attributes)])).collect::<Vec<_>>()})
        }
        Value::Instance(i) => {
            let ent = ev.entity_of(*i);
            if !with_attributes {
                return json!({"$i": i, "$t": ent.name});
            }
            let mut known = serde_json::Map::new();
            for (a, slot) in ent.attrs.iter().zip(&ev.m.instances[*i as usize].slots) {
                if let (false, Slot::Prim { value: Some((value, _)), .. }) = (a.is_relation(), slot)
                    && !value.contains_unknown()
                {
                    known.insert(a.name.clone(), encode_at(ev, value, false));
                }
            }
            json!({"$i": i, "$t": ent.name, "$a": known})
        }
        Value::Unknown(_) => json!({"$u": 1}),
        // as its class's object on the Python side, which refuses it where Inmanta does (an
        // undeclared plugin argument, an attribute read without `allow_reference_values`)
        Value::Reference(r) => r.to_python(),
    }
}

/// A value coming back from Python.
pub(crate) fn decode(ev: &Evaluator<'_>, j: &Json) -> Result<Value, String> {
    Ok(match j {
        Json::Array(a) => Value::list(a.iter().map(|x| decode(ev, x)).collect::<Result<_, _>>()?),
        Json::Object(o) => {
            if let Some(pairs) = o.get("$d").and_then(Json::as_array) {
                let mut items = Vec::with_capacity(pairs.len());
                for pair in pairs {
                    let (Some(k), Some(x)) = (pair.get(0).and_then(Json::as_str), pair.get(1)) else {
                        return Err(format!("a dict item is not a [key, value] pair: {pair}"));
                    };
                    items.push((Rc::from(k), decode(ev, x)?));
                }
                Value::Dict(Rc::new(items))
            } else if let Some(i) = o.get("$i").and_then(Json::as_u64) {
                if i as usize >= ev.m.instances.len() {
                    return Err(format!("instance {i} does not exist"));
                }
                Value::Instance(i as InstId)
            } else if let Some(id) = o.get("$r").and_then(Json::as_str) {
                let entries = o.get("references").and_then(Json::as_object).ok_or("a reference without its models")?;
                Value::Reference(crate::references::Reference::from_python(id, entries)?)
            } else if o.contains_key("$u") {
                Value::Unknown(Rc::new(UnknownSource {
                    parameter: String::new(),
                    source: "plugin".into(),
                    resource: String::new(),
                }))
            } else {
                return Err(format!("unexpected value {j}"));
            }
        }
        other => Value::from_json(other),
    })
}

/// What one export of a Python resource gave.
pub(crate) enum PyExport {
    Resource { id: api::ResourceId, attributes: serde_json::Map<String, Json> },
    Ignored,
    Unknown,
}

impl<'a> Evaluator<'a> {
    /// Calls the Python plugin `name` with evaluated arguments.
    pub(crate) fn call_python(
        &mut self,
        name: &str,
        pos: Vec<Value>,
        kw: Vec<(String, Value)>,
        span: Span,
    ) -> Result<Value, Flow> {
        let request = Request::Call {
            plugin: name,
            args: pos.iter().map(|v| encode(self, v)).collect(),
            kwargs: kw.iter().map(|(k, v)| (k.clone(), encode(self, v))).collect(),
        };
        let (answer, wait) = self.ask_python::<Json>(&request, &format!("plugin {name}"), span)?;
        if let Some(text) = &answer.printed {
            // the plugin's `print`s, lines as std::print's (Inmanta prints both to its output)
            self.printed.push(text.strip_suffix('\n').unwrap_or(text).to_string());
        }
        let mut result = match answer.outcome {
            Outcome::Ok(result) => result,
            Outcome::Unset(_) => {
                return Err(match wait {
                    Some(w) => Flow::Wait(w),
                    None => error(
                        ErrorKind::UnsetException,
                        format!("plugin {name} read a value that is not set"),
                        span,
                        self.m.sources,
                    ),
                });
            }
            Outcome::Error(e) => return Err(plugin_error(self, name, &e, span)),
        };
        self.make_dataclass_instances(&mut result, name, span)?;
        decode(self, &result).map_err(|m| {
            error(
                ErrorKind::PluginTypeException,
                format!("The return value of plugin {name} can not be used: {m}"),
                span,
                self.m.sources,
            )
        })
    }

    /// Makes an instance for each dataclass object a plugin returned (`{"$dc": entity, "$a":
    /// [[field, value], ...]}`), as inmanta-core's `Entity.from_python` does at the plugin
    /// boundary, and puts the instance in its place. A field its attribute refuses fails the
    /// call, as Inmanta wraps it: a WrappingRuntimeException of the plugin.
    fn make_dataclass_instances(&mut self, result: &mut Json, plugin: &str, span: Span) -> Result<(), Flow> {
        match result {
            Json::Array(items) => items.iter_mut().try_for_each(|x| self.make_dataclass_instances(x, plugin, span)),
            Json::Object(o) if o.contains_key("$d") => o
                .get_mut("$d")
                .and_then(Json::as_array_mut)
                .into_iter()
                .flatten()
                .filter_map(|pair| pair.get_mut(1))
                .try_for_each(|x| self.make_dataclass_instances(x, plugin, span)),
            Json::Object(o) if o.contains_key("$dc") => {
                let entity = o["$dc"].as_str().unwrap_or_default().to_string();
                let mut fields = o.remove("$a").unwrap_or_default();
                self.make_dataclass_instances(&mut fields, plugin, span)?;
                let inst = self.dataclass_instance(&entity, &fields, plugin, span)?;
                *result = json!({"$i": inst});
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn dataclass_instance(&mut self, entity: &str, fields: &Json, plugin: &str, span: Span) -> Result<InstId, Flow> {
        let wrapped = |ev: &Self, cause: &str| {
            error(
                ErrorKind::WrappingRuntimeException,
                format!("Exception in plugin {plugin}: {cause}"),
                span,
                ev.m.sources,
            )
        };
        let Some(&ent) = self.m.types.entity_by_name.get(entity) else {
            return Err(wrapped(self, &format!("the returned dataclass {entity} is no entity of the model")));
        };
        let inst = self.new_instance(ent, span);
        for pair in fields.as_array().into_iter().flatten() {
            let name = pair[0].as_str().unwrap_or_default();
            let Some((ai, _)) = self.m.types.entities[ent].attr(name) else {
                return Err(wrapped(self, &format!("{entity} has no attribute {name}")));
            };
            let value = decode(self, &pair[1]).map_err(|m| wrapped(self, &m))?;
            match self.assign_attr(inst, ai as u32, value, false, span) {
                Ok(()) => {}
                Err(Flow::Err(d)) => return Err(wrapped(self, &d.message)),
                Err(wait) => return Err(wait),
            }
        }
        self.select_implementations(inst);
        Ok(inst)
    }

    /// The resource id (without version) inmanta-core's `to_id` gives an instance that a Python
    /// `@resource` class maps; `None` when it maps none.
    pub(crate) fn python_resource_id(
        &mut self,
        inst: InstId,
        entity: &str,
        span: Span,
    ) -> Result<Option<String>, Flow> {
        let ty = &self.entity_of(inst).name.clone();
        let request = Request::ResourceId { entity, instance: inst, ty };
        let (answer, wait) =
            self.ask_python::<Option<String>>(&request, &format!("the resource id of {entity}"), span)?;
        match answer.outcome {
            Outcome::Ok(id) => Ok(id),
            Outcome::Unset(_) => Err(match wait {
                Some(w) => Flow::Wait(w),
                None => error(
                    ErrorKind::UnsetException,
                    format!("the id of {entity} read a value that is not set"),
                    span,
                    self.m.sources,
                ),
            }),
            Outcome::Error(e) => Err(plugin_error(self, &format!("@resource {entity}"), &e, span)),
        }
    }

    /// Exports one instance of a Python `@resource` entity.
    pub(crate) fn export_python(&mut self, inst: InstId, entity: &str) -> Result<PyExport, Box<Diagnostic>> {
        let span = self.m.instances[inst as usize].span;
        let ty = &self.entity_of(inst).name.clone();
        let request = Request::Export { entity, instance: inst, ty };
        let (answer, _) =
            self.ask_python::<Exported>(&request, &format!("the export of {entity}"), span).map_err(|f| match f {
                Flow::Err(d) => d,
                Flow::Wait(_) => {
                    Box::new(Diagnostic::error(ErrorKind::UnsetException, "export waited", Some(span), self.m.sources))
                }
            })?;
        match answer.outcome {
            Outcome::Error(e) => {
                let Flow::Err(d) = plugin_error(self, &format!("@resource {entity}"), &e, span) else { unreachable!() };
                Err(d)
            }
            Outcome::Unset(_) => Err(Box::new(Diagnostic::error(
                ErrorKind::UnsetException,
                format!("the export of {} read an attribute that is not set", self.inst_name(inst)),
                Some(span),
                self.m.sources,
            ))),
            Outcome::Ok(Exported::Unknown) => Ok(PyExport::Unknown),
            Outcome::Ok(Exported::Ignored) => Ok(PyExport::Ignored),
            Outcome::Ok(Exported::Resource { id: [entity_type, agent, attribute, value], attributes }) => {
                // the parts of Inmanta's resource id, as its `resource_str()` joins them
                let id = api::ResourceId { entity_type, agent, attribute, value };
                Ok(PyExport::Resource { id, attributes })
            }
        }
    }

    /// Sends a request and answers Python's questions; `what` names the request in errors. The
    /// bridge stays in place while a question is answered: answering may call Python again (a
    /// typedef constraint that calls a plugin), which Python serves before its pending question.
    fn ask_python<T: serde::de::DeserializeOwned>(
        &mut self,
        request: &Request<'_>,
        what: &str,
        span: Span,
    ) -> Result<(protocol::Answer<T>, Option<Wait>), Flow> {
        let failed = |ev: &Evaluator<'_>, e: BridgeError| match e {
            e @ BridgeError::TimedOut(_) => {
                error(ErrorKind::PluginTimeoutException, format!("{what} did not return: {e}"), span, ev.m.sources)
            }
            e => error(
                ErrorKind::CompilerException,
                format!("Python for the modules' plugins ({what}): {e}"),
                span,
                ev.m.sources,
            ),
        };
        let Some(bridge) = self.python.as_mut() else {
            return Err(error(ErrorKind::CompilerException, "the Python process is not running", span, self.m.sources));
        };
        if let Err(e) = bridge.send(request) {
            return Err(failed(self, e));
        }
        let mut wait = None;
        loop {
            let Some(bridge) = self.python.as_mut() else {
                return Err(error(
                    ErrorKind::CompilerException,
                    "the Python process is not running",
                    span,
                    self.m.sources,
                ));
            };
            let question = match bridge.receive::<T>() {
                Ok(protocol::FromPython::Question(question)) => question,
                Ok(protocol::FromPython::Answer(answer)) => return Ok((answer, wait)),
                Err(e) => return Err(failed(self, e)),
            };
            let mut asker = Asker { ev: self, span, wait: None, files: Vec::new() };
            let reply = bridge::answer_question(question, &mut asker);
            let (asked_wait, files) = (asker.wait, asker.files);
            self.python_files.extend(files);
            if wait.is_none() {
                wait = asked_wait;
            }
            if let Some(bridge) = self.python.as_mut()
                && let Err(e) = bridge.send(&reply)
            {
                return Err(failed(self, e));
            }
        }
    }
}

/// Runs the modules' `@dependency_manager`s (in Python, over the resources their `@resource`
/// classes exported) and applies the requires they changed to the exported resources.
pub(crate) fn run_dependency_managers(
    ev: &mut Evaluator<'_>,
    exports: &HashMap<InstId, PyExport>,
    resources: &mut [ExportedResource],
) -> Result<(), Box<Diagnostic>> {
    if ev.python.is_none() {
        return Ok(());
    }
    let python_ids: std::collections::HashSet<&api::ResourceId> = exports
        .values()
        .filter_map(|x| match x {
            PyExport::Resource { id, .. } => Some(id),
            _ => None,
        })
        .collect();
    if python_ids.is_empty() {
        return Ok(());
    }
    let requires = resources
        .iter()
        .filter(|r| python_ids.contains(&r.id))
        .map(|r| (r.id.to_string(), r.requires.iter().map(|q| q.to_string()).collect()))
        .collect();
    let request = Request::Dependencies { requires };
    let fail = |m: String| Box::new(Diagnostic::plain(ErrorKind::ExternalException, m));
    let answer = match ev.python.as_mut() {
        Some(bridge) => bridge
            .request::<std::collections::BTreeMap<String, Vec<String>>>(&request, &mut NoQuestions)
            .map_err(|e| fail(format!("dependency managers: {e}")))?,
        None => return Ok(()),
    };
    let changed = match answer.outcome {
        Outcome::Ok(changed) => changed,
        Outcome::Error(e) => {
            let frame = if e.frame.is_empty() { String::new() } else { format!(" (raised at {})", e.frame) };
            return Err(fail(format!("{}{frame}", e.message)));
        }
        Outcome::Unset(_) => return Err(fail("a dependency manager read an attribute that is not set".into())),
    };
    if changed.is_empty() {
        return Ok(());
    }
    let known: HashMap<String, api::ResourceId> = resources.iter().map(|r| (r.id.to_string(), r.id.clone())).collect();
    for r in resources.iter_mut() {
        let id = r.id.to_string();
        let Some(now) = changed.get(&id) else { continue };
        let mut now: Vec<&str> = now.iter().map(String::as_str).collect();
        if let Some(missing) = now.iter().find(|q| !known.contains_key(**q)) {
            return Err(fail(format!(
                "a dependency manager made {id} require {missing}, which is not a resource of this model"
            )));
        }
        now.sort_unstable();
        now.dedup();
        r.requires = now.into_iter().filter_map(|q| known.get(q).cloned()).collect();
    }
    Ok(())
}

/// A Python exception as a compile error at the call.
fn plugin_error(ev: &Evaluator<'_>, what: &str, e: &PyError, span: Span) -> Flow {
    let (kind, message) = (e.kind.as_str(), e.message.as_str());
    let frame = if e.frame.is_empty() { String::new() } else { format!(" (raised at {})", e.frame) };
    let (our_kind, text) = match kind {
        // Inmanta's ExplicitPluginException reports itself as the class the plugin raised
        "PluginException" => (
            ErrorKind::from(e.class.as_deref().unwrap_or("inmanta.plugins.PluginException")),
            format!("Exception in plugin {what}: {message}{frame}"),
        ),
        "PluginTypeException" => (ErrorKind::PluginTypeException, message.to_string()),
        // an undeclared reference read through an instance (inmanta-core's proxy raised it)
        "UnexpectedReference" => {
            (ErrorKind::WrappingRuntimeException, format!("Exception in plugin {what}: {message}{frame}"))
        }
        "RuntimeException" | "NotFoundException" | "OptionalValueException" => {
            (ErrorKind::RuntimeException, format!("{message} (in plugin {what}{frame})"))
        }
        _ => (ErrorKind::ExternalException, format!("Exception in plugin {what}: {kind}: {message}{frame}")),
    };
    error(our_kind, text, span, ev.m.sources)
}
