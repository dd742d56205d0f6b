//! References and mutators: the values a model keeps out of the server (secrets, facts known only
//! at deploy time) and that the executor resolves just before a handler runs (docs/modules.md, "References").
//!
//! An exported resource lists its `references` (type, id, arguments; an argument may be another
//! reference) and its `mutators`; a `core::Replace` mutator puts the value of one reference at a
//! path of the resource's attributes (the attribute itself is `null` in the export). This module
//! parses both lists into typed values, resolves the references the mutators need (arguments
//! first, each reference once, cycles refused) with inmanta-core 20.1 and std 8.7.5's semantics,
//! and applies the mutators to a copy of the attributes. Every resolved value is also recorded in
//! [`Secrets`], which the handler context uses to redact logs, changes and facts, so that no value
//! leaves the executor.
//!
//! Python handlers resolve their references themselves, in the executor process
//! (`resolve_all_references`); module-defined reference types exist only there.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use crate::resource::ResourceRequest;

/// Facts of resources as the server stores them, for std's fact reference. The server supplies
/// one that reads its fact store; a remote agent asks the server's API.
pub trait FactSource: Send + Sync {
    /// The facts of `resource_id` (a resource id without version) in `environment`, by name.
    fn facts(&self, environment: &str, resource_id: &str) -> Result<Map<String, Value>, String>;
}

/// A [`FactSource`] for executors that cannot reach a server: every fact reference fails.
pub struct NoFacts;

impl FactSource for NoFacts {
    fn facts(&self, _environment: &str, _resource_id: &str) -> Result<Map<String, Value>, String> {
        Err("this agent has no connection to the server's fact store".into())
    }
}

/// The reference types this executor resolves natively (std 8.7.5).
const ENVIRONMENT: &str = "std::Environment";
const INT: &str = "std::IntReference";
const FACT: &str = "std::FactReference";
/// The only mutator type inmanta-core 20.1 defines.
const REPLACE: &str = "core::Replace";

/// One argument of a reference, as exported (inmanta-core's `ArgumentTypes`).
#[derive(Debug, Clone, PartialEq)]
enum Argument {
    /// A plain value (`literal`) or a JSON structure without references in it (`json`).
    Value(Value),
    /// The value of another reference of the same resource.
    Reference(String),
    /// A kind this executor does not resolve (`mjson`, `get`, `python_type`, `resource`): only
    /// module-defined Python reference types take those.
    Unsupported(String),
}

/// One reference of a resource.
#[derive(Debug, Clone, PartialEq)]
struct Reference {
    id: String,
    /// The registered type, `std::Environment`.
    kind: String,
    args: Vec<(String, Argument)>,
}

impl Reference {
    fn parse(model: &Value) -> Result<Reference, String> {
        let id = model.get("id").and_then(Value::as_str).ok_or("a reference without a string `id`")?;
        let kind =
            model.get("type").and_then(Value::as_str).ok_or_else(|| format!("reference {id} has no string `type`"))?;
        let mut args = Vec::new();
        for arg in model.get("args").and_then(Value::as_array).into_iter().flatten() {
            let name = arg.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            let parsed = match arg.get("type").and_then(Value::as_str) {
                Some("literal" | "json") => Argument::Value(arg.get("value").cloned().unwrap_or(Value::Null)),
                Some("reference") => Argument::Reference(
                    arg.get("id")
                        .and_then(Value::as_str)
                        .ok_or_else(|| format!("argument {name} of reference {id} names no reference id"))?
                        .to_string(),
                ),
                Some(other) => Argument::Unsupported(other.to_string()),
                None => return Err(format!("argument {name} of reference {id} has no `type`")),
            };
            args.push((name, parsed));
        }
        Ok(Reference { id: id.to_string(), kind: kind.to_string(), args })
    }

    fn arg(&self, name: &str) -> Option<&Argument> {
        self.args.iter().find(|(n, _)| n == name).map(|(_, a)| a)
    }

