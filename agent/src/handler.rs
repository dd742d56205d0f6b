//! The handler contract (docs/handlers.md): the [`Handler`] trait, the CRUD flavour most resources use,
//! and the [`HandlerContext`] a handler logs to and reports changes through.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::executor::{Events, Mode};
use crate::host::Host;
use crate::references::{REDACTED_CURRENT, REDACTED_DESIRED, Secrets};
use crate::resource::{FileSource, ResourceRequest};
use api::resource::{DiscoveredResourceInput, LogLine};

/// How a run ended and the kind of change it made are the API's vocabulary.
pub use api::state::{Change, HandlerStatus};

/// One changed attribute: what the world has and what the model wants.
#[derive(Debug, Clone, PartialEq)]
pub struct AttributeChange {
    pub current: Value,
    pub desired: Value,
}

/// Why a handler stopped early.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HandlerError {
    /// The run failed; status `failed`.
    #[error("{0}")]
    Failed(String),
    /// The handler decided not to act now; status `skipped`.
    #[error("skipped: {0}")]
    Skipped(String),
}

impl HandlerError {
    pub fn failed(msg: impl Into<String>) -> HandlerError {
        HandlerError::Failed(msg.into())
    }
}

impl From<std::io::Error> for HandlerError {
    fn from(e: std::io::Error) -> HandlerError {
        HandlerError::Failed(e.to_string())
    }
}

/// What a handler sees of the run and reports back through: mode, events, host, files, logs,
/// change kind, attribute changes and facts (docs/handlers.md, "What every run reports").
pub struct HandlerContext<'a> {
    mode: Mode,
    events: &'a Events,
    host: Arc<dyn Host>,
    files: &'a dyn FileSource,
    pub(crate) logs: Vec<LogLine>,
    pub(crate) change: Change,
    pub(crate) changes: BTreeMap<String, AttributeChange>,
    pub(crate) facts: Map<String, Value>,
    /// Set by a handler that decides the outcome itself (report-only checks, external handlers).
    pub(crate) status: Option<HandlerStatus>,
    /// Resources a discovery handler found, for the server (`/api/v2/discovered`).
    pub(crate) discovered: Vec<DiscoveredResourceInput>,
    /// The values the resource's references resolved to: every log line, change and fact is
    /// redacted as it is recorded, so none of them leaves the executor.
    secrets: Secrets,
}

