//! What the operator sees of resources: the latest released version plus orphans with their
//! status (`api::state::StateVector::status`), details, history and logs, and the resource actions that the
//! scheduler records.
//!
//! The state vector lives in `resource_persistent_state`, one row per resource id and
//! environment. Release writes the intent columns; the scheduler writes the handler-run columns
//! through [`Orchestrator::begin_resource_action`] and [`Orchestrator::finish_resource_action`].
//! The single API status is derived in SQL ([`STATUS_SQL`]) so that lists filter and sort on it.

use std::collections::{BTreeMap, HashMap};

use api::ResourceId;
use api::operations::NotificationSeverity;
use api::resource::{
    LatestReleasedResource, LogLine, ReleasedResourceDetails, ResourceAction, ResourceDeploySummary, ResourceHistory,
    ResourceIdDetails, ResourceLog,
};
use api::state::{ActionKind, Blocked, Change, HandlerRun, HandlerStatus, ResourceState};
use sqlx::Row;
use uuid::Uuid;

use crate::cluster::Fence;
use crate::notifications::{NewNotification, insert_notification};
use crate::paging::{
    Column, ColumnKind, Filter, FilterKind, Order, Page, PageRequest, Source, View, fetch_page, fetch_page_linking,
};
use crate::statistics::Written;
use crate::store::{Transaction, now};
use crate::{Error, Orchestrator, Result};

/// The single status (`api::state::StateVector::status`): the generated column `status` of
/// `resource_persistent_state` (migration 0041 has its CASE, first match wins), indexed, so that
/// lists filter, sort and count on it without evaluating it per resource.
pub const STATUS_SQL: &str = "s.status";

/// What [`STATUS_SQL`] can say: every resource state and `orphaned`.
pub const RESOURCE_STATUSES: &[&str] = ResourceState::NAMES;

/// `GET /api/v2/resource` (its sorts and filters: docs/api.md).
pub const RESOURCE_VIEW: View = View {
    sort_columns: &[
        Column { name: "resource_type", sql: "s.resource_type", kind: ColumnKind::Text },
        Column { name: "agent", sql: "s.agent", kind: ColumnKind::Text },
        Column { name: "resource_id_value", sql: "s.id_value", kind: ColumnKind::Text },
        Column { name: "resource_id", sql: "s.resource_id", kind: ColumnKind::Text },
        Column { name: "status", sql: STATUS_SQL, kind: ColumnKind::Text },
    ],
    default_sort: ("resource_type", Order::Desc),
    filters: &[
        Filter { name: "resource_type", sql: "s.resource_type", kind: FilterKind::PartialOfFew },
        Filter { name: "agent", sql: "s.agent", kind: FilterKind::PartialOfFew },
        Filter { name: "resource_id_value", sql: "s.id_value", kind: FilterKind::Partial },
        Filter {
            name: "status",
            sql: STATUS_SQL,
            kind: FilterKind::Choice { negatable: true, values: RESOURCE_STATUSES },
        },
    ],
    id_sql: "s.resource_id",
    id_kind: ColumnKind::Text,
};

/// `GET /api/v2/resource/<rid>/history`.
pub const HISTORY_VIEW: View = View {
    sort_columns: &[Column { name: "date", sql: "h.date", kind: ColumnKind::Date }],
    default_sort: ("date", Order::Desc),
    filters: &[],
    id_sql: "h.attribute_hash",
    id_kind: ColumnKind::Text,
};

/// `GET /api/v2/resource/<rid>/logs`.
pub const LOG_VIEW: View = View {
    sort_columns: &[Column { name: "timestamp", sql: "l.timestamp", kind: ColumnKind::Date }],
    default_sort: ("timestamp", Order::Desc),
    filters: &[
        Filter { name: "minimal_log_level", sql: "l.level_no", kind: FilterKind::MinLogLevel },
        Filter { name: "timestamp", sql: "l.timestamp", kind: FilterKind::Range(ColumnKind::Date) },
        Filter { name: "message", sql: "l.msg", kind: FilterKind::Partial },
        Filter {
            name: "action",
            sql: "a.action",
            kind: FilterKind::Choice { negatable: false, values: ActionKind::NAMES },
        },
    ],
    id_sql: "(l.action_id || ':' || CAST(l.seq AS TEXT))",
    id_kind: ColumnKind::Text,
};

#[derive(sqlx::FromRow)]
struct StateRow {
    resource_id: String,
    current_intent_version: i64,
    status: String,
    requires: String,
}

#[derive(sqlx::FromRow)]
struct HistoryRow {
    attribute_hash: String,
    date: String,
    attributes: String,
    requires: String,
}

#[derive(sqlx::FromRow)]
struct LogRow {
    level: String,
    msg: String,
    args: String,
    kwargs: String,
    timestamp: String,
    action_id: String,
    action: String,
}

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
    pub started: String,
    pub resource_ids: Vec<ResourceId>,
    pub outcome: ActionOutcome,
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
    pub first_timestamp: Option<String>,
    pub last_timestamp: Option<String>,
    pub exclude_changes: Vec<String>,
}

