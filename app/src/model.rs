//! What the server functions send to the pages: plain serialisable rows, the same on both sides
//! (the wasm build does not link the orchestrator or the `api` crate).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One row of the environments page and of the environment switcher.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvironmentSummary {
    pub id: String,
    pub name: String,
    pub project_id: String,
    pub project_name: String,
    pub halted: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectSummary {
    pub id: String,
    pub name: String,
    pub environments: usize,
}

/// One environment with the fields its settings page edits.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvironmentDetails {
    pub id: String,
    pub name: String,
    pub project_id: String,
    pub project_name: String,
    pub repo_url: String,
    pub repo_branch: String,
    pub description: String,
    pub halted: bool,
}

/// One environment setting with its definition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SettingRow {
    pub name: String,
    /// bool, int, str, positive_float, enum or dict.
    pub kind: String,
    /// The current value as the input edits it (JSON text for dicts).
    pub value: String,
    pub default: String,
    pub is_default: bool,
    pub doc: String,
    pub allowed_values: Vec<String>,
    pub protected_by: Option<String>,
}

/// Where a table page is: the keyset cursor of the API's paging, kept in the page's URL.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TableQuery {
    pub env: String,
    /// `filter.<name>` of the API, without the prefix.
    pub filters: BTreeMap<String, String>,
    pub sort: Option<String>,
    pub limit: Option<u64>,
    pub start: Option<String>,
    pub end: Option<String>,
    pub first_id: Option<String>,
    pub last_id: Option<String>,
}