impl<'a> HandlerContext<'a> {
    pub(crate) fn new(
        mode: Mode,
        events: &'a Events,
        host: Arc<dyn Host>,
        files: &'a dyn FileSource,
    ) -> HandlerContext<'a> {
        HandlerContext {
            mode,
            events,
            host,
            files,
            logs: Vec::new(),
            change: Change::NoChange,
            changes: BTreeMap::new(),
            facts: Map::new(),
            status: None,
            discovered: Vec::new(),
            secrets: Secrets::default(),
        }
    }

    /// Redacts `secrets` from everything this run reports.
    pub(crate) fn with_secrets(mut self, secrets: Secrets) -> HandlerContext<'a> {
        self.secrets = secrets;
        self
    }

    /// Whether an attribute holds a value resolved from a reference (a secret): a handler does not
    /// show it, not even as a diff.
    pub fn is_secret(&self, attribute: &str) -> bool {
        self.secrets.is_secret_attribute(attribute)
    }

    /// Adds values resolved elsewhere (in a Python executor) and the attributes they fill to what
    /// is redacted from this run's reports.
    pub(crate) fn add_secrets<'v>(
        &mut self,
        values: impl IntoIterator<Item = &'v Value>,
        attributes: impl IntoIterator<Item = &'v str>,
    ) {
        for value in values {
            self.secrets.add_value(value);
        }
        for attribute in attributes {
            self.secrets.mark_attribute(attribute);
        }
    }

    /// Marks an attribute whose value derives from a secret (a file's hash from its content), so
    /// that its changes are reported without values.
    pub fn mark_secret(&mut self, attribute: &str) {
        self.secrets.mark_attribute(attribute);
    }

    pub fn is_dry_run(&self) -> bool {
        self.mode == Mode::DryRun
    }

    pub fn events(&self) -> &Events {
        self.events
    }

    /// The host the resource's `via` names.
    pub fn host(&self) -> &dyn Host {
        &*self.host
    }

    /// File contents by sha1 hash.
    pub fn file(&self, hash: &str) -> Result<Vec<u8>, HandlerError> {
        self.files.get(hash).map_err(|e| HandlerError::failed(format!("cannot fetch file {hash}: {e}")))
    }

    pub fn log(&mut self, level: &str, msg: impl Into<String>, kwargs: Map<String, Value>) {
        let msg = self.secrets.redact_str(&msg.into()).into_owned();
        let kwargs = match self.secrets.redact_json(Value::Object(kwargs)) {
            Value::Object(kwargs) => kwargs,
            _ => Map::new(),
        };
        tracing::debug!(level, %msg, "handler log");
        self.logs.push(LogLine { level: level.to_string(), msg, args: Vec::new(), kwargs, timestamp: now() });
    }

    /// Reports a resource a discovery handler found; the agent sends it to the server with the
    /// outcome.
    pub fn report_discovered(&mut self, mut resource: DiscoveredResourceInput) {
        resource.values = self.secrets.redact_json(resource.values);
        self.discovered.push(resource);
    }

    pub fn debug(&mut self, msg: impl Into<String>) {
        self.log("DEBUG", msg, Map::new());
    }

    pub fn info(&mut self, msg: impl Into<String>) {
        self.log("INFO", msg, Map::new());
    }

    pub fn warning(&mut self, msg: impl Into<String>) {
        self.log("WARNING", msg, Map::new());
    }

    pub fn error(&mut self, msg: impl Into<String>) {
        self.log("ERROR", msg, Map::new());
    }

    /// Records the change kind; a second, different kind in the same run is an error.
    pub fn set_change(&mut self, change: Change) -> Result<(), HandlerError> {
        match self.change {
            Change::NoChange => {
                self.change = change;
                Ok(())
            }
            c if c == change => Ok(()),
            c => Err(HandlerError::failed(format!(
                "handler reported two change kinds in one run: {} and {}",
                c.as_str(),
                change.as_str()
            ))),
        }
    }

    /// Records a changed attribute. One that holds a secret reports that it changed, without
    /// either value.
    pub fn add_change(&mut self, name: &str, current: Value, desired: Value) {
        let change = if self.secrets.is_secret_attribute(name) {
            AttributeChange { current: REDACTED_CURRENT.into(), desired: REDACTED_DESIRED.into() }
        } else {
            AttributeChange { current: self.secrets.redact_json(current), desired: self.secrets.redact_json(desired) }
        };
        self.changes.insert(name.to_string(), change);
    }

    pub fn set_fact(&mut self, name: &str, value: Value) {
        let value = self.secrets.redact_json(value);
        self.facts.insert(name.to_string(), value);
    }

    /// Takes the `logs` and `facts` of a reply from a handler that runs in another process (an
    /// external program or the Python executor): both speak the same JSON for them.
    pub(crate) fn record_reply_logs_and_facts(&mut self, reply: &Map<String, Value>) {
        if let Some(Value::Array(logs)) = reply.get("logs") {
            for line in logs {
                let level = line.get("level").and_then(Value::as_str).unwrap_or("INFO").to_uppercase();
                let msg = line.get("msg").and_then(Value::as_str).unwrap_or_default().to_string();
                let kwargs = line.get("kwargs").and_then(Value::as_object).cloned().unwrap_or_default();
                self.log(&level, msg, kwargs);
            }
        }
        if let Some(facts) = reply.get("facts").and_then(Value::as_object) {
            for (name, value) in facts {
                self.set_fact(name, value.clone());
            }
        }
    }

    /// Decides the outcome explicitly (otherwise `deployed`, or `dry` in a dry run).
    pub fn set_status(&mut self, status: HandlerStatus) {
        self.status = Some(status);
    }
}

pub(crate) fn now() -> api::Timestamp {
    api::Timestamp::now()
}

/// A handler: one full run for one resource (read, diff, and apply unless dry run).
/// Most handlers implement [`CrudHandler`] instead and get this for free.
pub trait Handler: Send + Sync {
    /// Brings the resource to its desired state (or, in a dry run, only records the changes).
    fn run(&self, ctx: &mut HandlerContext<'_>, resource: &ResourceRequest) -> Result<(), HandlerError>;

    /// Facts about the resource, reported through the context; none by default.
    fn facts(&self, _ctx: &mut HandlerContext<'_>, _resource: &ResourceRequest) -> Result<(), HandlerError> {
        Ok(())
    }

    /// Whether the handler gets the resource with its references unresolved and resolves them
    /// itself (Python handlers, where module-defined reference types live); otherwise the
    /// executor resolves them before calling it.
    fn resolves_references(&self) -> bool {
        false
    }
}

/// A handler for a resource with `purged` (Inmanta's `CRUDHandler`, docs/handlers.md): the driver reads, diffs, then
/// creates, updates or deletes.
pub trait CrudHandler: Send + Sync {
    /// The managed attributes as they are now, or `None` when the object does not exist.
    fn read(
        &self,
        ctx: &mut HandlerContext<'_>,
        desired: &ResourceRequest,
    ) -> Result<Option<Map<String, Value>>, HandlerError>;

