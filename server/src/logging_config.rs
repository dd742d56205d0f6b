//! Inmanta's logging configuration files: `inmanta --logging-config FILE server`, `[logging]
//! server`, `[config] logging_config` and their environment variables, read as inmanta-core
//! 20.1 reads them (`inmanta/logging.py`): a YAML file in the schema of Python's
//! `logging.config.dictConfig` (version 1), a template when its name ends in `.tmpl`.
//!
//! The file is turned into a tracing layer that does what Python's logging would do with it:
//! a record goes to the handlers of its logger and of the loggers above it (until one says
//! `propagate: false`) when its level reaches the logger's effective level and the handler's
//! own level; the formatter's `%(name)s`-style fields are filled in per line.
//!
//! A logger's name is the event's tracing target with `::` read as `.`
//! (`orchestrator.scheduler`); `inmanta` stands above the loggers of this binary's own crates, so
//! `loggers: {inmanta: {level: DEBUG}}` means what it means on Inmanta. Handlers Inmanta's own
//! defaults name for Tornado are accepted and drop their records (there is no Tornado here); a
//! class this server does not implement is refused with the classes it does.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use anyhow::{Context, bail};
use serde_norway::Value;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::Context as LayerContext;

use crate::log_writer::LogWriter;

/// Python's level numbers, Inmanta's TRACE (3) included.
const TRACE: u32 = 3;
const DEBUG: u32 = 10;
const INFO: u32 = 20;
const WARNING: u32 = 30;
const ERROR: u32 = 40;
const CRITICAL: u32 = 50;

/// The crates of this binary: `inmanta` is their common parent logger.
const OWN_CRATES: &[&str] = &["agent", "api", "app", "compiler", "lsp", "orchestrator", "server", "service", "inmanta"];

/// Where a logging configuration comes from, in Inmanta's order of precedence.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    File(PathBuf),
    /// An environment variable that holds the YAML itself (`*_CONTENT`, or `*_TMPL` for a template).
    EnvVar(String),
}

impl Source {
    /// The source for `component` (server, scheduler, compiler), or None: the flag
    /// `--logging-config`, then `INMANTA_LOGGING_<COMPONENT>_CONTENT`/`_TMPL`, then
    /// `[logging] <component>` (or `INMANTA_LOGGING_<COMPONENT>`), then the same for
    /// `[config] logging_config` (`INMANTA_CONFIG_LOGGING_CONFIG...`).
    pub fn find(
        flag: Option<&Path>,
        component: Option<&str>,
        option: impl Fn(&str, &str) -> Option<String>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Option<Source> {
        if let Some(file) = flag {
            return Some(Source::File(file.to_path_buf()));
        }
        let by = |base: &str, section: &str, key: &str| -> Option<Source> {
            let content = format!("{base}_CONTENT");
            let template = format!("{base}_TMPL");
            if env(&content).is_some() {
                return Some(Source::EnvVar(content));
            }
            if env(&template).is_some() {
                return Some(Source::EnvVar(template));
            }
            option(section, key).filter(|v| !v.trim().is_empty()).map(|v| Source::File(PathBuf::from(v.trim())))
        };
        component
            .and_then(|component| {
                by(&format!("INMANTA_LOGGING_{}", component.to_ascii_uppercase()), "logging", component)
            })
            .or_else(|| by("INMANTA_CONFIG_LOGGING_CONFIG", "config", "logging-config"))
    }

    fn is_template(&self) -> bool {
        match self {
            Source::File(path) => path.to_string_lossy().ends_with(".tmpl"),
            Source::EnvVar(name) => name.ends_with("_TMPL"),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Source::File(path) => format!("file {}", path.display()),
            Source::EnvVar(name) => format!("environment variable {name}"),
        }
    }

    /// The YAML text, a template filled in from `context` (Python's `str.format`).
    pub fn read(&self, context: &BTreeMap<String, String>) -> anyhow::Result<String> {
        let text = match self {
            Source::File(path) => std::fs::read_to_string(path).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => anyhow::anyhow!("logging config file {} doesn't exist", path.display()),
                _ => anyhow::anyhow!("cannot read logging config file {}: {e}", path.display()),
            })?,
            Source::EnvVar(name) => std::env::var(name)
                .map_err(|_| anyhow::anyhow!("environment variable {name} is not set or not UTF-8"))?,
        };
        if self.is_template() { render_template(&text, context, &self.describe()) } else { Ok(text) }
    }
}

