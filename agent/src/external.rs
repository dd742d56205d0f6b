//! Resource types handled by an executable: one process per request, a JSON request on stdin and
//! a JSON reply on stdout. The protocol is a public API, documented in docs/handlers.md.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::handler::{AttributeChange, Change, Handler, HandlerContext, HandlerError, HandlerStatus, diff_attributes};
use crate::host::{CommandSpec, local::run_local};
use crate::resource::ResourceRequest;

/// The protocol version sent in every request.
pub(crate) const PROTOCOL: u64 = 1;

pub(crate) struct ExternalHandler {
    program: PathBuf,
    timeout: Duration,
}

impl ExternalHandler {
    pub(crate) fn new(program: PathBuf) -> ExternalHandler {
        ExternalHandler { program, timeout: Duration::from_secs(300) }
    }

    /// Sends one request and returns the reply object, after copying its `logs` into the context.
    /// `error` in the reply fails the run, `skip` skips it.
    fn call(
        &self,
        ctx: &mut HandlerContext<'_>,
        action: &str,
        resource: &ResourceRequest,
        extra: Map<String, Value>,
    ) -> Result<Map<String, Value>, HandlerError> {
        let mut req = Map::new();
        req.insert("protocol".into(), PROTOCOL.into());
        req.insert("action".into(), action.into());
        req.insert("resource".into(), resource.to_json());
        req.insert("dry_run".into(), ctx.is_dry_run().into());
        req.insert("events".into(), json!({"dependency_changed": ctx.events().dependency_changed}));
        req.extend(extra);
        let mut spec = CommandSpec::new(&[self.program.to_string_lossy()]);
        spec.stdin = Some(Value::Object(req).to_string().into_bytes());
        spec.timeout = Some(self.timeout);
        spec.env = vec![("INMANTA_HANDLER_ACTION".into(), action.into())];
        let prog = self.program.display();
        let out =
            run_retrying_busy(&spec).map_err(|e| HandlerError::failed(format!("cannot start handler {prog}: {e}")))?;
        let stderr = out.stderr_str();
        if !stderr.trim().is_empty() {
            ctx.debug(format!("{prog} {action} stderr: {}", stderr.trim_end()));
        }
        if out.timed_out {
            return Err(HandlerError::failed(format!("handler {prog} timed out on {action}")));
        }
        if !out.success() {
            return Err(HandlerError::failed(format!(
                "handler {prog} exited with {:?} on {action}: {}",
                out.code,
                stderr.trim()
            )));
        }
        let reply: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
            HandlerError::failed(format!(
                "handler {prog} answered {action} with invalid JSON ({e}): {}",
                out.stdout_str()
            ))
        })?;
        let Value::Object(reply) = reply else {
            return Err(HandlerError::failed(format!("handler {prog} answered {action} with a non-object")));
        };
        ctx.record_reply_logs_and_facts(&reply);
        if let Some(e) = reply.get("error").and_then(Value::as_str) {
            return Err(HandlerError::failed(e));
        }
        if let Some(s) = reply.get("skip").and_then(Value::as_str) {
            return Err(HandlerError::Skipped(s.to_string()));
        }
        Ok(reply)
    }

    /// The handler does its own diffing: one `deploy` or `dry_run` request.
    fn whole_run(&self, ctx: &mut HandlerContext<'_>, r: &ResourceRequest) -> Result<(), HandlerError> {
        let action = if ctx.is_dry_run() { "dry_run" } else { "deploy" };
        let reply = self.call(ctx, action, r, Map::new())?;
        for (k, v) in parse_changes(&reply)? {
            ctx.add_change(&k, v.current, v.desired);
        }
        if let Some(c) = reply.get("change").and_then(Value::as_str) {
            let change = Change::parse(c).ok_or_else(|| HandlerError::failed(format!("unknown change kind {c:?}")))?;
            if change != Change::NoChange {
                ctx.set_change(change)?;
            }
        } else if !ctx.is_dry_run() && !ctx.changes.is_empty() {
            ctx.set_change(Change::Updated)?;
        }
        if let Some(s) = reply.get("status").and_then(Value::as_str) {
            let status =
                HandlerStatus::parse(s).ok_or_else(|| HandlerError::failed(format!("unknown status {s:?}")))?;
            ctx.set_status(status);
        }
        Ok(())
    }
}

