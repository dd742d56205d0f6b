//! Wire types of the Inmanta-compatible REST API.
//!
//! Everything here is serializable because it crosses a process boundary: server, CLI, console
//! and agents all speak these shapes. Store rows and compiler types never derive `Serialize` for
//! the wire; they are converted into these types in one place.

pub mod auth;
pub mod compile;
pub mod compile_error;
pub mod compliance;
pub mod console;
pub mod cron;
pub mod environment;
pub mod environment_metrics;
pub mod json;
pub mod operations;
pub mod paging;
pub mod references;
pub mod resource;
pub mod settings;
pub mod state;
pub mod status;
pub mod time;
pub mod url;
pub mod version;

#[cfg(feature = "client")]
pub mod client;

pub use compile_error::{CompileData, ErrorKind};
pub use environment::{Environment, EnvironmentV1, Project, ProjectV1};
pub use resource::{ResourceId, ResourceVersionId};
pub use settings::{SettingDefinition, SettingType, SettingValue};
pub use state::{
    ActionKind, AgentStatus, Blocked, Change, CompileStatus, Compliance, HandlerRun, HandlerStatus, ResourceDiffStatus,
    ResourceState, StateVector,
};
pub use time::Timestamp;

use serde::{Deserialize, Serialize};

/// The release of this orchestrator: what `inmanta --version`, `GET /api/v1/serverstatus`, the
/// OpenAPI document, the metrics and the Debian package report (the workspace's version, see
/// CHANGELOG.md).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Header that carries the environment id of an environment-scoped call.
pub const TID_HEADER: &str = "X-Inmanta-tid";

/// The envelope of every typed (v2) response: `{"data": ..., "links": ..., "metadata": ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope<T> {
    pub data: T,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<paging::Links>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
}

impl<T> Envelope<T> {
    pub fn new(data: T) -> Self {
        Envelope { data, links: None, metadata: None }
    }
}

/// The body of every error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_details: Option<serde_json::Value>,
}