/// An action the server records itself (`store`, `getfact`): started and finished at `at`, with
/// no status, change or changes.
pub(crate) async fn insert_bare_action(
    tx: &mut Transaction,
    env: Uuid,
    action_id: &str,
    version: i64,
    action: &str,
    at: &str,
    rvids: &[String],
) -> Result<()> {
    sqlx::query(
        "INSERT INTO resource_action (environment, action_id, version, action, started, finished, \
         resource_version_ids, status, changes, change, send_event) \
         VALUES ($1, $2, $3, $4, $5, $5, $6, NULL, NULL, NULL, NULL)",
    )
    .bind(env.to_string())
    .bind(action_id.to_string())
    .bind(version)
    .bind(action.to_string())
    .bind(at.to_string())
    .bind(serde_json::json!(rvids).to_string())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Release writes the intent of every resource of `version` and marks the others orphans;
/// returns how many state rows it wrote.
pub(crate) async fn record_release(tx: &mut Transaction, env: Uuid, version: i64) -> Result<u64> {
    let written = sqlx::query(
        "INSERT INTO resource_persistent_state (environment, resource_id, resource_type, agent, id_attribute, \
         id_value, first_generated_time, first_generated_version, current_intent_version, \
         current_intent_attribute_hash, current_intent_requires, is_undefined, is_orphan, blocked) \
         SELECT r.environment, r.resource_id, r.resource_type, r.agent, r.id_attribute, r.id_value, $3, r.version, \
         r.version, r.attribute_hash, r.requires, CASE WHEN r.state = 'undefined' THEN 1 ELSE 0 END, 0, \
         CASE WHEN r.state = 'available' THEN 'not_blocked' ELSE 'blocked' END \
         FROM resource r WHERE r.environment = $1 AND r.version = $2 \
         ON CONFLICT (environment, resource_id) DO UPDATE SET \
         current_intent_version = excluded.current_intent_version, \
         current_intent_attribute_hash = excluded.current_intent_attribute_hash, \
         current_intent_requires = excluded.current_intent_requires, \
         is_undefined = excluded.is_undefined, is_orphan = 0, \
         last_deployed_attribute_hash = CASE WHEN resource_persistent_state.is_orphan = 1 THEN NULL \
           ELSE resource_persistent_state.last_deployed_attribute_hash END, \
         blocked = CASE WHEN excluded.blocked = 'blocked' THEN 'blocked' \
           WHEN resource_persistent_state.blocked = 'temporarily_blocked' THEN 'temporarily_blocked' \
           ELSE 'not_blocked' END",
    )
    .bind(env.to_string())
    .bind(version)
    .bind(now())
    .execute(&mut **tx)
    .await?
    .rows_affected();
    sqlx::query(
        "UPDATE resource_persistent_state SET is_orphan = 1, is_deploying = 0 \
         WHERE environment = $1 AND current_intent_version <> $2 AND is_orphan = 0",
    )
    .bind(env.to_string())
    .bind(version)
    .execute(&mut **tx)
    .await?;
    Ok(written)
}

impl Orchestrator {
    /// The latest released resources plus orphans, paged; with `deploy_summary`, the counts per
    /// status (all released resources, filters ignored).
    pub async fn released_resources(
        &self,
        env: Uuid,
        req: &PageRequest,
        deploy_summary: bool,
    ) -> Result<(Page<LatestReleasedResource>, Option<ResourceDeploySummary>)> {
        let binds = [env.to_string()];
        let select = format!(
            "s.resource_id, s.current_intent_version, {STATUS_SQL} AS status, s.current_intent_requires AS requires"
        );
        // Inmanta's links name `deploy_summary` as Python prints a bool.
        let summary_param = [("deploy_summary", if deploy_summary { "True" } else { "False" })];
        let page: Page<StateRow> = fetch_page_linking(
            &self.store,
            &RESOURCE_VIEW,
            req,
            Source {
                select: &select,
                from: "resource_persistent_state s",
                scope: "s.environment = $1",
                scope_binds: &binds,
                base_path: "/api/v2/resource",
            },
            &summary_param,
        )
        .await?;
        // Rows exist only in an environment that exists: the check costs a query only when
        // the page is empty (this list is polled many times a second during a deploy).
        if page.items.is_empty() {
            self.ensure_environment(env).await?;
        }
        let page = page.try_map(|row| {
            let id = ResourceId::parse(&row.resource_id).map_err(|e| Error::Corrupt(e.to_string()))?;
            let version = row.current_intent_version;
            let requires: Vec<String> = serde_json::from_str(&row.requires).map_err(corrupt("resource requires"))?;
            Ok(LatestReleasedResource {
                resource_version_id: id.versioned(version as u64),
                id_details: ResourceIdDetails::from(&id),
                requires: requires.iter().map(|r| api::resource::versioned_id(r, version as u64)).collect(),
                resource_id: row.resource_id.clone(),
                status: parse_stored(&row.status)?,
            })
        })?;
        let summary = if deploy_summary { Some(self.deploy_summary(env).await?) } else { None };
        Ok((page, summary))
    }

    /// Counts of released (non-orphan) resources per status; every state except `dry` appears.
    pub async fn deploy_summary(&self, env: Uuid) -> Result<ResourceDeploySummary> {
        let rows = sqlx::query(&format!(
            "SELECT {STATUS_SQL} AS status, COUNT(*) AS n FROM resource_persistent_state s \
             WHERE s.environment = $1 GROUP BY 1"
        ))
        .bind(env.to_string())
        .fetch_all(self.store.pool())
        .await?;
        let mut by_state: BTreeMap<ResourceState, u64> =
            ResourceState::RESOURCE_STATES.iter().filter(|s| **s != ResourceState::Dry).map(|s| (*s, 0)).collect();
        let mut total = 0;
        for row in rows {
            // Orphans (status `orphaned`, exactly the rows with is_orphan = 1) are not released
            // resources; leaving them out here keeps the count on the index alone.
            let status: ResourceState = stored_name(&row, "status")?;
            if status == ResourceState::Orphaned {
                continue;
            }
            let n = row.try_get::<i64, _>("n")? as u64;
            total += n;
            *by_state.entry(status).or_default() += n;
        }
        Ok(ResourceDeploySummary { total, by_state })
    }

    /// One released resource with its attributes and the status of what it requires.
    pub async fn released_resource(&self, env: Uuid, rid: &str) -> Result<ReleasedResourceDetails> {
        let id = parse_rid(rid)?;
        let row = sqlx::query(&format!(
            "SELECT {STATUS_SQL} AS status, s.first_generated_time, s.last_deploy, r.attributes, r.requires \
             FROM resource_persistent_state s LEFT JOIN resource r ON r.environment = s.environment \
             AND r.version = s.current_intent_version AND r.resource_id = s.resource_id \
             WHERE s.environment = $1 AND s.resource_id = $2"
        ))
        .bind(env.to_string())
        .bind(id.to_string())
        .fetch_optional(self.store.pool())
        .await?
        .ok_or_else(|| resource_not_found(&id))?;
        let attributes: serde_json::Map<String, serde_json::Value> =
            match row.try_get::<Option<String>, _>("attributes")? {
                Some(text) => serde_json::from_str(&text).map_err(corrupt("resource attributes"))?,
                None => serde_json::Map::new(),
            };
        let requires: Vec<String> = match row.try_get::<Option<String>, _>("requires")? {
            Some(text) => serde_json::from_str(&text).map_err(corrupt("resource requires"))?,
            None => vec![],
        };
        let wanted: Vec<&str> = requires.iter().map(String::as_str).collect();
        let requires_status: BTreeMap<String, ResourceState> =
            self.states_of(env, &wanted).await?.into_iter().collect();
        let mut attributes = attributes;
        attributes.insert("requires".into(), serde_json::json!(requires));
        Ok(ReleasedResourceDetails {
            resource_id: id.to_string(),
            resource_type: id.entity_type.clone(),
            agent: id.agent.clone(),
            id_attribute: id.attribute.clone(),
            id_attribute_value: id.value.clone(),
            attributes,
            last_deploy: row.try_get("last_deploy")?,
            first_generated_time: row.try_get("first_generated_time")?,
            status: stored_name(&row, "status")?,
            requires_status,
        })
    }

    /// One entry per distinct desired state the resource has had, over the stored versions.
    pub async fn resource_history(&self, env: Uuid, rid: &str, req: &PageRequest) -> Result<Page<ResourceHistory>> {
        let id = parse_rid(rid)?;
        self.ensure_resource_known(env, &id).await?;
        let binds = [env.to_string(), id.to_string()];
        let base_path = format!("/api/v2/resource/{}/history", api::url::encode(&id.to_string()));
        let page: Page<HistoryRow> = fetch_page(
            &self.store,
            &HISTORY_VIEW,
            req,
            Source {
                select: "h.attribute_hash, h.date, h.attributes, h.requires",
                // The earliest version with each hash gives its date and its content.
                from: "(SELECT r.attribute_hash, v.date, r.attributes, r.requires FROM resource r \
                       JOIN version v ON v.environment = r.environment AND v.version = r.version \
                       WHERE r.environment = $1 AND r.resource_id = $2 AND r.version = (SELECT MIN(x.version) \
                       FROM resource x WHERE x.environment = r.environment AND x.resource_id = r.resource_id \
                       AND x.attribute_hash = r.attribute_hash)) h",
                scope: "1 = 1",
                scope_binds: &binds,
                base_path: &base_path,
            },
        )
        .await?;
        page.try_map(|row| {
            let requires: Vec<String> = serde_json::from_str(&row.requires).map_err(corrupt("resource requires"))?;
            let mut attributes: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(&row.attributes).map_err(corrupt("resource attributes"))?;
            // As Inmanta answers: the attributes as exported, requires included.
            attributes.insert("requires".into(), requires.clone().into());
            Ok(ResourceHistory {
                resource_id: id.to_string(),
                date: row.date,
                attributes,
                attribute_hash: row.attribute_hash,
                requires,
            })
        })
    }

    /// The log lines of every action on the resource, across versions.
    pub async fn resource_logs(&self, env: Uuid, rid: &str, req: &PageRequest) -> Result<Page<ResourceLog>> {
        let id = parse_rid(rid)?;
        self.ensure_resource_known(env, &id).await?;
        let binds = [env.to_string(), id.to_string()];
        let base_path = format!("/api/v2/resource/{}/logs", api::url::encode(&id.to_string()));
        let page: Page<LogRow> = fetch_page(
            &self.store,
            &LOG_VIEW,
            req,
            Source {
                select: "l.level, l.msg, l.args, l.kwargs, l.timestamp, l.action_id, a.action",
                from: "resource_log l JOIN resource_action a ON a.environment = l.environment \
                       AND a.action_id = l.action_id JOIN resource_action_resource ar \
                       ON ar.environment = l.environment AND ar.action_id = l.action_id",
                scope: "l.environment = $1 AND ar.resource_id = $2",
                scope_binds: &binds,
                base_path: &base_path,
            },
        )
        .await?;
        page.try_map(|row| {
            Ok(ResourceLog {
                level: row.level,
                msg: row.msg,
                args: serde_json::from_str(&row.args).map_err(corrupt("log args"))?,
                kwargs: serde_json::from_str(&row.kwargs).map_err(corrupt("log kwargs"))?,
                timestamp: row.timestamp,
                action_id: crate::store::parse_uuid(&row.action_id)?,
                action: row.action,
            })
        })
    }

    async fn ensure_resource_known(&self, env: Uuid, id: &ResourceId) -> Result<()> {
        self.ensure_environment(env).await?;
        let found: Option<i64> =
            sqlx::query_scalar("SELECT version FROM resource WHERE environment = $1 AND resource_id = $2 LIMIT 1")
                .bind(env.to_string())
                .bind(id.to_string())
                .fetch_optional(self.store.pool())
                .await?;
        let state: Option<String> = sqlx::query_scalar(
            "SELECT resource_id FROM resource_persistent_state WHERE environment = $1 AND resource_id = $2",
        )
        .bind(env.to_string())
        .bind(id.to_string())
        .fetch_optional(self.store.pool())
        .await?;
        if found.is_none() && state.is_none() {
            return Err(Error::NotFound(format!("resource {id} is not known in environment {env}")));
        }
        Ok(())
    }

    /// Stores many finished deploys in one transaction: what the scheduler does with the results
    /// that came in since its last write. Rows travel as JSON and are unpacked by the database
    /// (a handful of statements per batch instead of several per action), which is what lets
    /// 10 000 deploys be recorded in well under a second.
    pub async fn record_actions(&self, env: Uuid, actions: &[FinishedAction]) -> Result<()> {
        self.record_actions_fenced(env, actions, None).await
    }

    /// [`Orchestrator::record_actions`] committed only while `fence` holds; the actions carry its
    /// epoch.
    pub async fn record_actions_fenced(
        &self,
        env: Uuid,
        actions: &[FinishedAction],
        fence: Option<&Fence>,
    ) -> Result<()> {
        if actions.is_empty() {
            return Ok(());
        }
        let mut tx = self.store.begin_write().await?;
        record_actions_in(&mut tx, self.store.kind(), env, actions, fence.map(|f| f.epoch)).await?;
        self.store.commit_fenced(tx, fence).await?;
        self.actions_recorded(env, actions);
        Ok(())
    }

    /// What follows a commit of finished actions: statistics and the change event.
    fn actions_recorded(&self, env: Uuid, actions: &[FinishedAction]) {
        // These tables grow by a batch at a time; their foreign-key checks need statistics.
        let links: usize = actions.iter().map(|a| a.resource_ids.len()).sum();
        let lines: usize = actions.iter().map(|a| a.outcome.messages.len()).sum();
        self.store.wrote_rows("resource_action", actions.len() as u64, Written::Appended);
        self.store.wrote_rows("resource_action_resource", links as u64, Written::Appended);
        self.store.wrote_rows("resource_log", lines as u64, Written::Appended);
        self.publish(crate::Event::ResourcesChanged { env });
    }

    /// One batch of a scheduler's writes in one transaction, committed only while `fence`
    /// holds: resources that started deploying, finished actions (with the fence's epoch) and
    /// changes of the temporary block. One commit (one fsync on SQLite, one fence check) per
    /// batch instead of one per kind of write.
    pub async fn record_scheduler_batch(
        &self,
        env: Uuid,
        started: &[String],
        finished: &[FinishedAction],
        blocked: &[(String, Blocked)],
        fence: Option<&Fence>,
    ) -> Result<()> {
        if started.is_empty() && finished.is_empty() && blocked.is_empty() {
            return Ok(());
        }
        let kind = self.store.kind();
        let mut tx = self.store.begin_write().await?;
        mark_deploying_in(&mut tx, kind, env, started, true).await?;
        record_actions_in(&mut tx, kind, env, finished, fence.map(|f| f.epoch)).await?;
        set_blocked_in(&mut tx, kind, env, blocked).await?;
        self.store.commit_fenced(tx, fence).await?;
        if !finished.is_empty() {
            self.actions_recorded(env, finished);
        } else {
            self.publish(crate::Event::ResourcesChanged { env });
        }
        Ok(())
    }

    /// Sets or clears `deploying` for resources, in one transaction.
    pub async fn mark_deploying(&self, env: Uuid, resource_ids: &[String], deploying: bool) -> Result<()> {
        self.mark_deploying_fenced(env, resource_ids, deploying, None).await
    }

    /// [`Orchestrator::mark_deploying`] committed only while `fence` holds.
    pub async fn mark_deploying_fenced(
        &self,
        env: Uuid,
        resource_ids: &[String],
        deploying: bool,
        fence: Option<&Fence>,
    ) -> Result<()> {
        if resource_ids.is_empty() {
            return Ok(());
        }
        let mut tx = self.store.begin_write().await?;
        mark_deploying_in(&mut tx, self.store.kind(), env, resource_ids, deploying).await?;
        self.store.commit_fenced(tx, fence).await?;
        self.publish(crate::Event::ResourcesChanged { env });
        Ok(())
    }

    /// After a crash nothing is deploying any more: clears the flag for the whole environment.
    pub async fn reset_deploying(&self, env: Uuid, fence: Option<&Fence>) -> Result<()> {
        let mut tx = self.store.begin_write().await?;
        sqlx::query(
            "UPDATE resource_persistent_state SET is_deploying = 0 WHERE environment = $1 AND is_deploying = 1",
        )
        .bind(env.to_string())
        .execute(&mut *tx)
        .await?;
        self.store.commit_fenced(tx, fence).await
    }

    /// Sets the `blocked` dimension of resources (the scheduler's temporary blocks), in one
    /// transaction committed only while `fence` holds; a resource named twice gets the last one.
    pub async fn set_blocked_many(
        &self,
        env: Uuid,
        changes: &[(String, Blocked)],
        fence: Option<&Fence>,
    ) -> Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let mut tx = self.store.begin_write().await?;
        set_blocked_in(&mut tx, self.store.kind(), env, changes).await?;
        self.store.commit_fenced(tx, fence).await
    }

    /// `GET /api/v2/resource_actions`: newest first, at most `limit` (all when 0).
    pub async fn resource_actions(&self, env: Uuid, q: &ActionQuery) -> Result<Vec<ResourceAction>> {
        self.ensure_environment(env).await?;
        if q.attribute.is_some() != q.attribute_value.is_some() {
            return Err(Error::BadRequest("attribute and attribute_value go together: give both or neither".into()));
        }
        if q.first_timestamp.is_some() && q.last_timestamp.is_some() {
            return Err(Error::BadRequest("give first_timestamp or last_timestamp, not both".into()));
        }
        if (q.first_timestamp.is_some() || q.last_timestamp.is_some()) && q.action_id.is_none() {
            return Err(Error::BadRequest("first_timestamp and last_timestamp need action_id as tie-breaker".into()));
        }
        let mut sql = String::from(
            "SELECT DISTINCT a.action_id, a.version, a.action, a.started, a.finished, a.resource_version_ids, \
             a.status, a.changes, a.change, a.send_event FROM resource_action a \
             LEFT JOIN resource_action_resource ar ON ar.environment = a.environment AND ar.action_id = a.action_id \
             LEFT JOIN resource_persistent_state s ON s.environment = a.environment AND s.resource_id = ar.resource_id \
             WHERE a.environment = $1",
        );
        let mut binds: Vec<String> = vec![env.to_string()];
        let mut push = |sql: &mut String, clause: &str, value: String| {
            binds.push(value);
            sql.push_str(&clause.replace('?', &format!("${}", binds.len())));
        };
        if let Some(rid) = &q.resource_id {
            push(&mut sql, " AND ar.resource_id = ?", parse_rid(rid)?.to_string());
        }
        if let Some(t) = &q.resource_type {
            push(&mut sql, " AND s.resource_type = ?", t.clone());
        }
        if let Some(agent) = &q.agent {
            push(&mut sql, " AND s.agent = ?", agent.clone());
        }
        if let (Some(attr), Some(value)) = (&q.attribute, &q.attribute_value) {
            push(&mut sql, " AND s.id_attribute = ?", attr.clone());
            push(&mut sql, " AND s.id_value = ?", value.clone());
        }
        if let Some(level) = &q.log_severity {
            let number = api::resource::log_level_number(level)
                .ok_or_else(|| Error::BadRequest(format!("log_severity {level:?} is not a log level")))?;
            push(
                &mut sql,
                " AND EXISTS (SELECT 1 FROM resource_log l WHERE l.environment = a.environment \
                 AND l.action_id = a.action_id AND l.level_no >= CAST(? AS BIGINT))",
                number.to_string(),
            );
        }
        for change in &q.exclude_changes {
            push(&mut sql, " AND COALESCE(a.change, 'nochange') <> ?", change.clone());
        }
        if let (Some(first), Some(action_id)) = (&q.first_timestamp, q.action_id) {
            push(&mut sql, " AND (a.started > ?", first.clone());
            push(&mut sql, " OR (a.started = ?", first.clone());
            push(&mut sql, " AND a.action_id > ?))", action_id.to_string());
        } else if let (Some(last), Some(action_id)) = (&q.last_timestamp, q.action_id) {
            push(&mut sql, " AND (a.started < ?", last.clone());
            push(&mut sql, " OR (a.started = ?", last.clone());
            push(&mut sql, " AND a.action_id < ?))", action_id.to_string());
        }
        sql.push_str(" ORDER BY a.started DESC, a.action_id DESC");
        if let Some(limit) = q.limit.filter(|l| *l > 0) {
            sql.push_str(&format!(" LIMIT {}", limit.min(api::paging::MAX_LIMIT)));
        }
        let mut query = sqlx::query(&sql);
        for b in &binds {
            query = query.bind(b.clone());
        }
        let rows = query.fetch_all(self.store.pool()).await?;
        let ids = rows.iter().map(|row| row.try_get::<String, _>("action_id")).collect::<Result<Vec<_>, _>>()?;
        let mut messages = self.action_messages(env, &ids).await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let action_id: String = row.try_get("action_id")?;
            let messages = messages.remove(&action_id).unwrap_or_default();
            out.push(ResourceAction {
                environment: env,
                version: row.try_get("version")?,
                resource_version_ids: serde_json::from_str(&row.try_get::<String, _>("resource_version_ids")?)
                    .map_err(corrupt("resource_version_ids"))?,
                action_id: crate::store::parse_uuid(&action_id)?,
                action: stored_name(&row, "action")?,
                started: row.try_get("started")?,
                finished: row.try_get("finished")?,
                messages: Some(messages),
                status: row.try_get::<Option<String>, _>("status")?.as_deref().map(parse_stored).transpose()?,
                changes: row
                    .try_get::<Option<String>, _>("changes")?
                    .map(|c| serde_json::from_str(&c))
                    .transpose()
                    .map_err(corrupt("changes"))?,
                change: row.try_get::<Option<String>, _>("change")?.as_deref().map(parse_stored).transpose()?,
                // Stored for our own event logic; Inmanta 20.1 answers null here for every action.
                send_event: None,
            });
        }
        Ok(out)
    }

    /// What the deploys of `version` changed, per resource id (the latest deploy's `change` when
    /// it ran more than once); resources whose deploys changed nothing are left out. Bounded by
    /// the version: the environment's history of actions is not read.
    pub async fn deploy_changes(&self, env: Uuid, version: i64) -> Result<BTreeMap<String, String>> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT ar.resource_id, a.change FROM resource_action a JOIN resource_action_resource ar \
             ON ar.environment = a.environment AND ar.action_id = a.action_id \
             WHERE a.environment = $1 AND a.version = $2 AND a.action = 'deploy' \
             AND a.change IS NOT NULL AND a.change <> 'nochange' ORDER BY a.started DESC, a.action_id DESC",
        )
        .bind(env.to_string())
        .bind(version)
        .fetch_all(self.store.pool())
        .await?;
        let mut changes = BTreeMap::new();
        for (rid, change) in rows {
            changes.entry(rid).or_insert(change);
        }
        Ok(changes)
    }

    /// The log lines of the actions `action_ids`, in one query.
    async fn action_messages(&self, env: Uuid, action_ids: &[String]) -> Result<HashMap<String, Vec<LogLine>>> {
        let mut lines: HashMap<String, Vec<LogLine>> = HashMap::new();
        if action_ids.is_empty() {
            return Ok(lines);
        }
        let rows: Vec<LogRow> = sqlx::query_as(&format!(
            "SELECT l.level, l.msg, l.args, l.kwargs, l.timestamp, l.action_id, '' AS action FROM resource_log l \
             WHERE l.environment = $1 AND l.action_id IN {} ORDER BY l.action_id, l.seq",
            crate::store::json_list(self.store.kind(), 2)
        ))
        .bind(env.to_string())
        .bind(serde_json::json!(action_ids).to_string())
        .fetch_all(self.store.pool())
        .await?;
        for row in rows {
            let line = LogLine {
                level: row.level,
                msg: row.msg,
                args: serde_json::from_str(&row.args).map_err(corrupt("log args"))?,
                kwargs: serde_json::from_str(&row.kwargs).map_err(corrupt("log kwargs"))?,
                timestamp: row.timestamp,
            };
            lines.entry(row.action_id).or_default().push(line);
        }
        Ok(lines)
    }
}

