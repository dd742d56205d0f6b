//! The GraphQL types of inmanta-core 20.1's schema (`inmanta/graphql/schema.py`): the same type,
//! field and argument names, in the same order, with the same scalars (`UUID`, `DateTime`,
//! `JSON`), so that introspection, the web console and scripts see the same schema.

use async_graphql::{Enum, InputObject, InputValueError, InputValueResult, Scalar, ScalarType, SimpleObject, Value};

/// A UUID, as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UuidScalar(pub uuid::Uuid);

#[Scalar(name = "UUID")]
impl ScalarType for UuidScalar {
    fn parse(value: Value) -> InputValueResult<Self> {
        if let Value::String(s) = &value {
            return uuid::Uuid::parse_str(s)
                .map(UuidScalar)
                .map_err(|_| InputValueError::custom(format!("{s} is not a UUID")));
        }
        Err(InputValueError::expected_type(value))
    }

    fn to_value(&self) -> Value {
        Value::String(self.0.to_string())
    }
}

/// A date with time, ISO 8601 as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DateTime(pub String);

#[Scalar(name = "DateTime")]
impl ScalarType for DateTime {
    fn parse(value: Value) -> InputValueResult<Self> {
        match value {
            Value::String(s) => Ok(DateTime(s)),
            other => Err(InputValueError::expected_type(other)),
        }
    }

    fn to_value(&self) -> Value {
        Value::String(self.0.clone())
    }
}

/// Any JSON value. async-graphql's own `Json<T>` goes through serde, which cannot carry the
/// workspace's arbitrary-precision numbers: they are converted here instead.
#[derive(Debug, Clone, PartialEq)]
pub struct Json(pub serde_json::Value);

#[Scalar(name = "JSON")]
impl ScalarType for Json {
    fn parse(value: Value) -> InputValueResult<Self> {
        value.into_json().map(Json).map_err(|e| InputValueError::custom(e.to_string()))
    }

    fn to_value(&self) -> Value {
        to_graphql(&self.0)
    }
}

fn to_graphql(value: &serde_json::Value) -> Value {
    match value {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Boolean(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Value::from(i),
            (None, Some(u), _) => Value::from(u),
            (None, None, Some(f)) => Value::from(f),
            // Beyond what a float holds: the digits, as text.
            _ => Value::String(n.to_string()),
        },
        serde_json::Value::String(s) => Value::String(s.clone()),
        serde_json::Value::Array(a) => Value::List(a.iter().map(to_graphql).collect()),
        serde_json::Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (async_graphql::Name::new(k), to_graphql(v))).collect())
        }
    }
}

#[derive(SimpleObject, Debug, Clone)]
pub struct PageInfo {
    pub has_next_page: bool,
    pub has_previous_page: bool,
    pub start_cursor: Option<String>,
    pub end_cursor: Option<String>,
}

macro_rules! connection {
    ($connection:ident, $edge:ident, $node:ty) => {
        #[derive(SimpleObject, Debug, Clone)]
        pub struct $connection {
            pub page_info: PageInfo,
            pub edges: Vec<$edge>,
            pub total_count: Option<i32>,
        }

        #[derive(SimpleObject, Debug, Clone)]
        pub struct $edge {
            pub cursor: String,
            pub node: $node,
        }
    };
}

connection!(EnvironmentConnection, EnvironmentEdge, Environment);
connection!(NotificationConnection, NotificationEdge, Notification);
connection!(ResourceConnection, ResourceEdge, Resource);

#[derive(SimpleObject, Debug, Clone)]
pub struct Environment {
    pub id: UuidScalar,
    pub name: String,
    pub project: UuidScalar,
    pub halted: bool,
    pub repo_url: Option<String>,
    pub repo_branch: Option<String>,
    pub last_version: Option<i32>,
    pub description: Option<String>,
    pub icon: Option<String>,
    pub is_marked_for_deletion: Option<bool>,
    pub is_expert_mode: bool,
    pub is_compiling: bool,
    pub settings: Json,
}

#[derive(SimpleObject, Debug, Clone)]
pub struct Notification {
    pub id: UuidScalar,
    pub environment: UuidScalar,
    pub created: DateTime,
    pub title: String,
    pub message: String,
    pub read: bool,
    pub cleared: bool,
    pub severity: Option<String>,
    pub uri: Option<String>,
    pub compile_id: Option<UuidScalar>,
}

