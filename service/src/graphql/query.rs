//! The four queries of inmanta-core 20.1: `environments`, `notifications`, `resources` and
//! `resourceSummary`, read through the orchestrator and limited to what the caller may see.

use api::state::ResourceState;
use async_graphql::{Context, Error, Object, Result};
use orchestrator::Orchestrator;
use orchestrator::auth::{Access, Clients, Principal};
use orchestrator::resource_pages::{
    ChoiceMatch, Direction, KeysetRequest, ResourceFilter as Filter, ResourceSortKey, ResourceStateRow, TextMatch,
};
use serde_json::json;
use uuid::Uuid;

use super::cursor::{self, Key, PageArgs};
use super::types::*;

pub struct Query;

/// The label the GraphQL endpoint needs in an environment (Inmanta's `graphql.read`).
const LABEL: &str = "graphql.read";

/// What a resolver reaches: the orchestrator and who asks.
fn parts<'a>(ctx: &'a Context<'_>) -> (&'a Orchestrator, &'a Principal) {
    (ctx.data_unchecked::<Orchestrator>(), ctx.data_unchecked::<Principal>())
}

/// The one authorization decision of the REST routes, for an environment named in a query.
fn allowed(orchestrator: &Orchestrator, caller: &Principal, env: Uuid) -> Result<()> {
    let call = orchestrator::auth::policy::Call::new(Access::Environment(LABEL, Clients::API), Some(env));
    orchestrator.authorize(caller, &call).map_err(|denied| Error::new(denied.0))
}

/// An orchestrator failure as GraphQL error text: never the database's own words.
fn failed(e: orchestrator::Error) -> Error {
    Error::new(crate::rest::error::ApiError::from(e).message)
}

fn selected(ctx: &Context<'_>, field: &str) -> bool {
    ctx.look_ahead().field(field).exists()
}

/// Which way an `order` argument sorts, with Inmanta's message for anything else.
fn direction(order: &str) -> Result<bool> {
    match order {
        "asc" => Ok(true),
        "desc" => Ok(false),
        other => Err(Error::new(format!("Invalid sort order provided expected asc or desc, got {other}."))),
    }
}

/// The camelCase key of an order as the snake_case name Inmanta matches it on.
fn snake_case(key: &str) -> Result<String> {
    if key.starts_with(|c: char| c.is_ascii_uppercase()) {
        return Err(Error::new("name cannot start with capital letter."));
    }
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// Checks the sort keys against `allowed` (Inmanta's message names them as a Python dict view).
fn sort_keys(orders: &[(String, String)], allowed_keys: &[&str]) -> Result<Vec<(String, bool)>> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for (key, order) in orders {
        if seen.contains(key) {
            return Err(Error::new(format!("Sorting key appears multiple times in orderBy: {key}")));
        }
        seen.push(key.clone());
        let snake = snake_case(key)?;
        if !allowed_keys.contains(&snake.as_str()) {
            let names = allowed_keys.iter().map(|k| format!("'{k}'")).collect::<Vec<_>>().join(", ");
            return Err(Error::new(format!(
                "Invalid sort key provided expected one of dict_keys([{names}]) instead got {snake}."
            )));
        }
        out.push((snake, direction(order)?));
    }
    Ok(out)
}

fn page_info(parts: cursor::PageInfoParts) -> PageInfo {
    PageInfo {
        has_next_page: parts.has_next,
        has_previous_page: parts.has_previous,
        start_cursor: Some(parts.start),
        end_cursor: Some(parts.end),
    }
}

fn text_match(f: Option<StrFilter>) -> Option<TextMatch> {
    f.map(|f| TextMatch { eq: f.eq, neq: f.neq, contains: f.contains, not_contains: f.not_contains })
}

fn choice<T: StoredName + Copy>(eq: Option<Vec<T>>, neq: Option<Vec<T>>) -> ChoiceMatch {
    let names = |v: Option<Vec<T>>| v.map(|v| v.into_iter().map(|x| x.stored().to_string()).collect());
    ChoiceMatch { eq: names(eq), neq: names(neq) }
}

/// A filter on the blocked state as Inmanta's stored states answer it (`Blocked::stored_as`).
fn blocked_choice(eq: Option<Vec<Blocked>>, neq: Option<Vec<Blocked>>) -> ChoiceMatch {
    let names = |v: Option<Vec<Blocked>>| {
        v.map(|v| {
            v.into_iter()
                .flat_map(|b| api::state::Blocked::from(b).stored_as())
                .map(|b| b.as_str().to_string())
                .collect()
        })
    };
    ChoiceMatch { eq: names(eq), neq: names(neq) }
}

