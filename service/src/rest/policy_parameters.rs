//! What an access policy sees of a call (`input.request.parameters`, docs/security.md, "What a
//! policy sees"): its arguments as Inmanta passes them, read from the request before the
//! handler runs.

use std::collections::HashMap;

use axum::RequestExt;
use axum::extract::Request;
use orchestrator::auth::Access;
use serde_json::{Map, Number, Value};
use uuid::Uuid;

use super::Rule;
use super::error::ApiError;

/// What a query parameter is when its handler reads it as other than text.
#[derive(Debug, Clone, Copy)]
pub enum QueryKind {
    Boolean,
    Integer,
    Number,
}

impl QueryKind {
    /// `text` as this kind, as pydantic reads it; text that is not one stays text (the
    /// handler refuses it).
    fn value(self, text: String) -> Value {
        let typed = match self {
            QueryKind::Boolean => super::lenient::parse_bool(&text).map(Value::Bool),
            QueryKind::Integer => text.parse::<i64>().ok().map(Value::from),
            QueryKind::Number => text.parse::<f64>().ok().and_then(Number::from_f64).map(Value::Number),
        };
        typed.unwrap_or(Value::String(text))
    }
}

/// The typed query parameters of a route, from its handler's query type.
pub fn typed_query(takes: &super::describe::Takes) -> HashMap<String, QueryKind> {
    let kind = |schema: &Value| match schema["type"].as_str() {
        Some("boolean") => Some(QueryKind::Boolean),
        Some("integer") => Some(QueryKind::Integer),
        Some("number") => Some(QueryKind::Number),
        _ => None,
    };
    takes.query.iter().filter_map(|(name, schema, _)| Some((name.clone(), kind(schema)?))).collect()
}

/// A call's parameters as an access policy sees them (`input.request.parameters`), as Inmanta
/// passes a call's arguments: the query parameters (a list where one is repeated), the
/// top-level fields of a JSON object body, the path parameters and, for an environment action,
/// the environment under the name of the parameter that carries it (a path parameter or
/// `X-Inmanta-tid`), written as the server parsed it. Where names clash the later wins, in that
/// order, because that is the value the handler acts on (Inmanta's query parameters override
/// the others, as its handlers read them so).
pub async fn read(
    request: &mut Request,
    rule: Rule,
    typed: &HashMap<String, QueryKind>,
    environment: Option<Uuid>,
) -> Result<Map<String, Value>, ApiError> {
    let body = body_fields(request).await?;
    let mut parameters = Map::new();
    let pairs =
        axum::extract::Query::<Vec<(String, String)>>::try_from_uri(request.uri()).map(|q| q.0).unwrap_or_default();
    for (key, text) in pairs {
        let value = match typed.get(&key) {
            Some(kind) => kind.value(text),
            None => Value::String(text),
        };
        match parameters.get_mut(&key) {
            Some(Value::Array(values)) => values.push(value),
            Some(first) => *first = Value::Array(vec![first.take(), value]),
            None => {
                parameters.insert(key, value);
            }
        }
    }
    parameters.extend(body);
    if let Ok(params) = request.extract_parts::<axum::extract::RawPathParams>().await {
        for (key, value) in params.iter() {
            parameters.insert(key.to_string(), Value::String(value.to_string()));
        }
    }
    if let (Some(env), Access::Environment(..)) = (environment, rule.access) {
        let name = rule.environment_in_path.unwrap_or(api::TID_HEADER);
        parameters.insert(name.to_string(), Value::String(env.to_string()));
    }
    Ok(parameters)
}

/// The top-level fields of the body when it is a JSON object (none otherwise: the handler
/// refuses what it cannot read). The body is read within the route's cap and put back for the
/// handler.
async fn body_fields(request: &mut Request) -> Result<Map<String, Value>, ApiError> {
    let mut reading = Request::new(std::mem::take(request.body_mut()));
    if let Some(cap) = request.extensions().get::<super::limits::BodyCap>().copied() {
        reading.extensions_mut().insert(cap);
    }
    let bytes = super::extract::body_bytes(reading, &()).await?;
    let fields = match serde_json::from_slice(&bytes) {
        Ok(Value::Object(fields)) => fields,
        _ => Map::new(),
    };
    *request.body_mut() = axum::body::Body::from(bytes);
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_are_typed_as_their_handler_reads_them() {
        assert_eq!(QueryKind::Boolean.value("False".into()), Value::Bool(false));
        assert_eq!(QueryKind::Boolean.value("1".into()), Value::Bool(true));
        assert_eq!(QueryKind::Integer.value("20".into()), Value::from(20));
        assert_eq!(QueryKind::Number.value("0.5".into()), Value::from(0.5));
        // What the handler will refuse stays as sent.
        assert_eq!(QueryKind::Integer.value("many".into()), Value::String("many".into()));
        let mut takes = crate::rest::describe::Takes::default();
        takes.query.push(("update".into(), serde_json::json!({"type": "boolean"}), false));
        takes.query.push(("name".into(), serde_json::json!({"type": "string"}), false));
        let typed = typed_query(&takes);
        assert!(matches!(typed.get("update"), Some(QueryKind::Boolean)) && !typed.contains_key("name"));
    }
}