/// Runs the handler, retrying for a moment when the kernel says its file is busy (ETXTBSY): a
/// freshly written executable can still be open for writing in a child that another thread
/// forked before it closed, until that child calls exec.
fn run_retrying_busy(spec: &CommandSpec) -> std::io::Result<crate::host::CommandOutput> {
    const TEXT_FILE_BUSY: i32 = 26;
    let mut attempts = 0;
    loop {
        match run_local(spec) {
            Err(e) if e.raw_os_error() == Some(TEXT_FILE_BUSY) && attempts < 20 => {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(25));
            }
            other => return other,
        }
    }
}

fn parse_changes(reply: &Map<String, Value>) -> Result<BTreeMap<String, AttributeChange>, HandlerError> {
    let mut out = BTreeMap::new();
    if let Some(changes) = reply.get("changes").and_then(Value::as_object) {
        for (k, v) in changes {
            let (Some(current), Some(desired)) = (v.get("current"), v.get("desired")) else {
                return Err(HandlerError::failed(format!("change {k:?} needs `current` and `desired`")));
            };
            out.insert(k.clone(), AttributeChange { current: current.clone(), desired: desired.clone() });
        }
    }
    Ok(out)
}

fn changes_json(changes: &BTreeMap<String, AttributeChange>) -> Value {
    Value::Object(
        changes.iter().map(|(k, c)| (k.clone(), json!({"current": c.current, "desired": c.desired}))).collect(),
    )
}

impl Handler for ExternalHandler {
    fn run(&self, ctx: &mut HandlerContext<'_>, r: &ResourceRequest) -> Result<(), HandlerError> {
        let reply = self.call(ctx, "read", r, Map::new())?;
        if reply.get("unsupported").and_then(Value::as_bool) == Some(true) {
            return self.whole_run(ctx, r);
        }
        let exists = reply.get("exists").and_then(Value::as_bool).unwrap_or(true);
        let current = reply.get("current").and_then(Value::as_object).cloned().unwrap_or_default();
        let want_purged = r.purged();
        let change = |cur: bool, want: bool| AttributeChange { current: cur.into(), desired: want.into() };
        let changes = match (exists, want_purged) {
            (false, true) => BTreeMap::new(),
            (false, false) => BTreeMap::from([("purged".to_string(), change(true, false))]),
            (true, true) => BTreeMap::from([("purged".to_string(), change(false, true))]),
            (true, false) => match parse_changes(&reply)? {
                // A handler may compute the diff itself; otherwise compare `current` with the resource.
                given if !given.is_empty() => given,
                _ => diff_attributes(&current, &r.attributes),
            },
        };
        for (k, v) in &changes {
            ctx.add_change(k, v.current.clone(), v.desired.clone());
        }
        if changes.is_empty() || ctx.is_dry_run() {
            return Ok(());
        }
        let mut extra = Map::new();
        extra.insert("changes".into(), changes_json(&changes));
        let (action, kind) = match (exists, want_purged) {
            (false, _) => ("create", Change::Created),
            (true, true) => ("delete", Change::Purged),
            (true, false) => ("update", Change::Updated),
        };
        self.call(ctx, action, r, extra)?;
        ctx.set_change(kind)
    }

    fn facts(&self, ctx: &mut HandlerContext<'_>, r: &ResourceRequest) -> Result<(), HandlerError> {
        self.call(ctx, "facts", r, Map::new()).map(drop)
    }
}
