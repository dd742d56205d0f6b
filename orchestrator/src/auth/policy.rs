//! Access policies: Inmanta's `policy-engine` authorization provider (docs/security.md, "Access
//! policies"), evaluated in process by the Rego interpreter `regorus` instead of an OPA server.
//!
//! A policy is compiled once, at start, with the endpoint data baked in (`data.endpoints`);
//! each decision only sets `input` and evaluates `data.policy.allow` on the compiled policy.
//! [`Authorization`] is the provider the server runs with; it decides for users with the policy
//! and hands every machine caller (environment and service tokens) to the legacy rules, as
//! Inmanta does.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::{Access, Denied, Principal};

/// The policy used when no `[policy_engine] policy-file` is configured (and none is at
/// [`INMANTA_POLICY_FILE`]): the legacy provider's grants, written as Rego.
pub const DEFAULT_POLICY: &str = include_str!("default_policy.rego");

/// Where Inmanta's packages install the policy, the default of `[policy_engine] policy-file`:
/// used when it exists and the option is unset.
pub const INMANTA_POLICY_FILE: &str = "/etc/inmanta/authorization/policy.rego";

/// The name of [`DEFAULT_POLICY`] in messages and logs.
pub const DEFAULT_POLICY_NAME: &str = "the built-in access policy";

/// The rule a policy must define.
pub const ALLOW_RULE: &str = "data.policy.allow";

/// Our label for the console's checks that any signed-in user passes (`console authenticated`):
/// its server functions that return only the caller's own. REST endpoints carry Inmanta's labels.
pub const AUTHENTICATED_LABEL: &str = "authenticated";

/// The endpoint ids of checks made outside a REST route (console server functions, a GraphQL
/// query's environment): `console <label>` for server-wide ones and
/// `console <label> in environment` for those about the environment in the `environment`
/// parameter. Their entries are in the endpoint data like any REST endpoint's.
pub fn console_endpoint_id(access: Access) -> String {
    let label = access.label().unwrap_or(AUTHENTICATED_LABEL);
    match access {
        Access::Environment(..) => format!("console {label} in environment"),
        Access::Public | Access::Authenticated(..) | Access::Global(..) => format!("console {label}"),
    }
}

/// The parameter that holds the environment in a console check.
pub const CONSOLE_ENVIRONMENT_PARAM: &str = "environment";

/// Authorization metadata of one endpoint, as Inmanta's `data.endpoints[<endpoint id>]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EndpointData {
    /// The client types the endpoint is for: `api`, `agent`, `compiler`.
    pub client_types: Vec<String>,
    pub auth_label: String,
    pub read_only: bool,
    /// The parameter holding the environment the call is about: a path parameter or
    /// `X-Inmanta-tid`; `None` (null) for a server-wide endpoint.
    pub environment_param: Option<String>,
}

impl EndpointData {
    /// The data of an endpoint that needs `access`; it only reads when its label is a read
    /// label (an endpoint that says otherwise sets `read_only` itself).
    pub fn of(access: Access, environment_param: Option<&str>) -> EndpointData {
        EndpointData {
            client_types: access.clients().types().iter().map(|t| t.as_str().to_string()).collect(),
            auth_label: access.label().unwrap_or(AUTHENTICATED_LABEL).to_string(),
            read_only: access.is_read(),
            environment_param: match access {
                Access::Environment(..) => environment_param.map(str::to_string),
                Access::Public | Access::Authenticated(..) | Access::Global(..) => None,
            },
        }
    }
}

/// Endpoint ids to their metadata, in id order.
pub type Endpoints = BTreeMap<String, EndpointData>;

/// Inmanta's endpoint id: `METHOD /path` with path parameters written `<name>`.
pub fn endpoint_id(method: &str, path: &str) -> String {
    let path = path.replace("{*", "<").replace('{', "<").replace('}', ">");
    format!("{method} {path}")
}