#[Object]
impl Query {
    /// A page of the environments the caller may see.
    #[allow(clippy::too_many_arguments)]
    async fn environments(
        &self,
        ctx: &Context<'_>,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
        filter: Option<EnvironmentFilter>,
        order_by: Option<Vec<EnvironmentOrder>>,
    ) -> Result<EnvironmentConnection> {
        let (o, caller) = parts(ctx);
        let window = PageArgs { first, after, last, before }.window().map_err(Error::new)?;
        let orders: Vec<(String, String)> =
            order_by.unwrap_or_default().into_iter().map(|o| (o.key, o.order)).collect();
        let mut keys = sort_keys(&orders, &["id", "name"])?;
        if !keys.iter().any(|(k, _)| k == "id") {
            keys.push(("id".into(), true));
        }
        let wanted = filter.and_then(|f| f.id).map(|id| id.0);
        let envs: Vec<api::Environment> = o
            .list_environments()
            .await
            .map_err(failed)?
            .into_iter()
            .filter(|e| caller.can_see(e.id) && wanted.is_none_or(|id| id == e.id))
            .collect();
        let total = envs.len();
        let keyed = envs
            .into_iter()
            .map(|e| {
                let k = keys
                    .iter()
                    .map(|(name, _)| if name == "id" { Key::Uuid(e.id.to_string()) } else { Key::Text(e.name.clone()) })
                    .collect();
                (k, e)
            })
            .collect();
        let directions: Vec<bool> = keys.iter().map(|(_, asc)| *asc).collect();
        let (page, excess) = cursor::page_in_memory(keyed, &directions, &window);
        let rows: Vec<Vec<Key>> = page.iter().map(|(k, _)| k.clone()).collect();
        let info = cursor::page_info(&window, &rows, excess.as_deref());
        let want_settings = ctx.look_ahead().field("edges").field("node").field("settings").exists();
        let mut edges = Vec::with_capacity(page.len());
        for (k, e) in page {
            let settings = if want_settings {
                serde_json::to_value(o.environment_settings(e.id).await.map_err(failed)?).unwrap_or_default()
            } else {
                serde_json::Value::Null
            };
            let expert = e.settings.get("enable_lsm_expert_mode").and_then(|v| v.as_bool()).unwrap_or(false);
            let node = Environment {
                id: UuidScalar(e.id),
                name: e.name,
                project: UuidScalar(e.project_id),
                halted: e.halted,
                repo_url: Some(e.repo_url),
                repo_branch: Some(e.repo_branch),
                last_version: Some(o.environment_last_version(e.id).await.map_err(failed)? as i32),
                description: Some(e.description.unwrap_or_default()),
                icon: Some(e.icon.unwrap_or_default()),
                is_marked_for_deletion: Some(e.is_marked_for_deletion),
                is_expert_mode: expert,
                is_compiling: o.is_compiling(e.id).await.map_err(failed)?,
                settings: Json(settings),
            };
            edges.push(EnvironmentEdge { cursor: cursor::encode(Some(&k)), node });
        }
        Ok(EnvironmentConnection {
            page_info: page_info(info),
            edges,
            total_count: selected(ctx, "totalCount").then_some(total as i32),
        })
    }

    /// A page of the notifications of one environment.
    #[allow(clippy::too_many_arguments)]
    async fn notifications(
        &self,
        ctx: &Context<'_>,
        filter: NotificationFilter,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
        order_by: Option<Vec<StrawberryOrder>>,
    ) -> Result<NotificationConnection> {
        let (o, caller) = parts(ctx);
        let env = filter.environment.0;
        allowed(o, caller, env)?;
        let window = PageArgs { first, after, last, before }.window().map_err(Error::new)?;
        let orders: Vec<(String, String)> =
            order_by.unwrap_or_default().into_iter().map(|o| (o.key, o.order)).collect();
        let mut keys = sort_keys(&orders, &["created"])?;
        keys.push(("environment".into(), true));
        keys.push(("id".into(), true));
        let items = o.notifications_matching(env, filter.cleared).await.map_err(failed)?;
        let total = items.len();
        let keyed = items
            .into_iter()
            .map(|n| {
                let k = keys
                    .iter()
                    .map(|(name, _)| match name.as_str() {
                        "created" => Key::DateTime(n.created.clone()),
                        "environment" => Key::Uuid(n.environment.to_string()),
                        _ => Key::Uuid(n.id.to_string()),
                    })
                    .collect();
                (k, n)
            })
            .collect();
        let directions: Vec<bool> = keys.iter().map(|(_, asc)| *asc).collect();
        let (page, excess) = cursor::page_in_memory(keyed, &directions, &window);
        let rows: Vec<Vec<Key>> = page.iter().map(|(k, _)| k.clone()).collect();
        let info = cursor::page_info(&window, &rows, excess.as_deref());
        let edges = page
            .into_iter()
            .map(|(k, n)| NotificationEdge {
                cursor: cursor::encode(Some(&k)),
                node: Notification {
                    id: UuidScalar(n.id),
                    environment: UuidScalar(n.environment),
                    created: DateTime(n.created),
                    title: n.title,
                    message: n.message,
                    read: n.read,
                    cleared: n.cleared,
                    severity: serde_json::to_value(n.severity).ok().and_then(|v| v.as_str().map(str::to_string)),
                    uri: n.uri,
                    compile_id: n.compile_id.map(UuidScalar),
                },
            })
            .collect();
        Ok(NotificationConnection {
            page_info: page_info(info),
            edges,
            total_count: selected(ctx, "totalCount").then_some(total as i32),
        })
    }

