//! `POST /api/v2/graphql` and `GET /api/v2/graphql/schema` (inmanta-core 20.1's GraphQL
//! endpoint): Inmanta's answer form, authorization by role, relay paging both ways, filters,
//! ordering, errors and the depth bound. On SQLite, and on PostgreSQL when
//! `INMANTA_TEST_POSTGRES` is set (the test server's database follows it).

use crate::common;

use api::version::PutVersion;
use base64::Engine;
use common::{TestServer, client_with};
use serde_json::{Value, json};

const RESOURCES: &str = r#"
query Resources($filter: ResourceFilter!, $first: Int, $after: String, $last: Int, $before: String,
                $orderBy: [StrawberryOrder!]) {
  resources(filter: $filter, first: $first, after: $after, last: $last, before: $before, orderBy: $orderBy) {
    totalCount
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    edges { cursor node { resourceId resourceIdValue agent modelVersion requiresLength purged
                          state { lastHandlerRun blocked compliance isOrphan isDeploying } } }
  }
}"#;

async fn graphql(s: &TestServer, query: &str, variables: Value) -> (u16, Value) {
    s.call("POST", "/api/v2/graphql", None, Some(json!({"query": query, "variables": variables}))).await
}

async fn graphql_as(s: &TestServer, token: &str, query: &str, variables: Value) -> (u16, Value) {
    let response = client_with(Some(token))
        .post(format!("{}/api/v2/graphql", s.url))
        .json(&json!({"query": query, "variables": variables}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// An environment with `n` released NullResources `r00`.. over agents `agent0`/`agent1`, each
/// requiring the one before it.
async fn environment_with_resources(s: &TestServer, name: &str, n: usize) -> String {
    let env = s.new_environment(&format!("project-{name}"), name).await;
    let client = s.client();
    let version = client.reserve_version(env).await.unwrap();
    let resources = (0..n)
        .map(|i| {
            let requires: Vec<String> = if i == 0 {
                vec![]
            } else {
                vec![format!("std::testing::NullResource[agent{},name=r{:02}]", (i - 1) % 2, i - 1)]
            };
            json!({"id": format!("std::testing::NullResource[agent{},name=r{i:02}],v={version}", i % 2),
                   "name": format!("r{i:02}"), "agentname": format!("agent{}", i % 2), "fail": false,
                   "purged": i == n - 1, "send_event": false, "requires": requires})
            .as_object()
            .unwrap()
            .clone()
        })
        .collect();
    client.put_version(env, &PutVersion { version, resources, ..Default::default() }).await.unwrap();
    let _ = client.release_version(env, version, false).await;
    env.to_string()
}

fn ids(answer: &Value) -> Vec<String> {
    answer["data"]["data"]["resources"]["edges"]
        .as_array()
        .unwrap_or_else(|| panic!("no edges in {answer}"))
        .iter()
        .map(|e| e["node"]["resourceIdValue"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn pages_forward_and_back_with_inmanta_cursors() {
    let s = TestServer::start().await;
    let env = environment_with_resources(&s, "e", 5).await;
    let (status, first) = graphql(&s, RESOURCES, json!({"filter": {"environment": env}, "first": 2})).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["data"]["errors"], Value::Null);
    assert_eq!(first["data"]["extensions"], json!({}));
    let connection = &first["data"]["data"]["resources"];
    assert_eq!(connection["totalCount"], 5);
    // Ordered by resource id: agent0's resources first.
    assert_eq!(ids(&first), ["r00", "r02"]);
    assert_eq!(connection["pageInfo"]["hasNextPage"], true);
    assert_eq!(connection["pageInfo"]["hasPreviousPage"], false);
    // Inmanta's cursor: base64 of `arrayconnection:` and the sqlakeyset bookmark of the row.
    let end = connection["pageInfo"]["endCursor"].as_str().unwrap();
    assert_eq!(end, connection["edges"][1]["cursor"].as_str().unwrap());
    let bookmark = "arrayconnection:s:std::testing::NullResource[agent0,name=r02]";
    assert_eq!(end, base64::engine::general_purpose::STANDARD.encode(bookmark));

    let (_, second) = graphql(&s, RESOURCES, json!({"filter": {"environment": env}, "first": 2, "after": end})).await;
    assert_eq!(ids(&second), ["r04", "r01"]);
    let info = &second["data"]["data"]["resources"]["pageInfo"];
    assert_eq!((info["hasNextPage"].clone(), info["hasPreviousPage"].clone()), (json!(true), json!(true)));

    let start = info["startCursor"].as_str().unwrap();
    let (_, back) = graphql(&s, RESOURCES, json!({"filter": {"environment": env}, "last": 2, "before": start})).await;
    assert_eq!(ids(&back), ["r00", "r02"]);
    let info = &back["data"]["data"]["resources"]["pageInfo"];
    assert_eq!((info["hasNextPage"].clone(), info["hasPreviousPage"].clone()), (json!(true), json!(false)));

    let last_end = second["data"]["data"]["resources"]["pageInfo"]["endCursor"].clone();
    let (_, tail) =
        graphql(&s, RESOURCES, json!({"filter": {"environment": env}, "first": 2, "after": last_end})).await;
    assert_eq!(ids(&tail), ["r03"]);
    assert_eq!(tail["data"]["data"]["resources"]["pageInfo"]["hasNextPage"], false);
}

#[tokio::test]
async fn filters_and_orders_as_inmanta() {
    let s = TestServer::start().await;
    let env = environment_with_resources(&s, "e", 5).await;
    let page = |filter: Value, order: Value| {
        let mut f = json!({"environment": env});
        f.as_object_mut().unwrap().extend(filter.as_object().unwrap().clone());
        json!({"filter": f, "orderBy": order})
    };
    let (_, agent1) = graphql(&s, RESOURCES, page(json!({"agent": {"eq": ["agent1"]}}), json!([]))).await;
    assert_eq!(ids(&agent1), ["r01", "r03"]);
    let (_, like) = graphql(
        &s,
        RESOURCES,
        page(json!({"resourceIdValue": {"contains": ["%0_"], "notContains": ["%3"]}}), json!([])),
    )
    .await;
    assert_eq!(ids(&like), ["r00", "r02", "r04", "r01"]);
    let (_, neq) = graphql(&s, RESOURCES, page(json!({"resourceIdValue": {"neq": ["r00", "r01"]}}), json!([]))).await;
    assert_eq!(ids(&neq), ["r02", "r04", "r03"]);
    let (_, purged) = graphql(&s, RESOURCES, page(json!({"purged": true}), json!([]))).await;
    assert_eq!(ids(&purged), ["r04"]);
    let (_, orphans) = graphql(&s, RESOURCES, page(json!({"isOrphan": true}), json!([]))).await;
    assert_eq!(ids(&orphans), Vec::<String>::new());
    let (_, blocked) = graphql(&s, RESOURCES, page(json!({"blocked": {"eq": ["NOT_BLOCKED"]}}), json!([]))).await;
    assert_eq!(ids(&blocked).len(), 5);
    let (_, ordered) =
        graphql(&s, RESOURCES, page(json!({}), json!([{"key": "agent", "order": "desc"}, {"key": "resourceIdValue"}])))
            .await;
    assert_eq!(ids(&ordered), ["r01", "r03", "r00", "r02", "r04"]);
    let node = &ordered["data"]["data"]["resources"]["edges"][1]["node"];
    assert_eq!(node["requiresLength"], 1);
    assert_eq!(node["state"]["blocked"], "NOT_BLOCKED");
    assert_eq!(node["state"]["isOrphan"], false);
    // Paging in a custom order carries every key in the cursor.
    let mut next = page(json!({}), json!([{"key": "agent", "order": "desc"}, {"key": "resourceIdValue"}]));
    next["first"] = json!(3);
    let (_, one) = graphql(&s, RESOURCES, next.clone()).await;
    next["after"] = one["data"]["data"]["resources"]["pageInfo"]["endCursor"].clone();
    let (_, two) = graphql(&s, RESOURCES, next).await;
    assert_eq!(ids(&two), ["r02", "r04"]);

    let (_, summary) = graphql(
        &s,
        "query($e: String!) { resourceSummary(environment: $e) { totalCount blocked isDeploying } }",
        json!({"e": env}),
    )
    .await;
    let summary = &summary["data"]["data"]["resourceSummary"];
    assert_eq!(summary["totalCount"], 5);
    assert_eq!(summary["blocked"], json!({"blocked": 0, "not_blocked": 5, "temporarily_blocked": 0}));
}

#[tokio::test]
async fn errors_are_a_list_of_messages_with_400() {
    let s = TestServer::start().await;
    let env = environment_with_resources(&s, "e", 1).await;
    let cases = [
        (json!({"filter": {"environment": env}, "orderBy": [{"key": "nope"}]}), "Invalid sort key provided"),
        (json!({"filter": {"environment": env}, "orderBy": [{"key": "agent", "order": "up"}]}), "Invalid sort order"),
        (json!({"filter": {"environment": env}, "first": 1, "last": 1}), "`first` is not allowed"),
        (json!({"filter": {"environment": env}, "after": "bm9wZQ=="}), "Invalid cursor provided"),
        (json!({"filter": {"environment": env}, "first": 100000}), "at most 1000"),
        (
            json!({"filter": {"environment": env, "modelVersion": 1, "isOrphan": false}}),
            "modelVersion cannot be combined",
        ),
    ];
    for (variables, expected) in cases {
        let (status, answer) = graphql(&s, RESOURCES, variables.clone()).await;
        assert_eq!(status, 400, "{variables}: {answer}");
        assert_eq!(answer["data"]["data"], Value::Null);
        let errors = answer["data"]["errors"].as_array().unwrap();
        assert!(errors[0].as_str().unwrap().contains(expected), "{variables}: {answer}");
    }
    let (status, answer) = graphql(&s, "query { environments { ", json!(null)).await;
    assert_eq!(status, 400, "{answer}");
    assert!(answer["data"]["errors"][0].is_string());
    // Bounded depth: 16 nested levels of introspection are refused before anything runs.
    let deep = format!("query {{ __schema {{ types {{ {}name{} }} }} }}", "ofType { ".repeat(14), " }".repeat(14));
    let (status, answer) = graphql(&s, &deep, json!(null)).await;
    assert_eq!(status, 400, "{answer}");
    assert!(answer["data"]["errors"][0].as_str().unwrap().contains("nested too deep"), "{answer}");
}

#[tokio::test]
async fn a_user_sees_only_environments_with_a_role() {
    let s = TestServer::start().await;
    let a = environment_with_resources(&s, "a", 2).await;
    let b = environment_with_resources(&s, "b", 2).await;
    let client = s.client();
    client.create_user("olivia", "Olivia-password-1").await.unwrap();
    let (status, _) = s
        .call("POST", "/api/v2/role_assignment/olivia", None, Some(json!({"environment": a, "role": "read-only"})))
        .await;
    assert_eq!(status, 200);
    let token = client.login("olivia", "Olivia-password-1").await.unwrap().token;

    let (status, envs) =
        graphql_as(&s, &token, "query { environments { totalCount edges { node { name } } } }", json!(null)).await;
    assert_eq!(status, 200, "{envs}");
    assert_eq!(envs["data"]["data"]["environments"]["edges"], json!([{"node": {"name": "a"}}]));
    assert_eq!(envs["data"]["data"]["environments"]["totalCount"], 1);
    let (status, own) = graphql_as(&s, &token, RESOURCES, json!({"filter": {"environment": a}})).await;
    assert_eq!(status, 200, "{own}");
    assert_eq!(ids(&own).len(), 2);
    let (status, other) = graphql_as(&s, &token, RESOURCES, json!({"filter": {"environment": b}})).await;
    assert_eq!(status, 400, "{other}");
    assert!(other["data"]["errors"][0].as_str().unwrap().contains("no role in environment"), "{other}");
    let (status, _) = graphql_as(
        &s,
        &token,
        "query($e: String!) { resourceSummary(environment: $e) { totalCount } }",
        json!({"e": b}),
    )
    .await;
    assert_eq!(status, 400);
    // Without credentials: refused before any query runs.
    let response = reqwest::Client::new()
        .post(format!("{}/api/v2/graphql", s.url))
        .json(&json!({"query": "query { environments { totalCount } }"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
}

#[tokio::test]
async fn the_schema_is_introspection_json() {
    let s = TestServer::start().await;
    let (status, schema) = s.call("GET", "/api/v2/graphql/schema", None, None).await;
    assert_eq!(status, 200);
    let types = schema["data"]["__schema"]["types"].as_array().unwrap();
    let names: Vec<&str> = types.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for expected in ["Query", "ResourceConnection", "ResourcePersistentState", "StrawberryOrder", "UUID", "JSON"] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    let query = types.iter().find(|t| t["name"] == "Query").unwrap();
    let fields: Vec<&str> = query["fields"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(fields, ["environments", "notifications", "resources", "resourceSummary"]);
}

/// `query { ...F30 }` where each fragment spreads the one before it twice (issue 47): 2^30
/// fields once expanded, 1.3 kB of text. A user without any role sends it; it is refused as too
/// complex before anything runs (it used to burn a core for minutes), and the server answers
/// the next caller at once.
#[tokio::test]
async fn a_fragment_explosion_is_refused_before_it_runs() {
    let s = TestServer::start().await;
    let client = s.client();
    client.create_user("mallory", "Mallory-password-1").await.unwrap();
    let token = client.login("mallory", "Mallory-password-1").await.unwrap().token;
    let mut query = String::from("query { ...F30 }\nfragment F0 on Query { environments { totalCount } }\n");
    for i in 1..=30 {
        query.push_str(&format!("fragment F{i} on Query {{ ...F{} ...F{} }}\n", i - 1, i - 1));
    }
    let started = std::time::Instant::now();
    let (status, answer) =
        tokio::time::timeout(std::time::Duration::from_secs(10), graphql_as(&s, &token, &query, json!(null)))
            .await
            .expect("the explosion is refused, not run");
    assert_eq!(status, 400, "{answer}");
    let message = answer["data"]["errors"][0].as_str().unwrap_or_default();
    assert!(message.contains("Query is too complex") && message.contains("2000 fields"), "{answer}");
    eprintln!("fragment explosion refused in {:?}", started.elapsed());
    // A query within the bound, spreading fragments, still runs.
    let (status, small) = graphql_as(
        &s,
        &token,
        "query { ...F1 } fragment F0 on Query { environments { totalCount } } fragment F1 on Query { ...F0 ...F0 }",
        json!(null),
    )
    .await;
    assert_eq!(status, 200, "{small}");
    assert_eq!(small["data"]["data"]["environments"]["totalCount"], 0);
    let (status, _) = s.call("GET", "/api/v2/health", None, None).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_skipped_resource_is_not_blocked_as_inmanta_says() {
    // Inmanta 20.1 stores a temporary block (a resource skipped for its failed requirement) as
    // NOT_BLOCKED (deploy/state.py, `Blocked.db_value`), and its GraphQL reads the database.
    let s = TestServer::start().await;
    let env = s.new_environment("project-skip", "skip").await;
    let client = s.client();
    let version = client.reserve_version(env).await.unwrap();
    let id = |name: &str| format!("std::testing::NullResource[agent0,name={name}]");
    let resources = [("failing", true, vec![]), ("after", false, vec![id("failing")])]
        .into_iter()
        .map(|(name, fail, requires)| {
            json!({"id": format!("{},v={version}", id(name)), "name": name, "agentname": "agent0", "fail": fail,
                   "purged": false, "send_event": false, "requires": requires})
            .as_object()
            .unwrap()
            .clone()
        })
        .collect();
    client.put_version(env, &PutVersion { version, resources, ..Default::default() }).await.unwrap();
    // auto_deploy released it already; a second release is refused (409) and changes nothing.
    let _ = client.release_version(env, version, true).await;
    let tid = env.to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (_, answer) = s.call("GET", "/api/v2/resource", Some(&tid), None).await;
        let statuses: Vec<&str> =
            answer["data"].as_array().unwrap().iter().filter_map(|r| r["status"].as_str()).collect();
        if statuses.contains(&"skipped") && statuses.contains(&"failed") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not deployed: {answer}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let page = |blocked: Value| json!({"filter": {"environment": tid, "blocked": blocked}});
    let (_, all) = graphql(&s, RESOURCES, json!({"filter": {"environment": tid}})).await;
    for edge in all["data"]["data"]["resources"]["edges"].as_array().unwrap() {
        assert_eq!(edge["node"]["state"]["blocked"], "NOT_BLOCKED", "{edge}");
    }
    let (_, not_blocked) = graphql(&s, RESOURCES, page(json!({"eq": ["NOT_BLOCKED"]}))).await;
    assert_eq!(ids(&not_blocked), ["after", "failing"]);
    let (_, temporarily) = graphql(&s, RESOURCES, page(json!({"eq": ["TEMPORARILY_BLOCKED"]}))).await;
    assert_eq!(ids(&temporarily), Vec::<String>::new());
    let (_, except) = graphql(&s, RESOURCES, page(json!({"neq": ["NOT_BLOCKED"]}))).await;
    assert_eq!(ids(&except), Vec::<String>::new());
    let (_, summary) =
        graphql(&s, "query($e: String!) { resourceSummary(environment: $e) { blocked } }", json!({"e": tid})).await;
    assert_eq!(
        summary["data"]["data"]["resourceSummary"]["blocked"],
        json!({"blocked": 0, "not_blocked": 2, "temporarily_blocked": 0})
    );
}