#[derive(SimpleObject, Debug, Clone)]
pub struct Resource {
    pub environment: UuidScalar,
    pub resource_id: String,
    pub agent: String,
    pub resource_type: String,
    pub resource_id_value: String,
    pub resource_set: UuidScalar,
    pub attributes: Option<Json>,
    pub attribute_hash: Option<String>,
    pub is_undefined: Option<bool>,
    pub state: Option<ResourcePersistentState>,
    pub requires_length: i32,
    pub purged: bool,
    pub model_version: i32,
}

// Inmanta's `ResourcePersistentState`. Its fields come in Inmanta's order; the groups of them
// that belong together are sub-objects flattened into it, so the schema lists each field on this
// type and no type of its own for a group. (Plain comments: a doc comment would become a
// description in the schema, which Inmanta's type does not have.)
#[derive(SimpleObject, Debug, Clone)]
pub struct ResourcePersistentState {
    pub environment: UuidScalar,
    pub resource_id: String,
    pub last_non_deploying_status: String,
    #[graphql(flatten)]
    pub id: ResourceIdParts,
    pub is_undefined: bool,
    pub orphaned_after: Option<i32>,
    pub last_handler_run: String,
    pub blocked: String,
    pub created: DateTime,
    #[graphql(flatten)]
    pub deploys: DeployRecord,
    #[graphql(flatten)]
    pub derived: DerivedState,
}

// The parts of a resource id: `resourceType`, `agent`, `resourceIdValue`.
#[derive(SimpleObject, Debug, Clone)]
pub struct ResourceIdParts {
    pub resource_type: String,
    pub agent: String,
    pub resource_id_value: String,
}

// What the deploys of a resource left: when and what it last ran, deployed and produced.
#[derive(SimpleObject, Debug, Clone)]
pub struct DeployRecord {
    pub last_handler_run_at: Option<DateTime>,
    pub last_success: Option<DateTime>,
    pub last_produced_events: Option<DateTime>,
    pub last_deployed_attribute_hash: Option<String>,
    pub last_deployed_version: Option<i32>,
    pub current_intent_attribute_hash: Option<String>,
    pub is_deploying: Option<bool>,
    pub last_handler_run_compliant: Option<bool>,
}

// Orphan and compliance, each also under the name of Inmanta's SQL expression behind it.
#[derive(SimpleObject, Debug, Clone)]
pub struct DerivedState {
    pub is_orphan: bool,
    #[graphql(name = "IsOrphanExpression")]
    pub is_orphan_expression: bool,
    pub compliance: Option<Compliance>,
    #[graphql(name = "ComplianceExpression")]
    pub compliance_expression: Option<Compliance>,
}

#[derive(SimpleObject, Debug, Clone)]
pub struct ComposedResourceSummary {
    pub total_count: i32,
    pub last_handler_run: Json,
    pub blocked: Json,
    pub compliance: Json,
    pub is_deploying: Json,
}

#[derive(Enum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compliance {
    Compliant,
    HasUpdate,
    NonCompliant,
    Undefined,
}

/// The value names are Inmanta's (`BLOCKED`, `NOT_BLOCKED`, `TEMPORARILY_BLOCKED`).
#[allow(clippy::enum_variant_names)]
#[derive(Enum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocked {
    Blocked,
    NotBlocked,
    TemporarilyBlocked,
}

#[derive(Enum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandlerResult {
    New,
    Successful,
    Failed,
    Skipped,
}

/// The stored (lower-case) name of an enum value, as the orchestrator filters on it.
pub trait StoredName {
    fn stored(self) -> &'static str;
}

impl From<Compliance> for api::state::Compliance {
    fn from(c: Compliance) -> Self {
        match c {
            Compliance::Compliant => api::state::Compliance::Compliant,
            Compliance::HasUpdate => api::state::Compliance::HasUpdate,
            Compliance::NonCompliant => api::state::Compliance::NonCompliant,
            Compliance::Undefined => api::state::Compliance::Undefined,
        }
    }
}

impl From<Blocked> for api::state::Blocked {
    fn from(b: Blocked) -> Self {
        match b {
            Blocked::Blocked => api::state::Blocked::Blocked,
            Blocked::NotBlocked => api::state::Blocked::NotBlocked,
            Blocked::TemporarilyBlocked => api::state::Blocked::TemporarilyBlocked,
        }
    }
}

impl From<HandlerResult> for api::state::HandlerRun {
    fn from(r: HandlerResult) -> Self {
        match r {
            HandlerResult::New => api::state::HandlerRun::New,
            HandlerResult::Successful => api::state::HandlerRun::Successful,
            HandlerResult::Failed => api::state::HandlerRun::Failed,
            HandlerResult::Skipped => api::state::HandlerRun::Skipped,
        }
    }
}

impl StoredName for Compliance {
    fn stored(self) -> &'static str {
        api::state::Compliance::from(self).as_str()
    }
}

