//! Environment settings: explicit values stored per environment, defaults from the catalogue in
//! `api::settings`, and protection (settings pushed from `project.yml` become read-only).

use std::collections::BTreeMap;

use api::SettingValue;
use api::settings::{EnvironmentSettings, SettingDefinition, definitions, names};
use uuid::Uuid;

use crate::{Error, Orchestrator, Result};

type Explicit = BTreeMap<String, SettingValue>;
type Protection = BTreeMap<String, String>;

fn parse<T: serde::de::DeserializeOwned>(json: &str, what: &str) -> Result<T> {
    serde_json::from_str(json).map_err(|e| Error::Corrupt(format!("{what}: {e}")))
}

/// Every setting's value: the explicit one where set, else its default.
pub(crate) fn effective_settings(explicit_json: &str) -> Result<BTreeMap<String, SettingValue>> {
    Ok(with_defaults(&parse(explicit_json, "environment settings")?))
}

fn with_defaults(explicit: &Explicit) -> BTreeMap<String, SettingValue> {
    definitions()
        .into_iter()
        .map(|d| {
            let value = explicit.get(&d.name).cloned().unwrap_or(d.default);
            (d.name, value)
        })
        .collect()
}

fn definitions_with_protection(protection: &Protection) -> BTreeMap<String, SettingDefinition> {
    definitions()
        .into_iter()
        .map(|mut d| {
            if let Some(by) = protection.get(&d.name) {
                d.protected = true;
                d.protected_by = Some(by.clone());
            }
            (d.name.clone(), d)
        })
        .collect()
}

fn definition(name: &str) -> Result<SettingDefinition> {
    definitions().into_iter().find(|d| d.name == name).ok_or_else(|| {
        let removed = if api::settings::REMOVED_SETTINGS.contains(&name) { " (it was removed)" } else { "" };
        Error::NotFound(format!("{name} is not a valid environment setting{removed}"))
    })
}

/// Settings that constrain each other: a numeric deploy interval must be below a numeric repair
/// interval (else every repair would be preceded by a useless retry).
fn check_combination(settings: &BTreeMap<String, SettingValue>) -> Result<()> {
    let seconds =
        |name: &str| settings.get(name).and_then(SettingValue::as_str).and_then(|s| s.trim().parse::<u64>().ok());
    if let (Some(deploy), Some(repair)) = (seconds(names::DEPLOY_INTERVAL), seconds(names::REPAIR_INTERVAL))
        && deploy != 0
        && repair != 0
        && deploy >= repair
    {
        return Err(Error::BadRequest(format!(
            "{} ({deploy}) must be smaller than {} ({repair})",
            names::DEPLOY_INTERVAL,
            names::REPAIR_INTERVAL
        )));
    }
    Ok(())
}

impl Orchestrator {
    pub async fn environment_settings(&self, env: Uuid) -> Result<EnvironmentSettings> {
        let mut tx = self.store.pool().begin().await?;
        let row = self.environment_row(&mut tx, env).await?;
        tx.commit().await?;
        Ok(EnvironmentSettings {
            settings: effective_settings(&row.settings)?,
            definition: definitions_with_protection(&parse(&row.protected_settings, "protected settings")?),
        })
    }

    /// One setting's value, with every definition (as Inmanta answers).
    pub async fn environment_setting(&self, env: Uuid, name: &str) -> Result<EnvironmentSettings> {
        definition(name)?;
        let mut all = self.environment_settings(env).await?;
        all.settings.retain(|k, _| k == name);
        Ok(all)
    }

    pub async fn set_environment_setting(&self, env: Uuid, name: &str, value: &serde_json::Value) -> Result<()> {
        let def = definition(name)?;
        let value = def.validate(value).map_err(|e| Error::BadRequest(e.0))?;
        self.update_settings(env, |explicit, protection| {
            if let Some(by) = protection.get(name) {
                return Err(protected(name, by));
            }
            explicit.insert(name.to_string(), value);
            Ok(())
        })
        .await
    }

    /// Resets a setting to its default.
    pub async fn delete_environment_setting(&self, env: Uuid, name: &str) -> Result<()> {
        definition(name)?;
        self.update_settings(env, |explicit, protection| {
            if let Some(by) = protection.get(name) {
                return Err(protected(name, by));
            }
            explicit.remove(name);
            Ok(())
        })
        .await
    }

    /// Sets the given settings and marks them protected by `protected_by`; settings protected
    /// earlier by the same source but absent now lose their protection (the source dropped them).
    pub async fn set_protected_settings(
        &self,
        env: Uuid,
        settings: &BTreeMap<String, serde_json::Value>,
        protected_by: &str,
    ) -> Result<()> {
        let mut validated = Vec::with_capacity(settings.len());
        for (name, value) in settings {
            let def = definition(name)?;
            validated.push((name.clone(), def.validate(value).map_err(|e| Error::BadRequest(e.0))?));
        }
        self.update_settings(env, |explicit, protection| {
            protection.retain(|_, by| by != protected_by);
            for (name, value) in validated {
                protection.insert(name.clone(), protected_by.to_string());
                explicit.insert(name, value);
            }
            Ok(())
        })
        .await
    }

    async fn update_settings(
        &self,
        env: Uuid,
        change: impl FnOnce(&mut Explicit, &mut Protection) -> Result<()>,
    ) -> Result<()> {
        let mut tx = self.store.begin_write().await?;
        let row = self.environment_row(&mut tx, env).await?;
        let mut explicit: Explicit = parse(&row.settings, "environment settings")?;
        let mut protection: Protection = parse(&row.protected_settings, "protected settings")?;
        change(&mut explicit, &mut protection)?;
        check_combination(&with_defaults(&explicit))?;
        sqlx::query("UPDATE environment SET settings = $1, protected_settings = $2 WHERE id = $3")
            .bind(serde_json::to_string(&explicit).map_err(|e| Error::Corrupt(e.to_string()))?)
            .bind(serde_json::to_string(&protection).map_err(|e| Error::Corrupt(e.to_string()))?)
            .bind(env.to_string())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        self.publish(crate::Event::SettingsChanged { env });
        Ok(())
    }
}

fn protected(name: &str, by: &str) -> Error {
    Error::Forbidden(format!("setting {name} is protected by {by} and cannot be changed here; change it in {by}"))
}
