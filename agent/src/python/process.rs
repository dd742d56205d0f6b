//! One Python executor process: started with the shim, spoken to in JSON lines, killed with
//! everything it started when a call runs past its time limit.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::protocol::{self, Hello, Incoming, LoadAnswer, Numbered, Outgoing, Request, ServerAnswer, ServerCall};
use crate::references::Secrets;

/// How many lines of the process's stderr are kept to explain a crash.
const STDERR_LINES: usize = 40;

/// Why a call got no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    /// The handler ran past the time limit; the process was killed.
    #[error("the handler did not finish within {0:?}; its executor process was killed")]
    TimedOut(Duration),
    /// The process exited (or could not be written to) before answering.
    #[error("the Python executor process died while running the handler ({0})")]
    Died(String),
    /// The process wrote a line that is not the protocol; it was killed.
    #[error("the Python executor broke the protocol, so its process was stopped: {0}")]
    Protocol(String),
}

/// What to start: the interpreter and the shim. A process starts without code (it imports
/// inmanta-core and waits); [`PythonProcess::load`] then gives it its code and environment.
pub struct Launch<'a> {
    pub python: &'a Path,
    pub shim: &'a Path,
    pub start_timeout: Duration,
}

/// What a started process is given to run: one environment's version of the module code.
pub struct Load<'a> {
    /// Directories put first on `sys.path` (the version's shipped module code).
    pub code_dirs: Vec<PathBuf>,
    /// Modules whose `inmanta_plugins.<name>` package is imported.
    pub modules: Vec<String>,
    pub environment: &'a str,
}

/// What the process said when it was ready.
#[derive(Debug, Clone)]
pub struct Ready {
    pub python: String,
    pub inmanta_core: String,
    /// Module name -> Python traceback of its failed import (filled by [`PythonProcess::load`]).
    pub import_errors: Vec<(String, String)>,
}

pub struct PythonProcess {
    child: Child,
    stdin: ChildStdin,
    replies: Receiver<String>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// The values the references of this process's resources resolved to: redacted from its
    /// stderr before a line is logged or kept (see [`PythonProcess::call_serving`]).
    secrets: Arc<Mutex<Secrets>>,
    next_id: u64,
}

