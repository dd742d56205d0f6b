//! The server functions of the compile pages.

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;

#[cfg(feature = "ssr")]
use api::CompileStatus;

#[cfg(feature = "ssr")]
use crate::fns::{authorized_for, compile_row, env_id, fail, page_request, paged, seconds};
#[cfg(feature = "ssr")]
use crate::model::CompileStageRow;
use crate::model::{CompileDetailsView, CompileRow, Paged, TableQuery};

/// Compile reports, newest first. `filter.status` (queued, running, success, failed) becomes the
/// API's `started` / `completed` / `success` filters.
#[server(prefix = "/console/fn", endpoint = "compile_reports", input = Json)]
pub async fn compile_reports(query: TableQuery) -> Result<Paged<CompileRow>, ConsoleError> {
    let s = authorized_for("compile-report.read", &query.env)?;
    let id = env_id(&query.env)?;
    let mut query = query;
    let status = query.filters.remove("status").unwrap_or_default();
    let extra: &[(&str, &str)] = match CompileStatus::parse(&status) {
        _ if status.is_empty() => &[],
        Some(CompileStatus::Queued) => &[("started", "false")],
        Some(CompileStatus::Running) => &[("started", "true"), ("completed", "false")],
        Some(CompileStatus::Success) => &[("success", "true")],
        Some(CompileStatus::Failed) => &[("success", "false")],
        None => {
            let other = &status;
            return Err(ConsoleError::refused(format!(
                "{other:?} is not a compile status: use queued, running, success or failed"
            )));
        }
    };
    let mut req = page_request(&query);
    req.filters.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let page = s.orchestrator.compile_reports(id, &req).await.map_err(fail)?;
    Ok(paged(page, |c| compile_row(&c)))
}

/// Whether the environment compiles on the server (`server_compile`): the Recompile menu is
/// disabled otherwise.
#[server(prefix = "/console/fn", endpoint = "server_compile_enabled", input = Json)]
pub async fn server_compile_enabled(env: String) -> Result<bool, ConsoleError> {
    let s = authorized_for("environment.setting.read", &env)?;
    server_compile(&s.orchestrator, env_id(&env)?).await
}

/// Queues a compile of the environment (`update`: pull the repository and update modules first).
/// Returns what the operator should read: the queued compile, or why nothing was queued. Also
/// posted as a plain form (no wasm).
#[server(prefix = "/console/fn", endpoint = "recompile")]
pub async fn recompile(env: String, update: bool) -> Result<String, ConsoleError> {
    let s = crate::fns::authorized_compile(&env, update)?;
    let id = env_id(&env)?;
    if !server_compile(&s.orchestrator, id).await? {
        return Err(ConsoleError::refused(
            "server compiles are off for this environment: turn on the server_compile setting first",
        ));
    }
    let message =
        if update { "Update project and recompile from the web console" } else { "Recompile from the web console" };
    let requested = s
        .orchestrator
        .request_compile(
            id,
            orchestrator::compiles::CompileRequest {
                force_update: update,
                metadata: serde_json::json!({"type": "console", "message": message}),
                ..Default::default()
            },
        )
        .await
        .map_err(fail)?;
    match requested.id {
        Some(_) if requested.merged => Ok("Joined a compile that was already waiting.".into()),
        Some(_) => Ok("Compile queued.".into()),
        None => Err(ConsoleError::refused(requested.warnings.join("; "))),
    }
}

/// One compile with its stages and errors.
#[server(prefix = "/console/fn", endpoint = "compile_details", input = Json)]
pub async fn compile_details(env: String, id: String) -> Result<CompileDetailsView, ConsoleError> {
    let s = authorized_for("compile-report.read", &env)?;
    let env = env_id(&env)?;
    let id: uuid::Uuid = id.parse().map_err(|_| ConsoleError::refused(format!("{id:?} is not a compile id")))?;
    let d = s.orchestrator.compile_details(env, id).await.map_err(fail)?;
    let errors = d.compile_data.map(|data| data.errors).unwrap_or_default();
    let stages = d
        .reports
        .unwrap_or_default()
        .into_iter()
        .map(|stage| CompileStageRow {
            duration: Some(seconds(stage.started, stage.completed)),
            name: stage.name,
            command: stage.command,
            started: stage.started.to_string(),
            completed: stage.completed.map(|t| t.to_string()),
            returncode: stage.returncode,
            stdout: stage.outstream,
            stderr: stage.errstream,
        })
        .collect();
    Ok(CompileDetailsView {
        compile: compile_row(&d.report),
        trigger: d.report.metadata.get("type").and_then(|t| t.as_str()).unwrap_or_default().to_string(),
        failed_message: d.report.failed_compile_message.clone().filter(|m| !m.is_empty()),
        environment_variables: d.report.variables.environment_variables.into_iter().collect(),
        errors,
        stages,
    })
}

/// The `server_compile` setting of an environment (its default when unset).
#[cfg(feature = "ssr")]
async fn server_compile(o: &orchestrator::Orchestrator, env: uuid::Uuid) -> Result<bool, ConsoleError> {
    let all = o.environment_settings(env).await.map_err(fail)?;
    let name = api::settings::names::SERVER_COMPILE;
    let value = all.settings.get(name).or_else(|| all.definition.get(name).map(|d| &d.default));
    Ok(value.and_then(api::SettingValue::as_bool).unwrap_or(true))
}