/// The handler-run columns a deploy outcome sets: (last_handler_run, last status).
fn deploy_columns(outcome: HandlerStatus) -> Result<(HandlerRun, ResourceState)> {
    if outcome == HandlerStatus::Dry {
        return Err(Error::BadRequest("dry is not an outcome of a deploy".into()));
    }
    Ok((outcome.into(), outcome.into()))
}

/// Stores finished actions in `tx`, a few statements per 2 000 of them.
async fn record_actions_in(
    tx: &mut Transaction,
    kind: crate::DbKind,
    env: Uuid,
    actions: &[FinishedAction],
    epoch: Option<i64>,
) -> Result<()> {
    for chunk in actions.chunks(2000) {
        record_actions_chunk(tx, kind, env, chunk, epoch).await?;
    }
    Ok(())
}

/// Sets or clears `deploying` for resources.
async fn mark_deploying_in(
    tx: &mut Transaction,
    kind: crate::DbKind,
    env: Uuid,
    resource_ids: &[String],
    deploying: bool,
) -> Result<()> {
    if resource_ids.is_empty() {
        return Ok(());
    }
    set_where_listed(
        tx,
        kind,
        env,
        "resource_persistent_state SET is_deploying",
        "resource_id",
        i64::from(deploying),
        resource_ids,
    )
    .await
}

