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
