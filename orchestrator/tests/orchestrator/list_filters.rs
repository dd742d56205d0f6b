//! The text filters of both list builders on a real database (SQLite, or PostgreSQL when
//! `INMANTA_TEST_POSTGRES` holds an admin URL): `%`, `_` and `\` in a REST filter value are
//! those characters, and in a GraphQL `contains` pattern they mean what Inmanta's `ilike` makes
//! of them (wildcards, `\` before one for the character itself), the same on both databases.

use api::version::PutVersion;
use orchestrator::Orchestrator;
use orchestrator::paging::page_request;
use orchestrator::resource_pages::{KeysetRequest, ResourceFilter, TextMatch};
use uuid::Uuid;

/// Id values that a wildcard would confuse with one another.
const VALUES: &[&str] = &["a%b_c\\d", "aXbYc\\d", "a%b_cd", "A%B_C\\D", "a%%b_c\\d", "zzz"];

async fn with_resources() -> (Orchestrator, Uuid, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let (o, env) = orchestrator::testing::setup(dir.path()).await.unwrap();
    let version = o.reserve_version(env).await.unwrap();
    let resources = VALUES
        .iter()
        .enumerate()
        .map(|(i, value)| {
            let agent = if i % 2 == 0 { "agent%_\\1" } else { "agentX_1" };
            serde_json::json!({
                "id": format!("std::testing::NullResource[{agent},name={value}],v={version}"),
                "name": value, "agentname": agent, "send_event": false, "purged": false, "requires": [],
            })
            .as_object()
            .cloned()
            .unwrap()
        })
        .collect();
    o.put_version(env, PutVersion { version, resources, ..Default::default() }).await.unwrap();
    (o, env, dir)
}

/// The id values the REST resource list answers for these query pairs.
async fn rest(o: &Orchestrator, env: Uuid, pairs: &[(&str, &str)]) -> Vec<String> {
    let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let (page, _) = o.released_resources(env, &page_request(&pairs).unwrap(), false).await.unwrap();
    let mut values: Vec<String> = page.items.iter().map(|r| r.id_details.resource_id_value.clone()).collect();
    values.sort();
    values
}

/// The id values the GraphQL keyset page answers for this filter, and its count.
async fn graphql(o: &Orchestrator, filter: ResourceFilter) -> (Vec<String>, u64) {
    let page = o.resource_state_page(&filter, &KeysetRequest { limit: 100, ..Default::default() }).await.unwrap();
    let mut values: Vec<String> = page.rows.iter().map(|r| r.resource.id_value.clone()).collect();
    values.sort();
    (values, o.count_resource_states(&filter).await.unwrap())
}

fn contains(patterns: &[&str]) -> Option<TextMatch> {
    Some(TextMatch { contains: Some(patterns.iter().map(|p| p.to_string()).collect()), ..Default::default() })
}

#[tokio::test]
async fn a_rest_filter_value_matches_percent_underscore_and_backslash_literally() {
    let (o, env, _dir) = with_resources().await;
    // Case-insensitive, and nothing but the characters themselves: not `aXbYc\d`, `a%b_cd` or `a%%b_c\d`.
    assert_eq!(rest(&o, env, &[("filter.resource_id_value", "a%b_c\\d")]).await, ["A%B_C\\D", "a%b_c\\d"]);
    assert_eq!(
        rest(&o, env, &[("filter.resource_id_value", "%")]).await,
        ["A%B_C\\D", "a%%b_c\\d", "a%b_c\\d", "a%b_cd"]
    );
    assert_eq!(rest(&o, env, &[("filter.resource_id_value", "\\")]).await.len(), 4);
    // The agent filter is resolved to the agents first (its own statement): the same matching.
    let agents = rest(&o, env, &[("filter.agent", "t%_\\")]).await;
    assert_eq!(agents, ["a%%b_c\\d", "a%b_c\\d", "a%b_cd"], "only agent%_\\1, not agentX_1");
    assert!(rest(&o, env, &[("filter.agent", "t%%")]).await.is_empty());
}

#[tokio::test]
async fn a_graphql_contains_pattern_escapes_with_backslash_on_both_databases() {
    let (o, env, _dir) = with_resources().await;
    let filter =
        |resource_id_value, agent| ResourceFilter { environment: env, resource_id_value, agent, ..Default::default() };
    // Escaped: the characters themselves, case-insensitively.
    let (literal, count) = graphql(&o, filter(contains(&["%a\\%b\\_c\\\\d%"]), None)).await;
    assert_eq!(literal, ["A%B_C\\D", "a%b_c\\d"]);
    assert_eq!(count, 2);
    // Unescaped, as Inmanta's console sends them: wildcards.
    let (wild, count) = graphql(&o, filter(contains(&["a_b_c%"]), None)).await;
    assert_eq!(wild, ["A%B_C\\D", "a%b_c\\d", "a%b_cd", "aXbYc\\d"]);
    assert_eq!(count, 4);
    let (agents, count) = graphql(&o, filter(None, contains(&["%t\\%\\_\\\\1"]))).await;
    assert_eq!(agents, ["a%%b_c\\d", "a%b_c\\d", "a%b_cd"]);
    assert_eq!(count, 3);
    let not = TextMatch { not_contains: Some(vec!["%\\\\%".into()]), ..Default::default() };
    let (without_backslash, _) = graphql(&o, filter(Some(not), None)).await;
    assert_eq!(without_backslash, ["a%b_cd", "zzz"]);
}
