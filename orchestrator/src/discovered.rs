//! Discovered resources: what discovery handlers (`DiscoveryHandler.discover_resources` of an
//! Inmanta module) found on the managed machines, reported by the agents and listed for
//! operators (`/api/v2/discovered`, docs/api.md). A report of an id that is already known
//! replaces it, as in Inmanta.

use api::ResourceId;
use api::resource::{DiscoveredResource, DiscoveredResourceInput};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::paging::{Column, ColumnKind, Filter, FilterKind, Order, Page, PageRequest, Source, View, fetch_page};
use crate::store::now;
use crate::validate::MAX_TEXT;
use crate::{Error, Orchestrator, Result};

/// Whether a resource with the discovered id is managed: it has a persistent state, i.e. it is
/// part of a released version of the environment (Inmanta's own rule).
const MANAGED_SQL: &str = "CAST(CASE WHEN rps.resource_id IS NULL THEN 0 ELSE 1 END AS BIGINT)";

/// `GET /api/v2/discovered`.
pub const DISCOVERED_VIEW: View = View {
    sort_columns: &[
        Column { name: "discovered_resource_id", sql: "d.discovered_resource_id", kind: ColumnKind::Text },
        Column { name: "agent", sql: "d.agent", kind: ColumnKind::Text },
        Column { name: "resource_type", sql: "d.resource_type", kind: ColumnKind::Text },
        Column { name: "resource_id_value", sql: "d.resource_id_value", kind: ColumnKind::Text },
    ],
    default_sort: ("discovered_resource_id", Order::Asc),
    filters: &[
        Filter { name: "resource_type", sql: "d.resource_type", kind: FilterKind::Partial },
        Filter { name: "agent", sql: "d.agent", kind: FilterKind::Partial },
        Filter { name: "resource_id_value", sql: "d.resource_id_value", kind: FilterKind::Partial },
        Filter { name: "managed", sql: MANAGED_SQL, kind: FilterKind::Bool },
    ],
    id_sql: "d.discovered_resource_id",
    id_kind: ColumnKind::Text,
};

const FROM: &str = "discovered_resource d LEFT JOIN resource_persistent_state rps \
                    ON rps.environment = d.environment AND rps.resource_id = d.discovered_resource_id";

const COLUMNS: &str = "d.discovered_resource_id, d.resource_type, d.agent, d.resource_id_value, d.resource_values, \
                       d.discovery_resource_id, CAST(CASE WHEN rps.resource_id IS NULL THEN 0 ELSE 1 END AS BIGINT) AS managed";

#[derive(sqlx::FromRow)]
struct DiscoveredRow {
    discovered_resource_id: String,
    resource_type: String,
    agent: String,
    resource_id_value: String,
    resource_values: String,
    discovery_resource_id: String,
    managed: i64,
}

/// `/api/v2/resource/<id>`, the id percent-encoded as Inmanta does (`quote(id, safe='')`).
fn resource_uri(rid: &str) -> String {
    format!("/api/v2/resource/{}", api::url::encode(rid))
}

impl DiscoveredRow {
    fn into_api(self) -> Result<DiscoveredResource> {
        let values: Map<String, Value> = serde_json::from_str(&self.resource_values).map_err(|e| {
            Error::Corrupt(format!(
                "the values of discovered resource {} are not a JSON object: {e}",
                self.discovered_resource_id
            ))
        })?;
        Ok(DiscoveredResource {
            managed_resource_uri: (self.managed != 0).then(|| resource_uri(&self.discovered_resource_id)),
            discovery_resource_uri: Some(resource_uri(&self.discovery_resource_id)),
            discovered_resource_id: crate::stored_id(&self.discovered_resource_id)?,
            values,
            discovery_resource_id: crate::stored_id(&self.discovery_resource_id)?,
            resource_type: self.resource_type,
            agent: self.agent,
            resource_id_value: self.resource_id_value,
        })
    }
}

/// A reported resource, checked: its id parsed and its values serialized.
struct Checked {
    id: String,
    parsed: ResourceId,
    values: String,
    discovery_id: String,
}

fn check(item: &DiscoveredResourceInput) -> Result<Checked> {
    let resource_id = |what: &str, value: &str| -> Result<ResourceId> {
        crate::validate::id(what, value)?;
        // Inmanta 20.1 accepts a resource version id here too (its id pattern allows `,v=<n>`);
        // what was found is the resource, so the version is dropped rather than kept in its id.
        ResourceId::parse(value).map_err(|e| Error::BadRequest(format!("{what}: {e}")))
    };
    let parsed = resource_id("discovered_resource_id", &item.discovered_resource_id)?;
    let discovery = resource_id("discovery_resource_id", &item.discovery_resource_id)?;
    if !item.values.is_object() {
        return Err(Error::BadRequest(format!(
            "the values of discovered resource {} must be a JSON object, got {}",
            item.discovered_resource_id,
            json_kind(&item.values)
        )));
    }
    let values = item.values.to_string();
    if values.len() > MAX_TEXT {
        return Err(Error::BadRequest(format!(
            "the values of {} are too large: {} bytes of JSON, at most {MAX_TEXT}",
            item.discovered_resource_id,
            values.len()
        )));
    }
    Ok(Checked { id: parsed.to_string(), parsed, values, discovery_id: discovery.to_string() })
}