    /// A page of the resources of one environment, each with its state.
    #[allow(clippy::too_many_arguments)]
    async fn resources(
        &self,
        ctx: &Context<'_>,
        filter: ResourceFilter,
        first: Option<i32>,
        after: Option<String>,
        last: Option<i32>,
        before: Option<String>,
        order_by: Option<Vec<StrawberryOrder>>,
    ) -> Result<ResourceConnection> {
        let (o, caller) = parts(ctx);
        let env = filter.environment.0;
        allowed(o, caller, env)?;
        let filter = resource_filter(filter)?;
        let window = PageArgs { first, after, last, before }.window().map_err(Error::new)?;
        let orders: Vec<(String, String)> =
            order_by.unwrap_or_default().into_iter().map(|o| (o.key, o.order)).collect();
        let names: Vec<&str> = ResourceSortKey::NAMES.iter().map(|(n, _)| *n).collect();
        let order = sort_keys(&orders, &names)?
            .into_iter()
            .map(|(name, asc)| {
                let key = ResourceSortKey::parse(&name).expect("checked against NAMES");
                (key, if asc { Direction::Asc } else { Direction::Desc })
            })
            .collect();
        let place: Option<Vec<_>> = window.place.as_ref().map(|p| p.iter().map(Key::to_resource_key).collect());
        let req = KeysetRequest {
            order,
            after: if window.backwards { None } else { place.clone() },
            before: if window.backwards { place } else { None },
            limit: window.limit,
        };
        // The page and the count are independent reads: on connections of their own, at once.
        let count = async {
            match selected(ctx, "totalCount") {
                true => o.count_resource_states(&filter).await.map(|n| Some(n as i32)),
                false => Ok(None),
            }
        };
        let (page, total) = tokio::try_join!(o.resource_state_page(&filter, &req), count).map_err(failed)?;
        let rows: Vec<Vec<Key>> =
            page.rows.iter().map(|r| r.keys.iter().map(Key::from_resource_key).collect()).collect();
        let excess: Option<Vec<Key>> = page.excess.as_ref().map(|k| k.iter().map(Key::from_resource_key).collect());
        let info = cursor::page_info(&window, &rows, excess.as_deref());
        let edges = page
            .rows
            .into_iter()
            .zip(rows)
            .map(|(row, keys)| ResourceEdge { cursor: cursor::encode(Some(&keys)), node: resource_node(env, row) })
            .collect();
        Ok(ResourceConnection { page_info: page_info(info), edges, total_count: total })
    }

    /// How many managed resources of one environment are in each state.
    async fn resource_summary(&self, ctx: &Context<'_>, environment: String) -> Result<ComposedResourceSummary> {
        let (o, caller) = parts(ctx);
        let env = Uuid::parse_str(&environment)
            .map_err(|_| Error::new(format!("{environment:?} is not an environment id (a UUID)")))?;
        allowed(o, caller, env)?;
        let s = o.composed_resource_summary(env).await.map_err(failed)?;
        Ok(ComposedResourceSummary {
            total_count: s.total as i32,
            last_handler_run: Json(json!(s.last_handler_run)),
            blocked: Json(json!(s.blocked)),
            compliance: Json(json!(s.compliance)),
            is_deploying: Json(json!(s.is_deploying)),
        })
    }
}

/// A `ResourceFilter` sent as JSON outside GraphQL (`POST /api/v2/dryrun_filtered`: the
/// `resources` query's filter without `environment`, which is `env`), read as the query reads it.
pub(crate) fn filter_from_json(env: Uuid, filter: Option<serde_json::Value>) -> std::result::Result<Filter, String> {
    let mut object = match filter {
        None | Some(serde_json::Value::Null) => serde_json::Map::new(),
        Some(serde_json::Value::Object(object)) => object,
        Some(other) => return Err(format!("the filter must be a JSON object (a GraphQL ResourceFilter), got {other}")),
    };
    // GraphQL's input parsing passes over fields it does not know; Inmanta refuses them.
    const FIELDS: [&str; 10] = [
        "isOrphan",
        "resourceType",
        "resourceIdValue",
        "agent",
        "purged",
        "blocked",
        "compliance",
        "lastHandlerRun",
        "isDeploying",
        "modelVersion",
    ];
    if let Some(unknown) = object.keys().find(|k| !FIELDS.contains(&k.as_str()) && k.as_str() != "environment") {
        return Err(format!(
            "invalid filter: a ResourceFilter has no field {unknown:?} (it has {})",
            FIELDS.join(", ")
        ));
    }
    object.insert("environment".into(), json!(env.to_string()));
    let value = async_graphql::Value::from_json(serde_json::Value::Object(object)).map_err(|e| e.to_string())?;
    let parsed = <ResourceFilter as async_graphql::InputType>::parse(Some(value))
        .map_err(|e| format!("invalid filter: {}", e.into_server_error(Default::default()).message))?;
    resource_filter(parsed).map_err(|e| e.message)
}

