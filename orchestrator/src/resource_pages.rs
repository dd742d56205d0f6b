//! Keyset pages of resources with the state vector, for the GraphQL `resources` query
//! (inmanta-core 20.1 `graphql/schema.py`): filters on the state columns, ordering on any of them
//! with the resource id last, and pages that continue after (or before) the sort-key values of a
//! row, so that a page costs the same wherever it is in a list of 10 000 resources.
//!
//! Each resource is read at the version Inmanta takes it at when no version is pinned: the latest
//! released version that holds it, its last one for an orphan (`current_intent_version`).

use api::state::{Blocked, Compliance, HandlerRun, ResourceState};
use sqlx::Row;
use uuid::Uuid;

use crate::list_sql::{Bind, Condition, TextTest, bind_all, distinct_values_sql};
use crate::store::DbKind;
use crate::{Orchestrator, Result};

/// A text filter: any of `eq`, none of `neq`, every `contains` pattern (SQL LIKE, `%` and `_`
/// wildcards, `\` before one of them for the character itself, case-insensitive: Inmanta's
/// `ilike`) and none of `not_contains`.
#[derive(Debug, Clone, Default)]
pub struct TextMatch {
    pub eq: Option<Vec<String>>,
    pub neq: Option<Vec<String>>,
    pub contains: Option<Vec<String>>,
    pub not_contains: Option<Vec<String>>,
}

/// A choice filter on stored names (`successful`, `not_blocked`, `has_update`...).
#[derive(Debug, Clone, Default)]
pub struct ChoiceMatch {
    pub eq: Option<Vec<String>>,
    pub neq: Option<Vec<String>>,
}

/// What the `resources` query filters on.
#[derive(Debug, Clone, Default)]
pub struct ResourceFilter {
    pub environment: Uuid,
    pub is_orphan: Option<bool>,
    pub resource_type: Option<TextMatch>,
    pub resource_id_value: Option<TextMatch>,
    pub agent: Option<TextMatch>,
    pub purged: Option<bool>,
    pub blocked: Option<ChoiceMatch>,
    pub compliance: Option<ChoiceMatch>,
    pub last_handler_run: Option<ChoiceMatch>,
    pub is_deploying: Option<bool>,
    pub model_version: Option<i64>,
}

/// The columns a page can be ordered on, besides the resource id that always comes last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceSortKey {
    Agent,
    ResourceType,
    ResourceIdValue,
    Blocked,
    Compliance,
    LastHandlerRun,
    IsDeploying,
}