/// Python's `str.format(**context)` for `{name}` fields, `{{` and `}}` for braces.
fn render_template(template: &str, context: &BTreeMap<String, String>, source: &str) -> anyhow::Result<String> {
    let mut out = String::with_capacity(template.len());
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                out.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                out.push('}');
            }
            '{' => {
                let name: String = chars.by_ref().take_while(|c| *c != '}').collect();
                match context.get(name.trim()) {
                    Some(value) => out.push_str(value),
                    None => {
                        let known: Vec<&str> = context.keys().map(String::as_str).collect();
                        bail!(
                            "the logging configuration template from {source} refers to context variable {:?}, but \
                             this variable is not available; the context is limited to [{}]",
                            name.trim(),
                            known.join(", ")
                        )
                    }
                }
            }
            '}' => {
                bail!("the logging configuration template from {source} has a single '}}': write '}}}}' for a brace")
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

/// A parsed configuration: what each logger does with a record.
#[derive(Debug)]
pub struct LoggingConfig {
    handlers: BTreeMap<String, HandlerSpec>,
    loggers: BTreeMap<String, LoggerSpec>,
    root: LoggerSpec,
}

#[derive(Debug, Default, Clone)]
struct LoggerSpec {
    /// None: NOTSET, the parent's level applies.
    level: Option<u32>,
    handlers: Vec<String>,
    propagate: bool,
}

#[derive(Debug)]
struct HandlerSpec {
    level: u32,
    formatter: Formatter,
    output: Output,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Output {
    Stdout,
    Stderr,
    /// `WatchedFileHandler` reopens the file when logrotate moved it; `FileHandler` keeps it.
    File {
        path: PathBuf,
        truncate: bool,
        watched: bool,
    },
    /// Inmanta's Tornado debug handler and `logging.NullHandler`: records are dropped.
    Discard,
}

impl LoggingConfig {
    pub fn parse(yaml: &str, source: &str) -> anyhow::Result<LoggingConfig> {
        let value: Value = serde_norway::from_str(yaml).with_context(|| format!("cannot parse {source} as YAML"))?;
        LoggingConfig::from_value(&value).with_context(|| format!("logging config from {source}"))
    }

    fn from_value(value: &Value) -> anyhow::Result<LoggingConfig> {
        let Value::Mapping(top) = value else { bail!("the file must be a mapping (Python's dictConfig schema)") };
        let get = |key: &str| top.get(Value::String(key.into()));
        match get("version") {
            Some(Value::Number(n)) if n.as_u64() == Some(1) => {}
            Some(other) => bail!("version must be 1 (the only dictConfig schema), got {}", show(other)),
            None => bail!("version: 1 is missing (Python's dictConfig needs it)"),
        }
        if get("incremental").and_then(Value::as_bool) == Some(true) {
            bail!("incremental: true is not supported: give the whole configuration");
        }
        for key in top.keys() {
            let key = key.as_str().unwrap_or_default();
            if ![
                "version",
                "formatters",
                "handlers",
                "loggers",
                "root",
                "disable_existing_loggers",
                "incremental",
                "filters",
            ]
            .contains(&key)
            {
                bail!("unknown key {key:?} (dictConfig has version, formatters, filters, handlers, loggers, root)");
            }
        }
        if let Some(filters) = get("filters").and_then(Value::as_mapping).filter(|m| !m.is_empty()) {
            let names: Vec<&str> = filters.keys().filter_map(Value::as_str).collect();
            bail!("filters are not supported here ({}): set levels on loggers and handlers instead", names.join(", "));
        }
        let mut formatters = BTreeMap::new();
        for (name, spec) in mapping(get("formatters"), "formatters")? {
            formatters.insert(name.clone(), Formatter::parse(spec).with_context(|| format!("formatter {name:?}"))?);
        }
        let mut handlers = BTreeMap::new();
        for (name, spec) in mapping(get("handlers"), "handlers")? {
            let handler = HandlerSpec::parse(spec, &formatters).with_context(|| format!("handler {name:?}"))?;
            handlers.insert(name.clone(), handler);
        }
        let mut loggers = BTreeMap::new();
        for (name, spec) in mapping(get("loggers"), "loggers")? {
            let logger = LoggerSpec::parse(spec, &handlers).with_context(|| format!("logger {name:?}"))?;
            loggers.insert(name.clone(), logger);
        }
        let root = match get("root") {
            Some(spec) => {
                let mut root = LoggerSpec::parse(spec, &handlers).context("root")?;
                // The root logger's NOTSET lets everything through, as in Python.
                root.level = Some(root.level.unwrap_or(0));
                root
            }
            None => LoggerSpec { level: Some(WARNING), handlers: Vec::new(), propagate: false },
        };
        Ok(LoggingConfig { handlers, loggers, root })
    }

    /// Inmanta's `-v` beside a logging config (`force_cli`): a console handler on the root at
    /// that level, the root lowered to it if it was higher.
    pub fn add_console(&mut self, level: Level) {
        let number = python_level(level);
        let name = "inmanta_cli_handler".to_string();
        let formatter = Formatter::plain("%(name)-25s%(levelname)-8s%(message)s");
        self.handlers.insert(name.clone(), HandlerSpec { level: number, formatter, output: Output::Stderr });
        self.root.handlers.push(name);
        self.root.level = Some(self.root.level.unwrap_or(0).min(number));
    }

    /// The layer that applies the configuration, and the writers to drain at exit.
    pub fn into_layer(self) -> anyhow::Result<(DictConfigLayer, Vec<LogWriter>)> {
        let mut writers: HashMap<Output, LogWriter> = HashMap::new();
        let mut handlers = BTreeMap::new();
        for (name, spec) in self.handlers {
            let writer = match &spec.output {
                Output::Discard => None,
                output => Some(match writers.get(output) {
                    Some(writer) => writer.clone(),
                    None => {
                        let writer = LogWriter::spawn(open(output).with_context(|| format!("handler {name:?}"))?);
                        writers.insert(output.clone(), writer.clone());
                        writer
                    }
                }),
            };
            handlers.insert(name, Arc::new(Handler { level: spec.level, formatter: spec.formatter, writer }));
        }
        let layer =
            DictConfigLayer { handlers, loggers: self.loggers, root: self.root, routes: RwLock::new(HashMap::new()) };
        Ok((layer, writers.into_values().collect()))
    }
}

fn show(value: &Value) -> String {
    serde_norway::to_string(value).map(|s| s.trim().to_string()).unwrap_or_else(|_| format!("{value:?}"))
}

fn mapping<'a>(value: Option<&'a Value>, what: &str) -> anyhow::Result<Vec<(String, &'a Value)>> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Mapping(m)) => m
            .iter()
            .map(|(k, v)| match k {
                Value::String(s) => Ok((s.clone(), v)),
                other => bail!("{what}: names must be text, got {}", show(other)),
            })
            .collect(),
        Some(other) => bail!("{what} must be a mapping of names, got {}", show(other)),
    }
}