    /// How a message names the reference: its type, its literal arguments and its id. Literal
    /// arguments are model text (a variable's name, a fact's name), never a resolved value.
    fn describe(&self) -> String {
        let args: Vec<String> = self
            .args
            .iter()
            .filter_map(|(n, a)| match a {
                Argument::Value(Value::String(s)) => Some(format!("{n}={s}")),
                Argument::Value(v @ (Value::Number(_) | Value::Bool(_))) => Some(format!("{n}={v}")),
                Argument::Reference(id) => Some(format!("{n}=<reference {id}>")),
                _ => None,
            })
            .collect();
        format!("{}({}) {}", self.kind, args.join(", "), self.id)
    }
}

/// A step into the attributes: a key of an object or a position in a list.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Where a `core::Replace` mutator puts its value: the subset of JSONPath (jsonpath-ng, which
/// inmanta-core applies mutators with) that the compilers write: `content`, `$.a.b`, `a[0].b`,
/// and quoted keys for dict entries, `values[0].'value'.'it\'s'`.
#[derive(Debug, Clone, PartialEq)]
struct AttributePath {
    text: String,
    steps: Vec<Step>,
}

impl AttributePath {
    fn parse(text: &str) -> Result<AttributePath, String> {
        let unsupported = || format!("the mutator destination {text:?} is not a path of attribute names and indexes");
        let body = text.strip_prefix("$.").or_else(|| text.strip_prefix('.')).unwrap_or(text);
        let mut chars = body.chars().peekable();
        let mut steps = Vec::new();
        // A key is expected at the start and after each `.`.
        let mut want_key = true;
        while let Some(&c) = chars.peek() {
            match c {
                '.' if !want_key => {
                    chars.next();
                    want_key = true;
                }
                '[' if !want_key => {
                    chars.next();
                    let mut index = String::new();
                    loop {
                        match chars.next().ok_or_else(unsupported)? {
                            ']' => break,
                            digit => index.push(digit),
                        }
                    }
                    steps.push(Step::Index(index.trim().parse().map_err(|_| unsupported())?));
                }
                '\'' | '"' if want_key => {
                    chars.next();
                    let mut key = String::new();
                    loop {
                        match chars.next().ok_or_else(unsupported)? {
                            '\\' => key.push(chars.next().ok_or_else(unsupported)?),
                            q if q == c => break,
                            other => key.push(other),
                        }
                    }
                    steps.push(Step::Key(key));
                    want_key = false;
                }
                _ if want_key => {
                    let mut key = String::new();
                    while let Some(&c) = chars.peek().filter(|c| !matches!(c, '.' | '[' | ']' | '\'' | '"')) {
                        key.push(c);
                        chars.next();
                    }
                    if key.is_empty() {
                        return Err(unsupported());
                    }
                    steps.push(Step::Key(key));
                    want_key = false;
                }
                _ => return Err(unsupported()),
            }
        }
        match steps.first() {
            Some(Step::Key(_)) if !want_key => Ok(AttributePath { text: text.to_string(), steps }),
            _ => Err(unsupported()),
        }
    }

    /// The attribute the path starts in.
    fn attribute(&self) -> &str {
        match self.steps.first() {
            Some(Step::Key(k)) => k,
            _ => "",
        }
    }

    fn set(&self, attributes: &mut Map<String, Value>, value: Value) -> Result<(), String> {
        let missing = || format!("the resource has nothing at {}", self.text);
        let Some((Step::Key(first), rest)) = self.steps.split_first() else { return Err(missing()) };
        let Some((last, middle)) = rest.split_last() else {
            attributes.insert(first.clone(), value);
            return Ok(());
        };
        let mut at = attributes.get_mut(first).ok_or_else(missing)?;
        for step in middle {
            at = match step {
                Step::Key(k) => at.get_mut(k.as_str()),
                Step::Index(i) => at.get_mut(*i),
            }
            .ok_or_else(missing)?;
        }
        match (last, at) {
            (Step::Key(k), Value::Object(o)) => {
                o.insert(k.clone(), value);
            }
            (Step::Index(i), Value::Array(a)) if *i < a.len() => a[*i] = value,
            _ => return Err(missing()),
        }
        Ok(())
    }
}

