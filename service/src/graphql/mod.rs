//! Inmanta's GraphQL endpoint (inmanta-core 20.1, `inmanta/graphql/`): `POST /api/v2/graphql`
//! and `GET /api/v2/graphql/schema`, served by async-graphql with Inmanta's schema
//! ([`types`], [`query`]) and answered in Inmanta's form: the GraphQL result in the `data`
//! envelope of its REST API, errors as a list of messages, 400 when there is no data.
//!
//! Queries are bounded: [`MAX_DEPTH`] levels of selection, [`MAX_COMPLEXITY`] fields (fragments
//! counted as expanded, decided before anything runs: [`cost`]), and pages of at most
//! [`cursor::MAX_PER_PAGE`] rows.

mod cost;
pub mod cursor;
pub mod page;
mod query;
pub(crate) use query::filter_from_json;
mod types;

use async_graphql::{EmptyMutation, EmptySubscription, Request, Schema, Variables};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use orchestrator::Orchestrator;
use serde::Deserialize;
use serde_json::json;

use crate::rest::error::ApiResult;
use crate::rest::{Caller, Routes, authenticated, extract};

pub type InmantaSchema = Schema<query::Query, EmptyMutation, EmptySubscription>;

/// Deep enough for GraphiQL's introspection query (types of types, 8 levels of `ofType`).
pub const MAX_DEPTH: usize = 15;
/// Fields in one query: the console's resources page selects about 30.
pub const MAX_COMPLEXITY: usize = 2000;

pub fn schema() -> InmantaSchema {
    Schema::build(query::Query, EmptyMutation, EmptySubscription)
        .limit_depth(MAX_DEPTH)
        .limit_complexity(MAX_COMPLEXITY)
        .finish()
}

/// Every authenticated caller may ask; each query then checks the caller's role in the
/// environment it names, and `environments` lists only those the caller may see.
pub fn router() -> Routes {
    Routes::new().post("/api/v2/graphql", authenticated("graphql.read"), execute).get(
        "/api/v2/graphql/schema",
        authenticated("graphql.read"),
        schema_document,
    )
}

/// The body of `POST /api/v2/graphql` (camelCase `operationName`, as GraphQL clients send it).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphQLRequest {
    query: String,
    #[serde(default)]
    variables: Option<serde_json::Value>,
    #[serde(default, rename = "operationName")]
    operation_name: Option<String>,
}

async fn execute(
    State(o): State<Orchestrator>,
    Caller(caller): Caller,
    extract::Json(body): extract::Json<GraphQLRequest>,
) -> ApiResult<Response> {
    Ok(execute_as(o, caller, body).await)
}

/// `POST /console/graphql`: the same endpoint for the console's GraphiQL page, as the user
/// signed in to the console (its session, like every console call; the page has no API token).
pub async fn console_execute(
    o: Orchestrator,
    caller: orchestrator::auth::Principal,
    extract::Json(body): extract::Json<GraphQLRequest>,
) -> Response {
    execute_as(o, caller, body).await
}

async fn execute_as(o: Orchestrator, caller: orchestrator::auth::Principal, body: GraphQLRequest) -> Response {
    if let Some(refusal) = too_costly(&body.query) {
        return inmanta_form(refusal);
    }
    let mut request = Request::new(body.query).data(o).data(caller);
    if let Some(variables) = body.variables.filter(|v| !v.is_null()) {
        request = request.variables(Variables::from_json(variables));
    }
    if let Some(name) = body.operation_name {
        request = request.operation_name(name);
    }
    let response = shared_schema().execute(request).await;
    inmanta_form(response)
}

/// A query that selects more than [`MAX_COMPLEXITY`] fields once its fragments are expanded,
/// refused before async-graphql's own checks, which expand fragments where they stand and so
/// take exponential time on fragments that spread each other. Text that does not parse is left
/// to async-graphql, which says why.
fn too_costly(query: &str) -> Option<async_graphql::Response> {
    let document = async_graphql::parser::parse_query(query).ok()?;
    let size = cost::expanded_size(&document, MAX_COMPLEXITY);
    (size > MAX_COMPLEXITY).then(|| {
        let message = format!(
            "Query is too complex: it selects more than {MAX_COMPLEXITY} fields once its fragments are expanded; \
             select fewer fields or spread fragments fewer times"
        );
        async_graphql::Response::from_errors(vec![async_graphql::ServerError::new(message, None)])
    })
}

/// Inmanta's `GraphQLResult`: `{"data": ..., "errors": [message...] | null, "extensions": {}}`
/// in the REST envelope; 200 when there is data, 400 otherwise.
fn inmanta_form(response: async_graphql::Response) -> Response {
    let data = serde_json::to_value(&response.data).unwrap_or(serde_json::Value::Null);
    // Every root field is non-null in Inmanta's schema: one failing leaves no data at all.
    let has_data = response.errors.is_empty() && data.as_object().is_some_and(|o| !o.is_empty());
    let errors: Option<Vec<String>> =
        (!response.errors.is_empty()).then(|| response.errors.into_iter().map(|e| e.message).collect());
    let status = if has_data { StatusCode::OK } else { StatusCode::BAD_REQUEST };
    let body = json!({"data": {"data": if has_data { data } else { serde_json::Value::Null }, "errors": errors, "extensions": {}}});
    (status, axum::Json(body)).into_response()
}

/// The schema by introspection (JSON, as Inmanta answers it, not SDL text).
async fn schema_document() -> ApiResult<Response> {
    let response = shared_schema().execute(Request::new(INTROSPECTION)).await;
    let mut data = serde_json::to_value(&response.data).unwrap_or(serde_json::Value::Null);
    // async-graphql always registers the built-in scalars Float and ID; nothing uses them and
    // Inmanta's schema does not list them.
    if let Some(types) = data.pointer_mut("/__schema/types").and_then(serde_json::Value::as_array_mut) {
        types.retain(|t| !matches!(t["name"].as_str(), Some("Float" | "ID")));
    }
    Ok(axum::Json(json!({ "data": data })).into_response())
}

fn shared_schema() -> &'static InmantaSchema {
    static SCHEMA: std::sync::OnceLock<InmantaSchema> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(schema)
}

/// The standard introspection query (graphql-core's `get_introspection_query()`).
const INTROSPECTION: &str = r#"
query IntrospectionQuery {
  __schema {
    queryType { name kind }
    mutationType { name kind }
    subscriptionType { name kind }
    types { ...FullType }
    directives { name description locations args { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description
  fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type {
  kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name
    ofType { kind name ofType { kind name ofType { kind name } } } } } } } }
}
"#;
