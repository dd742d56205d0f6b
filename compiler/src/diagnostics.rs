//! Compile errors and warnings, rendered like rustc and as Inmanta's compile-data JSON.

use std::fmt;

use serde_json::json;

use crate::syntax::{Location, SourceMap, Span};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// One error or warning.
#[derive(Clone, Debug)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Inmanta's exception (or warning) type name, e.g. `DoubleSetException`.
    pub kind: String,
    pub message: String,
    pub location: Option<Location>,
    /// Extra lines shown after the source excerpt (e.g. the other place of a double set).
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub(crate) fn error(kind: &str, message: impl Into<String>, span: Option<Span>, sources: &SourceMap) -> Self {
        Diagnostic {
            severity: Severity::Error,
            kind: kind.to_string(),
            message: message.into(),
            location: span.and_then(|s| sources.location(s)),
            notes: Vec::new(),
        }
    }

    pub(crate) fn warning(kind: &str, message: impl Into<String>, span: Option<Span>, sources: &SourceMap) -> Self {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(kind, message, span, sources) }
    }

    pub(crate) fn plain_warning(kind: &str, message: impl Into<String>) -> Self {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::plain(kind, message) }
    }

    pub(crate) fn plain(kind: &str, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            kind: kind.to_string(),
            message: message.into(),
            location: None,
            notes: Vec::new(),
        }
    }

    pub(crate) fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// The compile-data category of this error.
    pub fn category(&self) -> &'static str {
        match self.kind.as_str() {
            "ParserException" | "InvalidNamespaceAccess" | "HyphenException" => "parse_error",
            "ExternalException" | "ExplicitPluginException" | "PluginTypeException" | "WrappingRuntimeException" => {
                "plugin_exception"
            }
            _ => "runtime_error",
        }
    }

    /// The fully qualified name of the Python exception Inmanta raises for this error: the one
    /// place our error kinds are mapped to Inmanta's types (the conformance check compares these).
    pub fn inmanta_type(&self) -> &str {
        inmanta_type(&self.kind)
    }

    /// Inmanta's compile-data JSON for this error (0-based locations).
    pub fn to_compile_data(&self) -> serde_json::Value {
        let location = self.location.as_ref().map(|l| {
            json!({
                "uri": l.file,
                "range": {
                    "start": {"line": l.line - 1, "character": l.col - 1},
                    "end": {"line": l.end_line - 1, "character": l.end_col - 1},
                },
                "file": l.file,
                "lnr": l.line - 1,
                "start_char": l.col - 1,
                "end_lnr": l.end_line - 1,
                "end_char": l.end_col - 1,
            })
        });
        json!({"category": self.category(), "type": self.kind, "message": self.message, "location": location})
    }
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
            writeln!(f, "{lnr} | {}", l.source_line)?;
            let width = if l.end_line == l.line { l.end_col.saturating_sub(l.col).max(1) } else { 1 };
            let indent: String =
                l.source_line.chars().take(l.col - 1).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
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

    /// Inmanta's compile-data JSON: `{"errors": [...]}`.
    pub fn to_compile_data(&self) -> serde_json::Value {
        json!({"errors": self.0.iter().map(Diagnostic::to_compile_data).collect::<Vec<_>>()})
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
