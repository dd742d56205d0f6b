//! Pure checks and encodings of a version before it is stored: ids, requires, the dependency
//! graph, undefined resources and what they block, shipped handlers and module code of a
//! partial export, and the rows as the database unpacks them. No database.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use api::version::PutVersion;
use api::{ResourceId, ResourceState};

use super::StoredResource;
use crate::files::sha1_hex;
use crate::{Error, Result};

/// A validated version ready to store: its resources and which of them cannot be deployed,
/// and the resource rows already encoded for [`insert_resources`], so that the write
/// transaction holds the database's write lock only while the database works.
pub(super) struct PreparedVersion {
    pub(super) resources: Vec<StoredResource>,
    pub(super) undefined: BTreeSet<String>,
    pub(super) skipped: BTreeSet<String>,
    pub(super) payloads: Vec<String>,
}

pub(super) fn prepare_version(req: &PutVersion) -> Result<PreparedVersion> {
    let mut resources = validate_resources(req)?;
    let undefined: BTreeSet<String> =
        resources.iter().filter(|r| r.state == ResourceState::Undefined).map(|r| r.id.to_string()).collect();
    let skipped = dependents_of(&resources, &undefined);
    for r in resources.iter_mut().filter(|r| skipped.contains(&r.id.to_string())) {
        r.state = ResourceState::SkippedForUndefined;
    }
    let payloads = resource_payloads(&resources);
    Ok(PreparedVersion { resources, undefined, skipped, payloads })
}

/// A partial export may add handlers for new types, but replacing the code that handles a type of
/// the base version needs `allow_handler_code_update`, like module code does.
pub(super) fn check_shipped_handlers(
    base: &BTreeMap<String, String>,
    partial: &BTreeMap<String, String>,
) -> Result<()> {
    for (resource_type, hash) in partial {
        if let Some(old) = base.get(resource_type)
            && !old.eq_ignore_ascii_case(hash)
        {
            return Err(Error::BadRequest(format!(
                "the shipped handler of {resource_type} differs from the base version's; \
                 set allow_handler_code_update to replace it"
            )));
        }
    }
    Ok(())
}

