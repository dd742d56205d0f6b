//! Every route of inmanta-core 20.1's API against ours, so docs/api.md's route-by-route
//! comparison cannot drift: the list of Inmanta's routes is generated from the reference install
//! (`scripts/reference/inmanta_routes.py` → `service/tests/fixtures/inmanta-20.1-routes.tsv`),
//! ours is the router's own rule table.

use std::collections::{BTreeMap, BTreeSet};

use api::auth::ClientType;

use super::rule_table;

const INMANTA_ROUTES: &str = include_str!("../../tests/fixtures/inmanta-20.1-routes.tsv");
const API_DOC: &str = include_str!("../../../docs/api.md");

/// The heading of docs/api.md's table of Inmanta's routes we do not serve.
const NOT_SERVED: &str = "### Inmanta 20.1's routes we do not serve";
/// The heading of its table of our routes Inmanta 20.1 does not have.
const OURS_ONLY: &str = "### Our routes that Inmanta 20.1 does not have";
/// The heading of its table of routes we serve to fewer client types than Inmanta.
const FEWER_CLIENTS: &str = "### Routes we serve to fewer client types";

/// A route as both sides name it: the method and the path with its parameters' names erased
/// (Inmanta writes `<id>`, axum `{id}`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct RouteKey {
    method: String,
    path: String,
}

impl RouteKey {
    pub(super) fn new(method: &str, path: &str) -> RouteKey {
        let mut erased = String::with_capacity(path.len());
        let mut in_param = false;
        for c in path.chars() {
            match c {
                '<' | '{' => {
                    in_param = true;
                    erased.push_str("<>");
                }
                '>' | '}' => in_param = false,
                _ if !in_param => erased.push(c),
                _ => {}
            }
        }
        RouteKey { method: method.to_ascii_uppercase(), path: erased }
    }
}

impl std::fmt::Display for RouteKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.method, self.path)
    }
}

/// Inmanta's routes with the client types that may call them (none: internal to its processes).
fn inmanta_routes() -> BTreeMap<RouteKey, BTreeSet<ClientType>> {
    let mut routes: BTreeMap<RouteKey, BTreeSet<ClientType>> = BTreeMap::new();
    for line in INMANTA_ROUTES.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        assert!(fields.len() == 4, "malformed line in inmanta-20.1-routes.tsv: {line:?}");
        let clients = fields[3].split(',').filter(|c| !c.is_empty()).map(|c| match c {
            "api" => ClientType::Api,
            "agent" => ClientType::Agent,
            "compiler" => ClientType::Compiler,
            other => panic!("unknown client type {other:?} in inmanta-20.1-routes.tsv"),
        });
        // A path registered twice (an internal and a public method) is open to both sets.
        routes.entry(RouteKey::new(fields[0], fields[1])).or_default().extend(clients);
    }
    routes
}

fn our_routes() -> BTreeMap<RouteKey, BTreeSet<ClientType>> {
    rule_table()
        .into_iter()
        .map(|r| (RouteKey::new(r.method.as_str(), r.path), r.rule.access.clients().types().into_iter().collect()))
        .collect()
}

/// The routes of one table of docs/api.md: the rows between `heading` and the next heading,
/// method in the first column, the path in backticks in the second.
fn documented(heading: &str) -> BTreeSet<RouteKey> {
    let start = API_DOC.find(heading).unwrap_or_else(|| panic!("docs/api.md has no section {heading:?}"));
    let section = &API_DOC[start + heading.len()..];
    let section = &section[..section.find("\n#").unwrap_or(section.len())];
    let mut routes = BTreeSet::new();
    for row in section.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (method, path) = (cells[1], cells[2].trim_matches('`'));
        if method == "method" || method.starts_with("---") {
            continue;
        }
        let key = RouteKey::new(method, path);
        assert!(routes.insert(key.clone()), "{key} is listed twice under {heading:?} in docs/api.md");
    }
    routes
}

#[test]
fn every_inmanta_route_is_served_or_explained() {
    let theirs = inmanta_routes();
    let ours = our_routes();
    let not_served = documented(NOT_SERVED);
    let missing: Vec<String> =
        theirs.keys().filter(|k| !ours.contains_key(*k) && !not_served.contains(*k)).map(ToString::to_string).collect();
    assert!(missing.is_empty(), "Inmanta 20.1 routes neither served nor in docs/api.md {NOT_SERVED:?}: {missing:#?}");
    let stale: Vec<String> = not_served
        .iter()
        .filter(|k| ours.contains_key(*k) || !theirs.contains_key(*k))
        .map(ToString::to_string)
        .collect();
    assert!(stale.is_empty(), "listed in docs/api.md {NOT_SERVED:?} but served, or not Inmanta's: {stale:#?}");
}

#[test]
fn every_route_of_ours_alone_is_documented() {
    let theirs = inmanta_routes();
    let ours = our_routes();
    let ours_only = documented(OURS_ONLY);
    let undocumented: Vec<String> =
        ours.keys().filter(|k| !theirs.contains_key(*k) && !ours_only.contains(*k)).map(ToString::to_string).collect();
    assert!(
        undocumented.is_empty(),
        "our routes not in Inmanta 20.1 nor in docs/api.md {OURS_ONLY:?}: {undocumented:#?}"
    );
    let stale: Vec<String> = ours_only
        .iter()
        .filter(|k| !ours.contains_key(*k) || theirs.contains_key(*k))
        .map(ToString::to_string)
        .collect();
    assert!(stale.is_empty(), "listed in docs/api.md {OURS_ONLY:?} but not ours, or Inmanta's too: {stale:#?}");
}

/// Inmanta's agents and exporter call some routes with their own client type: a route we serve
/// must let every client type in that Inmanta lets in, or say why not.
#[test]
fn served_routes_take_inmanta_client_types() {
    let theirs = inmanta_routes();
    let ours = our_routes();
    let explained = documented(FEWER_CLIENTS);
    let mut fewer = BTreeSet::new();
    for (key, their_clients) in &theirs {
        if let Some(our_clients) = ours.get(key)
            && !their_clients.is_subset(our_clients)
        {
            fewer.insert(key.clone());
        }
    }
    let unexplained: Vec<String> = fewer.difference(&explained).map(ToString::to_string).collect();
    assert!(
        unexplained.is_empty(),
        "routes that refuse a client type Inmanta 20.1 accepts, not in docs/api.md {FEWER_CLIENTS:?}: {unexplained:#?}"
    );
    let stale: Vec<String> = explained.difference(&fewer).map(ToString::to_string).collect();
    assert!(stale.is_empty(), "listed in docs/api.md {FEWER_CLIENTS:?} but taking every client type: {stale:#?}");
}

#[test]
fn route_keys_erase_parameter_names() {
    assert_eq!(RouteKey::new("get", "/api/v1/file/<id>"), RouteKey::new("GET", "/api/v1/file/{hash}"));
    assert_ne!(RouteKey::new("GET", "/api/v2/discovered/"), RouteKey::new("GET", "/api/v2/discovered"));
}
