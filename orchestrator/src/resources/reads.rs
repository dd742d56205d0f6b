//! Reads of resources: the latest released version plus orphans with their status, one
//! resource's details, history and logs, resource actions, and the intents the scheduler loads.

use std::collections::{BTreeMap, HashMap};

use api::ResourceId;
use api::resource::{
    LatestReleasedResource, LogLine, ReleasedResourceDetails, ResourceAction, ResourceDeploySummary, ResourceHistory,
    ResourceIdDetails, ResourceLog,
};
use api::state::{ActionKind, ResourceState};
use sqlx::Row;
use uuid::Uuid;

use super::{
    ActionQuery, ResourceIntent, STATUS_SQL, corrupt, parse_rid, parse_stored, resource_not_found, stored_name,
};
use crate::paging::{
    Column, ColumnKind, Filter, FilterKind, Order, Page, PageRequest, Source, View, fetch_page, fetch_page_linking,
};
use crate::{Error, Orchestrator, Result};

/// What [`STATUS_SQL`] can say: every resource state and `orphaned`.
const RESOURCE_STATUSES: &[&str] = ResourceState::NAMES;

/// `GET /api/v2/resource` (its sorts and filters: docs/api.md).
const RESOURCE_VIEW: View = View {
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
const HISTORY_VIEW: View = View {
    sort_columns: &[Column { name: "date", sql: "h.date", kind: ColumnKind::Date }],
    default_sort: ("date", Order::Desc),
    filters: &[],
    id_sql: "h.attribute_hash",
    id_kind: ColumnKind::Text,
};

/// `GET /api/v2/resource/<rid>/logs`.
const LOG_VIEW: View = View {
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
            let id = crate::stored_id(&row.resource_id)?;
            let version = row.current_intent_version;
            let requires: Vec<String> = serde_json::from_str(&row.requires).map_err(corrupt("resource requires"))?;
            Ok(LatestReleasedResource {
                resource_version_id: id.versioned(version as u64),
                id_details: ResourceIdDetails::from(&id),
                requires: requires.iter().map(|r| crate::stored_version_id(r, version)).collect::<Result<_>>()?,
                resource_id: id,
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
        let requires_status = self
            .states_of(env, &wanted)
            .await?
            .into_iter()
            .map(|(rid, state)| Ok((crate::stored_id(&rid)?, state)))
            .collect::<Result<BTreeMap<ResourceId, ResourceState>>>()?;
        let mut attributes = attributes;
        attributes.insert("requires".into(), serde_json::json!(requires));
        Ok(ReleasedResourceDetails {
            resource_type: id.entity_type.clone(),
            agent: id.agent.clone(),
            id_attribute: id.attribute.clone(),
            id_attribute_value: id.value.clone(),
            attributes,
            last_deploy: crate::store::opt_time_column(&row, "last_deploy")?,
            first_generated_time: crate::store::time_column(&row, "first_generated_time")?,
            status: stored_name(&row, "status")?,
            requires_status,
            resource_id: id,
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
                resource_id: id.clone(),
                date: crate::store::parse_timestamp(&row.date)?,
                attributes,
                attribute_hash: row.attribute_hash,
                requires: requires.iter().map(|r| crate::stored_id(r)).collect::<Result<_>>()?,
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
                timestamp: crate::store::parse_timestamp(&row.timestamp)?,
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

    /// `GET /api/v2/resource_actions`: newest first, at most `limit` (all when 0).
    pub async fn resource_actions(&self, env: Uuid, q: &ActionQuery) -> Result<Vec<ResourceAction>> {
        self.ensure_environment(env).await?;
        q.check()?;
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
            push(&mut sql, " AND (a.started > ?", first.to_string());
            push(&mut sql, " OR (a.started = ?", first.to_string());
            push(&mut sql, " AND a.action_id > ?))", action_id.to_string());
        } else if let (Some(last), Some(action_id)) = (&q.last_timestamp, q.action_id) {
            push(&mut sql, " AND (a.started < ?", last.to_string());
            push(&mut sql, " OR (a.started = ?", last.to_string());
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
                started: crate::store::time_column(&row, "started")?,
                finished: crate::store::opt_time_column(&row, "finished")?,
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
                timestamp: crate::store::parse_timestamp(&row.timestamp)?,
            };
            lines.entry(row.action_id).or_default().push(line);
        }
        Ok(lines)
    }

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
        requires: serde_json::from_str::<Vec<String>>(&row.try_get::<String, _>("current_intent_requires")?)
            .map_err(corrupt("resource requires"))?
            .iter()
            .map(|text| ResourceId::parse(text).map_err(|e| Error::Corrupt(e.to_string())))
            .collect::<Result<_>>()?,
        attribute_hash: row.try_get("current_intent_attribute_hash")?,
        undefined: row.try_get::<i64, _>("is_undefined")? != 0,
        blocked: stored_name(row, "blocked")?,
        last_deployed_attribute_hash: row.try_get("last_deployed_attribute_hash")?,
        last_status: row
            .try_get::<Option<String>, _>("last_non_deploying_status")?
            .as_deref()
            .map(parse_stored)
            .transpose()?,
        last_deploy: row
            .try_get::<Option<String>, _>("last_deploy")?
            .as_deref()
            .map(crate::store::parse_time)
            .transpose()?,
    }))
}
