//! Compile errors and warnings, rendered like rustc and as Inmanta's compile-data JSON.

use std::fmt;

use serde_json::json;

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

/// Inmanta's exception (or warning) class of a diagnostic. [`ErrorKind::as_str`] is the class's
/// name exactly as Inmanta spells it: the compile data, the output and the conformance check use it.
macro_rules! error_kinds {
    ($($name:ident),* $(,)?) => {
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum ErrorKind {
            $($name,)*
            /// An exception class raised by a module's Python code, by the name the plugin
            /// boundary gives (e.g. `inmanta.plugins.PluginException` or a module's own class).
            Python(String),
        }

        impl ErrorKind {
            /// Inmanta's name of the class.
            pub fn as_str(&self) -> &str {
                match self {
                    $(ErrorKind::$name => stringify!($name),)*
                    ErrorKind::Python(name) => name,
                }
            }

            /// The kind Inmanta names `name`; a name that is not one of Inmanta's is a Python class.
            pub fn from_name(name: &str) -> Self {
                match name {
                    $(stringify!($name) => ErrorKind::$name,)*
                    other => ErrorKind::Python(other.to_string()),
                }
            }
        }
    };
}

error_kinds! {
    CompilerException,
    RuntimeException,
    ParserException,
    InvalidNamespaceAccess,
    HyphenException,
    TypeNotFoundException,
    MissingImportException,
    AmbiguousTypeException,
    ExternalException,
    ExplicitPluginException,
    WrappingRuntimeException,
    PluginException,
    PluginTypeException,
    PluginTimeoutException,
    AttributeException,
    OptionalValueException,
    IndexException,
    IndexAttributeMissingInConstructorException,
    IndexCollisionException,
    TypingException,
    InvalidTypeAnnotation,
    DirectExecuteException,
    DataClassException,
    DataClassMismatchException,
    KeyException,
    CycleException,
    NotFoundException,
    DoubleSetException,
    ModifiedAfterFreezeException,
    DuplicateException,
    MultiException,
    UnsetException,
    MultiUnsetException,
    UnknownException,
    UnexpectedReference,
    ModuleNotFoundException,
    ModuleLoadingException,
    InvalidModuleException,
    ModuleV2InV1PathException,
    InvalidMetadata,
    ProjectNotFoundException,
    DependencyCycleException,
    InvalidRelationPrecedenceRuleError,
    CycleInRelationPrecedencePolicyError,
    ZeroDivisionError,
    KeyError,
    TypeError,
    ValueError,
    RecursionError,
    RuntimeError,
    OverflowError,
    ModuleNotFoundError,
    CompilerWarning,
    CompilerRuntimeWarning,
    CompilerDeprecationWarning,
    TypeDeprecationWarning,
    VariableShadowWarning,
    ParserWarning,
}

/// Names from the Python plugin boundary (`compiler/src/python/`), which passes them as text.
impl From<&str> for ErrorKind {
    fn from(name: &str) -> Self {
        ErrorKind::from_name(name)
    }
}

impl From<&String> for ErrorKind {
    fn from(name: &String) -> Self {
        ErrorKind::from_name(name)
    }
}

impl From<String> for ErrorKind {
    fn from(name: String) -> Self {
        ErrorKind::from_name(&name)
    }
}