/// A mutator of a resource: today only `core::Replace`.
#[derive(Debug, Clone, PartialEq)]
struct Replace {
    reference: String,
    destination: AttributePath,
}

impl Replace {
    fn parse(model: &Value) -> Result<Replace, String> {
        let kind = model.get("type").and_then(Value::as_str).unwrap_or_default();
        if kind != REPLACE {
            return Err(format!("mutator type {kind:?} is not known to this executor (only {REPLACE} is)"));
        }
        let mut reference = None;
        let mut destination = None;
        for arg in model.get("args").and_then(Value::as_array).into_iter().flatten() {
            match arg.get("name").and_then(Value::as_str) {
                Some("value") => reference = arg.get("id").and_then(Value::as_str),
                Some("destination") => destination = arg.get("value").and_then(Value::as_str),
                _ => {}
            }
        }
        let reference = reference.ok_or("a core::Replace mutator whose value is not a reference")?.to_string();
        let destination = AttributePath::parse(destination.ok_or("a core::Replace mutator without destination")?)?;
        Ok(Replace { reference, destination })
    }
}

/// Why a resource's references could not be resolved; the message names the reference and the
/// reason, never a value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReferenceError {
    /// The `references` or `mutators` of the resource are not what inmanta-core exports.
    #[error("the references of this resource are malformed: {0}")]
    Malformed(String),
    /// A reference of a type this executor does not resolve (a module's own Python class).
    #[error(
        "reference {reference} has type {kind}, which no Python module of this version defines (this \
         agent resolves std::Environment, std::IntReference and std::FactReference itself; other \
         types are the reference classes of the version's Python modules, run in its Python executor)"
    )]
    UnknownType { reference: String, kind: String },
    /// Resolving the reference failed (a variable unset, a fact missing, a conversion).
    #[error("cannot resolve reference {reference}: {reason}")]
    Failed { reference: String, reason: String },
}

/// The resolved values of a resource, for redaction: none of them may leave the executor.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Secrets {
    /// Texts to replace wherever they appear, longest first.
    texts: Vec<String>,
    /// Attributes that hold a resolved value (a mutator's destination) or one derived from it.
    attributes: BTreeSet<String>,
}

/// Shorter values are not replaced inside other text: `30` or `true` would mangle every log line.
const MIN_REDACTED_LEN: usize = 4;
/// What a redacted text becomes.
pub const REDACTED: &str = "***";
/// What a changed attribute that holds a resolved value reports as its current value, and as
/// its desired value: two texts, so a report still reads as a change, without either value.
pub const REDACTED_CURRENT: &str = "<current value, from a reference: not shown>";
pub const REDACTED_DESIRED: &str = "<desired value, from a reference: not shown>";

impl Secrets {
    pub fn is_empty(&self) -> bool {
        self.texts.is_empty() && self.attributes.is_empty()
    }

    pub(crate) fn add_value(&mut self, value: &Value) {
        let text = match value {
            Value::String(s) => s.clone(),
            Value::Null => return,
            other => other.to_string(),
        };
        // A handler may log a multi-line value line by line (a file's diff), or its hash (the
        // file handler's `hash`, which is the sha1 of the content).
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        let sha1 = sha1_smol::Sha1::from(text.as_bytes()).digest().to_string();
        for t in std::iter::once(text).chain(lines).chain(std::iter::once(sha1)) {
            if t.trim().chars().count() >= MIN_REDACTED_LEN && !self.texts.contains(&t) {
                self.texts.push(t);
            }
        }
        self.texts.sort_by_key(|t| std::cmp::Reverse(t.len()));
    }

    /// Marks an attribute as holding a resolved value (or one derived from it).
    pub fn mark_attribute(&mut self, name: &str) {
        self.attributes.insert(name.to_string());
    }

    pub fn is_secret_attribute(&self, name: &str) -> bool {
        self.attributes.contains(name)
    }