    fn create(&self, ctx: &mut HandlerContext<'_>, desired: &ResourceRequest) -> Result<(), HandlerError>;

    fn update(
        &self,
        ctx: &mut HandlerContext<'_>,
        changes: &BTreeMap<String, AttributeChange>,
        desired: &ResourceRequest,
    ) -> Result<(), HandlerError>;

    fn delete(&self, ctx: &mut HandlerContext<'_>, desired: &ResourceRequest) -> Result<(), HandlerError>;

    /// Current vs desired; by default [`diff_attributes`].
    fn diff(&self, current: &Map<String, Value>, desired: &ResourceRequest) -> BTreeMap<String, AttributeChange> {
        diff_attributes(current, &desired.attributes)
    }

    /// Adds detail to a dry run or deploy log (e.g. a unified diff of file contents).
    fn describe(
        &self,
        _ctx: &mut HandlerContext<'_>,
        _current: &Map<String, Value>,
        _desired: &ResourceRequest,
        _changes: &BTreeMap<String, AttributeChange>,
    ) {
    }

    fn facts(&self, _ctx: &mut HandlerContext<'_>, _resource: &ResourceRequest) -> Result<(), HandlerError> {
        Ok(())
    }
}

/// Every attribute in `current` whose desired value is not null and differs.
pub fn diff_attributes(
    current: &Map<String, Value>,
    desired: &Map<String, Value>,
) -> BTreeMap<String, AttributeChange> {
    let mut out = BTreeMap::new();
    for (name, cur) in current {
        match desired.get(name) {
            None | Some(Value::Null) => {}
            Some(want) if json_eq(want, cur) => {}
            Some(want) => {
                out.insert(name.clone(), AttributeChange { current: cur.clone(), desired: want.clone() });
            }
        }
    }
    out
}

/// JSON equality that treats 644 and 644.0 as equal (numbers may come back as floats), and
/// numbers however written (`1e2`, `100.0`) by value.
fn json_eq(a: &Value, b: &Value) -> bool {
    api::json::same_json(a, b)
}

/// Runs a [`CrudHandler`] as a [`Handler`].
pub(crate) struct Crud<H>(pub(crate) H);

impl<H: CrudHandler> Handler for Crud<H> {
    fn run(&self, ctx: &mut HandlerContext<'_>, desired: &ResourceRequest) -> Result<(), HandlerError> {
        let h = &self.0;
        let want_purged = desired.purged();
        ctx.debug("Calling read_resource");
        let current = h.read(ctx, desired)?;
        let changes = match &current {
            None if want_purged => BTreeMap::new(),
            None => BTreeMap::from([(
                "purged".to_string(),
                AttributeChange { current: true.into(), desired: false.into() },
            )]),
            Some(_) if want_purged => BTreeMap::from([(
                "purged".to_string(),
                AttributeChange { current: false.into(), desired: true.into() },
            )]),
            Some(cur) => h.diff(cur, desired),
        };
        if changes.is_empty() {
            return Ok(());
        }
        if let Some(cur) = &current {
            h.describe(ctx, cur, desired, &changes);
        } else {
            h.describe(ctx, &Map::new(), desired, &changes);
        }
        for (k, v) in &changes {
            ctx.add_change(k, v.current.clone(), v.desired.clone());
        }
        if ctx.is_dry_run() || desired.bool("report_only") {
            return Ok(());
        }
        match (&current, want_purged) {
            (None, _) => {
                h.create(ctx, desired)?;
                ctx.set_change(Change::Created)
            }
            (Some(_), true) => {
                h.delete(ctx, desired)?;
                ctx.set_change(Change::Purged)
            }
            (Some(_), false) => {
                h.update(ctx, &changes, desired)?;
                ctx.set_change(Change::Updated)
            }
        }
    }

    fn facts(&self, ctx: &mut HandlerContext<'_>, resource: &ResourceRequest) -> Result<(), HandlerError> {
        self.0.facts(ctx, resource)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diff_ignores_null_desired_and_numeric_form() {
        let cur = json!({"a": 1, "b": "x", "c": 644.0, "d": "y"});
        let want = json!({"a": 2, "b": null, "c": 644, "d": "y"});
        let d = diff_attributes(cur.as_object().unwrap(), want.as_object().unwrap());
        assert_eq!(d.keys().collect::<Vec<_>>(), vec!["a"]);
        assert_eq!(d["a"], AttributeChange { current: json!(1), desired: json!(2) });
    }
}
