//! The commands of a compile's stages (git, the export) as child processes: bounded by the
//! compile's deadline and, for the export, by an address-space limit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use orchestrator::compiles::StageResult;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

/// When a compile must be over, all stages together.
#[derive(Debug, Clone, Copy)]
pub(super) struct Deadline {
    at: Instant,
    /// The time limit it comes from ([server] compile-timeout), named when a command is killed.
    limit: Duration,
}

impl Deadline {
    pub(super) fn after(limit: Duration) -> Deadline {
        Deadline { at: Instant::now() + limit, limit }
    }
}

/// A command to run in a stage.
pub(super) struct Cmd {
    pub(super) program: PathBuf,
    pub(super) args: Vec<String>,
    pub(super) cwd: PathBuf,
    pub(super) env: BTreeMap<String, String>,
    /// Environment variables kept out of the report (the export's token).
    pub(super) secret_env: Vec<(&'static str, String)>,
    /// The address space the process may use, in bytes (the compile's memory limit).
    pub(super) address_space: Option<u64>,
}

impl Cmd {
    pub(super) fn git(cwd: &Path, args: &[&str]) -> Cmd {
        Cmd {
            program: "git".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: cwd.to_path_buf(),
            env: BTreeMap::new(),
            secret_env: Vec::new(),
            address_space: None,
        }
    }

    pub(super) fn display(&self) -> String {
        let mut parts = vec![self.program.display().to_string()];
        parts.extend(self.args.iter().map(|a| if a.contains(' ') { format!("'{a}'") } else { a.clone() }));
        parts.join(" ")
    }
}

/// Runs a command until it exits or the compile's deadline passes (then it is killed).
pub(super) async fn run(cmd: &Cmd, deadline: &Deadline) -> StageResult {
    let mut command = tokio::process::Command::new(&cmd.program);
    command
        .args(&cmd.args)
        .current_dir(&cmd.cwd)
        .envs(&cmd.env)
        .envs(cmd.secret_env.iter().map(|(k, v)| (*k, v)))
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            return StageResult {
                errstream: format!("cannot run {}: {e}", cmd.display()),
                returncode: Some(127),
                ..Default::default()
            };
        }
    };
    if let Some(limit) = cmd.address_space
        && let Err(e) = limit_address_space(child.id(), limit)
    {
        let _ = child.kill().await;
        return StageResult {
            errstream: format!("cannot limit the memory of {}: {e}", cmd.display()),
            returncode: Some(126),
            ..Default::default()
        };
    }
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let read_out = tokio::spawn(async move {
        let mut buf = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.read_to_end(&mut buf).await;
        }
        buf
    });
    let read_err = tokio::spawn(async move {
        let mut buf = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.read_to_end(&mut buf).await;
        }
        buf
    });
    let (returncode, note) = match tokio::time::timeout_at(deadline.at, child.wait()).await {
        Ok(Ok(status)) => match status.code() {
            Some(code) => (Some(i64::from(code)), String::new()),
            None => (None, format!("\nthe process was killed by a signal ({status})\n")),
        },
        Ok(Err(e)) => (None, format!("\ncannot wait for the process: {e}\n")),
        Err(_) => {
            let _ = child.kill().await;
            (
                None,
                format!(
                    "\nkilled: the compile exceeded its time limit of {} s ([server] compile-timeout)\n",
                    deadline.limit.as_secs()
                ),
            )
        }
    };
    let collect = |task: tokio::task::JoinHandle<Vec<u8>>| async move {
        match tokio::time::timeout(Duration::from_secs(5), task).await {
            Ok(Ok(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
            _ => String::new(),
        }
    };
    let outstream = collect(read_out).await;
    let mut errstream = collect(read_err).await;
    errstream.push_str(&note);
    if let Some(limit) = cmd.address_space
        && returncode.is_none()
        && errstream.contains(ALLOCATION_FAILED)
    {
        errstream.push_str(&out_of_memory(limit));
    }
    StageResult { outstream, errstream, returncode }
}

/// What a Rust process prints on stderr before it aborts when an allocation fails.
const ALLOCATION_FAILED: &str = "memory allocation of ";

/// The last line of a compile stopped by its address-space limit: it becomes the compile's message.
fn out_of_memory(limit: u64) -> String {
    format!(
        "\nstopped: the compile ran out of memory at its limit of {} MiB of address space ([server] \
         compile-memory-limit); the compiler's own budget ([compiler] max-memory) did not stop it first\n",
        limit >> 20
    )
}

/// Caps the address space of the started process `pid` (and of what it starts: they inherit it),
/// so a compile that runs away fails alone instead of exhausting the server's machine.
fn limit_address_space(pid: Option<u32>, bytes: u64) -> std::io::Result<()> {
    use rustix::process::{Pid, Resource, Rlimit, prlimit};
    let pid =
        pid.and_then(|p| Pid::from_raw(p as i32)).ok_or_else(|| std::io::Error::other("the process has exited"))?;
    prlimit(Some(pid), Resource::As, Rlimit { current: Some(bytes), maximum: Some(bytes) })?;
    Ok(())
}

/// A stage that did not end with return code 0 stops the compile with this message.
pub(super) fn check(name: &str, result: &StageResult) -> Result<(), String> {
    if result.returncode == Some(0) {
        return Ok(());
    }
    // The last few lines, whole: git ends a sentence over two ("... access rights\nand the
    // repository exists."), and half of it reads as nonsense.
    let lines: Vec<&str> = result.errstream.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let last = lines[lines.len().saturating_sub(3)..].join(" ");
    Err(match result.returncode {
        Some(code) => format!("stage {name} failed with return code {code}: {last}"),
        None => format!("stage {name} did not finish: {last}"),
    })
}
