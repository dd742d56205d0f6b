//! What the server functions send to the pages: plain serialisable rows, the same on both sides
//! (the wasm build does not link the orchestrator; states are the enums of `api::state`, which
//! travel as their wire names).

use std::collections::BTreeMap;

pub use api::version::VersionStatus;
pub use api::{AgentStatus, CompileStatus, ResourceDiffStatus, ResourceId, ResourceState};
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
    pub status: VersionStatus,
    pub total: i64,
    pub released: bool,
    /// The export's message (`version_info.export_metadata.message`), e.g. the compile's trigger.
    pub message: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceRow {
    pub id: ResourceId,
    pub resource_type: String,
    pub agent: String,
    pub value: String,
    pub status: ResourceState,
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
    BlockedBy { resource: ResourceId, status: ResourceState, count: usize },
}

/// States of a dependency that keep the resources requiring it from deploying.
pub const BLOCKING_STATES: &[ResourceState] = &[
    ResourceState::Failed,
    ResourceState::Undefined,
    ResourceState::Skipped,
    ResourceState::SkippedForUndefined,
    ResourceState::Unavailable,
];

impl Problem {
    /// The blocking dependency among `requires` (resource id, status), if any.
    pub fn blocked_by(requires: &[(ResourceId, ResourceState)]) -> Option<Problem> {
        let mut blocking = requires.iter().filter(|(_, status)| BLOCKING_STATES.contains(status));
        let (resource, status) = blocking.next()?;
        Some(Problem::BlockedBy { resource: resource.clone(), status: *status, count: 1 + blocking.count() })
    }
}