fn resource_filter(f: ResourceFilter) -> Result<Filter> {
    if f.model_version.is_some() {
        let conflicting: Vec<&str> = [
            ("isOrphan", f.is_orphan.is_some()),
            ("isDeploying", f.is_deploying.is_some()),
            ("blocked", f.blocked.is_some()),
            ("compliance", f.compliance.is_some()),
            ("lastHandlerRun", f.last_handler_run.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect();
        if !conflicting.is_empty() {
            return Err(Error::new(format!(
                "modelVersion cannot be combined with filters on the current resource state: {}",
                conflicting.join(", ")
            )));
        }
    }
    Ok(Filter {
        environment: f.environment.0,
        is_orphan: f.is_orphan,
        resource_type: text_match(f.resource_type),
        resource_id_value: text_match(f.resource_id_value),
        agent: text_match(f.agent),
        purged: f.purged,
        blocked: f.blocked.map(|b| blocked_choice(b.eq, b.neq)),
        compliance: f.compliance.map(|c| choice(c.eq, c.neq)),
        last_handler_run: f.last_handler_run.map(|h| choice(h.eq, h.neq)),
        is_deploying: f.is_deploying,
        model_version: f.model_version.map(i64::from),
    })
}

/// A stable UUID for a resource set (Inmanta gives each set a row id; ours are named): the
/// name-based UUID of the environment and set name.
fn resource_set_id(env: Uuid, set: Option<&str>) -> Uuid {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    hash.update(env.as_bytes());
    hash.update(set.unwrap_or("").as_bytes());
    let digest = hash.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes).into_uuid()
}

fn resource_node(env: Uuid, row: ResourceStateRow) -> Resource {
    let (r, st) = (row.resource, row.state);
    let upper = |s: &str| s.to_ascii_uppercase();
    let compliance = st.compliance.as_deref().and_then(Compliance::from_stored);
    let purged = r.attributes.get("purged").and_then(serde_json::Value::as_bool).unwrap_or(false);
    let state = ResourcePersistentState {
        environment: UuidScalar(env),
        resource_id: r.resource_id.clone(),
        last_non_deploying_status: upper(
            st.last_non_deploying_status.as_deref().unwrap_or(ResourceState::Available.as_str()),
        ),
        id: ResourceIdParts {
            resource_type: r.resource_type.clone(),
            agent: r.agent.clone(),
            resource_id_value: r.id_value.clone(),
        },
        is_undefined: st.is_undefined,
        orphaned_after: st.is_orphan.then_some(r.model_version as i32),
        last_handler_run: upper(&st.last_handler_run),
        blocked: upper(
            api::state::Blocked::parse(&st.blocked).map_or(st.blocked.as_str(), |b| b.as_inmanta_stores().as_str()),
        ),
        created: DateTime(r.first_generated_time),
        deploys: DeployRecord {
            last_handler_run_at: st.last_handler_run_at.map(DateTime),
            last_success: st.last_success.map(DateTime),
            last_produced_events: st.last_produced_events.map(DateTime),
            last_deployed_attribute_hash: st.last_deployed_attribute_hash,
            last_deployed_version: st.last_deployed_version.map(|v| v as i32),
            current_intent_attribute_hash: Some(st.current_intent_attribute_hash),
            is_deploying: Some(st.is_deploying),
            last_handler_run_compliant: st.last_handler_run_compliant,
        },
        derived: DerivedState {
            is_orphan: st.is_orphan,
            is_orphan_expression: st.is_orphan,
            compliance,
            compliance_expression: compliance,
        },
    };
    Resource {
        environment: UuidScalar(env),
        resource_id: r.resource_id,
        agent: r.agent,
        resource_type: r.resource_type,
        resource_id_value: r.id_value,
        resource_set: UuidScalar(resource_set_id(env, r.resource_set.as_deref())),
        attributes: Some(Json(r.attributes)),
        attribute_hash: Some(r.attribute_hash),
        is_undefined: Some(st.is_undefined),
        state: Some(state),
        requires_length: r.requires_length as i32,
        purged,
        model_version: r.model_version as i32,
    }
}