fn text<'a>(spec: &'a serde_norway::Mapping, key: &str) -> anyhow::Result<Option<&'a str>> {
    match spec.get(Value::String(key.into())) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => bail!("{key} must be text, got {}", show(other)),
    }
}

/// A Python level: a name (DEBUG, INFO, WARNING/WARN, ERROR, CRITICAL/FATAL, TRACE, NOTSET) or a number.
fn parse_level(value: &Value) -> anyhow::Result<u32> {
    match value {
        Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()).context("a level number must be 0 or more"),
        Value::String(s) => match s.trim().to_ascii_uppercase().as_str() {
            "NOTSET" => Ok(0),
            "TRACE" => Ok(TRACE),
            "DEBUG" => Ok(DEBUG),
            "INFO" => Ok(INFO),
            "WARNING" | "WARN" => Ok(WARNING),
            "ERROR" => Ok(ERROR),
            "CRITICAL" | "FATAL" => Ok(CRITICAL),
            other => other.parse().map_err(|_| {
                anyhow::anyhow!("unknown level {s:?}: TRACE, DEBUG, INFO, WARNING, ERROR, CRITICAL, NOTSET or a number")
            }),
        },
        other => bail!("a level is a name or a number, got {}", show(other)),
    }
}

fn python_level(level: Level) -> u32 {
    match level {
        Level::TRACE => TRACE,
        Level::DEBUG => DEBUG,
        Level::INFO => INFO,
        Level::WARN => WARNING,
        Level::ERROR => ERROR,
    }
}

fn level_name(level: u32) -> &'static str {
    match level {
        TRACE => "TRACE",
        DEBUG => "DEBUG",
        INFO => "INFO",
        WARNING => "WARNING",
        ERROR => "ERROR",
        _ => "CRITICAL",
    }
}

impl LoggerSpec {
    fn parse(value: &Value, handlers: &BTreeMap<String, HandlerSpec>) -> anyhow::Result<LoggerSpec> {
        let Value::Mapping(spec) = value else { bail!("must be a mapping, got {}", show(value)) };
        let mut logger = LoggerSpec { level: None, handlers: Vec::new(), propagate: true };
        for (key, value) in spec {
            match key.as_str().unwrap_or_default() {
                "level" => logger.level = Some(parse_level(value)?).filter(|l| *l > 0),
                "propagate" => {
                    logger.propagate = value
                        .as_bool()
                        .with_context(|| format!("propagate must be true or false, got {}", show(value)))?
                }
                "handlers" => {
                    let Value::Sequence(names) = value else { bail!("handlers must be a list of names") };
                    for name in names {
                        let name = name.as_str().context("handlers must be a list of names")?;
                        if !handlers.contains_key(name) {
                            bail!("names handler {name:?}, which the handlers section does not define");
                        }
                        logger.handlers.push(name.to_string());
                    }
                }
                "filters" => bail!("filters are not supported here: set levels on loggers and handlers instead"),
                other => bail!("unknown key {other:?} (a logger has level, handlers, propagate)"),
            }
        }
        Ok(logger)
    }
}

