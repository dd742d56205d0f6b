//! `PUT /api/v2/version/partial`: a partial export merged onto the latest version of the
//! environment, its resource sets replaced and its removed sets dropped.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use api::version::{PutPartial, PutVersion};
use api::{ResourceId, ResourceState};
use sqlx::Row;
use uuid::Uuid;

use super::StoredVersion;
use super::reads::handlers_of;
use super::validate::{check_handler_code, check_shipped_handlers, merge_modules, plain_requires, prepare_version};
use super::writes::{next_version, store_version};
use crate::statistics::Written;
use crate::{Error, Orchestrator, Result};

impl Orchestrator {
    /// `PUT /api/v2/version/partial`: a new version made of the latest one with the resource
    /// sets of `req` replaced and its removed sets dropped. Returns the new version number.
    pub async fn put_partial(&self, env: Uuid, req: PutPartial) -> Result<StoredVersion> {
        for resource in &req.resources {
            let raw = resource.get("id").and_then(|v| v.as_str()).unwrap_or_default();
            if let Ok((_, v)) = ResourceId::parse_versioned(raw)
                && v != 0
            {
                return Err(Error::BadRequest(format!(
                    "resource {raw} of a partial export must carry version 0 (,v=0): the server picks the version"
                )));
            }
        }
        let partial_sets: BTreeSet<String> = req.resource_sets.values().flatten().cloned().collect();
        if let Some(both) = req.removed_resource_sets.iter().find(|s| partial_sets.contains(*s)) {
            return Err(Error::BadRequest(format!("resource set {both} is both updated and removed")));
        }
        // Taking the next version number first locks the environment row, so partial exports
        // of one environment are applied one after the other.
        let mut tx = self.store.begin_write().await?;
        let version = next_version(&mut tx, env).await?;
        let base: Option<(i64, Option<String>)> = sqlx::query_as(
            "SELECT version, module_version_info FROM version WHERE environment = $1 ORDER BY version DESC LIMIT 1",
        )
        .bind(env.to_string())
        .fetch_optional(&mut *tx)
        .await?;
        let Some((base, base_modules)) = base else {
            return Err(Error::BadRequest(
                "a partial export needs an existing version to build on: export the full model first".into(),
            ));
        };
        let base_handlers = handlers_of(&mut tx, env, base).await?;
        if !req.allow_handler_code_update {
            check_handler_code(base_modules.as_deref(), req.module_version_info.as_ref())?;
            check_shipped_handlers(&base_handlers, &req.handlers)?;
        }
        let rows = sqlx::query(
            "SELECT resource_id, attributes, requires, resource_set, state FROM resource \
             WHERE environment = $1 AND version = $2",
        )
        .bind(env.to_string())
        .bind(base)
        .fetch_all(&mut *tx)
        .await?;
        let mut merged = PutVersion {
            version,
            resources: Vec::with_capacity(rows.len() + req.resources.len()),
            resource_state: req.resource_state.clone(),
            unknowns: req.unknowns.clone(),
            version_info: req.version_info.clone(),
            resource_sets: BTreeMap::new(),
            module_version_info: merge_modules(base_modules.as_deref(), req.module_version_info.as_ref()),
            pip_config: req.pip_config.clone(),
            project_constraints: req.project_constraints.clone(),
            compiler_version: None,
            // The base's shipped handlers stay; the partial's win for the types it names.
            handlers: base_handlers.into_iter().chain(req.handlers.clone()).collect(),
        };
        let incoming: HashMap<String, &serde_json::Map<String, serde_json::Value>> = req
            .resources
            .iter()
            .filter_map(|r| {
                let raw = r.get("id")?.as_str()?;
                Some((ResourceId::parse_versioned(raw).ok()?.0.to_string(), r))
            })
            .collect();
        for row in rows {
            let rid: String = row.try_get("resource_id")?;
            let set: Option<String> = row.try_get("resource_set")?;
            let state: String = row.try_get("state")?;
            let replaced =
                set.as_ref().is_some_and(|s| partial_sets.contains(s) || req.removed_resource_sets.contains(s));
            if replaced {
                continue;
            }
            let mut resource: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&row.try_get::<String, _>("attributes")?)
                    .map_err(|e| Error::Corrupt(e.to_string()))?;
            let requires: Vec<String> = serde_json::from_str(&row.try_get::<String, _>("requires")?)
                .map_err(|e| Error::Corrupt(e.to_string()))?;
            if let Some(new) = incoming.get(&rid) {
                let new_set = req.resource_sets.get(&rid).cloned().flatten();
                match (&set, &new_set) {
                    (Some(old), _) => {
                        return Err(Error::BadRequest(format!(
                            "resource {rid} belongs to resource set {old}, which this partial export does not replace; \
                             a resource cannot move between sets"
                        )));
                    }
                    (None, Some(new_set)) => {
                        return Err(Error::BadRequest(format!(
                            "resource {rid} is shared (in no resource set) in version {base} and cannot move into set {new_set}"
                        )));
                    }
                    (None, None) => {
                        let mut theirs = (*new).clone();
                        theirs.remove("id");
                        let their_requires = plain_requires(theirs.remove("requires"));
                        if theirs != resource || their_requires != requires {
                            return Err(Error::BadRequest(format!(
                                "shared resource {rid} differs from the one in version {base}: \
                                 shared resources must be identical in every partial export"
                            )));
                        }
                        // Identical: the partial's copy is stored below.
                        continue;
                    }
                }
            }
            resource.insert("id".into(), api::resource::versioned_id(&rid, 0).into());
            resource.insert("requires".into(), serde_json::json!(requires));
            if state == ResourceState::Undefined.as_str() && !merged.resource_state.contains_key(&rid) {
                merged.resource_state.insert(rid.clone(), ResourceState::Undefined.to_string());
            }
            merged.resource_sets.insert(rid, set);
            merged.resources.push(resource);
        }
        merged.resources.extend(req.resources.iter().cloned());
        for (rid, set) in &req.resource_sets {
            merged.resource_sets.insert(rid.clone(), set.clone());
        }
        let prepared = prepare_version(&merged)?;
        store_version(&mut tx, self.store.kind(), env, &merged, &prepared, Some(base)).await?;
        tx.commit().await?;
        self.store.wrote_rows("resource", prepared.resources.len() as u64, Written::Bulk);
        tracing::info!(%env, version, base, sets = ?partial_sets, removed = ?req.removed_resource_sets, "partial version stored");
        self.after_store(env, version).await
    }
}
