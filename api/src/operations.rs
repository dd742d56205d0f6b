//! Facts, parameters and notifications (routes: docs/api.md).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A parameter: a value set by a user, a plugin or a report, used by compiles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Parameter {
    pub id: Uuid,
    pub name: String,
    pub value: String,
    pub environment: Uuid,
    pub source: String,
    pub updated: Option<crate::Timestamp>,
    pub metadata: Option<serde_json::Value>,
}

/// A fact: a parameter about one resource, collected by its handler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    pub id: Uuid,
    pub name: String,
    pub value: String,
    pub environment: Uuid,
    pub source: String,
    pub updated: Option<crate::Timestamp>,
    pub metadata: Option<serde_json::Value>,
    /// `""` on the wire for a parameter (the v1 calls answer parameters in this shape too).
    #[serde(with = "crate::resource::id_or_empty")]
    pub resource_id: Option<crate::ResourceId>,
    pub expires: bool,
}

/// The sources a parameter may come from.
pub const PARAMETER_SOURCES: &[&str] = &["fact", "plugin", "user", "report"];

/// Body of `PUT /api/v2/parameters/<name>` and `PUT /api/v2/facts/<name>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetParameter {
    pub source: String,
    pub value: serde_json::Value,
    /// Text: Inmanta's clients may send a resource version id here, whose version the server
    /// drops, and a malformed one is refused naming this field.
    #[serde(default)]
    pub resource_id: Option<String>,
    #[serde(default)]
    pub metadata: Option<serde_json::Value>,
    #[serde(default)]
    pub recompile: bool,
    #[serde(default)]
    pub expires: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotificationSeverity {
    Message,
    Info,
    Success,
    Warning,
    Error,
}

impl NotificationSeverity {
    pub fn as_str(self) -> &'static str {
        match self {
            NotificationSeverity::Message => "message",
            NotificationSeverity::Info => "info",
            NotificationSeverity::Success => "success",
            NotificationSeverity::Warning => "warning",
            NotificationSeverity::Error => "error",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    pub id: Uuid,
    pub environment: Uuid,
    pub created: String,
    pub title: String,
    pub message: String,
    pub severity: NotificationSeverity,
    pub uri: Option<String>,
    pub compile_id: Option<Uuid>,
    pub read: bool,
    pub cleared: bool,
}

/// Body of `PATCH /api/v2/notification/<id>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotificationUpdate {
    #[serde(default)]
    pub read: Option<bool>,
    #[serde(default)]
    pub cleared: Option<bool>,
}

/// An agent of an environment (`GET /api/v2/agents`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    pub environment: Uuid,
    pub name: String,
    pub paused: bool,
    pub process_id: Option<Uuid>,
    pub process_name: Option<String>,
    pub unpause_on_resume: Option<bool>,
    pub status: crate::AgentStatus,
}