/// `UPDATE {table_set} = value WHERE environment = env AND {key} IN (ids)`, the ids travelling as
/// one JSON parameter (binding them one by one costs tens of µs each).
async fn set_where_listed<V, I>(
    tx: &mut Transaction,
    kind: crate::DbKind,
    env: Uuid,
    table_set: &str,
    key: &str,
    value: V,
    ids: &[I],
) -> Result<()>
where
    V: for<'q> sqlx::Encode<'q, sqlx::Any> + sqlx::Type<sqlx::Any> + Send + 'static,
    I: serde::Serialize,
{
    let sql =
        format!("UPDATE {table_set} = $1 WHERE environment = $2 AND {key} IN {}", crate::store::json_list(kind, 3));
    sqlx::query(&sql)
        .bind(value)
        .bind(env.to_string())
        .bind(serde_json::json!(ids).to_string())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Sets the `blocked` dimension of resources, one statement per value; the last change of a
/// resource wins.
async fn set_blocked_in(
    tx: &mut Transaction,
    kind: crate::DbKind,
    env: Uuid,
    changes: &[(String, Blocked)],
) -> Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    let last: std::collections::HashMap<&str, Blocked> = changes.iter().map(|(r, b)| (r.as_str(), *b)).collect();
    let mut groups: BTreeMap<Blocked, Vec<&str>> = BTreeMap::new();
    for (rid, blocked) in last {
        groups.entry(blocked).or_default().push(rid);
    }
    for (blocked, rids) in groups {
        set_where_listed(
            tx,
            kind,
            env,
            "resource_persistent_state SET blocked",
            "resource_id",
            blocked.as_str().to_string(),
            &rids,
        )
        .await?;
    }
    Ok(())
}