    /// `text` with every resolved value replaced by [`REDACTED`].
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.texts {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        out
    }

    /// A JSON value with every resolved value redacted from its strings.
    pub fn redact_json(&self, value: Value) -> Value {
        if self.texts.is_empty() {
            return value;
        }
        match value {
            Value::String(s) => Value::String(self.redact_str(&s).into_owned()),
            Value::Array(a) => Value::Array(a.into_iter().map(|v| self.redact_json(v)).collect()),
            Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, self.redact_json(v))).collect()),
            Value::Number(n) if self.texts.contains(&n.to_string()) => Value::String(REDACTED.into()),
            other => other,
        }
    }
}

/// A resource whose references are resolved: the attributes its handler gets, and what to redact.
#[derive(Debug)]
pub struct Resolved<'a> {
    pub request: Cow<'a, ResourceRequest>,
    pub secrets: Secrets,
}

/// Resolves the references of `request` that its mutators need and applies the mutators. A
/// resource without mutators is returned as it is.
pub fn resolve<'a>(request: &'a ResourceRequest, facts: &dyn FactSource) -> Result<Resolved<'a>, ReferenceError> {
    resolve_in(request, facts, &|name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()))
}

/// Whether `request` has a reference of a type this agent does not resolve itself (a module's
/// own Python class): such a resource has its references resolved in the Python executor of its
/// version ([`resolve_known`] first, then the executor's `resolve` action).
pub fn needs_python(request: &ResourceRequest) -> bool {
    references_need_python(&request.attributes)
}

/// [`needs_python`] of a resource's attributes.
pub fn references_need_python(attributes: &Map<String, Value>) -> bool {
    attributes
        .get("references")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| r.get("type").and_then(Value::as_str).is_some_and(|kind| ![ENVIRONMENT, INT, FACT].contains(&kind)))
}

