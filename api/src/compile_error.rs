//! A compile's errors as Inmanta's compile data holds them (`GET /api/v2/compiledata/<id>`), and
//! the one type for the kind of a compile error, from the compiler's diagnostics through the
//! store and the API to the console.
//!
//! In the compile data an error's `type` is the fully qualified Python class Inmanta raises
//! (`inmanta.ast.DoubleSetException`); elsewhere (the compiler's output, the console) a kind is
//! shown by its class name (`DoubleSetException`). [`ErrorKind`] is both: [`ErrorKind::as_str`]
//! and [`ErrorKind::inmanta_type`].

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Inmanta's exception (or warning) class of a compile error. [`ErrorKind::as_str`] is the
/// class's name exactly as Inmanta spells it.
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
            /// Every kind but [`ErrorKind::Python`].
            const NAMED: &'static [ErrorKind] = &[$(ErrorKind::$name,)*];

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

impl ErrorKind {
    /// The fully qualified name of the Python exception Inmanta raises for this kind: the one
    /// place our kinds are mapped to Inmanta's types (the compile data and the conformance check
    /// use it). A Python class is its own type.
    pub fn inmanta_type(&self) -> &str {
        use ErrorKind::*;
        match self {
            ParserException => "inmanta.parser.ParserException",
            InvalidNamespaceAccess => "inmanta.parser.InvalidNamespaceAccess",
            IndexAttributeMissingInConstructorException => {
                "inmanta.ast.statements.generator.IndexAttributeMissingInConstructorException"
            }
            IndexCollisionException => "inmanta.ast.statements.generator.IndexCollisionException",
            ModuleNotFoundException => "inmanta.module.ModuleNotFoundException",
            ModuleLoadingException => "inmanta.module.ModuleLoadingException",
            InvalidModuleException => "inmanta.module.InvalidModuleException",
            ModuleV2InV1PathException => "inmanta.module.ModuleV2InV1PathException",
            InvalidMetadata => "inmanta.module.InvalidMetadata",
            ProjectNotFoundException => "inmanta.module.ProjectNotFoundException",
            DependencyCycleException => "inmanta.export.DependencyCycleException",
            // Python errors that escape Inmanta's compiler unwrapped.
            ZeroDivisionError => "builtins.ZeroDivisionError",
            KeyError => "builtins.KeyError",
            TypeError => "builtins.TypeError",
            ValueError => "builtins.ValueError",
            RecursionError => "builtins.RecursionError",
            RuntimeError => "builtins.RuntimeError",
            OverflowError => "builtins.OverflowError",
            ModuleNotFoundError => "builtins.ModuleNotFoundError",
            CompilerException => "inmanta.ast.CompilerException",
            RuntimeException => "inmanta.ast.RuntimeException",
            HyphenException => "inmanta.ast.HyphenException",
            TypeNotFoundException => "inmanta.ast.TypeNotFoundException",
            MissingImportException => "inmanta.ast.MissingImportException",
            AmbiguousTypeException => "inmanta.ast.AmbiguousTypeException",
            ExternalException => "inmanta.ast.ExternalException",
            ExplicitPluginException => "inmanta.ast.ExplicitPluginException",
            WrappingRuntimeException => "inmanta.ast.WrappingRuntimeException",
            AttributeException => "inmanta.ast.AttributeException",
            PluginTypeException => "inmanta.ast.PluginTypeException",
            OptionalValueException => "inmanta.ast.OptionalValueException",
            IndexException => "inmanta.ast.IndexException",
            TypingException => "inmanta.ast.TypingException",
            InvalidTypeAnnotation => "inmanta.ast.InvalidTypeAnnotation",
            DirectExecuteException => "inmanta.ast.DirectExecuteException",
            DataClassException => "inmanta.ast.DataClassException",
            DataClassMismatchException => "inmanta.ast.DataClassMismatchException",
            KeyException => "inmanta.ast.KeyException",
            CycleException => "inmanta.ast.CycleException",
            NotFoundException => "inmanta.ast.NotFoundException",
            DoubleSetException => "inmanta.ast.DoubleSetException",
            ModifiedAfterFreezeException => "inmanta.ast.ModifiedAfterFreezeException",
            DuplicateException => "inmanta.ast.DuplicateException",
            MultiException => "inmanta.ast.MultiException",
            UnsetException => "inmanta.ast.UnsetException",
            MultiUnsetException => "inmanta.ast.MultiUnsetException",
            UnknownException => "inmanta.ast.UnknownException",
            UnexpectedReference => "inmanta.ast.UnexpectedReference",
            // Kinds the compile data never holds under another name (warnings, the plugin
            // timeout, relation precedence errors) keep their class name.
            PluginException
            | PluginTimeoutException
            | InvalidRelationPrecedenceRuleError
            | CycleInRelationPrecedencePolicyError
            | CompilerWarning
            | CompilerRuntimeWarning
            | CompilerDeprecationWarning
            | TypeDeprecationWarning
            | VariableShadowWarning
            | ParserWarning => self.as_str(),
            Python(class) => class,
        }
    }