/// The resources page: one page of rows and the counts per state of the whole environment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourcesView {
    pub rows: Vec<ResourceRow>,
    pub page: PageInfo,
    pub summary: Vec<(ResourceState, u64)>,
    pub summary_total: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dashboard {
    pub summary: Vec<(ResourceState, u64)>,
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
    pub id: ResourceId,
    pub resource_type: String,
    pub agent: String,
    pub value: String,
    pub status: ResourceState,
    pub last_deploy: Option<String>,
    pub first_generated: String,
    pub attributes: Vec<Attribute>,
    /// Required resource id and its status.
    pub requires: Vec<(ResourceId, ResourceState)>,
    /// Why it is not deployed (last error, or the dependency that blocks it).
    pub problem: Option<Problem>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryRow {
    pub date: String,
    pub attribute_hash: String,
    pub attributes: Vec<Attribute>,
    pub requires: Vec<ResourceId>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogRow {
    pub timestamp: String,
    pub action: String,
    pub level: String,
    pub message: String,
    /// The version the action ran for (None when the action is no longer known).
    pub version: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionedResourceRow {
    pub id: ResourceId,
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
    pub id: ResourceId,
    pub status: ResourceDiffStatus,
    pub attributes: Vec<AttributeChange>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRow {
    pub name: String,
    pub status: AgentStatus,
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
    /// None for parameters, the resource for facts.
    pub resource_id: Option<ResourceId>,
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
pub const RESOURCE_STATES: &[ResourceState] = &[
    ResourceState::Deployed,
    ResourceState::Deploying,
    ResourceState::Available,
    ResourceState::Failed,
    ResourceState::Skipped,
    ResourceState::SkippedForUndefined,
    ResourceState::Undefined,
    ResourceState::Unavailable,
    ResourceState::NonCompliant,
    ResourceState::Cancelled,
    ResourceState::Orphaned,
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
    pub id: ResourceId,
    pub label: String,
    pub status: ResourceState,
    pub x: f64,
    pub y: f64,
}

/// One compile as the compile reports page and the dashboard list it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CompileRow {
    pub id: String,
    pub requested: String,
    pub started: Option<String>,
    pub completed: Option<String>,
    pub status: CompileStatus,
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
    pub errors: Vec<api::compile_error::CompileError>,
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

/// A token of the registry on the users page: every kind (logins included), for an admin all
/// of them, for a user their own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegisteredTokenRow {
    /// login, environment, compile or bootstrap.
    pub kind: String,
    /// The environment's name for environment tokens.
    pub environment: Option<String>,
    #[serde(flatten)]
    pub token: TokenRow,
}

/// The client types an environment token can be for.
pub const CLIENT_TYPES: &[&str] = &["api", "agent", "compiler"];

/// Which part of the dependency graph to draw: everything (the default), the failures and what
/// they block (`failures`), or the resources within `hops` requires of `around`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphFocus {
    pub failures: bool,
    /// A resource id without version; empty for no neighbourhood view.
    pub around: String,
    pub hops: usize,
}

impl GraphFocus {
    pub fn is_all(&self) -> bool {
        !self.failures && self.around.is_empty()
    }
}

/// States that stop a resource and everything that requires it.
pub const PROBLEM_STATES: &[ResourceState] =
    &[ResourceState::Failed, ResourceState::Undefined, ResourceState::Unavailable];

/// The resources a focused graph keeps. `requires[i]` are the indices resource `i` requires;
/// `find` maps a resource id to its index. Failures: every resource in a [`PROBLEM_STATES`]
/// state and everything that (transitively) requires one. Neighbourhood: breadth first over
/// requires in both directions, `hops` steps from `around`.
pub fn graph_focus(
    focus: &GraphFocus,
    requires: &[Vec<usize>],
    statuses: &[ResourceState],
    find: impl Fn(&str) -> Option<usize>,
) -> Vec<bool> {
    let n = requires.len();
    let mut required_by = vec![Vec::new(); n];
    for (i, reqs) in requires.iter().enumerate() {
        for r in reqs {
            required_by[*r].push(i);
        }
    }
    let mut keep = vec![focus.is_all(); n];
    if focus.failures {
        let mut frontier: Vec<usize> = (0..n).filter(|i| PROBLEM_STATES.contains(&statuses[*i])).collect();
        for i in &frontier {
            keep[*i] = true;
        }
        // Everything downstream of a failure is blocked by it.
        while let Some(i) = frontier.pop() {
            for d in &required_by[i] {
                if !keep[*d] {
                    keep[*d] = true;
                    frontier.push(*d);
                }
            }
        }
    }
    if let Some(start) = (!focus.around.is_empty()).then(|| find(&focus.around)).flatten() {
        let mut near = vec![false; n];
        near[start] = true;
        let mut frontier = vec![start];
        for _ in 0..focus.hops {
            let mut next = Vec::new();
            for i in frontier {
                for j in requires[i].iter().chain(&required_by[i]) {
                    if !near[*j] {
                        near[*j] = true;
                        next.push(*j);
                    }
                }
            }
            frontier = next;
        }
        // With both set, the failures around the resource.
        for (k, n) in keep.iter_mut().zip(near) {
            *k = n && (*k || !focus.failures);
        }
    }
    keep
}

/// Characters of a graph label that fit in a node.
pub const GRAPH_LABEL_CHARS: usize = 26;

/// Short node labels: the type's last name and the part of the id value that tells the
/// resources of that type apart. The prefix all values of a type share (up to a separator, e.g.
/// `/tmp/app/` of every file) is dropped for "…"; a label still too long keeps its end.
pub fn short_labels(resources: &[(&str, &str)]) -> Vec<String> {
    let mut prefixes: BTreeMap<&str, &str> = BTreeMap::new();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (t, value) in resources {
        *counts.entry(t).or_default() += 1;
        let p = prefixes.entry(t).or_insert(value);
        let common = p.char_indices().zip(value.chars()).take_while(|((_, a), b)| a == b).count();
        let cut = p.char_indices().nth(common).map(|(i, _)| i).unwrap_or(p.len());
        *p = &p[..cut];
    }
    resources
        .iter()
        .map(|(t, value)| {
            let short_type = t.rsplit("::").next().unwrap_or(t);
            let prefix = if counts[t] > 1 { prefixes[t] } else { "" };
            // Only whole segments go: cut after the last separator in the shared prefix.
            let cut = prefix.rfind(['/', ':', '.', '-', '_', ' ', ',', '=']).map(|i| i + 1).unwrap_or(0);
            let rest = if cut > 0 && cut < value.len() { format!("…{}", &value[cut..]) } else { value.to_string() };
            let room = GRAPH_LABEL_CHARS.saturating_sub(short_type.chars().count() + 1).max(8);
            let count = rest.chars().count();
            let rest = if count > room {
                let tail: String = rest.chars().skip(count - room + 1).collect();
                format!("…{}", tail.trim_start_matches('…'))
            } else {
                rest
            };
            format!("{short_type} {rest}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_drop_the_prefix_every_value_of_a_type_shares() {
        let labels = short_labels(&[
            ("std::File", "/tmp/inmanta/app/config/a.conf"),
            ("std::File", "/tmp/inmanta/app/config/b.conf"),
            ("std::testing::NullResource", "web"),
        ]);
        assert_eq!(labels, ["File …a.conf", "File …b.conf", "NullResource web"]);
    }

    #[test]
    fn long_labels_keep_their_end() {
        let labels = short_labels(&[("std::File", "/srv/one/very/long/path/to/the/file.txt")]);
        assert_eq!(labels[0].chars().count(), GRAPH_LABEL_CHARS);
        assert!(labels[0].ends_with("the/file.txt"), "{}", labels[0]);
    }

    #[test]
    fn failures_keep_what_they_block_and_neighbourhoods_their_hops() {
        // 0 <- 1 <- 2 <- 3, and 4 alone; 1 failed.
        let requires = vec![vec![], vec![0], vec![1], vec![2], vec![]];
        let statuses = [
            ResourceState::Deployed,
            ResourceState::Failed,
            ResourceState::Skipped,
            ResourceState::Skipped,
            ResourceState::Deployed,
        ];
        let find = |rid: &str| rid.parse::<usize>().ok();
        let failures = GraphFocus { failures: true, ..Default::default() };
        assert_eq!(graph_focus(&failures, &requires, &statuses, find), [false, true, true, true, false]);
        let around = GraphFocus { around: "2".into(), hops: 1, ..Default::default() };
        assert_eq!(graph_focus(&around, &requires, &statuses, find), [false, true, true, true, false]);
        let far = GraphFocus { around: "3".into(), hops: 3, ..Default::default() };
        assert_eq!(graph_focus(&far, &requires, &statuses, find), [true, true, true, true, false]);
    }
}