/// The values of the references of std's kinds this agent resolves itself, by id, for a resource
/// whose other references the Python executor resolves: they resolve here as for any resource
/// (the agent's environment, its fact source), and a failure fails the resource with the same
/// message. One that takes a module-defined reference as argument is left to Python.
pub fn resolve_known(request: &ResourceRequest, facts: &dyn FactSource) -> Result<Map<String, Value>, ReferenceError> {
    let environment = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
    let mut references = HashMap::new();
    for model in request.attributes.get("references").and_then(Value::as_array).into_iter().flatten() {
        let reference = Reference::parse(model).map_err(ReferenceError::Malformed)?;
        references.insert(reference.id.clone(), reference);
    }
    let mut resolver = Resolver {
        references: &references,
        facts,
        environment: &environment,
        values: HashMap::new(),
        resolving: Vec::new(),
    };
    let mut ids: Vec<&String> =
        references.values().filter(|r| [ENVIRONMENT, INT, FACT].contains(&r.kind.as_str())).map(|r| &r.id).collect();
    ids.sort();
    for id in ids {
        match resolver.value(id) {
            Ok(_) | Err(ReferenceError::UnknownType { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(resolver.values.into_iter().collect())
}

/// A resource whose references the Python executor resolved: `attributes` with the mutators'
/// values in place, `values` every value a reference resolved to (the agent's own ones too).
pub(crate) fn resolved_elsewhere(
    request: &ResourceRequest,
    attributes: Map<String, Value>,
    values: &[Value],
) -> Result<Resolved<'static>, ReferenceError> {
    let mut secrets = Secrets::default();
    for model in request.attributes.get("mutators").and_then(Value::as_array).into_iter().flatten() {
        let mutator = Replace::parse(model).map_err(ReferenceError::Malformed)?;
        secrets.mark_attribute(mutator.destination.attribute());
    }
    for value in values {
        secrets.add_value(value);
    }
    let request = ResourceRequest { id: request.id.clone(), version: request.version, attributes };
    Ok(Resolved { request: Cow::Owned(request), secrets })
}

/// A process environment: the value of a variable.
type Environment<'e> = dyn Fn(&str) -> Option<String> + 'e;

/// [`resolve`] with `environment` as the process environment.
fn resolve_in<'a>(
    request: &'a ResourceRequest,
    facts: &dyn FactSource,
    environment: &Environment<'_>,
) -> Result<Resolved<'a>, ReferenceError> {
    let mutators = match request.attributes.get("mutators") {
        None | Some(Value::Null) => {
            return Ok(Resolved { request: Cow::Borrowed(request), secrets: Secrets::default() });
        }
        Some(Value::Array(m)) if m.is_empty() => {
            return Ok(Resolved { request: Cow::Borrowed(request), secrets: Secrets::default() });
        }
        Some(Value::Array(m)) => m,
        Some(other) => return Err(ReferenceError::Malformed(format!("`mutators` is not a list: {other}"))),
    };
    let mutators: Vec<Replace> =
        mutators.iter().map(Replace::parse).collect::<Result<_, _>>().map_err(ReferenceError::Malformed)?;
    let mut references = HashMap::new();
    for model in request.attributes.get("references").and_then(Value::as_array).into_iter().flatten() {
        let reference = Reference::parse(model).map_err(ReferenceError::Malformed)?;
        references.insert(reference.id.clone(), reference);
    }
    let mut resolver =
        Resolver { references: &references, facts, environment, values: HashMap::new(), resolving: Vec::new() };
    let mut secrets = Secrets::default();
    let mut attributes = request.attributes.clone();
    for mutator in &mutators {
        let value = resolver.value(&mutator.reference)?;
        mutator.destination.set(&mut attributes, value).map_err(ReferenceError::Malformed)?;
        secrets.mark_attribute(mutator.destination.attribute());
    }
    for value in resolver.values.values() {
        secrets.add_value(value);
    }
    let request = ResourceRequest { id: request.id.clone(), version: request.version, attributes };
    Ok(Resolved { request: Cow::Owned(request), secrets })
}

/// Resolves references on demand, each once (inmanta-core caches a reference's value per resource).
struct Resolver<'r> {
    references: &'r HashMap<String, Reference>,
    facts: &'r dyn FactSource,
    environment: &'r Environment<'r>,
    values: HashMap<String, Value>,
    /// The references being resolved now, innermost last: a cycle is refused, not followed.
    resolving: Vec<String>,
}