impl HandlerSpec {
    fn parse(value: &Value, formatters: &BTreeMap<String, Formatter>) -> anyhow::Result<HandlerSpec> {
        let Value::Mapping(spec) = value else { bail!("must be a mapping, got {}", show(value)) };
        let class = text(spec, "class")?.or(text(spec, "()")?).context("class is missing")?;
        let level = spec.get(Value::String("level".into())).map(parse_level).transpose()?.unwrap_or(0);
        let formatter = match text(spec, "formatter")? {
            Some(name) => formatters
                .get(name)
                .cloned()
                .with_context(|| format!("names formatter {name:?}, which the formatters section does not define"))?,
            None => Formatter::plain("%(message)s"),
        };
        if spec.contains_key(Value::String("filters".into())) {
            bail!("filters are not supported here: set levels on loggers and handlers instead");
        }
        let file = |watched: bool| -> anyhow::Result<Output> {
            let path = text(spec, "filename")?.context("filename is missing")?;
            let truncate = match text(spec, "mode")?.unwrap_or("a") {
                "a" | "a+" | "at" => false,
                "w" | "w+" | "wt" => true,
                other => bail!("mode {other:?}: a (append) or w (truncate)"),
            };
            Ok(Output::File { path: PathBuf::from(path), truncate, watched })
        };
        let output = match class {
            "logging.StreamHandler" => match text(spec, "stream")?.unwrap_or("ext://sys.stderr") {
                "ext://sys.stdout" => Output::Stdout,
                "ext://sys.stderr" => Output::Stderr,
                other => bail!("stream {other:?}: ext://sys.stdout or ext://sys.stderr"),
            },
            "logging.FileHandler" => file(false)?,
            "logging.handlers.WatchedFileHandler" => file(true)?,
            "logging.NullHandler" | "inmanta.logging.TornadoDebugLogHandler" => Output::Discard,
            "logging.handlers.RotatingFileHandler" | "logging.handlers.TimedRotatingFileHandler" => bail!(
                "{class} is not supported here: use logging.handlers.WatchedFileHandler and rotate with logrotate"
            ),
            other => bail!(
                "class {other:?} is not supported here: logging.StreamHandler, logging.FileHandler, \
                 logging.handlers.WatchedFileHandler and logging.NullHandler are"
            ),
        };
        Ok(HandlerSpec { level, formatter, output })
    }
}

fn open(output: &Output) -> anyhow::Result<Box<dyn Write + Send>> {
    Ok(match output {
        Output::Stdout => Box::new(std::io::stdout()),
        Output::Stderr => Box::new(std::io::stderr()),
        Output::File { path, truncate, watched } => {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
            }
            let file = open_file(path, *truncate)?;
            if *watched { Box::new(WatchedFile::new(path.clone(), file)) } else { Box::new(file) }
        }
        Output::Discard => Box::new(std::io::sink()),
    })
}

fn open_file(path: &Path, truncate: bool) -> anyhow::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true);
    if truncate {
        options.write(true).truncate(true);
    } else {
        options.append(true);
    }
    options.open(path).with_context(|| format!("cannot open log file {}", path.display()))
}

/// Python's `WatchedFileHandler`: before each line, a file that was moved or removed (logrotate)
/// is reopened at its path.
struct WatchedFile {
    path: PathBuf,
    file: std::fs::File,
}

impl WatchedFile {
    fn new(path: PathBuf, file: std::fs::File) -> WatchedFile {
        WatchedFile { path, file }
    }

    fn reopen_if_moved(&mut self) -> std::io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let open = self.file.metadata()?;
        let same = std::fs::metadata(&self.path).is_ok_and(|now| now.dev() == open.dev() && now.ino() == open.ino());
        if !same {
            self.file = std::fs::OpenOptions::new().create(true).append(true).open(&self.path)?;
        }
        Ok(())
    }
}

impl Write for WatchedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.reopen_if_moved()?;
        self.file.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// A `%`-style format (`%(asctime)s %(levelname)-8s %(name)-10s %(message)s`).
#[derive(Debug, Clone)]
struct Formatter {
    parts: Vec<Part>,
    date_format: Option<String>,
    /// Inmanta's MultiLineFormatter: the lines after a message's first are indented under it.
    multi_line: bool,
    colours: bool,
}

#[derive(Debug, Clone)]
enum Part {
    Literal(String),
    Field { name: String, left: bool, width: usize, precision: Option<usize>, conversion: char },
}

impl Formatter {
    fn plain(format: &str) -> Formatter {
        Formatter {
            parts: parse_format(format).unwrap_or_default(),
            date_format: None,
            multi_line: false,
            colours: false,
        }
    }

