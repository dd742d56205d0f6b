//! Server-side compiles: the persisted queue of compile requests per environment, their stages
//! and reports (docs/api.md, "Compiles"; docs/autonomous.md).
//!
//! A request is a `compile` row with `started` unset. Identical pending requests merge into one
//! row. The runner (in the server binary) takes the oldest pending request of an environment
//! that is not halted and has nothing running, marks it started, records its stages in
//! `compile_report` and finishes it. A server restart puts started-but-unfinished compiles back
//! in the queue ([`Orchestrator::recover_compiles`]).

use std::collections::{BTreeMap, HashMap, HashSet};

use api::SettingValue;
use api::compile::{CompileDetails, CompileReport, CompileStage, CompileTimes, CompileVariables, ExportScope};
use api::operations::NotificationSeverity;
use api::settings::names;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::notifications::{NewNotification, insert_notification};
use crate::paging::{Column, ColumnKind, Filter, FilterKind, Order, Page, PageRequest, Source, View, fetch_page};
use crate::settings::effective_settings;
use crate::store::{db_now_ms, format_time, now, parse_opt_timestamp, parse_time, parse_timestamp, parse_uuid};
use crate::{Error, Orchestrator, Result};

/// `GET /api/v2/compilereport`.
pub const COMPILE_REPORT_VIEW: View = View {
    sort_columns: &[Column { name: "requested", sql: "c.requested", kind: ColumnKind::Date }],
    default_sort: ("requested", Order::Desc),
    filters: &[
        Filter { name: "requested", sql: "c.requested", kind: FilterKind::Range(ColumnKind::Date) },
        Filter { name: "success", sql: "c.success", kind: FilterKind::Bool },
        Filter { name: "started", sql: "c.started", kind: FilterKind::IsSet },
        Filter { name: "completed", sql: "c.completed", kind: FilterKind::IsSet },
    ],
    id_sql: "c.id",
    id_kind: ColumnKind::Text,
};

const COLUMNS: &str = "c.id, c.environment, c.requested, c.started, c.completed, c.do_export, c.force_update, \
     c.metadata, c.requested_environment_variables, c.mergeable_environment_variables, c.partial, \
     c.removed_resource_sets, c.exporter_plugin, c.notify_failed_compile, c.failed_compile_message, c.success, \
     c.version, c.links, c.reinstall";

#[derive(sqlx::FromRow)]
struct CompileRow {
    id: String,
    environment: String,
    requested: String,
    started: Option<String>,
    completed: Option<String>,
    #[sqlx(flatten)]
    request: RequestColumns,
    #[sqlx(flatten)]
    outcome: OutcomeColumns,
}

/// What the compile was asked to do.
#[derive(sqlx::FromRow)]
struct RequestColumns {
    do_export: i64,
    force_update: i64,
    metadata: String,
    requested_environment_variables: String,
    mergeable_environment_variables: String,
    partial: i64,
    removed_resource_sets: String,
    exporter_plugin: Option<String>,
    notify_failed_compile: Option<i64>,
    reinstall: i64,
}

/// What the compile ended in.
#[derive(sqlx::FromRow)]
struct OutcomeColumns {
    failed_compile_message: Option<String>,
    success: Option<i64>,
    version: Option<i64>,
    links: String,
}

fn json<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::Corrupt(format!("compile {what}: {e}")))
}

impl CompileRow {
    fn into_api(self) -> Result<CompileReport> {
        let CompileRow { id, environment, requested, started, completed, request, outcome } = self;
        let requested_env: BTreeMap<String, String> =
            json(&request.requested_environment_variables, "requested environment variables")?;
        let mergeable: BTreeMap<String, String> =
            json(&request.mergeable_environment_variables, "mergeable environment variables")?;
        let mut all = mergeable.clone();
        all.extend(requested_env.clone());
        Ok(CompileReport {
            id: parse_uuid(&id)?,
            remote_id: None,
            environment: parse_uuid(&environment)?,
            times: CompileTimes {
                requested: Some(parse_timestamp(&requested)?),
                started: parse_opt_timestamp(started.as_deref())?,
                completed: parse_opt_timestamp(completed.as_deref())?,
            },
            success: outcome.success.map(|s| s != 0),
            version: outcome.version,
            do_export: request.do_export != 0,
            force_update: request.force_update != 0,
            metadata: json(&request.metadata, "metadata")?,
            variables: CompileVariables {
                environment_variables: all,
                requested_environment_variables: requested_env,
                mergeable_environment_variables: mergeable,
            },
            export: ExportScope {
                partial: request.partial != 0,
                removed_resource_sets: json(&request.removed_resource_sets, "removed resource sets")?,
                exporter_plugin: request.exporter_plugin,
            },
            notify_failed_compile: request.notify_failed_compile.map(|n| n != 0),
            failed_compile_message: outcome.failed_compile_message,
            links: json(&outcome.links, "links")?,
        })
    }
}