impl Resolver<'_> {
    fn value(&mut self, id: &str) -> Result<Value, ReferenceError> {
        if let Some(v) = self.values.get(id) {
            return Ok(v.clone());
        }
        let reference = self.references.get(id).ok_or_else(|| {
            ReferenceError::Malformed(format!("reference {id} is used but not listed in `references`"))
        })?;
        if self.resolving.iter().any(|r| r == id) {
            return Err(ReferenceError::Malformed(format!("reference cycle: {} -> {id}", self.resolving.join(" -> "))));
        }
        self.resolving.push(id.to_string());
        let value = self.resolve(reference);
        self.resolving.pop();
        let value = value?;
        self.values.insert(id.to_string(), value.clone());
        Ok(value)
    }

    /// The value of an argument: itself, or the value of the reference it names.
    fn arg(&mut self, reference: &Reference, name: &str) -> Result<Value, ReferenceError> {
        let failed = |reason: String| ReferenceError::Failed { reference: reference.describe(), reason };
        match reference.arg(name) {
            Some(Argument::Value(v)) => Ok(v.clone()),
            Some(Argument::Reference(id)) => self.value(id),
            Some(Argument::Unsupported(kind)) => Err(failed(format!("argument {name} has kind {kind:?}"))),
            None => Err(failed(format!("argument {name} is missing"))),
        }
    }

    fn resolve(&mut self, reference: &Reference) -> Result<Value, ReferenceError> {
        let failed = |reason: String| ReferenceError::Failed { reference: reference.describe(), reason };
        match reference.kind.as_str() {
            // The agent's own process environment, as std's EnvironmentReference reads it.
            ENVIRONMENT => {
                let name = match self.arg(reference, "name")? {
                    Value::String(s) => s,
                    other => {
                        return Err(failed(format!("the variable name is not a string but {}", json_kind(&other))));
                    }
                };
                match (self.environment)(&name) {
                    Some(v) => Ok(Value::String(v)),
                    None => Err(failed(format!("Environment variable {name} is not set"))),
                }
            }
            INT => python_int(&self.arg(reference, "value")?).map(Value::from).map_err(failed),
            FACT => {
                let text = |name: &str, v: Value| match v {
                    Value::String(s) => Ok(s),
                    other => Err(failed(format!("argument {name} is not a string but {}", json_kind(&other)))),
                };
                let environment = text("environment", self.arg(reference, "environment")?)?;
                let resource_id = text("resource_id", self.arg(reference, "resource_id")?)?;
                let fact_name = text("fact_name", self.arg(reference, "fact_name")?)?;
                let not_found = || failed(format!("Didn't find fact `{fact_name}` for resource `{resource_id}`"));
                // std's special case for unit tests: facts given at compile time.
                if let Ok(Value::Object(mocked)) = self.arg(reference, "mocked_facts") {
                    return mocked
                        .get(&resource_id)
                        .and_then(|facts| facts.get(&fact_name))
                        .cloned()
                        .ok_or_else(not_found);
                }
                let facts = self
                    .facts
                    .facts(&environment, &resource_id)
                    .map_err(|e| failed(format!("cannot read the facts of resource `{resource_id}`: {e}")))?;
                facts.get(&fact_name).cloned().ok_or_else(not_found)
            }
            other => Err(ReferenceError::UnknownType { reference: reference.describe(), kind: other.to_string() }),
        }
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a dict",
    }
}

