//! The latest released version of an environment, moved with its number, resources and files
//! and released here, so this server's scheduler deploys the same desired state without a
//! compile.

use std::collections::BTreeSet;

use api::state::ResourceState;
use api::version::PutVersion;
use serde_json::{Map, Value};

use super::source::SourceVersion;
use super::{EnvMove, Fatal, Outcome, Report};

pub(super) async fn latest_released_into(moving: EnvMove<'_>, report: &mut Report) -> Result<(), Fatal> {
    let EnvMove { source, target, env, name: env_name } = moving;
    let read = |e: api::client::ClientError| format!("cannot read the versions of {env_name}: {e}");
    let Some(version) = source.latest_released(env).await.map_err(read)? else {
        report.note(format!("{env_name} has no released version to move"));
        return Ok(());
    };
    let what = format!("version {version} of {env_name}");
    let (versions, _) = target.list_versions(env, 0, 1000).await.map_err(|e| e.to_string())?;
    if let Some(here) = versions.iter().find(|v| v.version == version) {
        if here.released {
            report.say(Outcome::Unchanged, format!("{what} (released)"));
        } else {
            // A previous run stored it and stopped before releasing it.
            match target.release_version(env, version).await {
                Ok(_) => report.say(Outcome::Updated, format!("{what}: released")),
                Err(e) => report.not_moved(what, e),
            }
        }
        return Ok(());
    }
    if let Some(newer) = versions.iter().filter(|v| v.released && v.version > version).map(|v| v.version).max() {
        report.not_moved(what, format!("version {newer} is released here already, and it is newer"));
        return Ok(());
    }
    let full = source.full_version(env, version).await.map_err(read)?;
    let pip_config = match full.model.get("pip_config").filter(|c| !c.is_null()) {
        Some(config) => Some(config.clone()),
        None => source.pip_config(env, version).await.unwrap_or_default(),
    };
    let put = put_version(&full, pip_config);
    let files = files_of(&put);
    let mut missing = 0;
    for hash in &files {
        if target.file_exists(hash).await.map_err(|e| e.to_string())? {
            continue;
        }
        match source.file(hash).await {
            Ok(content) => target.upload_file(hash, &content).await.map_err(|e| e.to_string())?,
            Err(e) => {
                report.not_moved(format!("file {hash} of {what}"), e);
                missing += 1;
            }
        }
    }
    if missing > 0 {
        report.not_moved(what, format!("{missing} of its files could not be read"));
        return Ok(());
    }
    let resources = put.resources.len();
    let stored = async {
        target.reserve_version_number(env, version).await?;
        let stored = target.put_version(env, put).await?;
        if !stored.released {
            target.release_version(env, version).await?;
        }
        Ok::<(), orchestrator::Error>(())
    };
    match stored.await {
        Ok(()) => report.say(Outcome::Moved, format!("{what}: {resources} resources, {} files, released", files.len())),
        Err(e) => report.not_moved(&what, e),
    }
    report.note(format!(
        "{what}: the code of its Python modules is not served by Inmanta's API; resources with a Python handler \
         deploy after the environment's next compile here"
    ));
    Ok(())
}

/// The version in the export form `PUT /api/v1/version` takes: each resource's attributes with
/// its versioned id.
fn put_version(full: &SourceVersion, pip_config: Option<Value>) -> PutVersion {
    let mut put = PutVersion {
        version: full.version,
        version_info: full.model.get("version_info").filter(|v| !v.is_null()).cloned(),
        pip_config,
        project_constraints: full.model.get("project_constraints").and_then(Value::as_str).map(str::to_string),
        ..Default::default()
    };
    for row in &full.resources {
        let id = row["resource_id"].as_str().unwrap_or_default();
        let mut resource: Map<String, Value> = match &row["attributes"] {
            Value::Object(attributes) => attributes.clone(),
            // Stored as JSON text by some releases.
            Value::String(text) => serde_json::from_str(text).unwrap_or_default(),
            _ => Map::new(),
        };
        let versioned = api::resource::versioned_id(id, full.version as u64);
        resource.insert("id".into(), Value::String(versioned));
        if row["is_undefined"].as_bool() == Some(true) {
            put.resource_state.insert(id.to_string(), ResourceState::Undefined.as_str().to_string());
        }
        put.resources.push(resource);
    }
    put
}

/// The sha1 ids of the files the version's resources refer to (`hash` attributes, as fs::File
/// and every Inmanta module that ships content through the file store).
fn files_of(put: &PutVersion) -> BTreeSet<String> {
    put.resources
        .iter()
        .filter_map(|r| r.get("hash").and_then(Value::as_str))
        .filter(|h| h.len() == 40 && h.chars().all(|c| c.is_ascii_hexdigit()))
        .map(str::to_string)
        .collect()
}