impl StoredName for Blocked {
    fn stored(self) -> &'static str {
        api::state::Blocked::from(self).as_str()
    }
}

impl StoredName for HandlerResult {
    fn stored(self) -> &'static str {
        api::state::HandlerRun::from(self).as_str()
    }
}

impl Compliance {
    pub fn from_stored(name: &str) -> Option<Compliance> {
        [Compliance::Compliant, Compliance::HasUpdate, Compliance::NonCompliant, Compliance::Undefined]
            .into_iter()
            .find(|c| c.stored() == name)
    }
}

#[derive(InputObject, Debug, Clone, Default)]
pub struct EnvironmentFilter {
    pub id: Option<UuidScalar>,
}

#[derive(InputObject, Debug, Clone)]
pub struct EnvironmentOrder {
    pub key: String,
    #[graphql(default_with = "\"asc\".to_string()")]
    pub order: String,
}

#[derive(InputObject, Debug, Clone)]
pub struct NotificationFilter {
    pub environment: UuidScalar,
    pub cleared: Option<bool>,
}

/// The ordering argument of `notifications` and `resources` (Inmanta's name for it).
#[derive(InputObject, Debug, Clone)]
pub struct StrawberryOrder {
    pub key: String,
    #[graphql(default_with = "\"asc\".to_string()")]
    pub order: String,
}

#[derive(InputObject, Debug, Clone, Default)]
pub struct ResourceFilter {
    pub environment: UuidScalar,
    pub is_orphan: Option<bool>,
    pub resource_type: Option<StrFilter>,
    pub resource_id_value: Option<StrFilter>,
    pub agent: Option<StrFilter>,
    pub purged: Option<bool>,
    pub blocked: Option<BlockedEnumFilter>,
    pub compliance: Option<ComplianceEnumFilter>,
    pub last_handler_run: Option<HandlerResultEnumFilter>,
    pub is_deploying: Option<bool>,
    pub model_version: Option<i32>,
}

impl Default for UuidScalar {
    fn default() -> Self {
        UuidScalar(uuid::Uuid::nil())
    }
}

#[derive(InputObject, Debug, Clone, Default)]
pub struct StrFilter {
    pub eq: Option<Vec<String>>,
    pub neq: Option<Vec<String>>,
    pub contains: Option<Vec<String>>,
    pub not_contains: Option<Vec<String>>,
}

#[derive(InputObject, Debug, Clone, Default)]
pub struct BlockedEnumFilter {
    pub eq: Option<Vec<Blocked>>,
    pub neq: Option<Vec<Blocked>>,
}

#[derive(InputObject, Debug, Clone, Default)]
pub struct ComplianceEnumFilter {
    pub eq: Option<Vec<Compliance>>,
    pub neq: Option<Vec<Compliance>>,
}

#[derive(InputObject, Debug, Clone, Default)]
pub struct HandlerResultEnumFilter {
    pub eq: Option<Vec<HandlerResult>>,
    pub neq: Option<Vec<HandlerResult>>,
}

#[cfg(test)]
mod tests {
    /// The flattened groups leave `ResourcePersistentState` as Inmanta's: the same fields in the
    /// same order, and no type of their own in the schema.
    #[test]
    fn resource_persistent_state_keeps_inmantas_fields() {
        let sdl = super::super::schema().sdl();
        let start = sdl.find("type ResourcePersistentState {").expect("the type is in the schema");
        assert!(!sdl[..start].trim_end().ends_with("\"\"\""), "the type has a description");
        let body = &sdl[start..start + sdl[start..].find('}').unwrap()];
        let fields: Vec<&str> =
            body.lines().skip(1).filter_map(|l| l.trim().split(':').next()).filter(|f| !f.is_empty()).collect();
        assert_eq!(
            fields,
            [
                "environment",
                "resourceId",
                "lastNonDeployingStatus",
                "resourceType",
                "agent",
                "resourceIdValue",
                "isUndefined",
                "orphanedAfter",
                "lastHandlerRun",
                "blocked",
                "created",
                "lastHandlerRunAt",
                "lastSuccess",
                "lastProducedEvents",
                "lastDeployedAttributeHash",
                "lastDeployedVersion",
                "currentIntentAttributeHash",
                "isDeploying",
                "lastHandlerRunCompliant",
                "isOrphan",
                "IsOrphanExpression",
                "compliance",
                "ComplianceExpression",
            ]
        );
        for group in ["ResourceIdParts", "DeployRecord", "DerivedState"] {
            assert!(!sdl.contains(group), "{group} is in the schema");
        }
    }
}