impl ResourceSortKey {
    /// The keys by the snake_case names Inmanta accepts.
    pub const NAMES: &[(&'static str, ResourceSortKey)] = &[
        ("agent", ResourceSortKey::Agent),
        ("resource_type", ResourceSortKey::ResourceType),
        ("resource_id_value", ResourceSortKey::ResourceIdValue),
        ("blocked", ResourceSortKey::Blocked),
        ("compliance", ResourceSortKey::Compliance),
        ("last_handler_run", ResourceSortKey::LastHandlerRun),
        ("is_deploying", ResourceSortKey::IsDeploying),
    ];

    pub fn parse(name: &str) -> Option<ResourceSortKey> {
        Self::NAMES.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
    }

    /// Whether the key can be NULL (an orphan has no compliance); the others are NOT NULL
    /// columns, ordered without a NULLS clause so that SQLite can walk their indexes.
    fn nullable(self) -> bool {
        self == ResourceSortKey::Compliance
    }

    /// The SQL the rows are ordered on. Inmanta stores the states by their upper-case names and
    /// orders on those (alphabetically: `FAILED` before `NEW`).
    fn sql(self) -> String {
        match self {
            ResourceSortKey::Agent => "s.agent".into(),
            ResourceSortKey::ResourceType => "s.resource_type".into(),
            ResourceSortKey::ResourceIdValue => "s.id_value".into(),
            ResourceSortKey::Blocked => "UPPER(s.blocked)".into(),
            ResourceSortKey::Compliance => format!("UPPER({})", compliance_sql()),
            ResourceSortKey::LastHandlerRun => "UPPER(s.last_handler_run)".into(),
            ResourceSortKey::IsDeploying => "s.is_deploying".into(),
        }
    }
}

/// Inmanta's compliance of a resource: none for an orphan, `undefined`, `has_update` until a
/// handler ran for the current intent, then `compliant` only when that run deployed it.
/// A resource's compliance (`api::state::Compliance`) in SQL; none for an orphan.
fn compliance_sql() -> String {
    format!("(CASE WHEN s.is_orphan = 1 THEN NULL ELSE {} END)", Compliance::sql("s"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Asc,
    Desc,
}

/// A sort-key value of one row, as a page continues from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyValue {
    Text(String),
    Bool(bool),
    Null,
}

/// Which page: `limit` rows after `after` (or before `before`, counting back from it).
#[derive(Debug, Clone, Default)]
pub struct KeysetRequest {
    pub order: Vec<(ResourceSortKey, Direction)>,
    pub after: Option<Vec<KeyValue>>,
    pub before: Option<Vec<KeyValue>>,
    pub limit: u64,
}

/// One resource with its state vector, at the version it is read at.
#[derive(Debug, Clone)]
pub struct ResourceStateRow {
    pub resource: ResourceAtVersion,
    pub state: ResourceDeployState,
    /// The sort-key values of this row (the requested keys, then the resource id).
    pub keys: Vec<KeyValue>,
}

/// A resource as the version it is read at holds it.
#[derive(Debug, Clone)]
pub struct ResourceAtVersion {
    pub resource_id: String,
    pub resource_type: String,
    pub agent: String,
    pub id_value: String,
    pub model_version: i64,
    pub resource_set: Option<String>,
    pub attributes: serde_json::Value,
    pub attribute_hash: String,
    pub requires_length: usize,
    pub first_generated_time: String,
}

/// A resource's state vector and last deploy (its `resource_persistent_state` row), with the
/// compliance derived from them.
#[derive(Debug, Clone)]
pub struct ResourceDeployState {
    pub is_undefined: bool,
    pub is_orphan: bool,
    pub blocked: String,
    pub last_handler_run: String,
    pub last_handler_run_at: Option<String>,
    pub is_deploying: bool,
    pub compliance: Option<String>,
    pub last_non_deploying_status: Option<String>,
    /// Whether the last handler run for the current intent found the resource as desired.
    pub last_handler_run_compliant: Option<bool>,
    pub last_success: Option<String>,
    pub last_produced_events: Option<String>,
    pub last_deployed_attribute_hash: Option<String>,
    pub last_deployed_version: Option<i64>,
    pub current_intent_attribute_hash: String,
}

/// A page, and the sort-key values of the first row beyond it in the direction it was read
/// (none when the page reaches the end).
#[derive(Debug, Clone)]
pub struct ResourceStatePage {
    pub rows: Vec<ResourceStateRow>,
    pub excess: Option<Vec<KeyValue>>,
}

/// The tests of a text filter on `column`: any of `eq`, none of `neq`, every `contains` pattern
/// and none of `not_contains`.
fn push_text(condition: &mut Condition, column: &str, m: &TextMatch) {
    if let Some(eq) = &m.eq {
        condition.push_in(column, eq, false);
    }
    if let Some(neq) = &m.neq {
        condition.push_in(column, neq, true);
    }
    for pattern in m.contains.iter().flatten() {
        condition.push_like(column, TextTest::Pattern(pattern), false);
    }
    for pattern in m.not_contains.iter().flatten() {
        condition.push_like(column, TextTest::Pattern(pattern), true);
    }
}

fn push_choice(condition: &mut Condition, column: &str, m: &ChoiceMatch) {
    if let Some(eq) = &m.eq {
        condition.push_in(column, eq, false);
    }
    if let Some(neq) = &m.neq
        && !neq.is_empty()
    {
        // NULL (an orphan's compliance) is in no list: SQL's NOT IN would drop it too.
        let marks = vec!["?"; neq.len()].join(", ");
        condition.push(
            format!("{column} NOT IN ({marks}) OR {column} IS NULL"),
            neq.iter().cloned().map(Bind::Text).collect(),
        );
    }
}

fn push_flag(condition: &mut Condition, column: &str, value: Option<bool>) {
    if let Some(v) = value {
        condition.push_sql(format!("{column} = {}", i64::from(v)));
    }
}

/// The values of the few-valued columns (agents, resource types) that a filter's text matches
/// select, found before the rows are: `s.agent IN (...)` then walks the column's index instead
/// of testing the pattern on every resource of the environment.
#[derive(Debug, Default)]
struct Resolved {
    resource_types: Option<Vec<String>>,
    agents: Option<Vec<String>>,
}

fn filter_sql(filter: &ResourceFilter, resolved: &Resolved, kind: DbKind) -> Condition {
    let mut w = Condition::default();
    w.push("s.environment = ?".into(), vec![Bind::Text(filter.environment.to_string())]);
    for (column, values) in [("s.resource_type", &resolved.resource_types), ("s.agent", &resolved.agents)] {
        if let Some(values) = values {
            w.push_in(column, values, false);
        }
    }
    if let Some(m) = &filter.resource_id_value {
        push_text(&mut w, "s.id_value", m);
    }
    if let Some(m) = &filter.blocked {
        push_choice(&mut w, "s.blocked", m);
    }
    if let Some(m) = &filter.compliance {
        push_choice(&mut w, &compliance_sql(), m);
    }
    if let Some(m) = &filter.last_handler_run {
        push_choice(&mut w, "s.last_handler_run", m);
    }
    push_flag(&mut w, "s.is_deploying", filter.is_deploying);
    push_flag(&mut w, "s.is_orphan", filter.is_orphan);
    if let Some(purged) = filter.purged {
        // `purged` is an attribute of the resource at the version it is read at.
        let truth = if kind == DbKind::Postgres {
            "COALESCE(CAST(r.attributes AS JSONB)->>'purged', 'false') = 'true'"
        } else {
            "COALESCE(json_extract(r.attributes, '$.purged'), 0) = 1"
        };
        w.push_sql(if purged { truth.to_string() } else { format!("NOT ({truth})") });
    }
    w
}

/// One sort key of a page query: its SQL, direction and whether it can be NULL.
#[derive(Debug, Clone)]
struct SortSql {
    sql: String,
    direction: Direction,
    nullable: bool,
}

/// `(k1, k2, ...) > (v1, v2, ...)` with each key in its own direction, spelled out (row-value
/// comparison cannot mix directions). NULLs sort last ascending, as PostgreSQL does.
fn push_after(condition: &mut Condition, keys: &[SortSql], values: &[KeyValue]) {
    let mut ors = Vec::new();
    let mut binds = Vec::new();
    for i in 0..keys.len() {
        let mut ands = Vec::new();
        let mut and_binds = Vec::new();
        for (j, key) in keys.iter().enumerate().take(i) {
            let sql = &key.sql;
            ands.push(match key_bind(&values[j]) {
                None => format!("{sql} IS NULL"),
                Some(bind) => {
                    and_binds.push(bind);
                    format!("{sql} = ?")
                }
            });
        }
        let SortSql { sql, direction, nullable } = &keys[i];
        let beyond = match (key_bind(&values[i]), direction) {
            (None, Direction::Asc) => None,
            (None, Direction::Desc) => Some((format!("{sql} IS NOT NULL"), None)),
            (Some(v), Direction::Asc) if *nullable => Some((format!("({sql} > ? OR {sql} IS NULL)"), Some(v))),
            (Some(v), Direction::Asc) => Some((format!("{sql} > ?"), Some(v))),
            (Some(v), Direction::Desc) => Some((format!("{sql} < ?"), Some(v))),
        };
        if let Some((b, bind)) = beyond {
            ands.push(b);
            and_binds.extend(bind);
            ors.push(format!("({})", ands.join(" AND ")));
            binds.extend(and_binds);
        }
    }
    if ors.is_empty() { condition.push_sql("1 = 0") } else { condition.push(ors.join(" OR "), binds) }
}

/// The value a sort key is compared with; none for NULL.
fn key_bind(v: &KeyValue) -> Option<Bind> {
    match v {
        KeyValue::Text(t) => Some(Bind::Text(t.clone())),
        KeyValue::Bool(b) => Some(Bind::Int(i64::from(*b))),
        KeyValue::Null => None,
    }
}

fn order_sql(keys: &[SortSql]) -> String {
    keys.iter()
        .map(|SortSql { sql, direction, nullable }| match (direction, nullable) {
            (Direction::Asc, true) => format!("{sql} ASC NULLS LAST"),
            (Direction::Desc, true) => format!("{sql} DESC NULLS FIRST"),
            (Direction::Asc, false) => format!("{sql} ASC"),
            (Direction::Desc, false) => format!("{sql} DESC"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn flip(d: Direction) -> Direction {
    match d {
        Direction::Asc => Direction::Desc,
        Direction::Desc => Direction::Asc,
    }
}

const SELECT: &str = "s.resource_id, s.resource_type, s.agent, s.id_value, r.version AS model_version, \
     r.resource_set, r.attributes, r.attribute_hash, r.requires, s.is_undefined, s.is_orphan, s.blocked, \
     s.last_handler_run, s.last_handler_run_at, s.is_deploying, s.last_non_deploying_status, \
     s.first_generated_time, s.last_success, s.last_produced_events, s.last_deployed_attribute_hash, \
     s.last_deployed_version, s.current_intent_attribute_hash, s.last_handler_run_compliant";

impl Orchestrator {
    /// How many resources match `filter` (at the version each is read at).
    pub async fn count_resource_states(&self, filter: &ResourceFilter) -> Result<u64> {
        let kind = self.store.kind();
        let resolved = self.resolve_few(filter).await?;
        let mut w = filter_sql(filter, &resolved, kind);
        let (from, from_binds) = if filter.purged.is_some() || filter.model_version.is_some() {
            resource_from(filter)
        } else {
            // A page reads each resource at its current intent version, so a resource counts
            // when that version still holds it. For one that is not an orphan that version is
            // the active one, which cannot be deleted: only orphans need the look-up, and the
            // count stays on the state table (and its indexes) for the rest.
            w.push_sql(
                "s.is_orphan = 0 OR EXISTS (SELECT 1 FROM resource r WHERE r.environment = s.environment \
                 AND r.resource_id = s.resource_id AND r.version = s.current_intent_version)",
            );
            ("resource_persistent_state s".to_string(), vec![])
        };
        let (condition, binds) = w.render(from_binds.len() + 1);
        let sql = format!("SELECT COUNT(*) AS n FROM {from} WHERE {condition}");
        let row = bind_all(bind_all(sqlx::query(&sql), &from_binds), &binds).fetch_one(self.store.pool()).await?;
        Ok(row.try_get::<i64, _>("n")? as u64)
    }

    /// One keyset page of resources matching `filter`.
    pub async fn resource_state_page(&self, filter: &ResourceFilter, req: &KeysetRequest) -> Result<ResourceStatePage> {
        let kind = self.store.kind();
        let resolved = self.resolve_few(filter).await?;
        let mut w = filter_sql(filter, &resolved, kind);
        let (from, from_binds) = resource_from(filter);
        let backwards = req.before.is_some();
        let mut keys: Vec<SortSql> =
            req.order.iter().map(|(k, d)| SortSql { sql: k.sql(), direction: *d, nullable: k.nullable() }).collect();
        keys.push(SortSql { sql: "s.resource_id".into(), direction: Direction::Asc, nullable: false });
        let read_keys: Vec<SortSql> = if backwards {
            keys.iter().map(|k| SortSql { direction: flip(k.direction), ..k.clone() }).collect()
        } else {
            keys.clone()
        };
        if let Some(place) = req.after.as_ref().or(req.before.as_ref()) {
            if place.len() != read_keys.len() {
                return Err(crate::Error::BadRequest("the cursor does not belong to this ordering".into()));
            }
            push_after(&mut w, &read_keys, place);
        }
        let key_columns: Vec<String> = keys.iter().enumerate().map(|(i, k)| format!("{} AS k{i}", k.sql)).collect();
        let (condition, binds) = w.render(from_binds.len() + 1);
        let sql = format!(
            "SELECT {SELECT}, {} FROM {from} WHERE {condition} ORDER BY {} LIMIT {}",
            key_columns.join(", "),
            order_sql(&read_keys),
            req.limit + 1
        );
        let fetched = bind_all(bind_all(sqlx::query(&sql), &from_binds), &binds).fetch_all(self.store.pool()).await?;
        let excess = fetched.get(req.limit as usize).map(|row| row_to_state(row, &req.order)).transpose()?;
        let mut rows = Vec::with_capacity(fetched.len());
        for row in fetched.iter().take(req.limit as usize) {
            rows.push(row_to_state(row, &req.order)?);
        }
        if backwards {
            rows.reverse();
        }
        Ok(ResourceStatePage { rows, excess: excess.map(|row| row.keys) })
    }

    /// The agents and resource types of the environment that the filter's text matches on
    /// them select: the distinct values, one index seek each (a recursive walk of the index),
    /// tested with the same SQL the rows would be tested with.
    async fn resolve_few(&self, filter: &ResourceFilter) -> Result<Resolved> {
        let mut resolved = Resolved::default();
        for (column, text, slot) in [
            ("s.resource_type", &filter.resource_type, &mut resolved.resource_types),
            ("s.agent", &filter.agent, &mut resolved.agents),
        ] {
            let Some(text) = text else { continue };
            let mut tests = Condition::default();
            push_text(&mut tests, "d.v", text);
            let (tests, binds) = tests.render(2);
            let sql = format!(
                "{} AND {tests}",
                distinct_values_sql(column, "resource_persistent_state s", "s.environment = $1")
            );
            let environment = [Bind::Text(filter.environment.to_string())];
            let rows = bind_all(bind_all(sqlx::query(&sql), &environment), &binds).fetch_all(self.store.pool()).await?;
            let mut values = Vec::with_capacity(rows.len());
            for row in rows {
                values.push(row.try_get::<String, _>("v")?);
            }
            *slot = Some(values);
        }
        Ok(resolved)
    }
}

/// The tables a resource page reads, with the values their SQL binds first (`$1`): the state
/// vector and the resource at its version (a pinned `model_version` only keeps the resources
/// that version holds).
fn resource_from(filter: &ResourceFilter) -> (String, Vec<Bind>) {
    match filter.model_version {
        Some(version) => (
            "resource_persistent_state s JOIN resource r ON r.environment = s.environment \
             AND r.resource_id = s.resource_id AND r.version = $1"
                .to_string(),
            vec![Bind::Int(version)],
        ),
        None => (
            "resource_persistent_state s JOIN resource r ON r.environment = s.environment \
             AND r.resource_id = s.resource_id AND r.version = s.current_intent_version"
                .to_string(),
            vec![],
        ),
    }
}

fn row_to_state(row: &sqlx::any::AnyRow, order: &[(ResourceSortKey, Direction)]) -> Result<ResourceStateRow> {
    let corrupt = |what: &str| crate::Error::Corrupt(format!("resource state: {what}"));
    let attributes: String = row.try_get("attributes")?;
    let requires: String = row.try_get("requires")?;
    let requires: Vec<serde_json::Value> = serde_json::from_str(&requires).map_err(|_| corrupt("requires"))?;
    let mut keys = Vec::with_capacity(order.len() + 1);
    for (i, (key, _)) in order.iter().enumerate() {
        let name = format!("k{i}");
        keys.push(match key {
            ResourceSortKey::IsDeploying => KeyValue::Bool(row.try_get::<i64, _>(name.as_str())? != 0),
            _ => match row.try_get::<Option<String>, _>(name.as_str())? {
                Some(v) => KeyValue::Text(v),
                None => KeyValue::Null,
            },
        });
    }
    let resource_id: String = row.try_get("resource_id")?;
    keys.push(KeyValue::Text(resource_id.clone()));
    let is_orphan = row.try_get::<i64, _>("is_orphan")? != 0;
    let is_undefined = row.try_get::<i64, _>("is_undefined")? != 0;
    let last_deployed_attribute_hash: Option<String> = row.try_get("last_deployed_attribute_hash")?;
    let current_intent_attribute_hash: String = row.try_get("current_intent_attribute_hash")?;
    let last_non_deploying_status: Option<String> = row.try_get("last_non_deploying_status")?;
    let last_handler_run_compliant =
        row.try_get::<Option<i64>, _>("last_handler_run_compliant")?.map(|compliant| compliant != 0);
    let compliance = (!is_orphan).then(|| {
        Compliance::of(
            is_undefined,
            last_deployed_attribute_hash.as_deref(),
            &current_intent_attribute_hash,
            last_handler_run_compliant,
        )
    });
    let resource = ResourceAtVersion {
        resource_id,
        resource_type: row.try_get("resource_type")?,
        agent: row.try_get("agent")?,
        id_value: row.try_get("id_value")?,
        model_version: row.try_get("model_version")?,
        resource_set: row.try_get("resource_set")?,
        attributes: serde_json::from_str(&attributes).map_err(|_| corrupt("attributes"))?,
        attribute_hash: row.try_get("attribute_hash")?,
        requires_length: requires.len(),
        first_generated_time: row.try_get("first_generated_time")?,
    };
    let state = ResourceDeployState {
        is_undefined,
        is_orphan,
        blocked: row.try_get("blocked")?,
        last_handler_run: row.try_get("last_handler_run")?,
        last_handler_run_at: row.try_get("last_handler_run_at")?,
        is_deploying: row.try_get::<i64, _>("is_deploying")? != 0,
        compliance: compliance.map(|c| c.as_str().to_string()),
        last_handler_run_compliant,
        last_non_deploying_status,
        last_success: row.try_get("last_success")?,
        last_produced_events: row.try_get("last_produced_events")?,
        last_deployed_attribute_hash,
        last_deployed_version: row.try_get("last_deployed_version")?,
        current_intent_attribute_hash,
    };
    Ok(ResourceStateRow { resource, state, keys })
}

/// Counts of the managed (not orphaned) resources of an environment by each part of their state:
/// the `resourceSummary` query. Every value appears, with 0 when no resource has it.
#[derive(Debug, Clone, Default)]
pub struct ComposedSummary {
    pub total: u64,
    pub last_handler_run: std::collections::BTreeMap<String, u64>,
    pub blocked: std::collections::BTreeMap<String, u64>,
    pub compliance: std::collections::BTreeMap<String, u64>,
    pub is_deploying: std::collections::BTreeMap<String, u64>,
}

impl Orchestrator {
    /// Reads the status index alone (migration 0049), grouped in its order so no row is
    /// sorted; the groups (per status and agent) are added up here.
    pub async fn composed_resource_summary(&self, env: Uuid) -> Result<ComposedSummary> {
        let sql = "SELECT s.status, s.agent, s.last_handler_run, s.blocked, s.compliance, COUNT(*) AS n \
                   FROM resource_persistent_state s WHERE s.environment = $1 AND s.status <> $2 \
                   GROUP BY s.status, s.agent, s.last_handler_run, s.blocked, s.compliance";
        let rows = sqlx::query(sql)
            .bind(env.to_string())
            .bind(ResourceState::Orphaned.as_str())
            .fetch_all(self.store.pool())
            .await?;
        let zeros = |names: Vec<&str>| names.into_iter().map(|n| (n.to_string(), 0)).collect();
        let mut summary = ComposedSummary {
            total: 0,
            last_handler_run: zeros(HandlerRun::ALL.iter().map(|r| r.as_str()).collect()),
            blocked: zeros(Blocked::ALL.iter().map(|b| b.as_str()).collect()),
            compliance: zeros(Compliance::ALL.iter().map(|c| c.as_str()).collect()),
            is_deploying: zeros(vec!["true", "false"]),
        };
        for row in rows {
            let n = row.try_get::<i64, _>("n")? as u64;
            summary.total += n;
            *summary.last_handler_run.entry(row.try_get("last_handler_run")?).or_default() += n;
            // Counted as Inmanta counts it: a temporary block is stored as not blocked there.
            let blocked: String = row.try_get("blocked")?;
            let blocked = Blocked::parse(&blocked).map_or(blocked.as_str(), |b| b.as_inmanta_stores().as_str());
            *summary.blocked.entry(blocked.to_string()).or_default() += n;
            if let Some(c) = row.try_get::<Option<String>, _>("compliance")? {
                *summary.compliance.entry(c).or_default() += n;
            }
            // A managed resource is deploying exactly when its status says so (only an orphan's
            // status comes before 'deploying').
            let deploying = row.try_get::<String, _>("status")? == ResourceState::Deploying.as_str();
            *summary.is_deploying.entry(deploying.to_string()).or_default() += n;
        }
        Ok(summary)
    }
}
