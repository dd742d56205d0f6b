//! Discovered resources over the API (`/api/v2/discovered`, reference/api.md): agents report,
//! operators list (paging, filters, sort), read and delete; `managed_resource_uri` once a released
//! version manages the same id; errors are JSON with the right 4xx. The reports of real discovery
//! handlers are in python_handlers.rs.

mod common;

use common::{TestServer, client_with};
use serde_json::{Value, json};

async fn new_environment(s: &TestServer) -> String {
    let (_, p) = s.call("PUT", "/api/v2/project", None, Some(json!({"name": "p"}))).await;
    let (_, e) =
        s.call("PUT", "/api/v2/environment", None, Some(json!({"project_id": p["data"]["id"], "name": "e"}))).await;
    e["data"]["id"].as_str().unwrap().to_string()
}

/// Calls the API with an agent token of `env`.
async fn as_agent(
    s: &TestServer,
    token: &str,
    method: &str,
    path: &str,
    env: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = client_with(Some(token)).request(method, format!("{}{path}", s.url)).header("X-Inmanta-tid", env);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|_| panic!("{path} answered non-JSON: {text}")))
}

fn found(id: &str, discovery: &str, values: Value) -> Value {
    json!({"discovered_resource_id": id, "discovery_resource_id": discovery, "values": values})
}

fn ids(list: &Value) -> Vec<String> {
    list["data"].as_array().unwrap().iter().map(|d| d["discovered_resource_id"].as_str().unwrap().to_string()).collect()
}

const SCAN: &str = "kvfile::Discovery[host1,directory=/etc/app]";