/// Notifies resources that start failing (those whose last run did not fail already).
async fn notify_new_failures(tx: &mut Transaction, env: Uuid, failed: &[(String, Option<&str>)]) -> Result<()> {
    for (rid, reason) in failed {
        let already: Option<String> = sqlx::query_scalar(
            "SELECT resource_id FROM resource_persistent_state WHERE environment = $1 AND resource_id = $2 \
             AND last_non_deploying_status = 'failed'",
        )
        .bind(env.to_string())
        .bind(rid.clone())
        .fetch_optional(&mut **tx)
        .await?;
        if already.is_some() {
            continue;
        }
        let new = NewNotification {
            title: "Resource deploy failed".into(),
            message: format!("{rid} failed to deploy{}", reason.map(|r| format!(": {r}")).unwrap_or_default()),
            severity: NotificationSeverity::Error,
            uri: Some(format!("/console/resources/{}", api::url::encode(rid))),
            compile_id: None,
        };
        insert_notification(tx, env, &new).await?;
    }
    Ok(())
}

/// Writes finished actions in a few statements: actions (with the scheduler `epoch` they were
/// written under), their resources, their log lines and, for deploys, the state vector
/// ([`record_deploy_results`]), each as one JSON parameter. The epoch goes in with the rows: a separate UPDATE by action id was planned on
/// PostgreSQL, while the table's statistics still said it was empty, as a scan of every action
/// of the environment per batch, which made a first deploy quadratic.
async fn record_actions_chunk(
    tx: &mut Transaction,
    kind: crate::DbKind,
    env: Uuid,
    actions: &[FinishedAction],
    epoch: Option<i64>,
) -> Result<()> {
    use crate::store::json_rows;
    let finished = now();
    let flag = |b: bool| if b { "1" } else { "0" };
    let mut action_rows = Vec::with_capacity(actions.len());
    let mut link_rows = Vec::with_capacity(actions.len());
    let mut log_rows = Vec::new();
    let mut results = Vec::with_capacity(actions.len());
    for done in actions {
        let outcome = &done.outcome;
        let rvids: Vec<String> = done.resource_ids.iter().map(|id| id.versioned(done.version as u64)).collect();
        action_rows.push(serde_json::json!({
            "action_id": done.action_id.to_string(), "action": done.action, "version": done.version.to_string(),
            "started": done.started, "resource_version_ids": serde_json::json!(rvids).to_string(),
            "status": outcome.status, "changes": outcome.changes.as_ref().map(|c| c.to_string()),
            "change": outcome.change, "send_event": outcome.send_event.map(flag),
        }));
        let reason = outcome.messages.iter().rev().find(|m| m.level == "ERROR").map(|m| m.msg.as_str());
        for id in &done.resource_ids {
            link_rows.push(serde_json::json!({"action_id": done.action_id.to_string(), "resource_id": id.to_string()}));
            if done.action == ActionKind::Deploy {
                results.push(DeployResult {
                    resource_id: id.to_string(),
                    version: done.version,
                    outcome: outcome.status,
                    events: outcome.change.is_some_and(|c| c != Change::NoChange),
                    reason,
                    diff: non_compliant_diff(outcome, &id.versioned(done.version as u64)),
                });
            }
        }
        for (seq, line) in outcome.messages.iter().enumerate() {
            let level_no = api::resource::log_level_number(&line.level)
                .ok_or_else(|| Error::BadRequest(format!("log level {:?} is not a log level", line.level)))?;
            let timestamp = crate::paging::parse_date(&line.timestamp).ok_or_else(|| {
                Error::BadRequest(format!("log timestamp {:?} is not an ISO-8601 timestamp", line.timestamp))
            })?;
            log_rows.push(serde_json::json!({
                "action_id": done.action_id.to_string(), "seq": seq.to_string(), "level_no": level_no.to_string(),
                "level": line.level.to_ascii_uppercase(), "msg": line.msg,
                "args": serde_json::json!(line.args).to_string(),
                "kwargs": serde_json::Value::Object(line.kwargs.clone()).to_string(), "timestamp": timestamp,
            }));
        }
    }
    let rows = json_rows(
        kind,
        3,
        &[
            "action_id",
            "action",
            "version",
            "started",
            "resource_version_ids",
            "status",
            "changes",
            "change",
            "send_event",
        ],
    );
    sqlx::query(&format!(
        "INSERT INTO resource_action (environment, action_id, version, action, started, finished, \
         resource_version_ids, status, changes, change, send_event, epoch) SELECT $1, x.action_id, \
         CAST(x.version AS BIGINT), x.action, x.started, $2, x.resource_version_ids, x.status, x.changes, x.change, \
         CAST(x.send_event AS BIGINT), CAST($4 AS BIGINT) FROM {rows}"
    ))
    .bind(env.to_string())
    .bind(finished.clone())
    .bind(serde_json::Value::Array(action_rows).to_string())
    .bind(epoch)
    .execute(&mut **tx)
    .await?;
    let rows = json_rows(kind, 2, &["action_id", "resource_id"]);
    sqlx::query(&format!(
        "INSERT INTO resource_action_resource (environment, action_id, resource_id) \
         SELECT $1, x.action_id, x.resource_id FROM {rows}"
    ))
    .bind(env.to_string())
    .bind(serde_json::Value::Array(link_rows).to_string())
    .execute(&mut **tx)
    .await?;
    if !log_rows.is_empty() {
        let rows = json_rows(kind, 2, &["action_id", "seq", "level_no", "level", "msg", "args", "kwargs", "timestamp"]);
        sqlx::query(&format!(
            "INSERT INTO resource_log (environment, action_id, seq, level_no, level, msg, args, kwargs, timestamp) \
             SELECT $1, x.action_id, CAST(x.seq AS BIGINT), CAST(x.level_no AS BIGINT), x.level, x.msg, x.args, \
             x.kwargs, x.timestamp FROM {rows}"
        ))
        .bind(env.to_string())
        .bind(serde_json::Value::Array(log_rows).to_string())
        .execute(&mut **tx)
        .await?;
    }
    record_deploy_results(tx, kind, env, &finished, &results).await
}

