//! Pure checks and conversions of the resource services: no database.

use api::state::{HandlerRun, HandlerStatus, ResourceState};

use super::{ActionOutcome, ActionQuery};
use crate::{Error, Result};

impl ActionQuery {
    /// The combinations of filters `GET /api/v2/resource_actions` refuses.
    pub(crate) fn check(&self) -> Result<()> {
        let q = self;
        if q.attribute.is_some() != q.attribute_value.is_some() {
            return Err(Error::BadRequest("attribute and attribute_value go together: give both or neither".into()));
        }
        if q.first_timestamp.is_some() && q.last_timestamp.is_some() {
            return Err(Error::BadRequest("give first_timestamp or last_timestamp, not both".into()));
        }
        if (q.first_timestamp.is_some() || q.last_timestamp.is_some()) && q.action_id.is_none() {
            return Err(Error::BadRequest("first_timestamp and last_timestamp need action_id as tie-breaker".into()));
        }
        Ok(())
    }
}

/// The handler-run columns a deploy outcome sets: (last_handler_run, last status).
pub(super) fn deploy_columns(outcome: HandlerStatus) -> Result<(HandlerRun, ResourceState)> {
    if outcome == HandlerStatus::Dry {
        return Err(Error::BadRequest("dry is not an outcome of a deploy".into()));
    }
    Ok((outcome.into(), outcome.into()))
}

/// The attribute diff of a `non_compliant` run, as Inmanta keeps it: every attribute with both
/// `current` and `desired` (a handler may leave one out).
pub(super) fn non_compliant_diff(outcome: &ActionOutcome, rvid: &str) -> Option<serde_json::Value> {
    if outcome.status != HandlerStatus::NonCompliant {
        return None;
    }
    let changes = outcome.changes.as_ref().and_then(|c| c.get(rvid)).and_then(|c| c.as_object());
    let diff: serde_json::Map<String, serde_json::Value> = changes
        .into_iter()
        .flatten()
        .map(|(attribute, change)| {
            let side = |name: &str| change.get(name).cloned().unwrap_or(serde_json::Value::Null);
            (attribute.clone(), serde_json::json!({"current": side("current"), "desired": side("desired")}))
        })
        .collect();
    Some(serde_json::Value::Object(diff))
}