#[tokio::test]
async fn agents_report_and_operators_list_read_and_delete() {
    let s = TestServer::start().await;
    let env = new_environment(&s).await;
    let agent = s.environment_token(&env, &["agent"]).await;
    let batch = json!({"discovered_resources": [
        found("kvfile::Line[host1,key=port]", SCAN, json!({"path": "/etc/app/a.conf", "key": "port", "value": "80"})),
        found("kvfile::Line[host1,key=name]", SCAN, json!({"path": "/etc/app/a.conf", "key": "name", "value": "web"})),
        found("std::testing::NullResource[host2,name=x]", SCAN, json!({"name": "x"})),
    ]});
    // Inmanta's client sends the batch to `/discovered/`; both spellings work.
    let (status, body) = as_agent(&s, &agent, "POST", "/api/v2/discovered/", &env, Some(batch)).await;
    assert_eq!((status, &body), (200, &json!({"data": null})));
    let one = "kvfile::Line[host2,key=mode]";
    let path = format!("/api/v2/discovered/{}", api::url::encode(one));
    let (status, body) = as_agent(
        &s,
        &agent,
        "POST",
        &path,
        &env,
        Some(json!({"discovery_resource_id": SCAN, "values": {"key": "mode", "value": "fast"}})),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // The whole list, sorted by id by default.
    let (status, list) = s.call("GET", "/api/v2/discovered", Some(&env), None).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(
        ids(&list),
        [
            "kvfile::Line[host1,key=name]",
            "kvfile::Line[host1,key=port]",
            "kvfile::Line[host2,key=mode]",
            "std::testing::NullResource[host2,name=x]"
        ]
    );
    assert_eq!(list["metadata"]["total"], 4);
    let port = &list["data"][1];
    assert_eq!(port["resource_type"], "kvfile::Line");
    assert_eq!(port["agent"], "host1");
    assert_eq!(port["resource_id_value"], "port");
    assert_eq!(port["values"], json!({"path": "/etc/app/a.conf", "key": "port", "value": "80"}));
    assert_eq!(port["discovery_resource_id"], SCAN);
    assert_eq!(port["discovery_resource_uri"], format!("/api/v2/resource/{}", api::url::encode(SCAN)));
    assert_eq!(port["managed_resource_uri"], Value::Null, "nothing manages it yet");

    // A released version that manages one of them.
    let managed = "std::testing::NullResource[host2,name=x]";
    let (_, v) = s.call("POST", "/api/v2/reserve_version", Some(&env), None).await;
    let version = v["data"].as_i64().unwrap();
    let resource = json!({"id": format!("{managed},v={version}"), "name": "x", "agentname": "host2", "fail": false,
        "purged": false, "send_event": false, "requires": []});
    let (status, body) =
        s.call("PUT", "/api/v1/version", Some(&env), Some(json!({"version": version, "resources": [resource]}))).await;
    assert_eq!(status, 200, "{body}");
    // Released by auto_deploy, or here (a second release is refused, and changes nothing).
    s.call("POST", &format!("/api/v1/version/{version}"), Some(&env), Some(json!({"push": false}))).await;
    let mut list = Value::Null;
    for _ in 0..100 {
        list = s.call("GET", "/api/v2/discovered?filter.managed=true", Some(&env), None).await.1;
        if !ids(&list).is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(ids(&list), [managed]);
    assert_eq!(list["data"][0]["managed_resource_uri"], format!("/api/v2/resource/{}", api::url::encode(managed)));
    let (_, list) = s.call("GET", "/api/v2/discovered?filter.managed=false", Some(&env), None).await;
    assert_eq!(ids(&list).len(), 3);
    let (_, single) =
        s.call("GET", &format!("/api/v2/discovered/{}", api::url::encode(managed)), Some(&env), None).await;
    assert_eq!(single["data"]["managed_resource_uri"], list_uri(managed), "{single}");

    // Filters (partial, case-insensitive), sort and paging.
    let (_, list) = s.call("GET", "/api/v2/discovered?filter.agent=HOST2", Some(&env), None).await;
    assert_eq!(ids(&list), ["kvfile::Line[host2,key=mode]", managed]);
    let (_, list) = s
        .call("GET", "/api/v2/discovered?filter.resource_type=line&filter.resource_id_value=o", Some(&env), None)
        .await;
    assert_eq!(ids(&list), ["kvfile::Line[host1,key=port]", "kvfile::Line[host2,key=mode]"]);
    let (_, list) = s.call("GET", "/api/v2/discovered?sort=resource_id_value.desc", Some(&env), None).await;
    assert_eq!(ids(&list)[0], managed, "x sorts last ascending");
    let (_, page) = s.call("GET", "/api/v2/discovered?limit=3", Some(&env), None).await;
    assert_eq!(ids(&page).len(), 3);
    assert_eq!(page["metadata"]["after"], 1);
    let next = page["links"]["next"].as_str().expect("a next link");
    let (_, rest) = s.call("GET", next, Some(&env), None).await;
    assert_eq!(ids(&rest), [managed], "{next}");

    // A new report of a known id replaces it.
    let again =
        json!({"discovered_resources": [found("kvfile::Line[host1,key=port]", SCAN, json!({"value": "8080"}))]});
    assert_eq!(as_agent(&s, &agent, "POST", "/api/v2/discovered", &env, Some(again)).await.0, 200);
    let port_path = format!("/api/v2/discovered/{}", api::url::encode("kvfile::Line[host1,key=port]"));
    let (_, single) = s.call("GET", &port_path, Some(&env), None).await;
    assert_eq!(single["data"]["values"], json!({"value": "8080"}));

    // Deleted one by one (an unknown id is 404), and in a batch (unknown ids are ignored).
    let (status, body) = s.call("DELETE", &port_path, Some(&env), None).await;
    assert_eq!((status, &body), (200, &json!({"data": null})));
    let (status, body) = s.call("DELETE", &port_path, Some(&env), None).await;
    assert_eq!(status, 404, "{body}");
    assert!(body["message"].as_str().unwrap().contains("kvfile::Line[host1,key=port]"), "{body}");
    let (status, _) = s.call("GET", &port_path, Some(&env), None).await;
    assert_eq!(status, 404);
    let ids_body = json!({"discovered_resource_ids": ["kvfile::Line[host1,key=name]", "kvfile::Line[nowhere,key=x]"]});
    let (status, body) = s.call("DELETE", "/api/v2/discovered/", Some(&env), Some(ids_body)).await;
    assert_eq!(status, 200, "{body}");
    let (_, list) = s.call("GET", "/api/v2/discovered", Some(&env), None).await;
    assert_eq!(ids(&list), ["kvfile::Line[host2,key=mode]", managed]);

    // Clearing the environment forgets them.
    let (status, body) = s.call("DELETE", &format!("/api/v1/decommission/{env}"), None, None).await;
    assert_eq!(status, 200, "{body}");
    let (_, list) = s.call("GET", "/api/v2/discovered", Some(&env), None).await;
    assert_eq!(ids(&list), Vec::<String>::new());
}

fn list_uri(rid: &str) -> String {
    format!("/api/v2/resource/{}", api::url::encode(rid))
}

#[tokio::test]
async fn wrong_requests_get_a_json_4xx_that_says_what_to_fix() {
    let s = TestServer::start().await;
    let env = new_environment(&s).await;
    let agent = s.environment_token(&env, &["agent"]).await;
    let post = |body: Value| {
        let (s, agent, env) = (&s, agent.clone(), env.clone());
        async move { as_agent(s, &agent, "POST", "/api/v2/discovered", &env, Some(body)).await }
    };
    let cases = [
        (json!({"discovered_resources": [found("not-an-id", SCAN, json!({}))]}), "discovered_resource_id"),
        (
            json!({"discovered_resources": [found("kvfile::Line[a,key=b]", "kvfile::Discovery[a]", json!({}))]}),
            "discovery_resource_id",
        ),
        (
            json!({"discovered_resources": [{"discovered_resource_id": "kvfile::Line[a,key=b]", "discovery_resource_id": SCAN}]}),
            "values",
        ),
        (json!({"discovered_resources": [found("kvfile::Line[a,key=b]", SCAN, json!([1, 2]))]}), "values"),
        (json!({"resources": []}), "resources"),
    ];
    for (body, names) in cases {
        let (status, answer) = post(body.clone()).await;
        assert_eq!(status, 400, "{body} -> {answer}");
        let message = answer["message"].as_str().unwrap_or_else(|| panic!("{answer}"));
        assert!(message.contains(names), "{body}: {message}");
    }
    // One bad entry refuses the whole batch.
    let mixed = json!({"discovered_resources": [found("kvfile::Line[a,key=b]", SCAN, json!({})), found("bad", SCAN, json!({}))]});
    assert_eq!(post(mixed).await.0, 400);
    let (_, list) = s.call("GET", "/api/v2/discovered", Some(&env), None).await;
    assert_eq!(list["metadata"]["total"], 0, "{list}");

    for (query, names) in [
        ("filter.colour=red", "colour"),
        ("filter.managed=maybe", "managed"),
        ("sort=values.asc", "values"),
        ("sort=agent.up", "asc or desc"),
        ("limit=-1", "limit"),
    ] {
        let (status, answer) = s.call("GET", &format!("/api/v2/discovered?{query}"), Some(&env), None).await;
        assert_eq!(status, 400, "{query}: {answer}");
        assert!(answer["message"].as_str().unwrap().contains(names), "{query}: {answer}");
    }
    let (status, answer) =
        s.call("GET", "/api/v2/discovered/kvfile%3A%3ALine%5Ba%2Ckey%3Dnone%5D", Some(&env), None).await;
    assert_eq!(status, 404, "{answer}");
    let (status, answer) = s.call("DELETE", "/api/v2/discovered", Some(&env), Some(json!({"ids": []}))).await;
    assert_eq!(status, 400, "{answer}");

    // Reporting is for agents: a user (even the admin) is refused; no environment is 400 or 404.
    let body = json!({"discovered_resources": [found("kvfile::Line[a,key=b]", SCAN, json!({}))]});
    let (status, answer) = s.call("POST", "/api/v2/discovered", Some(&env), Some(body.clone())).await;
    assert_eq!(status, 403, "{answer}");
    assert!(answer["message"].as_str().unwrap().contains("agents"), "{answer}");
    let unknown = uuid::Uuid::new_v4().to_string();
    let (status, answer) = s.call("GET", "/api/v2/discovered", Some(&unknown), None).await;
    assert_eq!(status, 404, "{answer}");
    // An agent token of another environment cannot report into this one.
    let other = {
        let (_, p) = s.call("PUT", "/api/v2/project", None, Some(json!({"name": "q"}))).await;
        let (_, e) =
            s.call("PUT", "/api/v2/environment", None, Some(json!({"project_id": p["data"]["id"], "name": "f"}))).await;
        e["data"]["id"].as_str().unwrap().to_string()
    };
    let (status, answer) = as_agent(&s, &agent, "POST", "/api/v2/discovered", &other, Some(body)).await;
    assert_eq!(status, 403, "{answer}");
}