    /// The kind whose [`ErrorKind::inmanta_type`] is `qualified`; any other type is a Python class.
    pub fn from_inmanta_type(qualified: &str) -> Self {
        ErrorKind::NAMED
            .iter()
            .find(|kind| kind.inmanta_type() == qualified)
            .cloned()
            .unwrap_or_else(|| ErrorKind::Python(qualified.to_string()))
    }

    /// The compile-data category of an error of this kind.
    pub fn category(&self) -> ErrorCategory {
        use ErrorKind::*;
        match self {
            ParserException | InvalidNamespaceAccess | HyphenException => ErrorCategory::ParseError,
            ExternalException | ExplicitPluginException | PluginTypeException | WrappingRuntimeException => {
                ErrorCategory::PluginException
            }
            // the Python class of a PluginException a plugin raised (Inmanta's ExplicitPluginException)
            Python(class) if class.contains('.') => ErrorCategory::PluginException,
            _ => ErrorCategory::RuntimeError,
        }
    }
}

/// Names from the Python plugin boundary, which passes them as text.
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

/// By its class name (`DoubleSetException`), as the compiler's output shows it.
impl Serialize for ErrorKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ErrorKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(ErrorKind::from)
    }
}

/// The kind of a compile-data error, written as its qualified Python type.
mod qualified {
    use super::*;

    pub fn serialize<S: Serializer>(kind: &ErrorKind, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(kind.inmanta_type())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ErrorKind, D::Error> {
        String::deserialize(deserializer).map(|text| ErrorKind::from_inmanta_type(&text))
    }
}

/// What part of a compile an error comes from (Inmanta's `ErrorCategory`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCategory {
    ParseError,
    RuntimeError,
    PluginException,
}

/// Inmanta's compile data: the errors of a compile (the evaluation's own; an error the export
/// raises afterwards fails the compile without being here).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompileData {
    pub errors: Vec<CompileError>,
}

/// One error of the compile data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompileError {
    pub category: ErrorCategory,
    #[serde(rename = "type", with = "qualified")]
    pub kind: ErrorKind,
    pub message: String,
    pub location: Option<SourceLocation>,
}

/// Where an error is, as the language server protocol writes it: 0-based lines and characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceLocation {
    pub uri: String,
    pub range: SourceRange,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceRange {
    pub start: SourcePosition,
    pub end: SourcePosition,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourcePosition {
    pub line: u32,
    pub character: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_kind_reads_back_from_its_qualified_type() {
        for kind in ErrorKind::NAMED {
            assert_eq!(&ErrorKind::from_inmanta_type(kind.inmanta_type()), kind, "{}", kind.inmanta_type());
            assert_eq!(&ErrorKind::from_name(kind.as_str()), kind);
        }
        let class = ErrorKind::from_inmanta_type("my_module.plugins.Refused");
        assert_eq!(class, ErrorKind::Python("my_module.plugins.Refused".into()));
        assert_eq!(class.inmanta_type(), "my_module.plugins.Refused");
        assert_eq!(class.category(), ErrorCategory::PluginException);
    }

    #[test]
    fn compile_data_is_inmantas_json() {
        let text = r#"{"errors": [{"category": "runtime_error", "type": "inmanta.ast.DoubleSetException",
            "message": "value set twice", "location": {"uri": "/p/main.cf",
            "range": {"start": {"line": 2, "character": 4}, "end": {"line": 2, "character": 9}}}},
            {"category": "parse_error", "type": "inmanta.parser.ParserException", "message": "bad",
            "location": null}]}"#;
        let data: CompileData = serde_json::from_str(text).unwrap();
        assert_eq!(data.errors[0].kind, ErrorKind::DoubleSetException);
        assert_eq!(data.errors[0].location.as_ref().unwrap().range.start.line, 2);
        assert_eq!(data.errors[1].kind, ErrorKind::ParserException);
        assert_eq!(data.errors[1].category, ErrorCategory::ParseError);
        let written: serde_json::Value = serde_json::to_value(&data).unwrap();
        let read: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(written, read);
    }

    #[test]
    fn a_kind_alone_is_its_class_name() {
        assert_eq!(serde_json::to_string(&ErrorKind::DoubleSetException).unwrap(), r#""DoubleSetException""#);
        let kind: ErrorKind = serde_json::from_str(r#""KeyError""#).unwrap();
        assert_eq!(kind, ErrorKind::KeyError);
        assert_eq!(kind.inmanta_type(), "builtins.KeyError");
    }
}
