//! What one environment's scheduler knows of its resources: the released intent of each, its
//! dirty and blocked marks and last run, and who requires whom.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use api::ResourceId;
use api::state::{Blocked, ResourceState, StateVector};

use super::task::Scope;
use crate::resources::ResourceIntent;

/// A resource id as the scheduler's maps and queues hold it: shared, so the many places that
/// name one resource (queues, dependents, running tasks) clone a pointer, not four strings.
pub(crate) type Rid = Arc<ResourceId>;

pub(crate) struct Resource {
    pub id: Rid,
    pub version: i64,
    pub attributes: serde_json::Map<String, serde_json::Value>,
    pub requires: Vec<Rid>,
    pub hash: String,
    pub undefined: bool,
    pub blocked: Blocked,
    pub last_deployed_hash: Option<String>,
    pub last_status: Option<ResourceState>,
    /// Needs a deploy: intent changed or the last run did not end compliant.
    pub dirty: bool,
    /// When the last handler run ended, for the interval timers.
    pub last_end: Option<Instant>,
}

impl Resource {
    pub fn from_intent(intent: ResourceIntent) -> Resource {
        let blocked = intent.blocked;
        let compliant = intent.last_deployed_attribute_hash.as_deref() == Some(intent.attribute_hash.as_str())
            && intent.last_status == Some(ResourceState::Deployed);
        Resource {
            id: Arc::new(intent.id),
            version: intent.version,
            dirty: !compliant && blocked == Blocked::NotBlocked,
            attributes: intent.attributes,
            requires: intent.requires.into_iter().map(Arc::new).collect(),
            hash: intent.attribute_hash,
            undefined: intent.undefined,
            blocked,
            last_deployed_hash: intent.last_deployed_attribute_hash,
            last_status: intent.last_status,
            // Interval timers count from the scheduler's start for resources deployed before it.
            last_end: intent.last_deploy.map(|_| Instant::now()),
        }
    }

    pub fn flag(&self, name: &str, default: bool) -> bool {
        self.attributes.get(name).and_then(|v| v.as_bool()).unwrap_or(default)
    }

    /// Whether the interval deploy timer retries it: it needs a deploy and nothing blocks it.
    pub fn retryable(&self) -> bool {
        self.dirty && self.blocked == Blocked::NotBlocked
    }

    /// The single status of the resource (`api::state::StateVector::status`).
    pub fn status(&self, deploying: bool) -> ResourceState {
        StateVector {
            orphan: false,
            deploying,
            undefined: self.undefined,
            blocked: self.blocked,
            last_status: self.last_status,
            deployed_current_intent: self.last_deployed_hash.as_deref() == Some(self.hash.as_str()),
        }
        .status()
    }
}

/// The resources of the released version the scheduler loaded, and who requires whom.
#[derive(Default)]
pub(crate) struct Model {
    pub resources: HashMap<Rid, Resource>,
    /// resource -> the resources that require it.
    pub dependents: HashMap<Rid, Vec<Rid>>,
    /// The released version the resources were read from.
    pub loaded_version: i64,
    /// When that version was read: a handler run that ended after it ran for that version.
    pub loaded_at: Option<Instant>,
}

impl Model {
    pub fn get(&self, rid: &ResourceId) -> Option<&Resource> {
        self.resources.get(rid)
    }

    pub fn get_mut(&mut self, rid: &ResourceId) -> Option<&mut Resource> {
        self.resources.get_mut(rid)
    }

    pub fn dependents_of(&self, rid: &ResourceId) -> &[Rid] {
        self.dependents.get(rid).map_or(&[], Vec::as_slice)
    }

    /// Whether `rid` is loaded and temporarily blocked.
    pub fn temporarily_blocked(&self, rid: &ResourceId) -> bool {
        self.get(rid).is_some_and(|r| r.blocked == Blocked::TemporarilyBlocked)
    }

    /// Replaces the resources and rebuilds who requires whom. A requirement is pointed at the
    /// loaded resource's id, so each id is held once.
    pub fn replace(&mut self, mut resources: HashMap<Rid, Resource>) {
        let ids: HashMap<Rid, Rid> = resources.keys().map(|k| (k.clone(), k.clone())).collect();
        self.dependents.clear();
        for (rid, resource) in &mut resources {
            for req in &mut resource.requires {
                if let Some(shared) = ids.get(req) {
                    *req = shared.clone();
                }
                self.dependents.entry(req.clone()).or_default().push(rid.clone());
            }
        }
        self.resources = resources;
    }

    /// Forgets everything loaded from the database.
    pub fn clear(&mut self) {
        self.resources.clear();
        self.dependents.clear();
        self.loaded_version = 0;
        self.loaded_at = None;
    }

    pub fn dirty_count(&self) -> usize {
        self.resources.values().filter(|r| r.dirty).count()
    }

    /// The resources a user deploy (dirty ones) or repair (all but blocked ones) in `scope`
    /// takes, in id order.
    pub fn choose(&self, repair: bool, scope: &Scope) -> Vec<Rid> {
        choose(self.resources.values(), repair, scope)
    }
}

/// The resources a user deploy (dirty ones) or repair (all but blocked ones) in `scope` takes,
/// in id order. A scope names a resource by its id exactly as written (not a resource version id).
pub(crate) fn choose<'a>(resources: impl Iterator<Item = &'a Resource>, repair: bool, scope: &Scope) -> Vec<Rid> {
    let wanted: Option<HashSet<ResourceId>> = scope.resources.as_ref().map(|r| {
        r.iter().filter_map(|text| ResourceId::parse(text).ok().filter(|id| id.to_string() == *text)).collect()
    });
    let agents: Option<HashSet<&String>> = scope.agents.as_ref().map(|a| a.iter().collect());
    let mut chosen: Vec<Rid> = resources
        .filter(|r| {
            wanted.as_ref().is_none_or(|w| w.contains(&*r.id))
                && agents.as_ref().is_none_or(|a| a.contains(&r.id.agent))
                && r.blocked != Blocked::Blocked
                && (repair || r.dirty)
        })
        .map(|r| r.id.clone())
        .collect();
    chosen.sort_by_cached_key(|rid| rid.to_string());
    chosen
}