#[derive(sqlx::FromRow)]
struct StageRow {
    id: String,
    started: String,
    completed: Option<String>,
    command: String,
    name: String,
    errstream: String,
    outstream: String,
    returncode: Option<i64>,
}

impl StageRow {
    fn into_api(self) -> Result<CompileStage> {
        Ok(CompileStage {
            id: parse_uuid(&self.id)?,
            started: parse_timestamp(&self.started)?,
            completed: parse_opt_timestamp(self.completed.as_deref())?,
            command: self.command,
            name: self.name,
            errstream: self.errstream,
            outstream: self.outstream,
            returncode: self.returncode,
        })
    }
}

/// A compile request as the REST API, the CLI, the console or a timer makes it.
#[derive(Debug, Clone)]
pub struct CompileRequest {
    /// Pull the repository and update modules first.
    pub force_update: bool,
    pub do_export: bool,
    pub metadata: serde_json::Value,
    pub requested_environment_variables: BTreeMap<String, String>,
    pub mergeable_environment_variables: BTreeMap<String, String>,
    pub partial: bool,
    pub removed_resource_sets: Vec<String>,
    /// Start from a clean slate: remove the checkout and its virtual environment first.
    pub reinstall: bool,
}

impl Default for CompileRequest {
    fn default() -> Self {
        CompileRequest {
            force_update: true,
            do_export: true,
            metadata: serde_json::json!({}),
            requested_environment_variables: BTreeMap::new(),
            mergeable_environment_variables: BTreeMap::new(),
            partial: false,
            removed_resource_sets: Vec::new(),
            reinstall: false,
        }
    }
}

/// What became of a compile request.
#[derive(Debug, Clone)]
pub struct CompileRequested {
    /// The queued compile that will serve the request; `None` when server compiles are off.
    pub id: Option<Uuid>,
    /// The request joined an identical one that was already waiting.
    pub merged: bool,
    pub warnings: Vec<String>,
}

/// A queued compile the runner may start now, with what it needs to run it.
#[derive(Debug, Clone)]
pub struct QueuedCompile {
    pub id: Uuid,
    pub environment: Uuid,
    pub requested: DateTime<Utc>,
    pub force_update: bool,
    pub do_export: bool,
    /// Remove the checkout and its virtual environment before this compile.
    pub reinstall: bool,
    pub partial: bool,
    pub removed_resource_sets: Vec<String>,
    pub metadata: serde_json::Value,
    pub environment_variables: BTreeMap<String, String>,
    pub repo_url: String,
    pub repo_branch: String,
    /// `server_compile` of the environment.
    pub server_compile: bool,
    /// `recompile_backoff` of the environment, in seconds.
    pub backoff: f64,
    /// When the environment's previous compile finished.
    pub last_completed: Option<DateTime<Utc>>,
}

impl QueuedCompile {
    /// The earliest moment this compile may start: `recompile_backoff` after the request and
    /// after the previous compile of the environment.
    pub fn not_before(&self) -> DateTime<Utc> {
        let backoff = chrono::Duration::milliseconds((self.backoff.max(0.0) * 1000.0) as i64);
        let after_request = self.requested + backoff;
        match self.last_completed {
            Some(last) => after_request.max(last + backoff),
            None => after_request,
        }
    }
}

/// How a compile ended.
#[derive(Debug, Clone, Default)]
pub struct CompileOutcome {
    pub success: bool,
    pub version: Option<i64>,
    pub compile_data: Option<api::CompileData>,
    /// Why it failed, for the server's log (the report holds each stage's output).
    pub message: String,
}

/// One finished stage's output.
#[derive(Debug, Clone, Default)]
pub struct StageResult {
    pub outstream: String,
    pub errstream: String,
    pub returncode: Option<i64>,
}

