//! Our endpoint data (`data.endpoints`, `inmanta policy-engine print-endpoint-data`) against
//! inmanta-core 20.1's, generated from the reference install
//! (`scripts/reference/inmanta_endpoint_data.py` → `service/tests/fixtures/inmanta-20.1-endpoint-data.tsv`):
//! a policy written for Inmanta must see the same id, `auth_label`, `read_only`, `client_types`
//! and `environment_param` for every endpoint both serve, unless docs/security.md lists the
//! difference with its reason.

use std::collections::{BTreeMap, BTreeSet};

use orchestrator::auth::policy::EndpointData;

use super::endpoint_data;
use super::inmanta_routes::RouteKey;

const INMANTA_ENDPOINTS: &str = include_str!("../../tests/fixtures/inmanta-20.1-endpoint-data.tsv");
const SECURITY_DOC: &str = include_str!("../../../docs/security.md");

/// The heading of docs/security.md's table of the differences we keep on purpose.
const DIFFERENCES: &str = "### Endpoint data that differs from Inmanta's";

/// One endpoint's entry as both sides print it; client types as a set (their order means
/// nothing to a policy).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    id: String,
    auth_label: String,
    read_only: bool,
    client_types: BTreeSet<String>,
    environment_param: Option<String>,
}

impl Entry {
    /// The fields as docs/security.md's table names them, with their values as text.
    fn fields(&self) -> [(&'static str, String); 5] {
        let clients: Vec<&str> = self.client_types.iter().map(String::as_str).collect();
        [
            ("endpoint id", self.id.clone()),
            ("auth_label", self.auth_label.clone()),
            ("read_only", self.read_only.to_string()),
            ("client_types", clients.join(",")),
            ("environment_param", self.environment_param.clone().unwrap_or_else(|| "null".into())),
        ]
    }
}

fn key_of(id: &str) -> RouteKey {
    let (method, path) = id.split_once(' ').unwrap_or_else(|| panic!("an endpoint id without a method: {id:?}"));
    RouteKey::new(method, path)
}

fn inmanta_endpoints() -> BTreeMap<RouteKey, Entry> {
    let mut endpoints = BTreeMap::new();
    for line in INMANTA_ENDPOINTS.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        assert!(fields.len() == 5, "malformed line in inmanta-20.1-endpoint-data.tsv: {line:?}");
        let entry = Entry {
            id: fields[0].to_string(),
            auth_label: fields[1].to_string(),
            read_only: fields[2] == "true",
            client_types: fields[3].split(',').filter(|c| !c.is_empty()).map(str::to_string).collect(),
            environment_param: Some(fields[4].to_string()).filter(|p| !p.is_empty()),
        };
        endpoints.insert(key_of(fields[0]), entry);
    }
    endpoints
}

/// Our REST endpoints' entries (the console's checks are ours alone).
fn our_endpoints() -> BTreeMap<RouteKey, Entry> {
    endpoint_data()
        .into_iter()
        .filter(|(id, _)| !id.starts_with("console "))
        .map(|(id, data): (String, EndpointData)| {
            let entry = Entry {
                id: id.clone(),
                auth_label: data.auth_label,
                read_only: data.read_only,
                client_types: data.client_types.into_iter().collect(),
                environment_param: data.environment_param,
            };
            (key_of(&id), entry)
        })
        .collect()
}

/// A difference: Inmanta's endpoint id, the field, our value, Inmanta's value.
type Difference = (String, String, String, String);

/// The rows of docs/security.md's table of differences: endpoint id, field, ours, Inmanta's
/// (each in backticks), why.
fn documented() -> BTreeSet<Difference> {
    let start = SECURITY_DOC.find(DIFFERENCES).unwrap_or_else(|| panic!("docs/security.md has no {DIFFERENCES:?}"));
    let section = &SECURITY_DOC[start + DIFFERENCES.len()..];
    let section = &section[..section.find("\n#").unwrap_or(section.len())];
    let mut rows = BTreeSet::new();
    for row in section.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<String> = row.split('|').map(|c| c.trim().trim_matches('`').to_string()).collect();
        if cells[1] == "endpoint" || cells[1].starts_with("---") {
            continue;
        }
        assert!(!cells[5].is_empty(), "docs/security.md {DIFFERENCES:?}: a row without its reason: {row}");
        let difference = (cells[1].clone(), cells[2].clone(), cells[3].clone(), cells[4].clone());
        assert!(rows.insert(difference), "listed twice under {DIFFERENCES:?} in docs/security.md: {row}");
    }
    rows
}

#[test]
fn endpoint_data_is_inmanta_s_for_every_endpoint_both_serve() {
    let theirs = inmanta_endpoints();
    let ours = our_endpoints();
    assert!(theirs.len() > 100, "only {} endpoints in the fixture", theirs.len());
    let mut differences = BTreeSet::new();
    let mut compared = 0;
    for (key, their) in &theirs {
        let Some(our) = ours.get(key) else { continue };
        compared += 1;
        for ((field, ours), (_, theirs)) in our.fields().into_iter().zip(their.fields()) {
            if ours != theirs {
                differences.insert((their.id.clone(), field.to_string(), ours, theirs));
            }
        }
    }
    assert!(compared > 100, "only {compared} endpoints compared");
    let explained = documented();
    let show = |set: Vec<&Difference>| {
        set.iter()
            .map(|(id, field, ours, theirs)| format!("| `{id}` | {field} | `{ours}` | `{theirs}` |"))
            .collect::<Vec<_>>()
    };
    let unexplained = show(differences.difference(&explained).collect());
    assert!(
        unexplained.is_empty(),
        "endpoint data that differs from Inmanta 20.1's and is not in docs/security.md {DIFFERENCES:?} \
         (endpoint, field, ours, Inmanta's):\n{}",
        unexplained.join("\n")
    );
    let stale = show(explained.difference(&differences).collect());
    assert!(stale.is_empty(), "listed in docs/security.md {DIFFERENCES:?} but not a difference:\n{}", stale.join("\n"));
}

/// Every endpoint open to any signed-in caller under the legacy rules carries a label the
/// built-in policy opens to everyone too, so both providers agree on it.
#[test]
fn endpoints_for_every_signed_in_caller_carry_an_open_label() {
    for route in super::rule_table() {
        if let orchestrator::auth::Access::Authenticated(label, _) = route.rule.access {
            assert!(
                orchestrator::auth::OPEN_GLOBAL_LABELS.contains(&label),
                "{} {} is open to every signed-in caller with the label {label}, which is not in OPEN_GLOBAL_LABELS",
                route.method,
                route.path
            );
        }
    }
}
