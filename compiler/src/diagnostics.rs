//! Compile errors and warnings, rendered like rustc and as Inmanta's compile-data JSON.

use std::fmt;

use crate::syntax::{Location, SourceMap, Span};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// Where in a compile an error arose. Inmanta writes its compile data when evaluation ends: an
/// error its exporter raises afterwards (a resource id clash, an attribute it cannot read, a
/// dependency cycle, a handler it cannot ship) fails the command but is not in the compile data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Phase {
    #[default]
    Compile,
    Export,
}

pub use api::compile_error::ErrorKind;

/// One error or warning.
#[derive(Clone, Debug)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Inmanta's exception (or warning) type name, e.g. `DoubleSetException`.
    pub kind: ErrorKind,
    pub message: String,
    pub location: Option<Location>,
    /// Extra lines shown after the source excerpt (e.g. the other place of a double set).
    pub notes: Vec<String>,
    pub phase: Phase,
    pub origin: Origin,
}

/// Where an error was raised, where that decides how it is reported: Inmanta gathers the errors
/// of its final checks into one MultiException, and a variable that no scope declares fails where
/// the name is looked up rather than as the attribute being assigned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Origin {
    #[default]
    Evaluation,
    /// The end-of-compile checks: an index lookup that found nothing, an instance without an
    /// implementation, an unknown relation annotation.
    FinalCheck,
    /// A variable read that no scope declares.
    VariableLookup,
}

impl Diagnostic {
    pub(crate) fn error(
        kind: impl Into<ErrorKind>,
        message: impl Into<String>,
        span: Option<Span>,
        sources: &SourceMap,
    ) -> Self {
        Diagnostic {
            severity: Severity::Error,
            kind: kind.into(),
            message: bounded(message.into()),
            location: span.and_then(|s| sources.location(s)),
            notes: Vec::new(),
            phase: Phase::Compile,
            origin: Origin::Evaluation,
        }
    }

    pub(crate) fn warning(
        kind: impl Into<ErrorKind>,
        message: impl Into<String>,
        span: Option<Span>,
        sources: &SourceMap,
    ) -> Self {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(kind, message, span, sources) }
    }

    pub(crate) fn plain_warning(kind: impl Into<ErrorKind>, message: impl Into<String>) -> Self {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::plain(kind, message) }
    }

    pub(crate) fn plain(kind: impl Into<ErrorKind>, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            kind: kind.into(),
            message: bounded(message.into()),
            location: None,
            notes: Vec::new(),
            phase: Phase::Compile,
            origin: Origin::Evaluation,
        }
    }

    pub(crate) fn raised_by(mut self, origin: Origin) -> Self {
        self.origin = origin;
        self
    }

    pub(crate) fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(bounded(note.into()));
        self
    }

    /// The compile-data category of this error.
    pub fn category(&self) -> api::compile_error::ErrorCategory {
        self.kind.category()
    }

    /// The fully qualified name of the Python exception Inmanta raises for this error
    /// ([`ErrorKind::inmanta_type`]; the conformance check compares these).
    pub fn inmanta_type(&self) -> &str {
        self.kind.inmanta_type()
    }

    /// This error in Inmanta's compile data: its exception's qualified type and an LSP location
    /// (0-based lines and characters).
    pub fn to_compile_data(&self) -> api::compile_error::CompileError {
        use api::compile_error::{SourceLocation, SourcePosition, SourceRange};
        let position = |line: usize, col: usize| SourcePosition {
            line: line.saturating_sub(1) as u32,
            character: col.saturating_sub(1) as u32,
        };
        let location = self.location.as_ref().map(|l| SourceLocation {
            uri: l.file.clone(),
            range: SourceRange { start: position(l.line, l.col), end: position(l.end_line, l.end_col) },
        });
        api::compile_error::CompileError {
            category: self.category(),
            kind: self.kind.clone(),
            message: self.message.clone(),
            location,
        }
    }
}

/// The longest message (or note) a diagnostic keeps, in bytes. Values in messages are cut where
/// they are rendered (`eval::format::shown`); this is the net under every other text a message
/// may carry (a plugin's exception, a path), so no error prints megabytes.
const MAX_MESSAGE: usize = 4000;

/// The longest source line shown whole; a longer one is shown around the error's column.
const MAX_SOURCE_LINE: usize = 200;