    fn parse(value: &Value) -> anyhow::Result<Formatter> {
        let Value::Mapping(spec) = value else { bail!("must be a mapping, got {}", show(value)) };
        let factory = text(spec, "()")?.or(text(spec, "class")?);
        let multi_line = match factory {
            None | Some("logging.Formatter") => false,
            Some("inmanta.logging.MultiLineFormatter") => true,
            Some(other) => bail!(
                "formatter class {other:?} is not supported here: logging.Formatter and \
                 inmanta.logging.MultiLineFormatter are"
            ),
        };
        if let Some(style) = text(spec, "style")?.filter(|s| *s != "%") {
            bail!("style {style:?} is not supported here: write the format with %(name)s fields");
        }
        let format = text(spec, "format")?.or(text(spec, "fmt")?).unwrap_or("%(message)s");
        let no_colour = spec.get(Value::String("no_color".into())).and_then(Value::as_bool).unwrap_or(!multi_line);
        Ok(Formatter {
            parts: parse_format(format)?,
            date_format: text(spec, "datefmt")?.map(str::to_string),
            multi_line,
            colours: multi_line && !no_colour,
        })
    }

    fn render(&self, record: &Record<'_>) -> String {
        let mut line = String::new();
        let mut message_column = None;
        for part in &self.parts {
            match part {
                Part::Literal(text) => line.push_str(text),
                Part::Field { name, left, width, precision, conversion } => {
                    if name == "message" {
                        message_column = Some(visible_width(&line));
                    }
                    let mut value = self.field(name, record);
                    if *conversion == 'r' {
                        value = format!("'{value}'");
                    }
                    if let Some(precision) = precision {
                        value = value.chars().take(*precision).collect();
                    }
                    let pad = width.saturating_sub(value.chars().count());
                    if *left {
                        line.push_str(&value);
                        line.extend(std::iter::repeat_n(' ', pad));
                    } else {
                        line.extend(std::iter::repeat_n(' ', pad));
                        line.push_str(&value);
                    }
                }
            }
        }
        if self.multi_line
            && let Some(column) = message_column
        {
            line = line.replace('\n', &format!("\n{}", " ".repeat(column)));
        }
        line.push('\n');
        line
    }

    fn field(&self, name: &str, record: &Record<'_>) -> String {
        let colour = |code: &str| if self.colours { format!("\x1b[{code}m") } else { String::new() };
        match name {
            "message" => record.message.clone(),
            "name" => record.logger.clone(),
            "levelname" => level_name(record.level).to_string(),
            "levelno" => record.level.to_string(),
            "asctime" => match &self.date_format {
                Some(format) => record.time.format(format).to_string(),
                None => record.time.format("%Y-%m-%d %H:%M:%S,%3f").to_string(),
            },
            "created" => format!("{:.6}", record.time.timestamp_micros() as f64 / 1e6),
            "msecs" => record.time.timestamp_subsec_millis().to_string(),
            "module" => record.file.rsplit('/').next().unwrap_or_default().trim_end_matches(".rs").to_string(),
            "filename" => record.file.rsplit('/').next().unwrap_or_default().to_string(),
            "pathname" => record.file.to_string(),
            "lineno" => record.line.to_string(),
            "funcName" => String::new(),
            "process" => std::process::id().to_string(),
            "processName" => "MainProcess".to_string(),
            "thread" | "threadName" => std::thread::current().name().unwrap_or("MainThread").to_string(),
            "log_color" => match record.level {
                l if l >= ERROR => colour("31"),
                l if l >= WARNING => colour("33"),
                l if l >= INFO => colour("32"),
                _ => colour("36"),
            },
            "reset" => colour("0"),
            "black" => colour("30"),
            "red" => colour("31"),
            "green" => colour("32"),
            "yellow" => colour("33"),
            "blue" => colour("34"),
            "purple" => colour("35"),
            "cyan" => colour("36"),
            "white" => colour("37"),
            _ => String::new(),
        }
    }
}

/// The columns a text takes on screen, escape sequences left out.
fn visible_width(text: &str) -> usize {
    let mut width = 0;
    let mut in_escape = false;
    for c in text.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, _) => width += 1,
        }
    }
    width
}

/// The fields a format may name; another is refused so that a typo does not silently print nothing.
const FIELDS: &[&str] = &[
    "message",
    "name",
    "levelname",
    "levelno",
    "asctime",
    "created",
    "msecs",
    "module",
    "filename",
    "pathname",
    "lineno",
    "funcName",
    "process",
    "processName",
    "thread",
    "threadName",
    "log_color",
    "reset",
    "black",
    "red",
    "green",
    "yellow",
    "blue",
    "purple",
    "cyan",
    "white",
];

