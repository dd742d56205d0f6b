//! The long-lived Python process of one compile (the package `inmanta_rs_bridge/`, written to
//! disk by [`super::package`]), and its line-framed JSON protocol. The compiler sends a request;
//! Python may ask questions back (attribute reads, entity type parents, typedef checks, calls of
//! the compiler's own plugins, files to upload) before it gives the final answer. Answering a question may need Python again (a typedef
//! constraint that calls a Python plugin): the compiler then sends a new request instead of the
//! reply, and Python serves it before it goes on waiting, so requests nest like calls.
//!
//! Each turn of Python (from our line to its next one) has a time limit: a watchdog thread kills
//! the process when it runs past it, so a plugin that never returns fails the compile with a
//! message instead of holding it.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value as Json};

use super::protocol::{
    self, Answer, FromPython, GetReply, Outcome, Question, QuestionReply, Ready, Request, TypeReply,
};

/// The `python -c` program that runs the bridge from the package directory `{dir}`. The package
/// is imported from its directory, not from `sys.path`: the modules' code sees the `sys.path` of a
/// `python -c` (the working directory first, unless `PYTHONSAFEPATH` says otherwise), as when the
/// bridge was one script. These frames are `<string>`, which errors skip as the bridge's own.
const LAUNCHER: &str = r#"def _start(d):
    import importlib.util, sys
    spec = importlib.util.spec_from_file_location("{package}", d + "/__init__.py", submodule_search_locations=[d])
    package = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = package
    spec.loader.exec_module(package)
    from {package}.main import main
    main()
_start({dir})
"#;

fn launcher(package: &Path) -> Result<String, String> {
    let dir = package.to_str().ok_or_else(|| format!("the bridge's directory {} is no UTF-8", package.display()))?;
    // a JSON string is a Python string literal too
    Ok(LAUNCHER.replace("{package}", super::package::PACKAGE).replace("{dir}", &Json::from(dir).to_string()))
}

/// Answers the questions Python asks while it serves a request (see [`Question`] for each).
pub(crate) trait Questions {
    /// An attribute read, answered like a read in the model.
    fn get(&mut self, instance: u32, attribute: &str) -> GetReply;
    /// The shape of `entity`.
    fn entity_type(&mut self, entity: &str) -> TypeReply;
    /// A file a resource mapper uploads (`Exporter.upload_file`).
    fn file(&mut self, hash: String, content: Vec<u8>);
    /// Whether `value` is of the model's typedef (its base type and constraint); `None` when
    /// `typedef` is no typedef.
    fn conforms(&mut self, typedef: &str, value: &Json) -> Option<bool>;
    /// A plugin of the model called from Python (Jinja filters, `Compiler.get_plugins()`).
    fn call(&mut self, plugin: &str, args: &[Json], kwargs: &Map<String, Json>) -> Outcome<Json>;
    /// The plugins the compiler runs itself (native ones), which Python's
    /// `Compiler.get_plugins()` lists beside the modules' Python ones.
    fn plugins(&mut self) -> Vec<String>;
}

/// The least time Python gets to start and import the modules' code.
pub(crate) const START_LIMIT: Duration = Duration::from_secs(300);

/// Why a request got no answer.
#[derive(Debug)]
pub(crate) enum BridgeError {
    /// Python did not answer within the time limit; the process was killed.
    TimedOut(Duration),
    /// The process stopped, or wrote something that is not the protocol.
    Failed(String),
}

impl std::fmt::Display for BridgeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BridgeError::TimedOut(limit) => write!(
                f,
                "Python did not answer within {} s, so its process was stopped (the limit is \
                 INMANTA_COMPILER_PLUGIN_TIMEOUT, in seconds)",
                limit.as_secs()
            ),
            BridgeError::Failed(m) => f.write_str(m),
        }
    }
}

impl From<String> for BridgeError {
    fn from(m: String) -> Self {
        BridgeError::Failed(m)
    }
}

/// Kills the process when a turn of Python runs past its deadline. The deadline is an atomic the
/// compile thread sets before each read (no lock, no wake-up: the watchdog looks a few times per
/// limit), so a fast call costs two atomic stores.
struct Watchdog {
    epoch: Instant,
    /// Milliseconds since `epoch` by which Python must answer; 0 while it is not its turn.
    deadline: AtomicU64,
    fired: AtomicBool,
    stop: AtomicBool,
}