impl Orchestrator {
    /// Wakes the compile runner: a request was queued or a compile finished.
    pub fn compile_wakeup(&self) -> &tokio::sync::Notify {
        &self.compile_wakeup
    }

    /// Queues a compile, or merges it into an identical request that is still waiting.
    pub async fn request_compile(&self, env: Uuid, req: CompileRequest) -> Result<CompileRequested> {
        let settings = self.environment_settings(env).await?.settings;
        if settings.get(names::SERVER_COMPILE).and_then(SettingValue::as_bool) == Some(false) {
            return Ok(CompileRequested {
                id: None,
                merged: false,
                warnings: vec![format!(
                    "Skipping compile because server compile is disabled for environment {env} \
                     (setting {})",
                    names::SERVER_COMPILE
                )],
            });
        }
        let metadata = serde_json::to_string(&req.metadata).unwrap_or_else(|_| "{}".into());
        let requested_vars = serde_json::to_string(&req.requested_environment_variables).unwrap_or_default();
        let removed = serde_json::to_string(&req.removed_resource_sets).unwrap_or_default();
        let mut tx = self.store.begin_write().await?;
        let pending: Vec<CompileRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM compile c WHERE c.environment = $1 AND c.started IS NULL \
             AND c.completed IS NULL ORDER BY c.requested"
        ))
        .bind(env.to_string())
        .fetch_all(&mut *tx)
        .await?;
        let same = pending.into_iter().find(|c| {
            (c.request.do_export != 0) == req.do_export
                && (c.request.partial != 0) == req.partial
                && json::<Vec<String>>(&c.request.removed_resource_sets, "").ok().as_ref()
                    == Some(&req.removed_resource_sets)
                && json::<BTreeMap<String, String>>(&c.request.requested_environment_variables, "").ok().as_ref()
                    == Some(&req.requested_environment_variables)
        });
        let (id, merged) = match same {
            Some(row) => {
                let mut mergeable: BTreeMap<String, String> =
                    json(&row.request.mergeable_environment_variables, "mergeable environment variables")?;
                mergeable.extend(req.mergeable_environment_variables.clone());
                sqlx::query(
                    "UPDATE compile SET force_update = $1, mergeable_environment_variables = $2, \
                     merged = merged + 1, reinstall = $4 WHERE id = $3",
                )
                .bind(i64::from(row.request.force_update != 0 || req.force_update))
                .bind(serde_json::to_string(&mergeable).unwrap_or_default())
                .bind(&row.id)
                .bind(i64::from(row.request.reinstall != 0 || req.reinstall))
                .execute(&mut *tx)
                .await?;
                (parse_uuid(&row.id)?, true)
            }
            None => {
                let id = Uuid::new_v4();
                sqlx::query(
                    "INSERT INTO compile (id, environment, requested, do_export, force_update, metadata, \
                     requested_environment_variables, mergeable_environment_variables, partial, \
                     removed_resource_sets, reinstall) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                )
                .bind(id.to_string())
                .bind(env.to_string())
                .bind(now())
                .bind(i64::from(req.do_export))
                .bind(i64::from(req.force_update))
                .bind(metadata)
                .bind(requested_vars)
                .bind(serde_json::to_string(&req.mergeable_environment_variables).unwrap_or_default())
                .bind(i64::from(req.partial))
                .bind(removed)
                .bind(i64::from(req.reinstall))
                .execute(&mut *tx)
                .await?;
                (id, false)
            }
        };
        tx.commit().await?;
        self.compile_wakeup.notify_one();
        self.publish(crate::Event::CompileChanged { env });
        Ok(CompileRequested { id: Some(id), merged, warnings: Vec::new() })
    }

    /// Deletes the compiles (their reports go with them) that finished before `cutoff`, except
    /// those of halted environments, as Inmanta's `Compile.delete_older_than`; how many.
    pub async fn delete_compiles_finished_before(&self, cutoff: DateTime<Utc>) -> Result<u64> {
        let mut tx = self.store.begin_write().await?;
        let deleted = sqlx::query(
            "DELETE FROM compile WHERE completed IS NOT NULL AND completed <= $1 \
             AND environment IN (SELECT id FROM environment WHERE halted = 0)",
        )
        .bind(crate::store::format_time(cutoff))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok(deleted)
    }

    /// Whether a compile of the environment is running now.
    pub async fn is_compiling(&self, env: Uuid) -> Result<bool> {
        self.ensure_environment(env).await?;
        let running: Option<String> = sqlx::query_scalar(
            "SELECT id FROM compile WHERE environment = $1 AND started IS NOT NULL AND completed IS NULL LIMIT 1",
        )
        .bind(env.to_string())
        .fetch_optional(self.store.pool())
        .await?;
        Ok(running.is_some())
    }

    /// Compiles of the environment that did not finish yet, oldest request first.
    pub async fn compile_queue(&self, env: Uuid) -> Result<Vec<CompileReport>> {
        self.ensure_environment(env).await?;
        let rows: Vec<CompileRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM compile c WHERE c.environment = $1 AND c.completed IS NULL \
             ORDER BY c.requested, c.id"
        ))
        .bind(env.to_string())
        .fetch_all(self.store.pool())
        .await?;
        rows.into_iter().map(CompileRow::into_api).collect()
    }

    /// `GET /api/v1/compilereport`: newest first, requested in `(start, end)`, at most `limit`.
    pub async fn compile_reports_v1(
        &self,
        env: Uuid,
        start: Option<&str>,
        end: Option<&str>,
        limit: Option<i64>,
    ) -> Result<Vec<CompileReport>> {
        self.ensure_environment(env).await?;
        let bound = |value: Option<&str>, what: &str| -> Result<String> {
            match value {
                None => Ok(String::new()),
                Some(v) => crate::paging::parse_date(v)
                    .ok_or_else(|| Error::BadRequest(format!("{what} must be an ISO-8601 timestamp, got {v:?}"))),
            }
        };
        let start = bound(start, "start")?;
        let end = bound(end, "end")?;
        let limit = limit.unwrap_or(1000);
        if limit <= 0 {
            return Err(Error::BadRequest(format!("limit must be positive, got {limit}")));
        }
        let rows: Vec<CompileRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM compile c WHERE c.environment = $1 AND ($2 = '' OR c.requested > $2) \
             AND ($3 = '' OR c.requested < $3) ORDER BY c.requested DESC, c.id DESC LIMIT {limit}"
        ))
        .bind(env.to_string())
        .bind(start)
        .bind(end)
        .fetch_all(self.store.pool())
        .await?;
        rows.into_iter().map(CompileRow::into_api).collect()
    }

    /// `GET /api/v2/compilereport`.
    pub async fn compile_reports(&self, env: Uuid, req: &PageRequest) -> Result<Page<CompileReport>> {
        self.ensure_environment(env).await?;
        let binds = [env.to_string()];
        let page: Page<CompileRow> = fetch_page(
            &self.store,
            &COMPILE_REPORT_VIEW,
            req,
            Source {
                select: COLUMNS,
                from: "compile c",
                scope: "c.environment = $1",
                scope_binds: &binds,
                base_path: "/api/v2/compilereport",
            },
        )
        .await?;
        page.try_map(CompileRow::into_api)
    }

    /// One compile with its stages and structured errors.
    pub async fn compile_details(&self, env: Uuid, id: Uuid) -> Result<CompileDetails> {
        let row: Option<CompileRow> =
            sqlx::query_as(&format!("SELECT {COLUMNS} FROM compile c WHERE c.environment = $1 AND c.id = $2"))
                .bind(env.to_string())
                .bind(id.to_string())
                .fetch_optional(self.store.pool())
                .await?;
        let report = row.ok_or_else(|| compile_not_found(env, id))?.into_api()?;
        let stages: Vec<StageRow> = sqlx::query_as(
            "SELECT id, started, completed, command, name, errstream, outstream, returncode FROM compile_report \
             WHERE compile = $1 ORDER BY started, id",
        )
        .bind(id.to_string())
        .fetch_all(self.store.pool())
        .await?;
        let compile_data = self.compile_data(env, id).await?;
        Ok(CompileDetails {
            report,
            compile_data,
            reports: Some(stages.into_iter().map(StageRow::into_api).collect::<Result<_>>()?),
        })
    }

    /// The structured errors of a compile (`{"errors": [...]}`), or `None` when it has none yet.
    pub async fn compile_data(&self, env: Uuid, id: Uuid) -> Result<Option<api::CompileData>> {
        let row: Option<(Option<String>,)> =
            sqlx::query_as("SELECT compile_data FROM compile WHERE environment = $1 AND id = $2")
                .bind(env.to_string())
                .bind(id.to_string())
                .fetch_optional(self.store.pool())
                .await?;
        let (data,) = row.ok_or_else(|| compile_not_found(env, id))?;
        data.map(|d| json(&d, "data")).transpose()
    }

    /// Compiles whose server stopped go back in the queue, their partial stages dropped: those
    /// whose claim expired unrenewed, or (on PostgreSQL) whose server's liveness lock is gone;
    /// on SQLite, where one server runs per database, every claim but this server's. Returns how
    /// many. A compile another live server still runs is left alone. A compile whose export
    /// stored its version before the server stopped (the version names the compile in
    /// `export_metadata["inmanta:compile:id"]`) is finished with that version instead: running
    /// it again would store a second version.
    pub async fn recover_compiles(&self) -> Result<u64> {
        let now = db_now_ms(self.store.kind());
        let orphaned = match self.store.kind() {
            crate::DbKind::Sqlite => "(claim_holder IS NULL OR claim_holder <> $1)".to_string(),
            crate::DbKind::Postgres => format!(
                "(claim_holder IS NULL OR claim_expires <= {now} \
                 OR (claim_holder <> $1 AND claim_holder NOT IN ({})))",
                crate::cluster::LIVE_SERVERS
            ),
        };
        let mut tx = self.store.begin_write().await?;
        let ids: Vec<(String, String)> = sqlx::query_as(&format!(
            "SELECT id, environment FROM compile WHERE started IS NOT NULL AND completed IS NULL AND {orphaned}"
        ))
        .bind(self.instance().to_string())
        .fetch_all(&mut *tx)
        .await?;
        let mut exported = Vec::new();
        for (id, env) in &ids {
            // A compile id is a UUID: it appears in no other version's metadata.
            let version: Option<i64> =
                sqlx::query_scalar("SELECT MAX(version) FROM version WHERE environment = $1 AND version_info LIKE $2")
                    .bind(env)
                    .bind(format!("%\"inmanta:compile:id\":\"{id}\"%"))
                    .fetch_one(&mut *tx)
                    .await?;
            if let Some(version) = version {
                sqlx::query(
                    "UPDATE compile SET completed = $1, success = 1, version = $2, claim_holder = NULL, \
                     claim_expires = NULL WHERE id = $3 AND completed IS NULL",
                )
                .bind(crate::store::now())
                .bind(version)
                .bind(id)
                .execute(&mut *tx)
                .await?;
                tracing::info!(compile = %id, version, "compile finished by the version its export stored before its server stopped");
                exported.push(env.clone());
                continue;
            }
            sqlx::query("DELETE FROM compile_report WHERE compile = $1").bind(id).execute(&mut *tx).await?;
            sqlx::query(
                "UPDATE compile SET started = NULL, claim_holder = NULL, claim_expires = NULL \
                 WHERE id = $1 AND completed IS NULL",
            )
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        for env in exported.iter().filter_map(|e| e.parse().ok()) {
            self.compile_wakeup.notify_one();
            self.publish(crate::Event::CompileChanged { env });
        }
        Ok(ids.len() as u64)
    }

    /// Claims the firing of `env`'s `auto_full_compile` schedule at `at`: true for exactly one of
    /// the servers that ask, which then requests the compile.
    pub async fn claim_scheduled_compile(&self, env: Uuid, at: DateTime<Utc>) -> Result<bool> {
        let done = sqlx::query(
            "INSERT INTO compile_schedule_fire (environment, fire_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        )
        .bind(env.to_string())
        .bind(format_time(at))
        .execute(self.store.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Keeps this server's claim on a running compile alive for `claim` more; false when the
    /// claim is gone (it expired and another server put the compile back in the queue): the
    /// compile must stop.
    pub async fn renew_compile_claim(&self, id: Uuid, claim: std::time::Duration) -> Result<bool> {
        let done = sqlx::query(&format!(
            "UPDATE compile SET claim_expires = {} + $1 WHERE id = $2 AND claim_holder = $3 AND completed IS NULL",
            db_now_ms(self.store.kind())
        ))
        .bind(claim.as_millis() as i64)
        .bind(id.to_string())
        .bind(self.instance().to_string())
        .execute(self.store.pool())
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Per environment that is not halted and has no compile running: its oldest waiting
    /// compile. Halted environments keep their requests queued.
    pub async fn runnable_compiles(&self) -> Result<Vec<QueuedCompile>> {
        let pool = self.store.pool();
        let running: HashSet<String> = sqlx::query_scalar(
            "SELECT DISTINCT environment FROM compile WHERE started IS NOT NULL AND completed IS NULL",
        )
        .fetch_all(pool)
        .await?
        .into_iter()
        .collect();
        let pending: Vec<CompileRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM compile c JOIN environment e ON e.id = c.environment \
             WHERE c.started IS NULL AND c.completed IS NULL AND e.halted = 0 ORDER BY c.requested, c.id"
        ))
        .fetch_all(pool)
        .await?;
        let mut first: Vec<CompileRow> = Vec::new();
        let mut seen = HashSet::new();
        for row in pending {
            if !running.contains(&row.environment) && seen.insert(row.environment.clone()) {
                first.push(row);
            }
        }
        if first.is_empty() {
            return Ok(Vec::new());
        }
        let last: HashMap<String, Option<String>> = sqlx::query_as::<_, (String, Option<String>)>(
            "SELECT environment, MAX(completed) FROM compile GROUP BY environment",
        )
        .fetch_all(pool)
        .await?
        .into_iter()
        .collect();
        let mut out = Vec::with_capacity(first.len());
        for row in first {
            let env: (String, String, String) =
                sqlx::query_as("SELECT repo_url, repo_branch, settings FROM environment WHERE id = $1")
                    .bind(&row.environment)
                    .fetch_one(pool)
                    .await?;
            let settings = effective_settings(&env.2)?;
            let backoff = match settings.get(names::RECOMPILE_BACKOFF) {
                Some(SettingValue::Float(f)) => *f,
                Some(SettingValue::Int(i)) => *i as f64,
                _ => 0.1,
            };
            let last_completed = last.get(&row.environment).cloned().flatten().map(|t| parse_time(&t)).transpose()?;
            let requested = parse_time(&row.requested)?;
            let reinstall = row.request.reinstall != 0;
            let report = row.into_api()?;
            out.push(QueuedCompile {
                reinstall,
                id: report.id,
                environment: report.environment,
                requested,
                force_update: report.force_update,
                do_export: report.do_export,
                partial: report.export.partial,
                removed_resource_sets: report.export.removed_resource_sets,
                metadata: report.metadata,
                environment_variables: report.variables.environment_variables,
                repo_url: env.0,
                repo_branch: env.1,
                server_compile: settings.get(names::SERVER_COMPILE).and_then(SettingValue::as_bool).unwrap_or(true),
                backoff,
                last_completed,
            });
        }
        Ok(out)
    }

    /// Marks a queued compile started, claimed by this server for `claim` (renewed with
    /// [`Orchestrator::renew_compile_claim`]); false when someone else started it first or
    /// another compile of its environment runs (the database allows one per environment).
    pub async fn start_compile(&self, id: Uuid, claim: std::time::Duration) -> Result<bool> {
        let started = sqlx::query(&format!(
            "UPDATE compile SET started = $1, claim_holder = $2, claim_expires = {} + $3 \
             WHERE id = $4 AND started IS NULL",
            db_now_ms(self.store.kind())
        ))
        .bind(now())
        .bind(self.instance().to_string())
        .bind(claim.as_millis() as i64)
        .bind(id.to_string())
        .execute(self.store.pool())
        .await;
        let done = match started {
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => return Ok(false),
            other => other?,
        };
        if done.rows_affected() == 1 {
            self.publish_compile_changed(id).await;
        }
        Ok(done.rows_affected() == 1)
    }

    /// Tells the event bus that the compile `id` changed (its environment looked up).
    async fn publish_compile_changed(&self, id: Uuid) {
        let env: Option<String> = sqlx::query_scalar("SELECT environment FROM compile WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(self.store.pool())
            .await
            .ok()
            .flatten();
        if let Some(env) = env.and_then(|e| e.parse().ok()) {
            self.publish(crate::Event::CompileChanged { env });
        }
    }

    /// Records that a stage of a compile begins; returns the stage id.
    pub async fn begin_compile_stage(&self, env: Uuid, compile: Uuid, name: &str, command: &str) -> Result<Uuid> {
        let id = Uuid::new_v4();
        sqlx::query(
            "INSERT INTO compile_report (id, environment, compile, started, command, name) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(id.to_string())
        .bind(env.to_string())
        .bind(compile.to_string())
        .bind(now())
        .bind(command)
        .bind(name)
        .execute(self.store.pool())
        .await?;
        self.publish(crate::Event::CompileChanged { env });
        Ok(id)
    }

    /// Records how a stage ended.
    pub async fn finish_compile_stage(&self, stage: Uuid, result: &StageResult) -> Result<()> {
        sqlx::query(
            "UPDATE compile_report SET completed = $1, outstream = $2, errstream = $3, returncode = $4 WHERE id = $5",
        )
        .bind(now())
        .bind(result.outstream.clone())
        .bind(result.errstream.clone())
        .bind(result.returncode)
        .bind(stage.to_string())
        .execute(self.store.pool())
        .await?;
        let env: Option<String> = sqlx::query_scalar("SELECT environment FROM compile_report WHERE id = $1")
            .bind(stage.to_string())
            .fetch_optional(self.store.pool())
            .await?;
        if let Some(env) = env.and_then(|e| e.parse().ok()) {
            self.publish(crate::Event::CompileChanged { env });
        }
        Ok(())
    }

    /// Finishes a compile; a failure leaves an error notification that links to the report, as
    /// Inmanta 20.1's notification service words it. `failed_compile_message` stays what the
    /// request said (Inmanta's API requests leave it null): the reason is in the report.
    pub async fn finish_compile(&self, env: Uuid, id: Uuid, outcome: &CompileOutcome) -> Result<()> {
        let mut tx = self.store.begin_write().await?;
        let updated = sqlx::query(
            "UPDATE compile SET completed = $1, success = $2, version = $3, compile_data = $4 \
             WHERE id = $5 AND (claim_holder IS NULL OR claim_holder = $6)",
        )
        .bind(now())
        .bind(i64::from(outcome.success))
        .bind(outcome.version)
        .bind(outcome.compile_data.as_ref().map(|d| serde_json::to_string(d).expect("compile data is JSON")))
        .bind(id.to_string())
        .bind(self.instance().to_string())
        .execute(&mut *tx)
        .await?;
        // A compile whose environment was cleared meanwhile has no row any more: nothing to say.
        if !outcome.success
            && updated.rows_affected() == 1
            && let Some(notification) = failure_notification(&mut tx, id).await?
        {
            insert_notification(&mut tx, env, &notification).await?;
        }
        tx.commit().await?;
        self.compile_wakeup.notify_one();
        self.publish(crate::Event::CompileChanged { env });
        Ok(())
    }
}

/// The notification of a failed compile, in the order of Inmanta's `compile_done`: none when the
/// request asked for none; the request's own message; a failed pull with git's error; any failed
/// export; the generic message when the request asked for one. Its link is the report's API path,
/// the one form Inmanta's web console turns into a link to its compile report page.
async fn failure_notification(tx: &mut crate::store::Transaction, id: Uuid) -> Result<Option<NewNotification>> {
    let row: Option<(i64, Option<i64>, Option<String>)> =
        sqlx::query_as("SELECT do_export, notify_failed_compile, failed_compile_message FROM compile WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(&mut **tx)
            .await?;
    let Some((do_export, notify, requested_message)) = row else { return Ok(None) };
    let failed_pull: Option<Option<String>> = sqlx::query_scalar(
        "SELECT errstream FROM compile_report WHERE compile = $1 AND name = 'Pulling updates' \
         AND returncode IS NOT NULL AND returncode <> 0 ORDER BY started LIMIT 1",
    )
    .bind(id.to_string())
    .fetch_optional(&mut **tx)
    .await?;
    let notify = notify.map(|n| n != 0);
    let (title, message) = match (notify, requested_message.filter(|m| !m.is_empty()), failed_pull) {
        (Some(false), _, _) => return Ok(None),
        (Some(true), Some(message), _) => ("Compilation failed", message),
        (_, _, Some(errstream)) => ("Pulling updates during compile failed", errstream.unwrap_or_default()),
        _ if do_export != 0 => ("Compilation failed", "An exporting compile has failed".to_string()),
        (Some(true), _, _) => ("Compilation failed", "A compile has failed".to_string()),
        _ => return Ok(None),
    };
    Ok(Some(NewNotification {
        title: title.into(),
        message,
        severity: NotificationSeverity::Error,
        uri: Some(format!("/api/v2/compilereport/{id}")),
        compile_id: Some(id),
    }))
}

fn compile_not_found(env: Uuid, id: Uuid) -> Error {
    Error::NotFound(format!("compile {id} does not exist in environment {env}"))
}
