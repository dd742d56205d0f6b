//! `auto_full_compile`: requests a full compile (with update) of an environment at the times its
//! cron expression names (UTC). Settings are read again every few seconds.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use api::cron::next_fire;
use orchestrator::Orchestrator;
use uuid::Uuid;

/// Runs for as long as the server does.
pub(super) async fn run(o: Orchestrator) {
    let mut next: HashMap<Uuid, (String, Option<chrono::DateTime<chrono::Utc>>)> = HashMap::new();
    loop {
        let now = chrono::Utc::now();
        let mut wake_in = Duration::from_secs(5);
        match o.list_environments().await {
            Ok(envs) => {
                let mut seen = HashSet::new();
                for env in envs {
                    let names = api::settings::names::AUTO_FULL_COMPILE;
                    let expr = env.settings.get(names).and_then(api::SettingValue::as_str).unwrap_or("").trim();
                    let enabled = env
                        .settings
                        .get(api::settings::names::SERVER_COMPILE)
                        .and_then(api::SettingValue::as_bool)
                        .unwrap_or(true);
                    if expr.is_empty() || !enabled {
                        continue;
                    }
                    seen.insert(env.id);
                    let entry = next.entry(env.id).or_insert_with(|| (String::new(), None));
                    if entry.0 != expr {
                        *entry = (expr.to_string(), next_fire(expr, now));
                        if entry.1.is_none() {
                            tracing::warn!(env = %env.id, value = %expr, "auto_full_compile is not a valid cron expression");
                        }
                    }
                    let Some(at) = entry.1 else { continue };
                    if at <= now {
                        entry.1 = next_fire(expr, now);
                        // Every server sees the same firing: one of them requests it.
                        match o.claim_scheduled_compile(env.id, at).await {
                            Ok(true) => {}
                            Ok(false) => continue,
                            Err(e) => {
                                tracing::error!(env = %env.id, error = %e, "cannot claim the scheduled compile");
                                continue;
                            }
                        }
                        let request = orchestrator::compiles::CompileRequest {
                            metadata: serde_json::json!({
                                "type": "schedule",
                                "message": "Full recompile triggered by AUTO_FULL_COMPILE cron",
                            }),
                            ..Default::default()
                        };
                        if let Err(e) = o.request_compile(env.id, request).await {
                            tracing::error!(env = %env.id, error = %e, "cannot request the scheduled compile");
                        }
                    }
                    if let Some(at) = entry.1
                        && let Ok(wait) = (at - now).to_std()
                    {
                        wake_in = wake_in.min(wait);
                    }
                }
                next.retain(|id, _| seen.contains(id));
            }
            Err(e) => tracing::error!(error = %e, "cannot read the environments for auto_full_compile"),
        }
        tokio::time::sleep(wake_in.max(Duration::from_millis(100))).await;
    }
}