impl Orchestrator {
    /// Stores what a discovery handler reported, replacing earlier reports of the same ids. All
    /// or nothing: one invalid entry refuses the whole batch.
    pub async fn create_discovered_resources(&self, env: Uuid, items: &[DiscoveredResourceInput]) -> Result<()> {
        self.ensure_environment(env).await?;
        let checked = items.iter().map(check).collect::<Result<Vec<_>>>()?;
        let at = now();
        let mut tx = self.store.begin_write().await?;
        for c in checked {
            sqlx::query(
                "INSERT INTO discovered_resource (environment, discovered_resource_id, resource_type, agent, \
                 resource_id_value, resource_values, discovery_resource_id, discovered_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (environment, discovered_resource_id) DO UPDATE SET resource_type = $3, agent = $4, \
                 resource_id_value = $5, resource_values = $6, discovery_resource_id = $7, discovered_at = $8",
            )
            .bind(env.to_string())
            .bind(c.id)
            .bind(c.parsed.entity_type)
            .bind(c.parsed.agent)
            .bind(c.parsed.value)
            .bind(c.values)
            .bind(c.discovery_id)
            .bind(at.clone())
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// One discovered resource.
    pub async fn discovered_resource(&self, env: Uuid, id: &str) -> Result<DiscoveredResource> {
        self.ensure_environment(env).await?;
        crate::validate::id("discovered_resource_id", id)?;
        let row: Option<DiscoveredRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM {FROM} WHERE d.environment = $1 AND d.discovered_resource_id = $2"
        ))
        .bind(env.to_string())
        .bind(id)
        .fetch_optional(self.store.pool())
        .await?;
        row.ok_or_else(|| not_found(env, id))?.into_api()
    }

    /// A page of the environment's discovered resources.
    pub async fn discovered_resources(&self, env: Uuid, req: &PageRequest) -> Result<Page<DiscoveredResource>> {
        self.ensure_environment(env).await?;
        let binds = [env.to_string()];
        let page: Page<DiscoveredRow> = fetch_page(
            &self.store,
            &DISCOVERED_VIEW,
            req,
            Source {
                select: COLUMNS,
                from: FROM,
                scope: "d.environment = $1",
                scope_binds: &binds,
                base_path: "/api/v2/discovered",
            },
        )
        .await?;
        page.try_map(DiscoveredRow::into_api)
    }

    /// Which of `ids` the orchestrator manages (the same rule as `managed`: the resource has a
    /// persistent state), in one query: the console links those to their resource page.
    pub async fn managed_resource_ids(&self, env: Uuid, ids: &[&str]) -> Result<std::collections::HashSet<String>> {
        if ids.is_empty() {
            return Ok(Default::default());
        }
        let placeholders: Vec<String> = (0..ids.len()).map(|i| format!("${}", i + 2)).collect();
        let sql = format!(
            "SELECT resource_id FROM resource_persistent_state WHERE environment = $1 AND resource_id IN ({})",
            placeholders.join(", ")
        );
        let mut q = sqlx::query_scalar::<_, String>(&sql).bind(env.to_string());
        for id in ids {
            q = q.bind(*id);
        }
        Ok(q.fetch_all(self.store.pool()).await?.into_iter().collect())
    }

    /// Forgets one discovered resource; an unknown id is 404.
    pub async fn delete_discovered_resource(&self, env: Uuid, id: &str) -> Result<()> {
        self.ensure_environment(env).await?;
        crate::validate::id("discovered_resource_id", id)?;
        let mut tx = self.store.begin_write().await?;
        let deleted =
            sqlx::query("DELETE FROM discovered_resource WHERE environment = $1 AND discovered_resource_id = $2")
                .bind(env.to_string())
                .bind(id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
        if deleted == 0 {
            return Err(not_found(env, id));
        }
        tx.commit().await?;
        Ok(())
    }

    /// Forgets several discovered resources; ids that are not known are ignored (as Inmanta does).
    pub async fn delete_discovered_resources(&self, env: Uuid, ids: &[String]) -> Result<()> {
        self.ensure_environment(env).await?;
        for id in ids {
            crate::validate::id("a discovered_resource_id", id)?;
        }
        let mut tx = self.store.begin_write().await?;
        for id in ids {
            sqlx::query("DELETE FROM discovered_resource WHERE environment = $1 AND discovered_resource_id = $2")
                .bind(env.to_string())
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn not_found(env: Uuid, id: &str) -> Error {
    Error::NotFound(format!("discovered resource {id} not found in environment {env}"))
}