/// Requires as plain resource ids, whatever versions they carry.
pub(super) fn plain_requires(value: Option<serde_json::Value>) -> Vec<String> {
    let mut out: Vec<String> = value
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|r| r.as_str().and_then(|t| ResourceId::parse_versioned(t).ok()).map(|(id, _)| id.to_string()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Handler code of modules in both the base and the partial must be the same.
pub(super) fn check_handler_code(base: Option<&str>, partial: Option<&serde_json::Value>) -> Result<()> {
    let base: serde_json::Value = base.and_then(|b| serde_json::from_str(b).ok()).unwrap_or_default();
    let (Some(base), Some(partial)) = (base.as_object(), partial.and_then(|p| p.as_object())) else {
        return Ok(());
    };
    for (module, code) in partial {
        if let Some(old) = base.get(module)
            && old != code
        {
            return Err(Error::BadRequest(format!(
                "the handler code of module {module} differs from the base version; \
                 set allow_handler_code_update to replace it"
            )));
        }
    }
    Ok(())
}

pub(super) fn merge_modules(base: Option<&str>, partial: Option<&serde_json::Value>) -> Option<serde_json::Value> {
    let mut merged = base.and_then(|b| serde_json::from_str::<serde_json::Value>(b).ok());
    match (merged.as_mut().and_then(|m| m.as_object_mut()), partial.and_then(|p| p.as_object())) {
        (Some(m), Some(p)) => {
            for (k, v) in p {
                m.insert(k.clone(), v.clone());
            }
        }
        (None, Some(_)) => merged = partial.cloned(),
        _ => {}
    }
    merged
}

/// The message of `version_info.export_metadata` when the export says its compile failed.
pub(super) fn failed_compile_message(version_info: Option<&serde_json::Value>) -> Option<String> {
    let export = version_info?.get("export_metadata")?;
    (export.get("inmanta:compile:state")?.as_str()? == api::CompileStatus::Failed.as_str())
        .then(|| export.get("message").and_then(|m| m.as_str()).unwrap_or("no message").to_string())
}

pub(super) fn ids_json(ids: &BTreeSet<String>) -> String {
    serde_json::json!(ids).to_string()
}

/// Checks ids, versions, requires and the dependency graph; returns resources ready to store.
fn validate_resources(req: &PutVersion) -> Result<Vec<StoredResource>> {
    let version = req.version;
    let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
    let mut resources = Vec::with_capacity(req.resources.len());
    let mut states: HashMap<String, ResourceState> = HashMap::new();
    for (rid, state) in &req.resource_state {
        crate::validate::id("a resource id", rid)?;
        let id = ResourceId::parse(rid).map_err(|e| Error::BadRequest(format!("resource_state: {e}")))?;
        let state = match ResourceState::parse(state) {
            Some(ResourceState::Available | ResourceState::Deployed) => ResourceState::Available,
            Some(ResourceState::Undefined) => ResourceState::Undefined,
            _ => {
                let other = state;
                return Err(Error::BadRequest(format!(
                    "resource_state of {rid}: {other:?} is not a state an export can set (available or undefined)"
                )));
            }
        };
        states.insert(id.to_string(), state);
    }
    for (index, resource) in req.resources.iter().enumerate() {
        let raw_id = resource
            .get("id")
            .and_then(|v| v.as_str())
            .ok_or_else(|| Error::BadRequest(format!("resource {index} has no \"id\" string")))?;
        crate::validate::id("a resource id", raw_id)?;
        let (id, id_version) = ResourceId::parse_versioned(raw_id).map_err(|e| Error::BadRequest(e.to_string()))?;
        crate::validate::name("an agent name", &id.agent)?;
        if id_version != 0 && id_version as i64 != version {
            return Err(Error::BadRequest(format!("resource {raw_id} carries version {id_version}, not {version}")));
        }
        let key = id.to_string();
        if by_id.insert(key.clone(), index).is_some() {
            return Err(Error::BadRequest(format!("resource {key} appears twice in version {version}")));
        }
        let requires = match resource.get("requires") {
            None | Some(serde_json::Value::Null) => vec![],
            Some(serde_json::Value::Array(items)) => {
                let mut out = BTreeSet::new();
                for item in items {
                    let text = item
                        .as_str()
                        .ok_or_else(|| Error::BadRequest(format!("requires of {key} must be resource ids")))?;
                    let (req_id, _) = ResourceId::parse_versioned(text)
                        .map_err(|e| Error::BadRequest(format!("requires of {key}: {e}")))?;
                    out.insert(req_id.to_string());
                }
                out.into_iter().collect()
            }
            Some(_) => return Err(Error::BadRequest(format!("requires of {key} must be a list"))),
        };
        let mut attributes = resource.clone();
        attributes.remove("id");
        attributes.remove("requires");
        let mut attributes = serde_json::Value::Object(attributes);
        // floats in one spelling, ints exact (serde_json's `arbitrary_precision` keeps the text)
        api::json::canonical_numbers(&mut attributes);
        let attributes = attributes.to_string();
        let attribute_hash = sha1_hex(format!("{attributes}{}", serde_json::json!(requires)).as_bytes());
        let resource_set = req.resource_sets.get(&key).cloned().flatten();
        let state = states.remove(&key).unwrap_or(ResourceState::Available);
        resources.push(StoredResource { id, attributes, attribute_hash, requires, resource_set, state });
    }
    if let Some(stray) = states.keys().next() {
        return Err(Error::BadRequest(format!("resource_state names {stray}, which is not in the version")));
    }
    for r in &resources {
        if let Some(missing) = r.requires.iter().find(|req| !by_id.contains_key(*req)) {
            return Err(Error::BadRequest(format!(
                "resource {} requires {missing}, which is not in version {version}",
                r.id
            )));
        }
    }
    if let Some(cycle) = find_cycle(&resources, &by_id) {
        return Err(Error::BadRequest(format!("the requires relation has a cycle: {}", cycle.join(" -> "))));
    }
    Ok(resources)
}

/// A cycle in the requires graph, as the ids along it, if there is one.
fn find_cycle(resources: &[StoredResource], by_id: &BTreeMap<String, usize>) -> Option<Vec<String>> {
    // Iterative depth-first search: 0 unvisited, 1 on the stack, 2 done.
    let mut mark = vec![0u8; resources.len()];
    for start in 0..resources.len() {
        if mark[start] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        mark[start] = 1;
        while let Some((node, next)) = stack.last_mut() {
            let node = *node;
            if let Some(dep) = resources[node].requires.get(*next) {
                *next += 1;
                let dep = by_id[dep];
                match mark[dep] {
                    0 => {
                        mark[dep] = 1;
                        stack.push((dep, 0));
                    }
                    1 => {
                        let from = stack.iter().position(|(n, _)| *n == dep).unwrap_or(0);
                        let mut cycle: Vec<String> =
                            stack[from..].iter().map(|(n, _)| resources[*n].id.to_string()).collect();
                        cycle.push(resources[dep].id.to_string());
                        return Some(cycle);
                    }
                    _ => {}
                }
            } else {
                mark[node] = 2;
                stack.pop();
            }
        }
    }
    None
}

/// Resources that require, directly or not, one of `roots` (and are not roots themselves).
fn dependents_of(resources: &[StoredResource], roots: &BTreeSet<String>) -> BTreeSet<String> {
    let mut dependents: HashMap<&str, Vec<String>> = HashMap::new();
    for r in resources {
        for req in &r.requires {
            dependents.entry(req.as_str()).or_default().push(r.id.to_string());
        }
    }
    let mut found = BTreeSet::new();
    let mut todo: Vec<String> = roots.iter().cloned().collect();
    while let Some(id) = todo.pop() {
        for dependent in dependents.get(id.as_str()).into_iter().flatten() {
            if !roots.contains(dependent) && found.insert(dependent.clone()) {
                todo.push(dependent.clone());
            }
        }
    }
    found
}

/// Resource rows per statement of [`insert_resources`].
const RESOURCES_PER_STATEMENT: usize = 2000;

/// The resource rows of a version as JSON arrays of [`RESOURCES_PER_STATEMENT`] rows.
fn resource_payloads(resources: &[StoredResource]) -> Vec<String> {
    resources
        .chunks(RESOURCES_PER_STATEMENT)
        .map(|chunk| {
            let rows: Vec<serde_json::Value> = chunk
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "resource_id": r.id.to_string(),
                        "resource_type": r.id.entity_type,
                        "agent": r.id.agent,
                        "id_attribute": r.id.attribute,
                        "id_value": r.id.value,
                        "attributes": r.attributes,
                        "attribute_hash": r.attribute_hash,
                        "requires": serde_json::json!(r.requires).to_string(),
                        "resource_set": r.resource_set,
                        "state": r.state,
                    })
                })
                .collect();
            serde_json::Value::Array(rows).to_string()
        })
        .collect()
}

/// Every shipped handler names a resource type and the sha1 of a file.
pub(super) fn check_handler_names(handlers: &BTreeMap<String, String>) -> Result<()> {
    for (resource_type, hash) in handlers {
        let parts: Vec<&str> = resource_type.split("::").collect();
        if parts.len() < 2 || parts.iter().any(|p| p.is_empty()) {
            return Err(Error::BadRequest(format!(
                "handlers: {resource_type:?} is not a resource type (expected <namespace>::<Type>)"
            )));
        }
        if hash.len() != 40 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::BadRequest(format!(
                "handlers: the handler of {resource_type} must be the 40-character sha1 hex of an uploaded file, got {hash:?}"
            )));
        }
    }
    Ok(())
}
