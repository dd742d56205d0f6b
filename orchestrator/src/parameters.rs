//! Parameters and facts (routes: docs/api.md). Both live in the `parameter` table: a fact is a
//! parameter bound to a resource id (`resource_id` is empty for plain parameters).

use api::ResourceId;
use api::operations::{Fact, PARAMETER_SOURCES, Parameter};
use uuid::Uuid;

use crate::paging::{Column, ColumnKind, Filter, FilterKind, Order, Page, PageRequest, Source, View, fetch_page};
use crate::store::{now, parse_uuid};
use crate::{Error, Orchestrator, Result};

/// How long a fact stays fresh before `get_param` asks for it again (`server.fact-expire`).
pub const FACT_EXPIRE_SECONDS: i64 = 3600;

/// `GET /api/v2/parameters`.
pub const PARAMETER_VIEW: View = View {
    sort_columns: &[
        Column { name: "name", sql: "p.name", kind: ColumnKind::Text },
        Column { name: "source", sql: "p.source", kind: ColumnKind::Text },
        Column { name: "updated", sql: "p.updated", kind: ColumnKind::Date },
    ],
    default_sort: ("name", Order::Asc),
    filters: &[
        Filter { name: "name", sql: "p.name", kind: FilterKind::Partial },
        Filter { name: "source", sql: "p.source", kind: FilterKind::Partial },
        Filter { name: "updated", sql: "p.updated", kind: FilterKind::Range(ColumnKind::Date) },
    ],
    id_sql: "p.id",
    id_kind: ColumnKind::Text,
};

/// `GET /api/v2/facts`.
pub const FACT_VIEW: View = View {
    sort_columns: &[
        Column { name: "name", sql: "p.name", kind: ColumnKind::Text },
        Column { name: "resource_id", sql: "p.resource_id", kind: ColumnKind::Text },
    ],
    default_sort: ("name", Order::Asc),
    filters: &[
        Filter { name: "name", sql: "p.name", kind: FilterKind::Partial },
        Filter { name: "resource_id", sql: "p.resource_id", kind: FilterKind::Partial },
        Filter { name: "expires", sql: "p.expires", kind: FilterKind::Bool },
    ],
    id_sql: "p.id",
    id_kind: ColumnKind::Text,
};

const COLUMNS: &str = "p.id, p.name, p.value, p.source, p.resource_id, p.updated, p.metadata, p.expires";

#[derive(sqlx::FromRow)]
struct ParameterRow {
    id: String,
    name: String,
    value: String,
    source: String,
    resource_id: String,
    updated: String,
    metadata: String,
    expires: i64,
}

impl ParameterRow {
    fn parameter(self, environment: Uuid) -> Result<Parameter> {
        Ok(Parameter {
            id: parse_uuid(&self.id)?,
            name: self.name,
            value: self.value,
            environment,
            source: self.source,
            updated: Some(crate::store::parse_timestamp(&self.updated)?),
            metadata: serde_json::from_str(&self.metadata).ok(),
        })
    }

    fn fact(self, environment: Uuid) -> Result<Fact> {
        let resource_id = if self.resource_id.is_empty() { None } else { Some(crate::stored_id(&self.resource_id)?) };
        let expires = self.expires != 0;
        let p = self.parameter(environment)?;
        Ok(Fact {
            id: p.id,
            name: p.name,
            value: p.value,
            environment,
            source: p.source,
            updated: p.updated,
            metadata: p.metadata,
            resource_id,
            expires,
        })
    }
}

/// A value to store: what `set_param`, `set_parameter` and `set_fact` take.
#[derive(Debug, Clone, Default)]
pub struct NewParameter {
    pub name: String,
    pub source: String,
    /// Strings are stored as they are; other JSON values as their JSON text.
    pub value: serde_json::Value,
    pub resource_id: Option<String>,
    pub metadata: Option<serde_json::Value>,
    pub expires: Option<bool>,
    /// Queue a compile of the environment once stored (as does setting a value that the last
    /// compile waited on: an unknown of the latest version).
    pub recompile: bool,
}

