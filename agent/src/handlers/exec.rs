//! `exec::Run` (handler `posix` in Inmanta): run a command unless `creates` exists, `unless`
//! succeeds or `onlyif` fails; run `reload` (or the command) when a dependency changed.
//!
//! Commands are split like a POSIX shell would split words (shlex) but never run through a shell;
//! use `exec::in_shell` in the model for pipes and redirections.

use std::time::Duration;

use serde_json::Value;

use crate::handler::{Change, Handler, HandlerContext, HandlerError};
use crate::host::{CommandOutput, CommandSpec};
use crate::resource::ResourceRequest;

/// Output kept in a log line, per stream.
const MAX_OUTPUT: usize = 64 * 1024;

pub(crate) struct RunHandler;

struct Settings {
    cwd: Option<String>,
    env: Vec<(String, String)>,
    timeout: Duration,
}

impl Settings {
    fn of(r: &ResourceRequest) -> Result<Settings, HandlerError> {
        let mut env = Vec::new();
        if let Some(Value::Object(vars)) = r.get("environment") {
            for (k, v) in vars {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                env.push((k.clone(), v));
            }
        }
        if let Some(path) = r.opt_str("path") {
            env.push(("PATH".into(), path.to_string()));
        }
        let secs = r.get("timeout").and_then(Value::as_f64).unwrap_or(300.0);
        if !secs.is_finite() || secs <= 0.0 {
            return Err(HandlerError::failed(format!("invalid timeout {secs}")));
        }
        Ok(Settings { cwd: r.opt_str("cwd").map(str::to_string), env, timeout: Duration::from_secs_f64(secs) })
    }

    fn spec(&self, command: &str) -> Result<CommandSpec, HandlerError> {
        let argv = shlex::split(command)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| HandlerError::failed(format!("cannot split command {command:?} into words")))?;
        Ok(CommandSpec { argv, cwd: self.cwd.clone(), env: self.env.clone(), stdin: None, timeout: Some(self.timeout) })
    }
}

fn clip(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_OUTPUT)]).into_owned();
    if bytes.len() > MAX_OUTPUT { format!("{text}\n[... {} more bytes]", bytes.len() - MAX_OUTPUT) } else { text }
}

impl RunHandler {
    fn exec(&self, ctx: &mut HandlerContext<'_>, s: &Settings, command: &str) -> Result<CommandOutput, HandlerError> {
        let spec = s.spec(command)?;
        let out = ctx
            .host()
            .run(&spec)
            .map_err(|e| HandlerError::failed(format!("cannot run {command:?} on {}: {e}", ctx.host().describe())))?;
        if out.timed_out {
            return Err(HandlerError::failed(format!("{command:?} timed out after {} s", s.timeout.as_secs_f64())));
        }
        Ok(out)
    }

    /// Runs a guard (`unless`, `onlyif`); true when it exits 0.
    fn check(&self, ctx: &mut HandlerContext<'_>, s: &Settings, command: &str) -> Result<bool, HandlerError> {
        let out = self.exec(ctx, s, command)?;
        ctx.debug(format!("{command:?} exited with {:?}", out.code));
        Ok(out.success())
    }

    /// Runs the command (or the reload command) and judges its exit code against `returns`.
    fn apply(
        &self,
        ctx: &mut HandlerContext<'_>,
        r: &ResourceRequest,
        s: &Settings,
        command: &str,
    ) -> Result<(), HandlerError> {
        let out = self.exec(ctx, s, command)?;
        let returns: Vec<i64> = match r.get("returns") {
            Some(Value::Array(codes)) => codes.iter().filter_map(|c| c.as_f64()).map(|c| c as i64).collect(),
            _ => vec![0],
        };
        let code = out.code.map(i64::from);
        let mut kwargs = serde_json::Map::new();
        kwargs.insert("stdout".into(), Value::String(clip(&out.stdout)));
        kwargs.insert("stderr".into(), Value::String(clip(&out.stderr)));
        kwargs.insert("returncode".into(), code.map(Value::from).unwrap_or(Value::Null));
        if code.is_some_and(|c| returns.contains(&c)) {
            ctx.log("INFO", format!("ran {command:?}: exit code {}", code.unwrap_or(-1)), kwargs);
            return ctx.set_change(Change::Updated);
        }
        let what = match code {
            Some(c) => format!("exit code {c}"),
            None => "killed by a signal".to_string(),
        };
        let msg = format!("{command:?} failed with {what} (expected one of {returns:?})");
        if r.bool("skip_on_fail") {
            ctx.log("WARNING", msg.clone(), kwargs);
            return Err(HandlerError::Skipped(msg));
        }
        ctx.log("ERROR", msg.clone(), kwargs);
        Err(HandlerError::Failed(msg))
    }
}

impl Handler for RunHandler {
    fn run(&self, ctx: &mut HandlerContext<'_>, r: &ResourceRequest) -> Result<(), HandlerError> {
        let command = r.str("command")?.to_string();
        let s = Settings::of(r)?;
        let reload = ctx.events().dependency_changed && r.get("receive_events").and_then(Value::as_bool) != Some(false);
        let mut should_run = !r.bool("reload_only");
        if should_run
            && let Some(creates) = r.opt_str("creates")
            && ctx.host().lstat(creates)?.is_some()
        {
            ctx.debug(format!("{creates} exists: not running"));
            should_run = false;
        }
        if should_run
            && let Some(unless) = r.opt_str("unless")
            && self.check(ctx, &s, unless)?
        {
            ctx.debug(format!("`unless` {unless:?} succeeded: not running"));
            should_run = false;
        }
        if should_run
            && let Some(onlyif) = r.opt_str("onlyif")
            && !self.check(ctx, &s, onlyif)?
        {
            ctx.debug(format!("`onlyif` {onlyif:?} failed: not running"));
            should_run = false;
        }
        let reload_cmd = r.opt_str("reload").map(str::to_string);
        // Without a separate reload command, a reload is just running the command (once).
        let run_reload = reload && (reload_cmd.is_some() || !should_run);
        if should_run {
            ctx.add_change("command", Value::Null, Value::String(command.clone()));
        }
        if run_reload {
            let cmd = reload_cmd.clone().unwrap_or_else(|| command.clone());
            ctx.add_change("reload", Value::Null, Value::String(cmd));
        }
        if ctx.is_dry_run() {
            return Ok(());
        }
        if should_run {
            self.apply(ctx, r, &s, &command)?;
        }
        if run_reload {
            let cmd = reload_cmd.unwrap_or(command);
            ctx.info(format!("a dependency changed: reloading with {cmd:?}"));
            self.apply(ctx, r, &s, &cmd)?;
        }
        Ok(())
    }
}