/// Adds the console's entries to the REST endpoints: one per label the REST endpoints or the
/// roles use, in both scopes, and one for calls any signed-in user may make.
pub fn with_console_endpoints(mut endpoints: Endpoints) -> Endpoints {
    let mut labels: std::collections::BTreeSet<String> = endpoints.values().map(|e| e.auth_label.clone()).collect();
    use super::{ENVIRONMENT_ADMIN, ENVIRONMENT_EXPERT_ADMIN, NOC, OPEN_GLOBAL_LABELS, READ_LABELS};
    for group in [READ_LABELS, OPEN_GLOBAL_LABELS, NOC, ENVIRONMENT_ADMIN, ENVIRONMENT_EXPERT_ADMIN] {
        labels.extend(group.iter().map(|label| label.to_string()));
    }
    labels.insert(AUTHENTICATED_LABEL.to_string());
    let api = vec![api::auth::ClientType::Api.as_str().to_string()];
    for label in labels {
        let read_only = label == AUTHENTICATED_LABEL || super::is_read_label(&label);
        endpoints.insert(
            format!("console {label}"),
            EndpointData { client_types: api.clone(), auth_label: label.clone(), read_only, environment_param: None },
        );
        if label != AUTHENTICATED_LABEL {
            endpoints.insert(
                format!("console {label} in environment"),
                EndpointData {
                    client_types: api.clone(),
                    auth_label: label,
                    read_only,
                    environment_param: Some(CONSOLE_ENVIRONMENT_PARAM.to_string()),
                },
            );
        }
    }
    endpoints
}

/// The data document a policy sees: `{"endpoints": {...}}`.
pub fn endpoint_document(endpoints: &Endpoints) -> Value {
    json!({ "endpoints": endpoints })
}

/// Why a policy cannot be used. The server does not start with one.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot read the access policy `{path}`: {source}")]
    Unreadable { path: String, source: std::io::Error },
    /// Regorus' message names the file, line and column and shows the line.
    #[error("the access policy `{path}` is not valid Rego: {message}")]
    Invalid { path: String, message: String },
}

/// A compiled access policy with its endpoint data.
pub struct AccessPolicy {
    compiled: regorus::CompiledPolicy,
    /// Where it came from: a file, or [`DEFAULT_POLICY_NAME`].
    pub source: String,
    /// Log each decision's input at INFO (`[policy_engine] log-level` debug or info).
    pub log_decisions: bool,
    /// The policy's `roles`, a list of role names the server creates at start when missing
    /// (as Inmanta does); empty when the policy has none.
    pub roles: Vec<String>,
}

impl std::fmt::Debug for AccessPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessPolicy").field("source", &self.source).finish_non_exhaustive()
    }
}

impl AccessPolicy {
    /// Compiles `rego` (named `name` in messages) against `endpoints`.
    pub fn compile(name: &str, rego: &str, endpoints: &Endpoints) -> Result<AccessPolicy, PolicyError> {
        let invalid = |e: anyhow::Error| PolicyError::Invalid { path: name.to_string(), message: e.to_string() };
        let mut engine = regorus::Engine::new();
        let data = regorus::Value::from_json_str(&endpoint_document(endpoints).to_string()).map_err(invalid)?;
        engine.add_data(data).map_err(invalid)?;
        engine.add_policy(name.to_string(), rego.to_string()).map_err(invalid)?;
        let roles = policy_roles(name, engine.clone())?;
        let rule: regorus::Rc<str> = ALLOW_RULE.into();
        let compiled = engine.compile_with_entrypoint(&rule).map_err(invalid)?;
        Ok(AccessPolicy { compiled, source: name.to_string(), log_decisions: false, roles })
    }

    /// Reads and compiles the policy file at `path`.
    pub fn load(path: &Path, endpoints: &Endpoints) -> Result<AccessPolicy, PolicyError> {
        let name = path.display().to_string();
        let rego =
            std::fs::read_to_string(path).map_err(|source| PolicyError::Unreadable { path: name.clone(), source })?;
        AccessPolicy::compile(&name, &rego, endpoints)
    }

    /// The built-in [`DEFAULT_POLICY`].
    pub fn default_policy(endpoints: &Endpoints) -> AccessPolicy {
        AccessPolicy::compile(DEFAULT_POLICY_NAME, DEFAULT_POLICY, endpoints).expect("the default policy compiles")
    }

    /// Whether `allow` is `true` for `input` (the value of Rego's `input`). Anything else
    /// (false, undefined, another value, an evaluation error) denies.
    pub fn allows(&self, input: &Value) -> Result<bool, String> {
        let input = regorus::Value::from_json_str(&input.to_string()).map_err(|e| e.to_string())?;
        let answer = self.compiled.eval_with_input(input).map_err(|e| e.to_string())?;
        Ok(answer == regorus::Value::from(true))
    }
}

/// The value of `data.policy.roles`: none when the policy does not define it, else a list of
/// strings.
fn policy_roles(name: &str, mut engine: regorus::Engine) -> Result<Vec<String>, PolicyError> {
    // Evaluating a rule the policy does not have is an error: no roles.
    let Ok(value) = engine.eval_rule(ROLES_RULE.to_string()) else {
        return Ok(Vec::new());
    };
    if value == regorus::Value::Undefined {
        return Ok(Vec::new());
    }
    let not_a_list = || PolicyError::Invalid {
        path: name.to_string(),
        message: format!("`roles` must be a list of role names, got {value}"),
    };
    let items = value.as_array().map_err(|_| not_a_list())?;
    items.iter().map(|item| item.as_string().map(|role| role.to_string()).map_err(|_| not_a_list())).collect()
}