/// One resource's result of a finished deploy.
struct DeployResult<'a> {
    resource_id: String,
    /// The version the deploy ran for: its hash is the one deployed.
    version: i64,
    outcome: HandlerStatus,
    /// The run changed something (its change is not `nochange`).
    events: bool,
    /// The last error the run logged, for the notification of a new failure.
    reason: Option<&'a str>,
    /// What a `non_compliant` run found different ({attribute: {current, desired}}), kept for
    /// the compliance report.
    diff: Option<serde_json::Value>,
}

/// The attribute diff of a `non_compliant` run, as Inmanta keeps it: every attribute with both
/// `current` and `desired` (a handler may leave one out).
fn non_compliant_diff(outcome: &ActionOutcome, rvid: &str) -> Option<serde_json::Value> {
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

/// Records deploy results in the state vector of their resources (`api::state::StateVector`):
/// the one place a deploy's outcome reaches `resource_persistent_state`.
async fn record_deploy_results(
    tx: &mut Transaction,
    kind: crate::DbKind,
    env: Uuid,
    finished: &str,
    results: &[DeployResult<'_>],
) -> Result<()> {
    let failed: Vec<(String, Option<&str>)> = results
        .iter()
        .filter(|r| ResourceState::from(r.outcome) == ResourceState::Failed)
        .map(|r| (r.resource_id.clone(), r.reason))
        .collect();
    notify_new_failures(tx, env, &failed).await?;
    // One UPDATE per kind of outcome (usually one or two per batch), on the ids as an IN list:
    // an UPDATE joined with the unpacked rows would scan the whole table for each of them.
    let mut groups: BTreeMap<(HandlerRun, ResourceState, i64, bool), Vec<&str>> = BTreeMap::new();
    for result in results {
        let (handler_run, status) = deploy_columns(result.outcome)?;
        groups.entry((handler_run, status, result.version, result.events)).or_default().push(&result.resource_id);
    }
    let ids = crate::store::json_list(kind, 8);
    // The hash deployed is the one of the version the action ran for: almost always the current
    // intent's, which the row holds; only an older version's is looked up (the lookup for every
    // row was a fifth of the statement's time on PostgreSQL).
    // Compliance is about the current intent only (Inmanta's scheduler): a run for an older
    // intent (another hash) leaves `last_handler_run_compliant` as it was. The diff is cleared
    // here and set below for the runs that found one, as Inmanta persists it.
    let older_hash = "(SELECT r.attribute_hash FROM resource r WHERE r.environment = $1 AND r.version = $5 \
                      AND r.resource_id = resource_persistent_state.resource_id)";
    let sql = format!(
        "UPDATE resource_persistent_state SET is_deploying = 0, last_handler_run = $2, \
         last_handler_run_at = $3, last_deploy = $3, last_non_deploying_status = $4, \
         last_deployed_version = $5, last_deployed_attribute_hash = CASE \
         WHEN current_intent_version = $5 THEN current_intent_attribute_hash ELSE {older_hash} END, \
         last_success = CASE WHEN $6 = 1 THEN $3 ELSE last_success END, \
         last_produced_events = CASE WHEN $7 = 1 THEN $3 ELSE last_produced_events END, \
         last_handler_run_compliant = CASE WHEN current_intent_version = $5 \
         OR {older_hash} = current_intent_attribute_hash THEN $9 ELSE last_handler_run_compliant END, \
         non_compliant_diff = NULL \
         WHERE environment = $1 AND resource_id IN {ids}"
    );
    for ((handler_run, status, version, events), rids) in groups {
        sqlx::query(&sql)
            .bind(env.to_string())
            .bind(handler_run.as_str())
            .bind(finished.to_string())
            .bind(status.as_str())
            .bind(version)
            .bind(i64::from(status == ResourceState::Deployed))
            .bind(i64::from(events))
            .bind(serde_json::json!(rids).to_string())
            .bind(i64::from(status == ResourceState::Deployed))
            .execute(&mut **tx)
            .await?;
    }
    for result in results {
        if let Some(diff) = &result.diff {
            sqlx::query(
                "UPDATE resource_persistent_state SET non_compliant_diff = $3 WHERE environment = $1 AND resource_id = $2",
            )
            .bind(env.to_string())
            .bind(&result.resource_id)
            .bind(diff.to_string())
            .execute(&mut **tx)
            .await?;
        }
    }
    Ok(())
}

/// What the scheduler knows of one resource of the latest released version when it (re)loads.
#[derive(Debug, Clone)]
pub struct ResourceIntent {
    pub id: ResourceId,
    pub version: i64,
    /// The exported fields without `id` and `requires`.
    pub attributes: serde_json::Map<String, serde_json::Value>,
    pub requires: Vec<String>,
    pub attribute_hash: String,
    pub undefined: bool,
    pub blocked: Blocked,
    pub last_deployed_attribute_hash: Option<String>,
    /// The status of the last finished handler run.
    pub last_status: Option<ResourceState>,
    pub last_deploy: Option<String>,
}

impl Orchestrator {
    /// The released intent of one resource, if it has one.
    pub async fn released_intent(&self, env: Uuid, rid: &ResourceId) -> Result<Option<ResourceIntent>> {
        let row = sqlx::query(&format!("{INTENT_SELECT} AND s.resource_id = $2"))
            .bind(env.to_string())
            .bind(rid.to_string())
            .fetch_optional(self.store.pool())
            .await?;
        Ok(match row {
            Some(row) => intent_of_row(&row)?,
            None => None,
        })
    }

    /// Records the `getfact` action Inmanta records when the server asks an agent for facts:
    /// no status, no change, no log lines.
    pub async fn record_getfact_action(&self, env: Uuid, rid: &ResourceId, version: i64) -> Result<()> {
        let action_id = new_action_id().to_string();
        let at = now();
        let mut tx = self.store.begin_write().await?;
        insert_bare_action(
            &mut tx,
            env,
            &action_id,
            version,
            ActionKind::Getfact.as_str(),
            &at,
            &[rid.versioned(version as u64)],
        )
        .await?;
        sqlx::query("INSERT INTO resource_action_resource (environment, action_id, resource_id) VALUES ($1, $2, $3)")
            .bind(env.to_string())
            .bind(action_id)
            .bind(rid.to_string())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// The intent and known state of every resource of the latest released version.
    ///
    /// Read in keyset pages: the rows of 100 000 resources (their attribute texts) are never
    /// all in memory beside the parsed intents, which kept the server's peak higher than the
    /// scheduler's own state. The pages share one snapshot (a read transaction), so a release
    /// meanwhile is seen whole or not at all.
    pub async fn released_intents(&self, env: Uuid) -> Result<Vec<ResourceIntent>> {
        const PAGE: i64 = 5000;
        let mut tx = self.store.pool().begin().await?;
        if self.store.kind() == crate::DbKind::Postgres {
            sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY").execute(&mut *tx).await?;
        }
        let mut intents = Vec::new();
        let mut after = String::new();
        loop {
            let rows = sqlx::query(&format!("{INTENT_SELECT} AND s.resource_id > $2 ORDER BY s.resource_id LIMIT $3"))
                .bind(env.to_string())
                .bind(after.clone())
                .bind(PAGE)
                .fetch_all(&mut *tx)
                .await?;
            let full = rows.len() as i64 == PAGE;
            for row in rows {
                after = row.try_get("resource_id")?;
                intents.extend(intent_of_row(&row)?);
            }
            if !full {
                tx.rollback().await?;
                return Ok(intents);
            }
        }
    }
}

/// The released intents of an environment's resources that are not orphans; a query adds its
/// own conditions after this.
///
/// The attributes come from a subquery, one primary-key lookup per row, not from a join: joined,
/// PostgreSQL planned a keyset page of 5 000 from statistics that a release had just made stale
/// and hashed every later row of `resource` for each page (a load of 100 000 intents took 5 s).
const INTENT_SELECT: &str = "SELECT s.resource_id, s.current_intent_version, s.current_intent_requires, \
     s.current_intent_attribute_hash, s.is_undefined, s.blocked, s.last_deployed_attribute_hash, \
     s.last_non_deploying_status, s.last_deploy, (SELECT r.attributes FROM resource r \
     WHERE r.environment = s.environment AND r.version = s.current_intent_version \
     AND r.resource_id = s.resource_id) AS attributes FROM resource_persistent_state s \
     WHERE s.environment = $1 AND s.is_orphan = 0";

/// The intent of a row of [`INTENT_SELECT`]; none when its version no longer holds the resource.
fn intent_of_row(row: &sqlx::any::AnyRow) -> Result<Option<ResourceIntent>> {
    let rid: String = row.try_get("resource_id")?;
    let Some(attributes) = row.try_get::<Option<String>, _>("attributes")? else {
        return Ok(None);
    };
    Ok(Some(ResourceIntent {
        id: ResourceId::parse(&rid).map_err(|e| Error::Corrupt(e.to_string()))?,
        version: row.try_get("current_intent_version")?,
        attributes: serde_json::from_str(&attributes).map_err(corrupt("resource attributes"))?,
        requires: serde_json::from_str(&row.try_get::<String, _>("current_intent_requires")?)
            .map_err(corrupt("resource requires"))?,
        attribute_hash: row.try_get("current_intent_attribute_hash")?,
        undefined: row.try_get::<i64, _>("is_undefined")? != 0,
        blocked: stored_name(row, "blocked")?,
        last_deployed_attribute_hash: row.try_get("last_deployed_attribute_hash")?,
        last_status: row
            .try_get::<Option<String>, _>("last_non_deploying_status")?
            .as_deref()
            .map(parse_stored)
            .transpose()?,
        last_deploy: row.try_get("last_deploy")?,
    }))
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