fn parse_format(format: &str) -> anyhow::Result<Vec<Part>> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut rest = format;
    while let Some(at) = rest.find('%') {
        literal.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        if let Some(after) = rest.strip_prefix('%') {
            literal.push('%');
            rest = after;
            continue;
        }
        let Some(after) = rest.strip_prefix('(') else { bail!("format {format:?}: a '%' must be '%%' or '%(name)s'") };
        let close = after.find(')').with_context(|| format!("format {format:?}: '%(' without ')'"))?;
        let name = &after[..close];
        if !FIELDS.contains(&name) {
            bail!("format {format:?}: unknown field {name:?} (known: {})", FIELDS.join(", "));
        }
        let mut spec = &after[close + 1..];
        let flags_end = spec.find(|c: char| !"-#0 +".contains(c)).unwrap_or(spec.len());
        let left = spec[..flags_end].contains('-');
        spec = &spec[flags_end..];
        let width_end = spec.find(|c: char| !c.is_ascii_digit()).unwrap_or(spec.len());
        let width = spec[..width_end].parse().unwrap_or(0);
        spec = &spec[width_end..];
        let mut precision = None;
        if let Some(after_dot) = spec.strip_prefix('.') {
            let end = after_dot.find(|c: char| !c.is_ascii_digit()).unwrap_or(after_dot.len());
            precision = after_dot[..end].parse().ok();
            spec = &after_dot[end..];
        }
        let mut chars = spec.chars();
        let conversion = chars.next().with_context(|| format!("format {format:?}: %({name}) has no conversion"))?;
        if !"sdfir".contains(conversion) {
            bail!("format {format:?}: %({name}){conversion} is not a conversion (s, d, f, i or r)");
        }
        rest = chars.as_str();
        if !literal.is_empty() {
            parts.push(Part::Literal(std::mem::take(&mut literal)));
        }
        parts.push(Part::Field { name: name.to_string(), left, width, precision, conversion });
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        parts.push(Part::Literal(literal));
    }
    Ok(parts)
}

struct Record<'a> {
    logger: String,
    level: u32,
    message: String,
    time: chrono::DateTime<chrono::Local>,
    file: &'a str,
    line: u32,
}

struct Handler {
    level: u32,
    formatter: Formatter,
    writer: Option<LogWriter>,
}

/// Which handlers take an event of one target at one level.
struct Route {
    logger: String,
    handlers: Vec<Arc<Handler>>,
}

/// The tracing layer of a [`LoggingConfig`].
pub struct DictConfigLayer {
    handlers: BTreeMap<String, Arc<Handler>>,
    loggers: BTreeMap<String, LoggerSpec>,
    root: LoggerSpec,
    routes: RwLock<HashMap<(&'static str, Level), Arc<Route>>>,
}

/// `orchestrator::scheduler` as a logger name: `orchestrator.scheduler`.
fn logger_name(target: &str) -> String {
    target.replace("::", ".")
}

/// The logger and its ancestors, nearest first, the root left out: `a.b.c`, `a.b`, `a`, and
/// `inmanta` above this binary's own crates.
fn ancestry(name: &str) -> Vec<String> {
    let mut chain = Vec::new();
    let mut current = name;
    loop {
        chain.push(current.to_string());
        match current.rfind('.') {
            Some(dot) => current = &current[..dot],
            None => break,
        }
    }
    if OWN_CRATES.contains(&current) && current != "inmanta" {
        chain.push("inmanta".to_string());
    }
    chain
}

impl DictConfigLayer {
    fn route(&self, target: &'static str, level: Level) -> Arc<Route> {
        if let Some(route) = self.routes.read().unwrap_or_else(|e| e.into_inner()).get(&(target, level)) {
            return route.clone();
        }
        let route = Arc::new(self.compute_route(target, level));
        self.routes.write().unwrap_or_else(|e| e.into_inner()).insert((target, level), route.clone());
        route
    }

    fn compute_route(&self, target: &str, level: Level) -> Route {
        let logger = logger_name(target);
        let chain: Vec<&LoggerSpec> =
            ancestry(&logger).iter().filter_map(|name| self.loggers.get(name)).chain([&self.root]).collect();
        let number = python_level(level);
        let effective = chain.iter().find_map(|l| l.level).unwrap_or(WARNING);
        let mut handlers = Vec::new();
        if number >= effective {
            for spec in &chain {
                for name in &spec.handlers {
                    if let Some(handler) = self.handlers.get(name).filter(|h| number >= h.level) {
                        handlers.push(handler.clone());
                    }
                }
                if !spec.propagate {
                    break;
                }
            }
        }
        Route { logger, handlers }
    }
}

/// The message and the other fields (`key=value`, as tracing's own format writes them).
#[derive(Default)]
struct Fields {
    message: String,
    rest: String,
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            self.rest.push_str(&format!(" {}={value:?}", field.name()));
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message.push_str(&format!("{value:?}"));
        } else {
            self.rest.push_str(&format!(" {}={value:?}", field.name()));
        }
    }
}

impl<S: Subscriber> Layer<S> for DictConfigLayer {
    fn register_callsite(&self, metadata: &'static tracing::Metadata<'static>) -> tracing::subscriber::Interest {
        if self.route(metadata.target(), *metadata.level()).handlers.is_empty() {
            tracing::subscriber::Interest::never()
        } else {
            tracing::subscriber::Interest::always()
        }
    }

    fn enabled(&self, metadata: &tracing::Metadata<'_>, _: LayerContext<'_, S>) -> bool {
        // The metadata here need not be 'static (spans, `log` records): computed, not cached.
        !self.compute_route(metadata.target(), *metadata.level()).handlers.is_empty()
    }