impl Watchdog {
    fn start(pid: u32, limit: Duration) -> Arc<Watchdog> {
        let dog = Arc::new(Watchdog {
            epoch: Instant::now(),
            deadline: AtomicU64::new(0),
            fired: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        let watch = dog.clone();
        let tick = (limit / 8).clamp(Duration::from_millis(10), Duration::from_secs(1));
        let spawned = std::thread::Builder::new().name("python-watchdog".into()).spawn(move || {
            while !watch.stop.load(Ordering::Relaxed) {
                std::thread::sleep(tick);
                let deadline = watch.deadline.load(Ordering::Relaxed);
                if deadline != 0 && watch.now_ms() > deadline {
                    watch.fired.store(true, Ordering::Relaxed);
                    // the whole process group: what the plugin started goes too
                    let _ = Command::new("kill").args(["-KILL", "--", &format!("-{pid}")]).status();
                    return;
                }
            }
        });
        if spawned.is_err() {
            // without a watchdog the compile still works, only without the limit
            dog.stop.store(true, Ordering::Relaxed);
        }
        dog
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64 + 1
    }
}

/// The Python process and its pipes; `None` only while a forked compile's bridge is given back
/// (see `spare.rs`).
struct Process {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

pub(crate) struct Bridge {
    process: Option<Process>,
    /// Set when this bridge serves a compile from a fork of a loaded Python: at its end the
    /// loaded Python is kept for the next compile instead of stopped.
    pub(super) fork_of: Option<super::spare::LoadedPython>,
    /// The interpreter's version, from its first line.
    pub version: String,
    line: String,
    limit: Duration,
    /// The longest answer read from Python, in bytes (the compile's memory budget).
    max_answer: u64,
    watchdog: Arc<Watchdog>,
}

impl Bridge {
    /// Starts `python` on the bridge's package in `cwd` and waits for it to be ready. Until
    /// [`Bridge::set_limit`], a turn may take `limit` or [`START_LIMIT`], whichever is longer
    /// (importing the modules' code is slow on a busy machine, and is no plugin call).
    pub(crate) fn start(python: &Path, cwd: &Path, limit: Duration) -> Result<Bridge, BridgeError> {
        let limit = limit.max(START_LIMIT);
        let package = super::package::package_dir()?;
        let mut child = Command::new(python)
            .arg("-c")
            .arg(launcher(&package)?)
            .current_dir(cwd)
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // its own process group, so that the watchdog stops what a plugin started too
            .process_group(0)
            .spawn()
            .map_err(|e| format!("can not start {}: {e}", python.display()))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err(BridgeError::Failed("the Python process has no pipes".into()));
        };
        let watchdog = Watchdog::start(child.id(), limit);
        let mut bridge = Bridge {
            process: Some(Process { child, input, output: BufReader::new(output) }),
            fork_of: None,
            version: String::new(),
            line: String::new(),
            limit,
            max_answer: u64::MAX,
            watchdog,
        };
        let ready: Ready = bridge.read()?;
        bridge.version = ready.ready;
        Ok(bridge)
    }

    /// The most bytes one answer of Python may have: a plugin that returns a value past the
    /// compile's memory budget fails the compile instead of being read into memory.
    pub(crate) fn set_max_answer(&mut self, bytes: u64) {
        self.max_answer = bytes;
    }

    /// The time limit of every later turn of Python.
    pub(crate) fn set_limit(&mut self, limit: Duration) {
        self.limit = limit;
    }

    /// The process id of the Python serving this bridge (for a fork: the loaded Python's).
    #[cfg(test)]
    pub(crate) fn pid(&self) -> u32 {
        self.process.as_ref().map(|p| p.child.id()).unwrap_or_default()
    }

    fn process(&mut self) -> &mut Process {
        self.process.as_mut().expect("a bridge has its process until it is dropped")
    }

    fn write(&mut self, msg: &impl Serialize) -> Result<(), String> {
        let mut text = protocol::to_line(msg)?;
        text.push('\n');
        let input = &mut self.process().input;
        input
            .write_all(text.as_bytes())
            .and_then(|_| input.flush())
            .map_err(|e| format!("the Python process stopped ({e})"))
    }

    pub(super) fn read<T: DeserializeOwned>(&mut self) -> Result<T, BridgeError> {
        self.line.clear();
        self.watchdog.deadline.store(self.watchdog.now_ms() + self.limit.as_millis() as u64, Ordering::Relaxed);
        let process = self.process.as_mut().expect("a bridge has its process until it is dropped");
        let read = std::io::Read::take(&mut process.output, self.max_answer).read_line(&mut self.line);
        self.watchdog.deadline.store(0, Ordering::Relaxed);
        if self.watchdog.fired.load(Ordering::Relaxed) {
            return Err(BridgeError::TimedOut(self.limit));
        }
        Ok(match read {
            Ok(n) if n as u64 == self.max_answer && !self.line.ends_with('\n') => Err(format!(
                "the Python process answered with more than {n} bytes, past the compile's memory budget ([compiler] \
                 max-memory or INMANTA_COMPILER_MAX_MEMORY)"
            )),
            Ok(0) => {
                let status = self.process().child.wait().map(|s| s.to_string()).unwrap_or_default();
                Err(format!("the Python process exited ({status}); its error output is above"))
            }
            Ok(_) => protocol::parse_line(&self.line),
            Err(e) => Err(format!("can not read from the Python process: {e}")),
        }?)
    }

    /// Sends a request and answers Python's questions until its final answer.
    pub(crate) fn request<T: DeserializeOwned>(
        &mut self,
        request: &Request<'_>,
        questions: &mut dyn Questions,
    ) -> Result<Answer<T>, BridgeError> {
        self.send(request)?;
        loop {
            match self.receive()? {
                FromPython::Question(question) => self.send(&answer_question(question, questions))?,
                FromPython::Answer(answer) => return Ok(answer),
            }
        }
    }

    /// Sends one line: a request, or the reply to Python's question. A request sent while Python
    /// waits for a reply is served first (a plugin call made while answering a question of
    /// another: a typedef constraint calling a plugin, a Jinja filter that is a plugin).
    pub(crate) fn send(&mut self, msg: &impl Serialize) -> Result<(), BridgeError> {
        Ok(self.write(msg)?)
    }

    /// The next line of Python: a question ([`answer_question`] answers it) or the final answer
    /// of the request being served, whose value is a `T`.
    pub(crate) fn receive<T: DeserializeOwned>(&mut self) -> Result<FromPython<T>, BridgeError> {
        self.read()
    }
}

/// The reply to one of Python's questions.
pub(crate) fn answer_question(question: Question, questions: &mut dyn Questions) -> QuestionReply {
    match question {
        Question::Get { instance, attribute } => QuestionReply::Get(questions.get(instance, &attribute)),
        Question::Type(entity) => QuestionReply::Type(questions.entity_type(&entity)),
        Question::Conforms { typedef, value } => QuestionReply::Conforms { ok: questions.conforms(&typedef, &value) },
        Question::Call { plugin, args, kwargs } => QuestionReply::Call(questions.call(&plugin, &args, &kwargs)),
        Question::Plugins => QuestionReply::Plugins { ok: questions.plugins() },
        Question::File { hash, content } => {
            questions.file(hash, content);
            QuestionReply::File {}
        }
    }
}

impl Bridge {
    /// The same Python process under a new owner, for the loaded Python a forked compile gives
    /// back (its watchdog goes with it).
    pub(super) fn take_process(&mut self) -> Option<Bridge> {
        let process = self.process.take()?;
        Some(Bridge {
            process: Some(process),
            fork_of: None,
            version: self.version.clone(),
            line: String::new(),
            limit: self.limit,
            max_answer: u64::MAX,
            watchdog: self.watchdog.clone(),
        })
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        if let Some(loaded) = self.fork_of.take() {
            if let Some(parent) = self.take_process() {
                super::spare::give_back(parent, loaded);
            }
            return;
        }
        let Some(mut process) = self.process.take() else {
            return; // the process has another owner now
        };
        // nothing to flush on the Python side: stopping it is immediate
        self.watchdog.stop.store(true, Ordering::Relaxed);
        let _ = process.child.kill();
        let _ = process.child.wait();
    }
}
