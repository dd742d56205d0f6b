//! What the operator sees of resources and what the scheduler records of them.
//!
//! The state vector lives in `resource_persistent_state`, one row per resource id and
//! environment. Release writes the intent columns; the scheduler writes the handler-run columns
//! in batches ([`Orchestrator::record_scheduler_batch`]). The single API status is derived in
//! SQL ([`STATUS_SQL`]) so that lists filter and sort on it.
//!
//! - `reads`: the latest released resources with their status, details, history, logs and
//!   actions, and the intents the scheduler loads;
//! - `writes`: release, finished actions, deploying marks, temporary blocks;
//! - `validate`: the pure checks and conversions both use.

use api::ResourceId;
use api::resource::LogLine;
use api::state::{ActionKind, Blocked, Change, HandlerStatus, ResourceState};
use sqlx::Row;
use uuid::Uuid;

use crate::{Error, Result};

mod reads;
mod validate;
mod writes;

pub(crate) use writes::{insert_bare_action, record_release};

/// The single status (`api::state::StateVector::status`): the generated column `status` of
/// `resource_persistent_state` (migration 0041 has its CASE, first match wins), indexed, so that
/// lists filter, sort and count on it without evaluating it per resource.
pub const STATUS_SQL: &str = "s.status";

fn corrupt(what: &str) -> impl Fn(serde_json::Error) -> Error + '_ {
    move |e| Error::Corrupt(format!("{what}: {e}"))
}

fn parse_rid(rid: &str) -> Result<ResourceId> {
    ResourceId::parse(rid).map_err(|e| Error::BadRequest(e.to_string()))
}

fn resource_not_found(rid: &ResourceId) -> Error {
    Error::NotFound(format!("resource {rid} has never been released in this environment"))
}

/// What a handler run ended in, as the scheduler reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionOutcome {
    pub status: HandlerStatus,
    pub messages: Vec<LogLine>,
    pub changes: Option<serde_json::Value>,
    pub change: Option<Change>,
    pub send_event: Option<bool>,
}

/// A new action's id. Time-ordered (UUID v7, still a UUID to every client): the action, log and
/// link tables are keyed on it, and ids that grow keep each batch's inserts at the end of those
/// B-trees, where random (v4) ids dirtied a page of every index per action (at 100 000 deploys,
/// most of what SQLite wrote).
pub fn new_action_id() -> Uuid {
    Uuid::now_v7()
}

/// An action that ran and finished, stored in one go by [`Orchestrator::record_actions`].
#[derive(Debug, Clone)]
pub struct FinishedAction {
    pub action_id: Uuid,
    pub version: i64,
    pub action: ActionKind,
    pub started: api::Timestamp,
    pub resource_ids: Vec<ResourceId>,
    pub outcome: ActionOutcome,
}

/// A deploy about to be handed to its agent. With several servers its action is stored (no
/// status, no end yet) before the handler runs: a run whose result is lost with its server is still in
/// the action log (closed by the next scheduler, `Orchestrator::reset_deploying`), and the run
/// again is an action of its own. The result, a [`FinishedAction`] with the same id, completes it.
#[derive(Debug, Clone)]
pub struct StartedAction {
    pub action_id: Uuid,
    pub version: i64,
    pub started: api::Timestamp,
    pub resource_id: ResourceId,
}

/// Filters of `GET /api/v2/resource_actions`.
#[derive(Debug, Clone, Default)]
pub struct ActionQuery {
    /// Only actions on this resource (plain resource id).
    pub resource_id: Option<String>,
    pub resource_type: Option<String>,
    pub agent: Option<String>,
    pub attribute: Option<String>,
    pub attribute_value: Option<String>,
    pub log_severity: Option<String>,
    pub limit: Option<u64>,
    pub action_id: Option<Uuid>,
    pub first_timestamp: Option<api::Timestamp>,
    pub last_timestamp: Option<api::Timestamp>,
    pub exclude_changes: Vec<String>,
}

/// What the scheduler knows of one resource of the latest released version when it (re)loads.
#[derive(Debug, Clone)]
pub struct ResourceIntent {
    pub id: ResourceId,
    pub version: i64,
    /// The exported fields without `id` and `requires`.
    pub attributes: serde_json::Map<String, serde_json::Value>,
    pub requires: Vec<ResourceId>,
    pub attribute_hash: String,
    pub undefined: bool,
    pub blocked: Blocked,
    pub last_deployed_attribute_hash: Option<String>,
    /// The status of the last finished handler run.
    pub last_status: Option<ResourceState>,
    /// When the last handler run ended.
    pub last_deploy: Option<chrono::DateTime<chrono::Utc>>,
}

/// A column that stores one of an API enum's wire names.
pub(crate) fn stored_name<T: std::str::FromStr<Err = api::state::UnknownName>>(
    row: &sqlx::any::AnyRow,
    column: &str,
) -> Result<T> {
    parse_stored(&row.try_get::<String, _>(column)?)
}

/// An API enum's wire name as stored.
fn parse_stored<T: std::str::FromStr<Err = api::state::UnknownName>>(text: &str) -> Result<T> {
    text.parse().map_err(|e: api::state::UnknownName| Error::Corrupt(e.to_string()))
}

#[cfg(test)]
mod tests {
    /// The generated `status` column evaluates the rule of `api::state` (one definition): the
    /// migrations that create it hold exactly [`api::state::status_sql`].
    #[test]
    fn the_status_column_of_both_databases_is_the_apis_rule() {
        let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
        let rule = words(&api::state::status_sql());
        for database in ["sqlite", "postgres"] {
            let path =
                format!("{}/../migrations/{database}/0041_resource_status_column.sql", env!("CARGO_MANIFEST_DIR"));
            let migration = std::fs::read_to_string(&path).unwrap();
            let sql: String =
                migration.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join(" ");
            assert!(words(&sql).contains(&format!("AS ({rule})")), "{path} does not hold the rule:\n{rule}");
        }
    }
}