    fn on_event(&self, event: &Event<'_>, _: LayerContext<'_, S>) {
        let metadata = event.metadata();
        let route = self.route(metadata.target(), *metadata.level());
        if route.handlers.is_empty() {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let record = Record {
            logger: route.logger.clone(),
            level: python_level(*metadata.level()),
            message: fields.message + &fields.rest,
            time: chrono::Local::now(),
            file: metadata.file().unwrap_or_default(),
            line: metadata.line().unwrap_or_default(),
        };
        for handler in &route.handlers {
            if let Some(writer) = &handler.writer {
                let line = handler.formatter.render(&record);
                let _ = writer.make_writer().write_all(line.as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `inmanta --log-file F output-default-logging-config --component server` writes
    /// with inmanta-core 20.1 (the file handler's path aside).
    const INMANTA_DEFAULT_SERVER_FILE: &str = "\
disable_existing_loggers: false
formatters:
  core_console_formatter:
    (): inmanta.logging.MultiLineFormatter
    fmt: '%(log_color)s%(name)-25s%(levelname)-8s%(reset)s%(blue)s%(message)s'
    keep_logger_names: true
    log_colors:
      CRITICAL: red
      DEBUG: cyan
      ERROR: red
      INFO: green
      WARNING: yellow
    no_color: false
    reset: true
  core_log_formatter:
    format: '%(asctime)s %(levelname)-8s %(name)-10s %(message)s'
handlers:
  core_tornado_debug_log_handler:
    class: inmanta.logging.TornadoDebugLogHandler
    level: DEBUG
  server_handler:
    class: logging.handlers.WatchedFileHandler
    filename: /tmp/x.log
    formatter: core_log_formatter
    level: INFO
    mode: a+
loggers:
  inmanta.data.NullerPool:
    level: WARNING
    propagate: true
  sqlalchemy.engine:
    level: WARNING
    propagate: true
  tornado.general:
    handlers:
    - core_tornado_debug_log_handler
    level: DEBUG
    propagate: true
root:
  handlers:
  - server_handler
  level: INFO
version: 1
";

    fn layer(yaml: &str) -> DictConfigLayer {
        LoggingConfig::parse(yaml, "test").unwrap().into_layer().unwrap().0
    }

    fn routed(layer: &DictConfigLayer, target: &str, level: Level) -> usize {
        layer.compute_route(target, level).handlers.len()
    }

    #[test]
    fn inmanta_s_own_default_server_file_is_accepted_and_routes_info_to_its_file() {
        let config = LoggingConfig::parse(INMANTA_DEFAULT_SERVER_FILE, "test").unwrap();
        assert!(matches!(
            &config.handlers["server_handler"].output,
            Output::File { watched: true, truncate: false, .. }
        ));
        assert_eq!(config.handlers["core_tornado_debug_log_handler"].output, Output::Discard);
        let dir = tempfile_dir();
        let yaml = INMANTA_DEFAULT_SERVER_FILE.replace("/tmp/x.log", &dir.join("server.log").display().to_string());
        let layer = layer(&yaml);
        assert_eq!(routed(&layer, "service::serve", Level::INFO), 1);
        assert_eq!(routed(&layer, "service::serve", Level::DEBUG), 0, "root is INFO");
        assert_eq!(routed(&layer, "sqlx::query", Level::WARN), 1);
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "inmanta-logging-config-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn levels_follow_the_dotted_hierarchy_and_inmanta_stands_above_our_crates() {
        let layer = layer(
            "version: 1
handlers:
  out: {class: logging.NullHandler}
  sched: {class: logging.NullHandler, level: DEBUG}
loggers:
  inmanta: {level: DEBUG}
  orchestrator.scheduler: {level: TRACE, handlers: [sched], propagate: false}
  sqlx: {level: ERROR}
root: {level: WARNING, handlers: [out]}
",
        );
        assert_eq!(routed(&layer, "service::rest", Level::DEBUG), 1, "inmanta: DEBUG reaches our crates");
        assert_eq!(routed(&layer, "service::rest", Level::TRACE), 0);
        assert_eq!(routed(&layer, "hyper::proto", Level::INFO), 0, "others keep the root's WARNING");
        assert_eq!(routed(&layer, "sqlx::query", Level::WARN), 0, "sqlx: ERROR");
        assert_eq!(routed(&layer, "orchestrator::scheduler::run", Level::TRACE), 0, "sched handler is DEBUG");
        assert_eq!(routed(&layer, "orchestrator::scheduler::run", Level::DEBUG), 1, "not propagated to the root");
        assert_eq!(routed(&layer, "orchestrator::store", Level::WARN), 1);
    }

    #[test]
    fn a_format_is_filled_in_as_python_fills_it() {
        let formatter = Formatter::plain("%(levelname)-8s|%(name)10s|%(name).3s|%%|%(message)s");
        let record = Record {
            logger: "service.rest".into(),
            level: WARNING,
            message: "one\ntwo".into(),
            time: chrono::Local::now(),
            file: "service/src/rest/mod.rs",
            line: 7,
        };
        assert_eq!(formatter.render(&record), "WARNING |service.rest|ser|%|one\ntwo\n");
        let multi = Formatter { multi_line: true, ..Formatter::plain("%(name)-15s%(levelname)-8s%(message)s") };
        assert_eq!(multi.render(&record), format!("service.rest   WARNING one\n{}two\n", " ".repeat(23)));
        let dated =
            Formatter { date_format: Some("%Y".into()), ..Formatter::plain("%(asctime)s %(module)s:%(lineno)d") };
        assert_eq!(dated.render(&record), format!("{} mod:7\n", chrono::Local::now().format("%Y")));
    }

    #[test]
    fn what_this_server_cannot_do_is_refused_with_what_it_can() {
        let error = |yaml: &str| format!("{:#}", LoggingConfig::parse(yaml, "file x.yml").unwrap_err());
        assert!(error("handlers: {}").contains("version: 1 is missing"), "{}", error("handlers: {}"));
        assert!(error("version: 2").contains("version must be 1"));
        let syslog = error("version: 1\nhandlers:\n  s: {class: logging.handlers.SysLogHandler}");
        assert!(syslog.contains("handler \"s\"") && syslog.contains("logging.handlers.WatchedFileHandler"), "{syslog}");
        let rotating = error("version: 1\nhandlers:\n  s: {class: logging.handlers.RotatingFileHandler, filename: f}");
        assert!(rotating.contains("logrotate"), "{rotating}");
        let unknown = error("version: 1\nroot: {handlers: [nope]}");
        assert!(unknown.contains("root") && unknown.contains("\"nope\""), "{unknown}");
        let field = error("version: 1\nformatters:\n  f: {format: '%(mesage)s'}");
        assert!(field.contains("unknown field \"mesage\""), "{field}");
        assert!(error("version: 1\nroot: {level: LOUD}").contains("unknown level \"LOUD\""));
        assert!(error("[1, 2").contains("cannot parse file x.yml as YAML"));
    }

    #[test]
    fn sources_are_taken_in_inmanta_s_order() {
        let none = |_: &str, _: &str| None;
        let no_env = |_: &str| None;
        assert_eq!(Source::find(None, Some("server"), none, no_env), None);
        let server_only = |s: &str, k: &str| ((s, k) == ("logging", "server")).then(|| "/etc/server.yml".to_string());
        assert_eq!(Source::find(None, None, server_only, no_env), None, "a command that is no component");
        let flag = Path::new("/etc/flag.yml");
        let options = |section: &str, key: &str| match (section, key) {
            ("logging", "server") => Some("/etc/server.yml".to_string()),
            ("config", "logging-config") => Some("/etc/all.yml".to_string()),
            _ => None,
        };
        assert_eq!(Source::find(Some(flag), Some("server"), options, no_env), Some(Source::File(flag.into())));
        let env = |name: &str| (name == "INMANTA_LOGGING_SERVER_TMPL").then(|| "x".to_string());
        assert_eq!(
            Source::find(None, Some("server"), options, env),
            Some(Source::EnvVar("INMANTA_LOGGING_SERVER_TMPL".into()))
        );
        assert_eq!(Source::find(None, Some("server"), options, no_env), Some(Source::File("/etc/server.yml".into())));
        let general = |section: &str, key: &str| options(section, key).filter(|_| section == "config");
        assert_eq!(Source::find(None, Some("server"), general, no_env), Some(Source::File("/etc/all.yml".into())));
        let env = |name: &str| (name == "INMANTA_CONFIG_LOGGING_CONFIG_CONTENT").then(|| "x".to_string());
        assert_eq!(
            Source::find(None, Some("server"), general, env),
            Some(Source::EnvVar("INMANTA_CONFIG_LOGGING_CONFIG_CONTENT".into()))
        );
    }

    #[test]
    fn a_template_is_filled_in_from_its_context() {
        let context = BTreeMap::from([("environment".to_string(), "e1".to_string())]);
        assert_eq!(render_template("f: agent-{environment}.log {{x}}", &context, "t").unwrap(), "f: agent-e1.log {x}");
        let missing = render_template("{log_dir}/x", &context, "file a.tmpl").unwrap_err().to_string();
        assert!(missing.contains("\"log_dir\"") && missing.contains("[environment]"), "{missing}");
    }

    #[test]
    fn a_watched_file_moved_away_by_logrotate_is_reopened() {
        let dir = tempfile_dir().join("watched");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("server.log");
        let mut file = WatchedFile::new(path.clone(), open_file(&path, false).unwrap());
        file.write_all(b"one\n").unwrap();
        std::fs::rename(&path, dir.join("server.log.1")).unwrap();
        file.write_all(b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("server.log.1")).unwrap(), "one\n");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
