//! Times one authorization decision by the built-in access policy (`[server]
//! authorization-provider = policy-engine`) against the legacy rules, and the policy's compile
//! at start. The endpoint data is as large as the server's: 300 REST endpoints plus the
//! console's. Run: `cargo bench -p orchestrator --bench policy`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use orchestrator::auth::policy::{AccessPolicy, Authorization, Call, EndpointData, Endpoints, with_console_endpoints};
use orchestrator::auth::{Access, Clients, Principal};
use uuid::Uuid;

const LABELS: &[&str] = &["resource.read", "deploy", "desired-state.write", "environment.delete", "agent.read"];

fn main() {
    let mut endpoints = Endpoints::new();
    for n in 0..300 {
        let access = Access::Environment(LABELS[n % LABELS.len()], Clients::API);
        endpoints.insert(format!("GET /api/v2/bench{n}"), EndpointData::of(access, Some("X-Inmanta-tid")));
    }
    let endpoints = with_console_endpoints(endpoints);

    let started = Instant::now();
    let policy = AccessPolicy::default_policy(&endpoints);
    println!("compile the default policy with {} endpoints: {:?}", endpoints.len(), started.elapsed());
    let policy = Authorization::PolicyEngine(Arc::new(policy));

    let env = Uuid::new_v4();
    let mut roles = BTreeMap::new();
    roles.insert(env, vec!["noc".to_string()]);
    for _ in 0..20 {
        roles.insert(Uuid::new_v4(), vec!["read-only".to_string()]);
    }
    let user = Principal::User { username: "nina".into(), is_admin: false, roles, must_change_password: false };
    let mut parameters = serde_json::Map::new();
    parameters.insert("X-Inmanta-tid".into(), serde_json::Value::String(env.to_string()));
    parameters.insert("limit".into(), serde_json::Value::String("100".into()));
    let calls: Vec<(String, Access)> = (0..300)
        .map(|n| (format!("GET /api/v2/bench{n}"), Access::Environment(LABELS[n % LABELS.len()], Clients::API)))
        .collect();

    for (name, authorization) in [("legacy", Authorization::Legacy), ("default policy", policy)] {
        let rounds = 20_000;
        let started = Instant::now();
        let mut allowed = 0;
        for i in 0..rounds {
            let (id, access) = &calls[i % calls.len()];
            let call =
                Call { access: *access, environment: Some(env), endpoint_id: Some(id), parameters: parameters.clone() };
            allowed += usize::from(authorization.authorize(&user, &call).is_ok());
        }
        let each = started.elapsed() / rounds as u32;
        println!("{name}: {each:?} a decision ({allowed} of {rounds} allowed)");
    }
}