/// `text` as it is, or its start and end around a mark of how long it was.
fn bounded(text: String) -> String {
    if text.len() <= MAX_MESSAGE {
        return text;
    }
    let head = floor_boundary(&text, MAX_MESSAGE * 3 / 4);
    let tail = ceil_boundary(&text, text.len() - MAX_MESSAGE / 8);
    format!("{} … ({} characters in all) … {}", &text[..head], text.chars().count(), &text[tail..])
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The part of a source line shown for an error at 1-based character column `col`, and the
/// column of the error in it: the whole line when it is short, else a window around the column.
fn source_window(line: &str, col: usize) -> (String, usize) {
    if line.len() <= MAX_SOURCE_LINE {
        return (line.to_string(), col);
    }
    let start = col.saturating_sub(1).saturating_sub(MAX_SOURCE_LINE / 3);
    let mut shown: String = line.chars().skip(start).take(MAX_SOURCE_LINE).collect();
    let mut col = col - start;
    if start > 0 {
        shown.insert(0, '…');
        col += 1;
    }
    if line.chars().count() > start + MAX_SOURCE_LINE {
        shown.push('…');
    }
    (shown, col)
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        writeln!(f, "{sev}[{}]: {}", self.kind, self.message)?;
        if let Some(l) = &self.location {
            let lnr = l.line.to_string();
            let pad = " ".repeat(lnr.len());
            writeln!(f, "{pad}--> {}:{}:{}", l.file, l.line, l.col)?;
            writeln!(f, "{pad} |")?;
            let (line, col) = source_window(&l.source_line, l.col);
            writeln!(f, "{lnr} | {line}")?;
            let width = if l.end_line == l.line { l.end_col.saturating_sub(l.col).max(1) } else { 1 };
            let width = width.min(line.chars().count().saturating_sub(col - 1).max(1));
            let indent: String = line.chars().take(col - 1).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
            writeln!(f, "{pad} | {indent}{}", "^".repeat(width))?;
        }
        for n in &self.notes {
            writeln!(f, "  = note: {n}")?;
        }
        Ok(())
    }
}

/// A failed compile: every error found, most relevant first.
#[derive(Clone, Debug, Default)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn errors(&self) -> &[Diagnostic] {
        &self.0
    }

    /// Inmanta's compile-data JSON: `{"errors": [...]}`, the exception the compile itself raised
    /// (an export failure leaves it empty, see [`Phase`]). Several errors are what Inmanta's final
    /// checks gather into one MultiException, which its compile data holds alone, without a
    /// message or location of its own (its members are in the compile's output).
    pub fn to_compile_data(&self) -> api::compile_error::CompileData {
        let mut errors: Vec<_> =
            self.0.iter().filter(|d| d.phase == Phase::Compile).map(Diagnostic::to_compile_data).collect();
        if errors.len() > 1 {
            errors = vec![api::compile_error::CompileError {
                category: api::compile_error::ErrorCategory::RuntimeError,
                kind: ErrorKind::MultiException,
                message: String::new(),
                location: None,
            }];
        }
        api::compile_error::CompileData { errors }
    }

    /// The same errors, raised by the export that follows the compile.
    pub(crate) fn in_export(mut self) -> Self {
        for d in &mut self.0 {
            d.phase = Phase::Export;
        }
        self
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        if self.0.len() > 1 {
            writeln!(f, "\n{} errors", self.0.len())?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_message_keeps_its_start_and_end_and_says_how_long_it_was() {
        let message = format!("start {} end", "x".repeat(1_000_000));
        let d = Diagnostic::plain("RuntimeException", message);
        assert!(d.message.len() < MAX_MESSAGE + 100, "{}", d.message.len());
        assert!(d.message.starts_with("start xxx") && d.message.ends_with("xxx end"), "{}", d.message);
        assert!(d.message.contains("(1000010 characters in all)"), "{}", d.message);
        assert_eq!(Diagnostic::plain("RuntimeException", "short").message, "short");
    }

    /// Inmanta 20.1's `inmanta compile --export-compile-data` of its test_multi_excn snippet (an
    /// unset attribute and an implementation that cannot be selected):
    /// `{"errors":[{"category":"runtime_error","type":"inmanta.ast.MultiException","message":"","location":null}]}`
    #[test]
    fn several_errors_are_one_multi_exception_in_the_compile_data() {
        let one = Diagnostics(vec![Diagnostic::plain("UnsetException", "not complete")]);
        assert_eq!(one.to_compile_data().errors[0].kind, ErrorKind::UnsetException);
        let two = Diagnostics(vec![
            Diagnostic::plain("UnsetException", "not complete"),
            Diagnostic::plain("RuntimeException", "Unable to select implementation for entity Repo"),
        ]);
        let data = serde_json::to_value(two.to_compile_data()).unwrap();
        assert_eq!(
            data,
            serde_json::json!({"errors": [{"category": "runtime_error", "type": "inmanta.ast.MultiException", "message": "", "location": null}]})
        );
    }

    #[test]
    fn a_long_source_line_is_shown_around_the_column() {
        let line = format!("{}x = 1{}", "a".repeat(5000), "b".repeat(5000));
        let (shown, col) = source_window(&line, 5001);
        assert!(shown.chars().count() <= MAX_SOURCE_LINE + 2, "{}", shown.len());
        assert!(shown.starts_with('…') && shown.ends_with('…'));
        assert_eq!(shown.chars().nth(col - 1), Some('x'));
        assert_eq!(source_window("x = 1", 1), ("x = 1".to_string(), 1));
    }
}