/// The rule that lists the roles a policy knows.
const ROLES_RULE: &str = "data.policy.roles";

/// One authorization check: what the entry point needs and the call it is about.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    pub access: Access,
    /// The environment the call is about (required for [`Access::Environment`]).
    pub environment: Option<Uuid>,
    /// Inmanta's endpoint id of a REST route; `None` outside one (the console, GraphQL), which
    /// then uses [`console_endpoint_id`].
    pub endpoint_id: Option<&'a str>,
    /// The call's body fields, query and path parameters and its environment
    /// (`input.request.parameters`).
    pub parameters: Map<String, Value>,
}

impl<'a> Call<'a> {
    /// A check outside a REST route.
    pub fn new(access: Access, environment: Option<Uuid>) -> Call<'a> {
        Call { access, environment, endpoint_id: None, parameters: Map::new() }
    }

    /// The check of a compile request, from the REST API or the console: `compiler.execute`, or
    /// `compiler.execute.update` when it pulls the model's source first. A policy is asked
    /// about Inmanta's endpoint with `update` among the parameters, the argument Inmanta's
    /// default policy decides on.
    pub fn compile(environment: Uuid, update: bool) -> Call<'static> {
        let label = if update { "compiler.execute.update" } else { "compiler.execute" };
        let parameters = [("id", json!(environment.to_string())), ("update", json!(update))];
        Call {
            access: Access::Environment(label, super::Clients::API),
            environment: Some(environment),
            endpoint_id: Some(COMPILE_ENDPOINT_ID),
            parameters: parameters.into_iter().map(|(name, value)| (name.to_string(), value)).collect(),
        }
    }
}

/// Inmanta's endpoint that requests a compile.
pub const COMPILE_ENDPOINT_ID: &str = "POST /api/v1/notify/<id>";

/// The authorization provider, `[server] authorization-provider`.
#[derive(Debug, Clone, Default)]
pub enum Authorization {
    /// Roles to labels, in code ([`Principal::authorize`]): Inmanta's `legacy`, its default.
    #[default]
    Legacy,
    /// Users are decided by an access policy; tokens of agents, the compiler and services by
    /// the legacy rules.
    PolicyEngine(Arc<AccessPolicy>),
}

impl Authorization {
    pub fn uses_policy(&self) -> bool {
        matches!(self, Authorization::PolicyEngine(_))
    }

    /// Whether the access policy decides on this caller's calls, which then need their
    /// parameters ([`Call::parameters`]): users' calls under a policy.
    pub fn decides_with_policy(&self, principal: &Principal) -> bool {
        self.uses_policy() && matches!(principal, Principal::User { .. })
    }