impl PartialEq<&str> for ErrorKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<str> for ErrorKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for ErrorKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

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
    pub fn category(&self) -> &'static str {
        match &self.kind {
            ErrorKind::ParserException | ErrorKind::InvalidNamespaceAccess | ErrorKind::HyphenException => {
                "parse_error"
            }
            ErrorKind::ExternalException
            | ErrorKind::ExplicitPluginException
            | ErrorKind::PluginTypeException
            | ErrorKind::WrappingRuntimeException => "plugin_exception",
            // the Python class of a PluginException a plugin raised (Inmanta's ExplicitPluginException)
            ErrorKind::Python(class) if class.contains('.') => "plugin_exception",
            _ => "runtime_error",
        }
    }

    /// The fully qualified name of the Python exception Inmanta raises for this error: the one
    /// place our error kinds are mapped to Inmanta's types (the conformance check compares these).
    pub fn inmanta_type(&self) -> &str {
        inmanta_type(self.kind.as_str())
    }

    /// Inmanta's compile-data JSON for this error: its exception's qualified type and an LSP
    /// location (0-based lines and characters).
    pub fn to_compile_data(&self) -> serde_json::Value {
        let location = self.location.as_ref().map(|l| {
            json!({
                "uri": l.file,
                "range": {
                    "start": {"line": l.line - 1, "character": l.col - 1},
                    "end": {"line": l.end_line - 1, "character": l.end_col - 1},
                },
            })
        });
        json!({"category": self.category(), "type": self.inmanta_type(), "message": self.message, "location": location})
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

/// Inmanta's exception type for one of our error kinds (see [`Diagnostic::inmanta_type`]).
pub fn inmanta_type(kind: &str) -> &str {
    match kind {
        "ParserException" | "InvalidNamespaceAccess" => match kind {
            "ParserException" => "inmanta.parser.ParserException",
            _ => "inmanta.parser.InvalidNamespaceAccess",
        },
        "IndexAttributeMissingInConstructorException" => {
            "inmanta.ast.statements.generator.IndexAttributeMissingInConstructorException"
        }
        "IndexCollisionException" => "inmanta.ast.statements.generator.IndexCollisionException",
        "ModuleNotFoundException" => "inmanta.module.ModuleNotFoundException",
        "ModuleLoadingException" => "inmanta.module.ModuleLoadingException",
        "InvalidModuleException" => "inmanta.module.InvalidModuleException",
        "ModuleV2InV1PathException" => "inmanta.module.ModuleV2InV1PathException",
        "InvalidMetadata" => "inmanta.module.InvalidMetadata",
        "ProjectNotFoundException" => "inmanta.module.ProjectNotFoundException",
        "DependencyCycleException" => "inmanta.export.DependencyCycleException",
        // Python errors that escape Inmanta's compiler unwrapped.
        "ZeroDivisionError"
        | "KeyError"
        | "TypeError"
        | "ValueError"
        | "RecursionError"
        | "RuntimeError"
        | "OverflowError"
        | "ModuleNotFoundError" => match kind {
            "OverflowError" => "builtins.OverflowError",
            "RuntimeError" => "builtins.RuntimeError",
            "ModuleNotFoundError" => "builtins.ModuleNotFoundError",
            "ZeroDivisionError" => "builtins.ZeroDivisionError",
            "KeyError" => "builtins.KeyError",
            "TypeError" => "builtins.TypeError",
            "ValueError" => "builtins.ValueError",
            _ => "builtins.RecursionError",
        },
        // Every other kind is a class of inmanta.ast.
        other => AST_TYPES.iter().find(|(k, _)| *k == other).map(|(_, t)| *t).unwrap_or(other),
    }
}

/// The exception classes defined in `inmanta.ast`.
const AST_TYPES: &[(&str, &str)] = &[
    ("CompilerException", "inmanta.ast.CompilerException"),
    ("RuntimeException", "inmanta.ast.RuntimeException"),
    ("HyphenException", "inmanta.ast.HyphenException"),
    ("TypeNotFoundException", "inmanta.ast.TypeNotFoundException"),
    ("MissingImportException", "inmanta.ast.MissingImportException"),
    ("AmbiguousTypeException", "inmanta.ast.AmbiguousTypeException"),
    ("ExternalException", "inmanta.ast.ExternalException"),
    ("ExplicitPluginException", "inmanta.ast.ExplicitPluginException"),
    ("WrappingRuntimeException", "inmanta.ast.WrappingRuntimeException"),
    ("AttributeException", "inmanta.ast.AttributeException"),
    ("PluginTypeException", "inmanta.ast.PluginTypeException"),
    ("OptionalValueException", "inmanta.ast.OptionalValueException"),
    ("IndexException", "inmanta.ast.IndexException"),
    ("TypingException", "inmanta.ast.TypingException"),
    ("InvalidTypeAnnotation", "inmanta.ast.InvalidTypeAnnotation"),
    ("DirectExecuteException", "inmanta.ast.DirectExecuteException"),
    ("DataClassException", "inmanta.ast.DataClassException"),
    ("DataClassMismatchException", "inmanta.ast.DataClassMismatchException"),
    ("KeyException", "inmanta.ast.KeyException"),
    ("CycleException", "inmanta.ast.CycleException"),
    ("NotFoundException", "inmanta.ast.NotFoundException"),
    ("DoubleSetException", "inmanta.ast.DoubleSetException"),
    ("ModifiedAfterFreezeException", "inmanta.ast.ModifiedAfterFreezeException"),
    ("DuplicateException", "inmanta.ast.DuplicateException"),
    ("MultiException", "inmanta.ast.MultiException"),
    ("UnsetException", "inmanta.ast.UnsetException"),
    ("MultiUnsetException", "inmanta.ast.MultiUnsetException"),
    ("UnknownException", "inmanta.ast.UnknownException"),
    ("UnexpectedReference", "inmanta.ast.UnexpectedReference"),
];

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

    /// Inmanta's compile-data JSON: `{"errors": [...]}`, the errors of the compile itself (an
    /// export failure leaves it empty, see [`Phase`]).
    pub fn to_compile_data(&self) -> serde_json::Value {
        let errors: Vec<_> =
            self.0.iter().filter(|d| d.phase == Phase::Compile).map(Diagnostic::to_compile_data).collect();
        json!({ "errors": errors })
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
