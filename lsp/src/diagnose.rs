//! Diagnostics: the syntax errors of every open file at once (the parser's recovery mode), and
//! what a compile of the project says, with the editor's unsaved buffers compiled instead of the
//! files on disk. Compiles run on a thread of their own, the latest change first: a compile that
//! a newer change made stale is not published.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crossbeam_channel::{Receiver, Sender};
use lsp_server::{Message, Notification};
use lsp_types::{Diagnostic, DiagnosticSeverity, NumberOrString, PublishDiagnosticsParams};

use crate::features::url;
use crate::project::Source;
use crate::text::Lines;

/// One compile to run: the project and the open files' texts and syntax diagnostics.
pub(crate) struct Job {
    pub root: PathBuf,
    pub main: PathBuf,
    pub open: HashMap<PathBuf, OpenFile>,
}

pub(crate) struct OpenFile {
    pub text: String,
    /// The text with the statements that did not parse blanked out: what the compile reads, so
    /// that the rest of the file is still checked.
    pub compiled: String,
    pub syntax: Vec<Diagnostic>,
}

impl OpenFile {
    pub(crate) fn of(source: &Source) -> OpenFile {
        let mut compiled = source.text.clone();
        for &(start, end) in &source.outline.skipped {
            blank(&mut compiled, start, end);
        }
        OpenFile { text: source.text.clone(), compiled, syntax: syntax_diagnostics(source) }
    }
}

/// Replaces the characters of `start..end` by spaces (the same number of bytes, newlines kept).
fn blank(text: &mut String, start: usize, end: usize) {
    let end = end.min(text.len());
    if start >= end || !text.is_char_boundary(start) || !text.is_char_boundary(end) {
        return;
    }
    let replaced: String =
        text[start..end].chars().map(|c| if c == '\n' { "\n".to_string() } else { " ".repeat(c.len_utf8()) }).collect();
    text.replace_range(start..end, &replaced);
}

pub(crate) fn syntax_diagnostics(source: &Source) -> Vec<Diagnostic> {
    source
        .outline
        .errors
        .iter()
        .map(|e| {
            let mut range = source.lines.range(&source.text, e.range);
            if range.end == range.start {
                range.end.character += 1;
            }
            Diagnostic {
                range,
                severity: Some(DiagnosticSeverity::ERROR),
                code: Some(NumberOrString::String("ParserException".into())),
                source: Some("inmanta".into()),
                message: e.message.clone(),
                ..Diagnostic::default()
            }
        })
        .collect()
}

pub(crate) fn publish(sender: &Sender<Message>, path: &Path, diagnostics: Vec<Diagnostic>) {
    let Some(uri) = url(path) else { return };
    let params = PublishDiagnosticsParams { uri, diagnostics, version: None };
    let note = Notification::new("textDocument/publishDiagnostics".into(), params);
    if sender.send(Message::Notification(note)).is_err() {
        tracing::debug!("the editor is gone; diagnostics not sent");
    }
}

/// Starts the compile thread; jobs sent to the returned channel are compiled, the newest first.
pub(crate) fn spawn(sender: Sender<Message>) -> Sender<Job> {
    let (jobs, receiver) = crossbeam_channel::unbounded::<Job>();
    let spawned = std::thread::Builder::new().name("lsp-compile".into()).spawn(move || worker(&receiver, &sender));
    if let Err(e) = spawned {
        tracing::error!("can not start the compile thread: {e}");
    }
    jobs
}

fn worker(jobs: &Receiver<Job>, sender: &Sender<Message>) {
    let mut published: HashSet<PathBuf> = HashSet::new();
    while let Ok(mut job) = jobs.recv() {
        while let Ok(newer) = jobs.try_recv() {
            job = newer;
        }
        let mut by_file = compile(&job);
        if !jobs.is_empty() {
            continue; // stale already: the next job is for newer text
        }
        let mut now: HashSet<PathBuf> = HashSet::new();
        for (path, open) in &job.open {
            let semantic = by_file.remove(path).unwrap_or_default();
            let mut all = open.syntax.clone();
            let new = semantic
                .into_iter()
                .filter(|d| !open.syntax.iter().any(|s| s.range == d.range && s.message == d.message));
            all.extend(new);
            now.insert(path.clone());
            publish(sender, path, all);
        }
        for (path, diagnostics) in by_file {
            now.insert(path.clone());
            publish(sender, &path, diagnostics);
        }
        // a file that had diagnostics and has none now is cleared
        for path in published.difference(&now) {
            publish(sender, path, Vec::new());
        }
        published = now;
    }
}

/// Compiles the job's project and sorts what the compile says by file.
pub(crate) fn compile(job: &Job) -> HashMap<PathBuf, Vec<Diagnostic>> {
    let overlay: HashMap<PathBuf, String> = job.open.iter().map(|(p, o)| (p.clone(), o.compiled.clone())).collect();
    let options = compiler::CompileOptions {
        root_variables: false,
        overlay: compiler::SourceOverlay::new(overlay),
        every_error: true,
        keep_python_spare: true,
        ..compiler::CompileOptions::default()
    };
    let started = std::time::Instant::now();
    let (diagnostics, warnings) = match compiler::compile_project_with(&job.root, &options) {
        Ok(out) => (Vec::new(), out.warnings),
        Err(errors) => (errors.0, Vec::new()),
    };
    tracing::debug!(elapsed = ?started.elapsed(), errors = diagnostics.len(), "compiled");
    let mut by_file: HashMap<PathBuf, Vec<Diagnostic>> = HashMap::new();
    let mut texts: HashMap<PathBuf, String> = HashMap::new();
    for d in diagnostics.iter().chain(&warnings) {
        let (path, range) = match &d.location {
            Some(l) if !l.file.starts_with("<builtin>") => {
                let path = PathBuf::from(&l.file);
                let text = texts.entry(path.clone()).or_insert_with(|| match job.open.get(&path) {
                    Some(o) => o.text.clone(),
                    None => std::fs::read_to_string(&path).unwrap_or_default(),
                });
                let lines = Lines::new(text);
                (path, lines.range_of_location(text, l.line, l.col, l.end_line, l.end_col))
            }
            // an error of no place in the project's files (a plugin, the Python environment) is
            // shown at the top of main.cf
            _ => (job.main.clone(), lsp_types::Range::default()),
        };
        let severity = match d.severity {
            compiler::Severity::Error => DiagnosticSeverity::ERROR,
            compiler::Severity::Warning => DiagnosticSeverity::WARNING,
        };
        let mut message = d.message.clone();
        for note in &d.notes {
            message.push('\n');
            message.push_str(note);
        }
        by_file.entry(path).or_default().push(Diagnostic {
            range,
            severity: Some(severity),
            code: Some(NumberOrString::String(d.kind.as_str().to_string())),
            source: Some("inmanta".into()),
            message,
            ..Diagnostic::default()
        });
    }
    by_file
}