    /// The one authorization decision of every entry point.
    pub fn authorize(&self, principal: &Principal, call: &Call<'_>) -> Result<(), Denied> {
        let policy = match self {
            Authorization::Legacy => return principal.authorize(call.access, call.environment),
            Authorization::PolicyEngine(policy) => policy,
        };
        let Principal::User { username, is_admin, roles, .. } = principal else {
            return principal.authorize(call.access, call.environment);
        };
        if call.access == Access::Public {
            return Ok(());
        }
        // A check outside a REST route for agents or the compiler alone (a remote agent's
        // session, a metrics scrape) is no user's: the legacy rules refuse it.
        if call.endpoint_id.is_none() && !call.access.clients().contains(api::auth::ClientType::Api) {
            return principal.authorize(call.access, call.environment);
        }
        principal.password_change_gate(call.access)?;
        let endpoint_id = match call.endpoint_id {
            Some(id) => id.to_string(),
            None => console_endpoint_id(call.access),
        };
        let mut parameters = call.parameters.clone();
        if call.endpoint_id.is_none()
            && let Some(env) = call.environment
        {
            parameters.insert(CONSOLE_ENVIRONMENT_PARAM.into(), Value::String(env.to_string()));
        }
        let token = json!({
            "sub": username,
            "urn:inmanta:ct": [api::auth::ClientType::Api.as_str()],
            "urn:inmanta:is_admin": is_admin,
            "urn:inmanta:roles": roles.iter().map(|(env, r)| (env.to_string(), json!(r))).collect::<Map<_, _>>(),
        });
        let input = json!({ "request": { "endpoint_id": endpoint_id, "parameters": parameters }, "token": token });
        let allowed = match policy.allows(&input) {
            Ok(allowed) => allowed,
            Err(error) => {
                tracing::error!(target: "policy_engine", %error, %input, "the access policy failed to evaluate; denied");
                false
            }
        };
        if policy.log_decisions {
            tracing::info!(target: "policy_engine", %input, allowed, "access policy decision");
        }
        if allowed {
            return Ok(());
        }
        // The built-in policy grants what the legacy rules grant, whose words say which role or
        // label is missing.
        if policy.source == DEFAULT_POLICY_NAME
            && let Err(denied) = principal.authorize(call.access, call.environment)
        {
            return Err(denied);
        }
        let what = call.access.label().unwrap_or(AUTHENTICATED_LABEL);
        let scope = match call.environment {
            Some(env) => format!(" in environment {env}"),
            None => String::new(),
        };
        Err(Denied(format!(
            "the access policy does not allow user {username} to call {endpoint_id} ({what}{scope}); it needs a rule in {} that allows it",
            policy.source
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{Clients, ROLES};

    /// Every label the server knows, in both scopes, for users.
    fn labels() -> Vec<&'static str> {
        let mut labels: Vec<&'static str> = super::super::READ_LABELS.to_vec();
        labels.extend(super::super::OPEN_GLOBAL_LABELS);
        labels.extend([
            "deploy",
            "dryrun.write",
            "agent.pause-resume",
            "environment.halt-resume",
            "notification.write",
            "compiler.execute",
            "desired-state.write",
            "environment.modify",
            "environment.setting.write",
            "compiler.execute.update",
            "parameter.write",
            "fact.write",
            "agent.write",
            "environment.clear",
            "environment.delete",
            "token",
            "project.create",
            "project.modify",
            "project.delete",
            "environment.create",
            "user.write",
            "role.write",
            "role-assignment.write",
            "role.is-admin",
            "file.write",
        ]);
        labels.sort();
        labels.dedup();
        labels
    }

    fn accesses() -> Vec<Access> {
        let mut all = vec![
            Access::Authenticated("user.read", Clients::API),
            Access::Authenticated("file.write", Clients::ALL),
            Access::Authenticated(AUTHENTICATED_LABEL, Clients::API),
        ];
        for label in labels() {
            for clients in [Clients::API, Clients::API_AGENT, Clients::AGENT, Clients::COMPILER] {
                // (The console's signed-in check is never about an environment.)
                if label != AUTHENTICATED_LABEL {
                    all.push(Access::Environment(label, clients));
                }
                all.push(Access::Global(label, clients));
            }
        }
        all
    }

    /// REST-like endpoints for every access, so that both REST ids and console ids are tried.
    fn endpoints() -> (Endpoints, Vec<(String, Access)>) {
        let mut endpoints = Endpoints::new();
        let mut ids = Vec::new();
        for (n, access) in accesses().into_iter().enumerate() {
            let id = format!("GET /api/v2/test{n}/<tid>");
            endpoints.insert(id.clone(), EndpointData::of(access, Some("tid")));
            ids.push((id, access));
        }
        (with_console_endpoints(endpoints), ids)
    }

    fn users(env: Uuid) -> Vec<Principal> {
        let user = |is_admin: bool, roles: Vec<(Uuid, Vec<String>)>| Principal::User {
            username: "u".into(),
            is_admin,
            roles: roles.into_iter().collect(),
            must_change_password: false,
        };
        let mut users = vec![user(true, vec![]), user(false, vec![]), user(false, vec![(env, vec![])])];
        for role in ROLES.iter().copied().chain(["custom"]) {
            users.push(user(false, vec![(env, vec![role.to_string()])]));
            users.push(user(false, vec![(Uuid::new_v4(), vec![role.to_string()])]));
        }
        users.push(user(false, vec![(env, vec!["read-only".into(), "noc".into()])]));
        users
    }

    #[test]
    fn the_default_policy_decides_every_role_and_label_as_the_legacy_provider() {
        let (endpoints, ids) = endpoints();
        let policy = Authorization::PolicyEngine(Arc::new(AccessPolicy::default_policy(&endpoints)));
        let env = Uuid::new_v4();
        let mut checked = 0;
        for principal in users(env) {
            for (id, access) in &ids {
                for environment in [Some(env), None] {
                    let legacy = Authorization::Legacy.authorize(&principal, &Call::new(*access, environment)).is_ok();
                    let mut parameters = Map::new();
                    if let Some(env) = environment {
                        parameters.insert("tid".into(), Value::String(env.to_string()));
                    }
                    let rest = Call { access: *access, environment, endpoint_id: Some(id), parameters };
                    assert_eq!(policy.authorize(&principal, &rest).is_ok(), legacy, "{principal:?} {id} {access:?}");
                    let console = Call::new(*access, environment);
                    // (A console check is always for API clients; others fall to the legacy rules.)
                    assert_eq!(
                        policy.authorize(&principal, &console).is_ok(),
                        legacy,
                        "{principal:?} console {access:?}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 1000, "only {checked} decisions compared");
    }

    #[test]
    fn a_compile_with_update_needs_more_than_noc_under_the_default_policy() {
        let mut endpoints = Endpoints::new();
        let compile = Access::Environment("compiler.execute", Clients::API);
        endpoints.insert(COMPILE_ENDPOINT_ID.into(), EndpointData::of(compile, Some("id")));
        let policy =
            Authorization::PolicyEngine(Arc::new(AccessPolicy::default_policy(&with_console_endpoints(endpoints))));
        let env = Uuid::new_v4();
        for (role, plain, update) in [
            ("read-only", false, false),
            ("noc", true, false),
            ("environment-admin", true, true),
            ("environment-expert-admin", true, true),
        ] {
            let user = Principal::User {
                username: "u".into(),
                is_admin: false,
                roles: [(env, vec![role.to_string()])].into(),
                must_change_password: false,
            };
            for (wants_update, expected) in [(false, plain), (true, update)] {
                let call = Call::compile(env, wants_update);
                assert_eq!(policy.authorize(&user, &call).is_ok(), expected, "{role}, update {wants_update}");
                let legacy = Authorization::Legacy.authorize(&user, &call).is_ok();
                assert_eq!(legacy, expected, "{role}, update {wants_update}, legacy rules");
            }
        }
    }

    #[test]
    fn a_custom_policy_decides_for_users_and_not_for_tokens() {
        let mut endpoints = Endpoints::new();
        let read = Access::Environment("resource.read", Clients::API_AGENT);
        endpoints.insert("GET /api/v2/resource".into(), EndpointData::of(read, Some("X-Inmanta-tid")));
        let rego = "package policy\ndefault allow := false\nallow if input.token.sub == \"alice\"\n";
        let policy = Authorization::PolicyEngine(Arc::new(AccessPolicy::compile("p.rego", rego, &endpoints).unwrap()));
        let env = Uuid::new_v4();
        let call = Call {
            access: read,
            environment: Some(env),
            endpoint_id: Some("GET /api/v2/resource"),
            parameters: Map::new(),
        };
        let user = |name: &str| Principal::User {
            username: name.into(),
            is_admin: true,
            roles: BTreeMap::new(),
            must_change_password: false,
        };
        assert!(policy.authorize(&user("alice"), &call).is_ok());
        let denied = policy.authorize(&user("bob"), &call).unwrap_err();
        assert!(denied.0.contains("GET /api/v2/resource") && denied.0.contains("p.rego"), "{denied}");
        let agent = Principal::Token { environment: env, clients: Clients::AGENT, jti: None };
        assert!(policy.authorize(&agent, &call).is_ok(), "tokens follow the legacy rules");
    }

    #[test]
    fn a_broken_policy_is_refused_with_its_line_and_column() {
        let error =
            AccessPolicy::compile("broken.rego", "package policy\n\nallow if {\n  input.x ==\n}\n", &Endpoints::new())
                .unwrap_err()
                .to_string();
        assert!(error.contains("broken.rego:"), "{error}");
        assert!(error.contains(":4:") || error.contains(":5:"), "{error}");
    }

    #[test]
    fn a_policy_lists_its_roles() {
        let endpoints = Endpoints::new();
        assert_eq!(AccessPolicy::default_policy(&endpoints).roles, ROLES);
        let none = AccessPolicy::compile("p.rego", "package policy\nallow := true\n", &endpoints).unwrap();
        assert!(none.roles.is_empty());
        let wrong = AccessPolicy::compile("p.rego", "package policy\nroles := [1]\n", &endpoints).unwrap_err();
        assert!(wrong.to_string().contains("`roles` must be a list"), "{wrong}");
    }

    #[test]
    fn endpoint_ids_are_written_as_inmanta_writes_them() {
        assert_eq!(endpoint_id("PATCH", "/api/v2/user/{username}/password"), "PATCH /api/v2/user/<username>/password");
        assert_eq!(endpoint_id("GET", "/api/v1/file/{*id}"), "GET /api/v1/file/<id>");
    }
}