/// Python's `int(value)`: an int as is, a float truncated, a bool as 0 or 1, a string of an
/// integer in base 10 (surrounding whitespace, a sign and `_` between digits allowed). The error
/// never quotes the value: it may be a secret.
fn python_int(value: &Value) -> Result<i64, String> {
    match value {
        Value::Bool(b) => Ok(i64::from(*b)),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Ok(i),
            (None, Some(f)) if f.is_finite() && f.abs() < 9.2e18 => Ok(f.trunc() as i64),
            _ => Err("the value is a number out of the range of a 64-bit integer".into()),
        },
        Value::String(s) => {
            let t = s.trim();
            let (sign, digits) = match t.strip_prefix('-') {
                Some(d) => (-1, d),
                None => (1, t.strip_prefix('+').unwrap_or(t)),
            };
            let well_formed = !digits.is_empty()
                && !digits.starts_with('_')
                && !digits.ends_with('_')
                && !digits.contains("__")
                && digits.chars().all(|c| c.is_ascii_digit() || c == '_');
            if !well_formed {
                return Err("the value is a string that is not an integer in base 10".into());
            }
            digits
                .replace('_', "")
                .parse::<i64>()
                .map(|i| sign * i)
                .map_err(|_| "the value is an integer out of the range of a 64-bit integer".into())
        }
        other => Err(format!("int() can not convert {}", json_kind(other))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Facts(Map<String, Value>);

    fn environment(name: &str) -> Option<String> {
        let value = match name {
            "H31_UNIT_WHICH" => "H31_UNIT_PORT",
            "H31_UNIT_PORT" => " 8_080\n",
            "H31_UNIT_NOT_INT" => "s3cr3t-value",
            _ => return None,
        };
        Some(value.to_string())
    }

    fn resolve<'a>(request: &'a ResourceRequest, facts: &dyn FactSource) -> Result<Resolved<'a>, ReferenceError> {
        resolve_in(request, facts, &environment)
    }

    impl FactSource for Facts {
        fn facts(&self, environment: &str, resource_id: &str) -> Result<Map<String, Value>, String> {
            assert_eq!(environment, "e");
            match resource_id {
                "std::testing::NullResource[a,name=x]" => Ok(self.0.clone()),
                _ => Ok(Map::new()),
            }
        }
    }

    fn replace(rid: &str, reference: &str, destination: &str) -> Value {
        json!({"type": "core::Replace", "args": [
            {"id": rid, "name": "resource", "type": "resource"},
            {"id": reference, "name": "value", "type": "reference"},
            {"name": "destination", "type": "literal", "value": destination},
        ]})
    }

    fn request(references: Value, mutators: Value) -> ResourceRequest {
        ResourceRequest::from_json(&json!({
            "id": "std::testing::NullResource[a,name=n],v=1", "name": "n", "value": null,
            "int_value": null, "nested": {"list": [0, {"k": null}]},
            "references": references, "mutators": mutators,
        }))
        .unwrap()
    }

    fn env_ref(id: &str, name: Value) -> Value {
        let arg = match name {
            Value::String(s) if s.starts_with("ref:") => json!({"name": "name", "type": "reference", "id": &s[4..]}),
            v => json!({"name": "name", "type": "literal", "value": v}),
        };
        json!({"id": id, "type": "std::Environment", "args": [arg]})
    }

    #[test]
    fn nested_references_resolve_arguments_first_and_redact_every_value() {
        let refs = json!([
            env_ref("which", json!("H31_UNIT_WHICH")),
            env_ref("port", json!("ref:which")),
            {"id": "int", "type": "std::IntReference", "args": [{"name": "value", "type": "reference", "id": "port"}]},
        ]);
        let rid = "std::testing::NullResource[a,name=n]";
        let req = request(
            refs,
            json!([
                replace(rid, "int", "int_value"),
                replace(rid, "which", "value"),
                replace(rid, "port", "$.nested.list[1].k")
            ]),
        );
        let resolved = resolve(&req, &NoFacts).unwrap();
        let attrs = &resolved.request.attributes;
        assert_eq!(attrs["int_value"], json!(8080));
        assert_eq!(attrs["value"], json!("H31_UNIT_PORT"));
        assert_eq!(attrs["nested"], json!({"list": [0, {"k": " 8_080\n"}]}));
        let s = &resolved.secrets;
        assert!(s.is_secret_attribute("int_value") && s.is_secret_attribute("nested"));
        assert_eq!(s.redact_str("port is  8_080, var H31_UNIT_PORT"), "port is ***, var ***");
        assert_eq!(s.redact_json(json!({"x": ["8080"], "n": 8080})), json!({"x": ["***"], "n": "***"}));
    }

    #[test]
    fn failures_name_the_reference_and_the_reason_never_the_value() {
        let rid = "std::testing::NullResource[a,name=n]";
        let unset = request(json!([env_ref("u", json!("H31_UNIT_SURELY_UNSET"))]), json!([replace(rid, "u", "value")]));
        let e = resolve(&unset, &NoFacts).unwrap_err().to_string();
        assert!(e.contains("Environment variable H31_UNIT_SURELY_UNSET is not set"), "{e}");
        assert!(e.contains("std::Environment(name=H31_UNIT_SURELY_UNSET) u"), "{e}");

        let refs = json!([
            env_ref("v", json!("H31_UNIT_NOT_INT")),
            {"id": "i", "type": "std::IntReference", "args": [{"name": "value", "type": "reference", "id": "v"}]},
        ]);
        let e = resolve(&request(refs, json!([replace(rid, "i", "int_value")])), &NoFacts).unwrap_err().to_string();
        assert!(e.contains("std::IntReference") && e.contains("not an integer"), "{e}");
        assert!(!e.contains("s3cr3t"), "{e}");

        let module = json!([{"id": "m", "type": "vault::Secret", "args": []}]);
        let e = resolve(&request(module, json!([replace(rid, "m", "value")])), &NoFacts).unwrap_err().to_string();
        assert!(e.contains("type vault::Secret"), "{e}");

        let cycle = json!([env_ref("a", json!("ref:b")), env_ref("b", json!("ref:a"))]);
        let e = resolve(&request(cycle, json!([replace(rid, "a", "value")])), &NoFacts).unwrap_err().to_string();
        assert!(e.contains("cycle"), "{e}");
    }

    #[test]
    fn fact_references_ask_the_fact_source_or_use_mocked_facts() {
        let rid = "std::testing::NullResource[a,name=n]";
        let fact = |mocked: Value| {
            json!([{"id": "f", "type": "std::FactReference", "args": [
                {"name": "environment", "type": "literal", "value": "e"},
                {"name": "resource_id", "type": "literal", "value": "std::testing::NullResource[a,name=x]"},
                {"name": "fact_name", "type": "literal", "value": "ip"},
                {"name": "mocked_facts", "type": "literal", "value": mocked},
            ]}])
        };
        let facts = Facts(json!({"ip": "10.0.0.7"}).as_object().unwrap().clone());
        let req = request(fact(Value::Null), json!([replace(rid, "f", "value")]));
        assert_eq!(resolve(&req, &facts).unwrap().request.attributes["value"], json!("10.0.0.7"));
        let e = resolve(&req, &Facts(Map::new())).unwrap_err().to_string();
        assert!(e.contains("Didn't find fact `ip` for resource `std::testing::NullResource[a,name=x]`"), "{e}");
        let mocked = request(
            fact(json!({"std::testing::NullResource[a,name=x]": {"ip": "mock"}})),
            json!([replace(rid, "f", "value")]),
        );
        assert_eq!(resolve(&mocked, &NoFacts).unwrap().request.attributes["value"], json!("mock"));
    }

    #[test]
    fn python_int_follows_python() {
        for (v, want) in
            [(json!("42"), 42), (json!(" -7 "), -7), (json!("1_000"), 1000), (json!(3.9), 3), (json!(true), 1)]
        {
            assert_eq!(python_int(&v), Ok(want), "{v}");
        }
        for v in [json!("4.2"), json!("1__0"), json!("_1"), json!(""), json!(null), json!("0x10")] {
            assert!(python_int(&v).is_err(), "{v}");
        }
    }

    #[test]
    fn a_resource_without_mutators_is_borrowed() {
        let req = request(json!([]), json!([]));
        assert!(matches!(resolve(&req, &NoFacts).unwrap().request, Cow::Borrowed(_)));
        assert!(AttributePath::parse("a..b").is_err());
        assert!(AttributePath::parse("[0]").is_err());
    }

    #[test]
    fn destinations_read_as_jsonpath_reads_them() {
        // The forms Inmanta 20.1's exporter writes (compiler/tests/references/in_collections.inmanta.json).
        let steps = |text: &str| AttributePath::parse(text).map(|p| p.steps);
        let key = |k: &str| Step::Key(k.to_string());
        assert_eq!(steps("content"), Ok(vec![key("content")]));
        assert_eq!(steps("$.a.b"), Ok(vec![key("a"), key("b")]));
        assert_eq!(steps("a[0].b"), Ok(vec![key("a"), Step::Index(0), key("b")]));
        assert_eq!(
            steps("values[0].'value'.'ports'[1]"),
            Ok(vec![key("values"), Step::Index(0), key("value"), key("ports"), Step::Index(1)])
        );
        assert_eq!(
            steps(r"values[0].'value'.'it\'s'"),
            Ok(vec![key("values"), Step::Index(0), key("value"), key("it's")])
        );
        assert_eq!(steps(r#"a."b.c""#), Ok(vec![key("a"), key("b.c")]));
        for bad in ["a.", "a.'b", "a[x]", "a[0", "a'b'", "", "'a'b"] {
            assert!(AttributePath::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_reference_inside_a_dict_replaces_the_quoted_key() {
        let path = AttributePath::parse("values[0].'value'.'token'").unwrap();
        let mut attributes = json!({"values": [{"value": {"token": null, "other": 1}}]}).as_object().unwrap().clone();
        path.set(&mut attributes, json!("secret")).unwrap();
        assert_eq!(attributes["values"][0]["value"], json!({"token": "secret", "other": 1}));
    }
}