impl PythonProcess {
    pub fn start(launch: &Launch<'_>) -> Result<(PythonProcess, Ready), String> {
        let mut command = Command::new(launch.python);
        command
            .arg("-u")
            .arg(launch.shim)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so a kill takes the handler's children (apt-get, ...) too.
            .process_group(0);
        let python = launch.python.display();
        let mut child = command.spawn().map_err(|e| format!("cannot start the Python executor {python}: {e}"))?;
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            return Err("the Python executor has no pipes".into());
        };
        let (send, replies) = channel();
        std::thread::Builder::new()
            .name("python-executor-out".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if send.send(line).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| format!("cannot start a reader thread: {e}"))?;
        let tail: Arc<Mutex<VecDeque<String>>> = Arc::default();
        let keep = tail.clone();
        let secrets: Arc<Mutex<Secrets>> = Arc::default();
        let redact = secrets.clone();
        std::thread::Builder::new()
            .name("python-executor-err".into())
            .spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    let line = match redact.lock() {
                        Ok(secrets) => secrets.redact_str(&line).into_owned(),
                        Err(_) => "<a line of the Python executor, not shown: its redaction failed>".into(),
                    };
                    tracing::debug!(target: "agent::python", "{line}");
                    if let Ok(mut tail) = keep.lock() {
                        if tail.len() == STDERR_LINES {
                            tail.pop_front();
                        }
                        tail.push_back(line);
                    }
                }
            })
            .map_err(|e| format!("cannot start a reader thread: {e}"))?;
        let mut process = PythonProcess { child, stdin, replies, stderr: tail, secrets, next_id: 0 };
        let hello: Hello = match process.receive(launch.start_timeout) {
            Ok(hello) => hello,
            Err(CallError::TimedOut(t)) => {
                return Err(format!("the Python executor ({python}) was not ready within {t:?}: {}", process.tail()));
            }
            Err(CallError::Died(why) | CallError::Protocol(why)) => {
                return Err(format!("the Python executor ({python}) did not start: {why}"));
            }
        };
        if !hello.ready {
            process.kill();
            return Err(hello.error.unwrap_or_else(|| "no reason given".into()));
        }
        let unknown = || "unknown".to_string();
        let ready = Ready {
            python: hello.python.unwrap_or_else(unknown),
            inmanta_core: hello.inmanta_core.unwrap_or_else(unknown),
            import_errors: Vec::new(),
        };
        Ok((process, ready))
    }

    /// Gives a started process its code: it imports the modules and reports those that failed.
    pub fn load(&mut self, load: &Load<'_>, timeout: Duration) -> Result<Vec<(String, String)>, String> {
        let request = Request::Load {
            code: load.code_dirs.iter().map(|d| d.display().to_string()).collect(),
            load: load.modules.clone(),
            environment: load.environment.to_string(),
        };
        let reply: LoadAnswer = self.call(request, timeout).map_err(|e| match e {
            CallError::TimedOut(t) => format!("the Python executor did not import its modules within {t:?}"),
            CallError::Died(why) => format!("the Python executor died while importing its modules ({why})"),
            e @ CallError::Protocol(_) => format!("while the Python executor imported its modules, {e}"),
        })?;
        if !reply.loaded {
            let why = reply.error.as_deref().unwrap_or("no reason given");
            self.kill();
            return Err(format!("the Python executor did not load its modules: {why}"));
        }
        Ok(reply.errors.unwrap_or_default().into_iter().collect())
    }

    /// Sends one request and waits for its reply; on a time-out the process is killed and must
    /// not be used again.
    pub fn call<R: DeserializeOwned>(&mut self, request: Request, timeout: Duration) -> Result<R, CallError> {
        self.call_serving(request, timeout, &mut |_| ServerAnswer::new(501, json!({"message": "no server here"})))
    }

    /// [`PythonProcess::call`], answering the server calls the handler makes meanwhile (a file
    /// or the facts a reference needs): the process writes `{"server_call": {...}}` and reads the
    /// next line of its stdin, `{"server_answer": {"code": ..., "result": ...}}`, which `serve`
    /// gives. One call is the process's own: [`ServerCall::Redact`], the values a resource's
    /// references resolved to, sent before its handler runs, so that what the handler (or a
    /// program it starts) then prints to stderr is redacted before it is logged. They are kept
    /// for the life of the process: a line may still be in the pipe.
    pub fn call_serving<R: DeserializeOwned>(
        &mut self,
        request: Request,
        timeout: Duration,
        serve: &mut dyn FnMut(&ServerCall) -> ServerAnswer,
    ) -> Result<R, CallError> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&Outgoing::Request(&Numbered { id, body: request }))?;
        loop {
            match self.receive::<Incoming<R>>(timeout)? {
                Incoming::ServerCall(ServerCall::Redact { values }) => {
                    if let Ok(mut secrets) = self.secrets.lock() {
                        for value in &values {
                            secrets.add_value(value);
                        }
                    }
                    let answer = ServerAnswer::new(200, json!({}));
                    self.send(&Outgoing::ServerAnswer { server_answer: &answer })?;
                }
                Incoming::ServerCall(call) => {
                    let answer = serve(&call);
                    self.send(&Outgoing::ServerAnswer { server_answer: &answer })?;
                }
                // A reply to an earlier request that timed out cannot arrive (that process is
                // killed), but a line with another id is skipped rather than misread.
                Incoming::Reply(reply) if reply.id == id => return Ok(reply.body),
                Incoming::Reply(_) => {}
            }
        }
    }

    fn send(&mut self, message: &impl Serialize) -> Result<(), CallError> {
        let mut line = protocol::to_line(message);
        line.push('\n');
        if let Err(e) = self.stdin.write_all(line.as_bytes()).and_then(|()| self.stdin.flush()) {
            return Err(CallError::Died(format!("{e}; {}", self.exit_and_tail())));
        }
        Ok(())
    }

    fn receive<T: DeserializeOwned>(&mut self, timeout: Duration) -> Result<T, CallError> {
        match self.replies.recv_timeout(timeout) {
            Ok(line) => protocol::parse_line(&line).map_err(|e| {
                self.kill();
                CallError::Protocol(e)
            }),
            Err(RecvTimeoutError::Timeout) => {
                self.kill();
                Err(CallError::TimedOut(timeout))
            }
            Err(RecvTimeoutError::Disconnected) => Err(CallError::Died(self.exit_and_tail())),
        }
    }

    /// Whether the process still runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the process group and reaps the process.
    pub fn kill(&mut self) {
        let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", self.child.id())]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn exit_and_tail(&mut self) -> String {
        let status = match self.child.wait() {
            Ok(status) => match (status.code(), std::os::unix::process::ExitStatusExt::signal(&status)) {
                (Some(code), _) => format!("exit code {code}"),
                (None, Some(signal)) => format!("killed by signal {signal}"),
                _ => status.to_string(),
            },
            Err(e) => format!("unknown exit: {e}"),
        };
        format!("{status}; {}", self.tail())
    }

    fn tail(&self) -> String {
        // The reader thread may still be draining the last lines.
        std::thread::sleep(Duration::from_millis(20));
        let lines: Vec<String> = self.stderr.lock().map(|t| t.iter().cloned().collect()).unwrap_or_default();
        if lines.is_empty() { "no output on stderr".into() } else { format!("stderr:\n{}", lines.join("\n")) }
    }
}

impl Drop for PythonProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in executor (a real Python process speaking the shim's protocol): it asks the
    /// agent to redact a value, prints it to stderr, and exits; the stderr kept to explain the
    /// exit shows it redacted.
    #[test]
    fn stderr_is_redacted_once_the_values_are_announced() {
        let dir = tempfile::tempdir().unwrap();
        let shim = dir.path().join("shim.py");
        std::fs::write(
            &shim,
            r#"import json, sys
print(json.dumps({"ready": True, "python": "3", "inmanta_core": "20.1.0"}), flush=True)
request = json.loads(sys.stdin.readline())
print(json.dumps({"server_call": {"method": "redact", "values": ["h31-stderr-secret"]}}), flush=True)
sys.stdin.readline()
print("the handler printed h31-stderr-secret here", file=sys.stderr, flush=True)
sys.exit(7)
"#,
        )
        .unwrap();
        let python = PathBuf::from("python3");
        let launch = Launch { python: &python, shim: &shim, start_timeout: Duration::from_secs(30) };
        let (mut process, _) = PythonProcess::start(&launch).unwrap();
        let request = Request::Deploy(protocol::HandlerRequest { resource: json!({}), dependency_changed: false });
        let err = process.call::<protocol::HandlerReply>(request, Duration::from_secs(30)).unwrap_err().to_string();
        assert!(err.contains("exit code 7"), "{err}");
        assert!(err.contains("the handler printed *** here"), "{err}");
        assert!(!err.contains("h31-stderr-secret"), "{err}");
    }
}