/// What `get_param` found.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamLookup {
    /// The full v1 record (with `resource_id` and `expires`, which Inmanta's v1 answers carry).
    Found(Box<Fact>),
    /// A fact that is missing or stale: the agents have to be asked for it (HTTP 503).
    AskAgents,
}

fn value_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The canonical form of an optional resource id ("" when absent).
fn normalize_resource_id(rid: Option<&str>) -> Result<String> {
    match rid.filter(|r| !r.is_empty()) {
        None => Ok(String::new()),
        Some(text) => {
            crate::validate::id("a resource id", text)?;
            let (id, _) = ResourceId::parse_versioned(text).map_err(|e| Error::BadRequest(e.to_string()))?;
            Ok(id.to_string())
        }
    }
}

impl Orchestrator {
    /// Creates or replaces a parameter (or, with a resource id, a fact).
    pub async fn set_parameter(&self, env: Uuid, new: NewParameter) -> Result<Fact> {
        self.ensure_environment(env).await?;
        if new.name.trim().is_empty() {
            return Err(Error::BadRequest("a parameter needs a non-empty name".into()));
        }
        crate::validate::name("a parameter name", &new.name)?;
        if let serde_json::Value::String(value) = &new.value {
            crate::validate::text("a parameter value", value, crate::validate::MAX_TEXT)?;
        }
        if !PARAMETER_SOURCES.contains(&new.source.as_str()) {
            return Err(Error::BadRequest(format!(
                "source {:?} is not a parameter source; expected one of {}",
                new.source,
                PARAMETER_SOURCES.join(", ")
            )));
        }
        let resource_id = normalize_resource_id(new.resource_id.as_deref())?;
        // Facts expire unless told otherwise; plain parameters never do.
        let expires = !resource_id.is_empty() && new.expires.unwrap_or(true);
        let metadata = new.metadata.clone().unwrap_or_else(|| serde_json::json!({}));
        if !metadata.is_object() {
            return Err(Error::BadRequest("metadata must be a JSON object".into()));
        }
        let mut tx = self.store.begin_write().await?;
        let existing: Option<String> =
            sqlx::query_scalar("SELECT id FROM parameter WHERE environment = $1 AND name = $2 AND resource_id = $3")
                .bind(env.to_string())
                .bind(new.name.clone())
                .bind(resource_id.clone())
                .fetch_optional(&mut *tx)
                .await?;
        let id = match existing {
            Some(id) => {
                sqlx::query(
                    "UPDATE parameter SET value = $1, source = $2, updated = $3, metadata = $4, expires = $5 WHERE id = $6",
                )
                .bind(value_text(&new.value))
                .bind(new.source.clone())
                .bind(now())
                .bind(metadata.to_string())
                .bind(i64::from(expires))
                .bind(id.clone())
                .execute(&mut *tx)
                .await?;
                id
            }
            None => {
                let id = Uuid::new_v4().to_string();
                sqlx::query(
                    "INSERT INTO parameter (id, environment, name, value, source, resource_id, updated, metadata, expires) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                )
                .bind(id.clone())
                .bind(env.to_string())
                .bind(new.name.clone())
                .bind(value_text(&new.value))
                .bind(new.source.clone())
                .bind(resource_id.clone())
                .bind(now())
                .bind(metadata.to_string())
                .bind(i64::from(expires))
                .execute(&mut *tx)
                .await?;
                id
            }
        };
        tx.commit().await?;
        let stored = self.parameter_by_id(env, &id).await?.fact(env)?;
        let awaited = self.unknown_of_latest_version(env, &new.name, &resource_id).await?;
        if new.recompile || awaited {
            let why = if awaited { "a value the last compile waited on" } else { "recompile=true" };
            let request = crate::compiles::CompileRequest {
                force_update: false,
                metadata: serde_json::json!({
                    "type": "param",
                    "message": format!("Recompile triggered by parameter {} ({why})", new.name),
                }),
                ..Default::default()
            };
            let requested = self.request_compile(env, request).await?;
            tracing::info!(%env, parameter = %new.name, compile = ?requested.id, "parameter set: recompile requested");
        }
        Ok(stored)
    }

    /// Whether the latest version lists `name` (for `resource_id`, or any resource when empty)
    /// among the unknowns its compile waited on.
    async fn unknown_of_latest_version(&self, env: Uuid, name: &str, resource_id: &str) -> Result<bool> {
        let unknowns: Option<String> =
            sqlx::query_scalar("SELECT unknowns FROM version WHERE environment = $1 ORDER BY version DESC LIMIT 1")
                .bind(env.to_string())
                .fetch_optional(self.store.pool())
                .await?;
        let unknowns: Vec<serde_json::Value> = unknowns.and_then(|u| serde_json::from_str(&u).ok()).unwrap_or_default();
        Ok(unknowns.iter().any(|u| {
            let resource = u.get("resource").and_then(|r| r.as_str()).unwrap_or_default();
            let resource = ResourceId::parse_versioned(resource).map(|(id, _)| id.to_string()).unwrap_or_default();
            u.get("parameter").and_then(|p| p.as_str()) == Some(name) && resource == resource_id
        }))
    }

    async fn parameter_by_id(&self, env: Uuid, id: &str) -> Result<ParameterRow> {
        sqlx::query_as(&format!("SELECT {COLUMNS} FROM parameter p WHERE p.environment = $1 AND p.id = $2"))
            .bind(env.to_string())
            .bind(id.to_string())
            .fetch_optional(self.store.pool())
            .await?
            .ok_or_else(|| Error::NotFound(format!("parameter {id} does not exist")))
    }

    async fn parameter_by_name(&self, env: Uuid, name: &str, resource_id: &str) -> Result<Option<ParameterRow>> {
        crate::validate::name("a parameter name", name)?;
        Ok(sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM parameter p WHERE p.environment = $1 AND p.name = $2 AND p.resource_id = $3"
        ))
        .bind(env.to_string())
        .bind(name.to_string())
        .bind(resource_id.to_string())
        .fetch_optional(self.store.pool())
        .await?)
    }

    /// `GET /api/v1/parameter/<name>`: a parameter, or for a fact that is missing or stale,
    /// [`ParamLookup::AskAgents`].
    pub async fn get_param(&self, env: Uuid, name: &str, resource_id: Option<&str>) -> Result<ParamLookup> {
        self.ensure_environment(env).await?;
        let rid = normalize_resource_id(resource_id)?;
        let row = self.parameter_by_name(env, name, &rid).await?;
        match row {
            None if rid.is_empty() => Err(Error::NotFound(format!("parameter {name} does not exist"))),
            None => Ok(ParamLookup::AskAgents),
            Some(row) => {
                let stale = row.expires != 0
                    && crate::store::parse_timestamp(&row.updated)
                        .map(|t| t.seconds_until(api::Timestamp::now()) > FACT_EXPIRE_SECONDS as f64)
                        .unwrap_or(true);
                if stale { Ok(ParamLookup::AskAgents) } else { Ok(ParamLookup::Found(Box::new(row.fact(env)?))) }
            }
        }
    }

    /// Deletes a parameter and, as Inmanta does, requests a recompile (the model may have used
    /// the value); answers the compile request's warnings.
    pub async fn delete_param(&self, env: Uuid, name: &str, resource_id: Option<&str>) -> Result<Vec<String>> {
        self.ensure_environment(env).await?;
        let rid = normalize_resource_id(resource_id)?;
        crate::validate::name("a parameter name", name)?;
        let mut tx = self.store.begin_write().await?;
        let done = sqlx::query("DELETE FROM parameter WHERE environment = $1 AND name = $2 AND resource_id = $3")
            .bind(env.to_string())
            .bind(name.to_string())
            .bind(&rid)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        if done.rows_affected() == 0 {
            return Err(Error::NotFound(format!("parameter {name} does not exist")));
        }
        let request = crate::compiles::CompileRequest {
            force_update: false,
            metadata: serde_json::json!({
                "type": "param",
                "message": "Recompile model because one or more parameters were deleted",
                "params": [[name, rid]],
            }),
            ..Default::default()
        };
        Ok(self.request_compile(env, request).await?.warnings)
    }

    /// `POST /api/v1/parameter`: every parameter and fact whose metadata holds all of `query`.
    pub async fn list_params(
        &self,
        env: Uuid,
        query: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Vec<Fact>> {
        self.ensure_environment(env).await?;
        let rows: Vec<ParameterRow> =
            sqlx::query_as(&format!("SELECT {COLUMNS} FROM parameter p WHERE p.environment = $1 ORDER BY p.name"))
                .bind(env.to_string())
                .fetch_all(self.store.pool())
                .await?;
        let mut out = Vec::new();
        for row in rows {
            let metadata: serde_json::Value = serde_json::from_str(&row.metadata).unwrap_or_default();
            let matches = query.iter().all(|(k, v)| {
                metadata.get(k).is_some_and(|m| m == v || m.as_str().is_some_and(|s| Some(s) == v.as_str()))
            });
            if matches {
                out.push(row.fact(env)?);
            }
        }
        Ok(out)
    }

    /// `GET /api/v2/parameters`: plain parameters, paged.
    pub async fn parameters(&self, env: Uuid, req: &PageRequest) -> Result<Page<Parameter>> {
        self.ensure_environment(env).await?;
        let binds = [env.to_string()];
        let page: Page<ParameterRow> = fetch_page(
            &self.store,
            &PARAMETER_VIEW,
            req,
            Source {
                select: COLUMNS,
                from: "parameter p",
                scope: "p.environment = $1 AND p.resource_id = ''",
                scope_binds: &binds,
                base_path: "/api/v2/parameters",
            },
        )
        .await?;
        page.try_map(|r| r.parameter(env))
    }

    /// `GET /api/v2/facts`: every fact, paged.
    pub async fn facts(&self, env: Uuid, req: &PageRequest) -> Result<Page<Fact>> {
        self.ensure_environment(env).await?;
        let binds = [env.to_string()];
        let page: Page<ParameterRow> = fetch_page(
            &self.store,
            &FACT_VIEW,
            req,
            Source {
                select: COLUMNS,
                from: "parameter p",
                scope: "p.environment = $1 AND p.resource_id <> ''",
                scope_binds: &binds,
                base_path: "/api/v2/facts",
            },
        )
        .await?;
        page.try_map(|r| r.fact(env))
    }

    /// The facts of one resource, sorted by name.
    pub async fn resource_facts(&self, env: Uuid, rid: &str) -> Result<Vec<Fact>> {
        self.ensure_environment(env).await?;
        let rid = normalize_resource_id(Some(rid))?;
        let rows: Vec<ParameterRow> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM parameter p WHERE p.environment = $1 AND p.resource_id = $2 ORDER BY p.name"
        ))
        .bind(env.to_string())
        .bind(rid)
        .fetch_all(self.store.pool())
        .await?;
        rows.into_iter().map(|r| r.fact(env)).collect()
    }

    pub async fn resource_fact(&self, env: Uuid, rid: &str, id: Uuid) -> Result<Fact> {
        self.ensure_environment(env).await?;
        let rid = normalize_resource_id(Some(rid))?;
        let row = self.parameter_by_id(env, &id.to_string()).await?;
        if row.resource_id != rid {
            return Err(Error::NotFound(format!("fact {id} does not belong to resource {rid}")));
        }
        row.fact(env)
    }
}