/// Paging facts of one page: counts and the cursors of the neighbouring pages.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageInfo {
    pub total: u64,
    pub before: u64,
    pub shown: u64,
    /// Query pairs (`start`/`end`/`first_id`/`last_id`) leading to the next page.
    pub next: Option<Vec<(String, String)>>,
    pub prev: Option<Vec<(String, String)>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Paged<T> {
    pub rows: Vec<T>,
    pub page: PageInfo,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionRow {
    pub version: i64,
    pub date: String,
    pub status: String,
    pub total: i64,
    pub released: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceRow {
    pub id: String,
    pub resource_type: String,
    pub agent: String,
    pub value: String,
    pub status: String,
    pub requires: usize,
    /// Why it is not deployed: the last error of a failed resource, or what blocks it.
    pub problem: Option<Problem>,
}

/// What keeps a resource from being deployed, as the console explains it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Problem {
    /// The message of its latest error log line.
    Error(String),
    /// It waits on a dependency that failed, is undefined or is itself blocked: the first such
    /// dependency and how many there are.
    BlockedBy { resource: String, status: String, count: usize },
}

/// States of a dependency that keep the resources requiring it from deploying.
pub const BLOCKING_STATES: &[&str] = &["failed", "undefined", "skipped", "skipped_for_undefined", "unavailable"];

impl Problem {
    /// The blocking dependency among `requires` (resource id, status), if any.
    pub fn blocked_by(requires: &[(String, String)]) -> Option<Problem> {
        let mut blocking = requires.iter().filter(|(_, status)| BLOCKING_STATES.contains(&status.as_str()));
        let (resource, status) = blocking.next()?;
        Some(Problem::BlockedBy { resource: resource.clone(), status: status.clone(), count: 1 + blocking.count() })
    }
}

/// The resources page: one page of rows and the counts per state of the whole environment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourcesView {
    pub rows: Vec<ResourceRow>,
    pub page: PageInfo,
    pub summary: Vec<(String, u64)>,
    pub summary_total: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dashboard {
    pub summary: Vec<(String, u64)>,
    pub summary_total: u64,
    pub agents_up: u64,
    pub agents_down: u64,
    pub agents_paused: u64,
    pub versions: Vec<VersionRow>,
    /// The latest 5 compiles, queued and running ones included.
    pub compiles: Vec<CompileRow>,
}

/// An attribute as shown: its name and its value as (pretty) JSON text.
pub type Attribute = (String, String);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceDetails {
    pub id: String,
    pub resource_type: String,
    pub agent: String,
    pub value: String,
    pub status: String,
    pub last_deploy: Option<String>,
    pub first_generated: String,
    pub attributes: Vec<Attribute>,
    /// Required resource id and its status.
    pub requires: Vec<(String, String)>,
    /// Why it is not deployed (last error, or the dependency that blocks it).
    pub problem: Option<Problem>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryRow {
    pub date: String,
    pub attribute_hash: String,
    pub attributes: Vec<Attribute>,
    pub requires: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRow {
    pub timestamp: String,
    pub action: String,
    pub level: String,
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionedResourceRow {
    pub id: String,
    pub resource_type: String,
    pub agent: String,
    pub value: String,
    pub requires: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttributeChange {
    pub name: String,
    pub from: String,
    pub to: String,
    /// For file contents (`hash` attributes): the unified diff of the two files.
    pub file_diff: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceChange {
    pub id: String,
    pub status: String,
    pub attributes: Vec<AttributeChange>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRow {
    pub name: String,
    pub status: String,
    pub paused: bool,
    pub unpause_on_resume: Option<bool>,
    pub last_seen: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParameterRow {
    pub name: String,
    pub value: String,
    pub source: String,
    pub updated: Option<String>,
    /// Empty for parameters, the resource for facts.
    pub resource_id: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotificationRow {
    pub id: String,
    pub created: String,
    pub title: String,
    pub message: String,
    pub severity: String,
    pub uri: Option<String>,
    pub read: bool,
}

/// Every state a released resource can be in, in the order the summary bar shows them.
pub const RESOURCE_STATES: &[&str] = &[
    "deployed",
    "deploying",
    "available",
    "failed",
    "skipped",
    "skipped_for_undefined",
    "undefined",
    "unavailable",
    "non_compliant",
    "cancelled",
    "orphaned",
];

/// The dependency graph of the released resources, laid out on the server: nodes in columns by
/// depth along `requires` (what a resource requires stands to its left).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Graph {
    pub nodes: Vec<GraphNode>,
    /// (required node index, requiring node index).
    pub edges: Vec<(usize, usize)>,
    pub width: f64,
    pub height: f64,
    /// Resources left out above the size limit.
    pub truncated: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GraphNode {
    pub id: String,
    pub label: String,
    pub status: String,
    pub x: f64,
    pub y: f64,
}

/// One compile as the compile reports page and the dashboard list it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CompileRow {
    pub id: String,
    pub requested: String,
    pub started: Option<String>,
    pub completed: Option<String>,
    /// queued, running, success or failed.
    pub status: String,
    /// The trigger's message (metadata), e.g. "Recompile trigger through API call".
    pub message: String,
    /// Seconds between the request and the start (so far, while queued).
    pub wait: Option<f64>,
    /// Seconds between the start and the end (so far, while running).
    pub duration: Option<f64>,
    pub version: Option<i64>,
    pub do_export: bool,
    pub force_update: bool,
}

/// A structured compile error (compile data).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompileError {
    pub kind: String,
    pub message: String,
    pub file: Option<String>,
    /// 1-based.
    pub line: Option<i64>,
}

/// One stage of a compile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompileStageRow {
    pub name: String,
    pub command: String,
    pub started: String,
    pub completed: Option<String>,
    pub duration: Option<f64>,
    pub returncode: Option<i64>,
    pub stdout: String,
    pub stderr: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompileDetailsView {
    pub compile: CompileRow,
    /// The trigger type of the metadata (api, console, schedule, ...).
    pub trigger: String,
    pub failed_message: Option<String>,
    pub environment_variables: Vec<(String, String)>,
    pub errors: Vec<CompileError>,
    pub stages: Vec<CompileStageRow>,
}

/// A dry run of a version; `todo` resources are still waiting for their handler.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DryRunRow {
    pub id: String,
    pub date: String,
    pub total: i64,
    pub todo: i64,
}

/// The compliance check page: the dry runs of a version (newest first) and the selected one's
/// report, as the compare view shows changes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComplianceView {
    pub reports: Vec<DryRunRow>,
    pub selected: Option<DryRunRow>,
    pub changes: Vec<ResourceChange>,
    /// The environment is halted: dry runs cannot start.
    pub halted: bool,
}

/// One component of the server with its status (OK, Warning, Error) and facts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentStatus {
    pub name: String,
    pub status: String,
    pub message: Option<String>,
    pub details: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStatus {
    pub product: String,
    pub edition: String,
    pub version: String,
    pub status: String,
    pub database: String,
    pub database_status: String,
    pub database_version: Option<String>,
    pub uptime: u64,
    pub components: Vec<ComponentStatus>,
}

/// One role of a user in one environment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleRow {
    pub env: String,
    /// The environment's name (`project / environment`), or its id when it no longer exists.
    pub env_name: String,
    pub role: String,
}

/// One user of the users page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserRow {
    pub username: String,
    pub is_admin: bool,
    pub password_change_required: bool,
    pub roles: Vec<RoleRow>,
}

/// What the users page shows and offers: the users, and the environments and roles to assign.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsersView {
    pub users: Vec<UserRow>,
    pub environments: Vec<EnvironmentSummary>,
    pub roles: Vec<String>,
    /// The signed-in user (`None` without auth).
    pub me: Option<String>,
}

/// One registered environment token (never the token itself).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRow {
    pub jti: String,
    pub client_types: Vec<String>,
    pub created_by: Option<String>,
    pub issued: String,
    pub expires: Option<String>,
    pub last_used: Option<String>,
    pub revoked: Option<String>,
}

/// The client types an environment token can be for.
pub const CLIENT_TYPES: &[&str] = &["api", "agent", "compiler"];
