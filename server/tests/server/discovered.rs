//! Discovered resources over the API (`/api/v2/discovered`, docs/api.md): agents report,
//! operators list (paging, filters, sort), read and delete; `managed_resource_uri` once a released
//! version manages the same id; errors are JSON with the right 4xx. The reports of real discovery
//! handlers are in python_handlers.rs.

use crate::common;

use api::Envelope;
use api::client::{Client, ListQuery};
use api::resource::{DiscoveredResource, DiscoveredResourceInput};
use api::version::PutVersion;
use common::{TestServer, client_with, refusal, refused};
use serde_json::{Value, json};
use uuid::Uuid;

/// A new environment's id, as text for the raw calls.
async fn new_environment(s: &TestServer) -> String {
    s.new_environment("p", "e").await.to_string()
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

fn listed(page: &Envelope<Vec<DiscoveredResource>>) -> Vec<String> {
    page.data.iter().map(|d| d.discovered_resource_id.to_string()).collect()
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
        // reported with a version, as Inmanta 20.1 accepts: stored as the resource it names
        found("std::testing::NullResource[host2,name=x],v=7", SCAN, json!({"name": "x"})),
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
    let client = s.client();
    let env_id: Uuid = env.parse().unwrap();
    let list = client.discovered_resources(env_id, &ListQuery::new()).await.unwrap();
    assert_eq!(
        listed(&list),
        [
            "kvfile::Line[host1,key=name]",
            "kvfile::Line[host1,key=port]",
            "kvfile::Line[host2,key=mode]",
            "std::testing::NullResource[host2,name=x]"
        ]
    );
    assert_eq!(list.metadata.as_ref().unwrap()["total"], 4);
    let port = &list.data[1];
    assert_eq!(port.resource_type, "kvfile::Line");
    assert_eq!(port.agent, "host1");
    assert_eq!(port.resource_id_value, "port");
    assert_eq!(Value::Object(port.values.clone()), json!({"path": "/etc/app/a.conf", "key": "port", "value": "80"}));
    assert_eq!(port.discovery_resource_id.to_string(), SCAN);
    assert_eq!(port.discovery_resource_uri, Some(format!("/api/v2/resource/{}", api::url::encode(SCAN))));
    assert_eq!(port.managed_resource_uri, None, "nothing manages it yet");

    // A released version that manages one of them.
    let managed = "std::testing::NullResource[host2,name=x]";
    let version = client.reserve_version(env_id).await.unwrap();
    let resource = json!({"id": format!("{managed},v={version}"), "name": "x", "agentname": "host2", "fail": false,
        "purged": false, "send_event": false, "requires": []});
    let body = PutVersion { version, resources: vec![resource.as_object().unwrap().clone()], ..Default::default() };
    client.put_version(env_id, &body).await.unwrap();
    // Released by auto_deploy, or here (a second release is refused, and changes nothing).
    let _ = client.release_version(env_id, version, false).await;
    let managed_query = ListQuery::new().filter("managed", "true");
    let mut list = client.discovered_resources(env_id, &managed_query).await.unwrap();
    for _ in 0..100 {
        if !list.data.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        list = client.discovered_resources(env_id, &managed_query).await.unwrap();
    }
    assert_eq!(listed(&list), [managed]);
    assert_eq!(list.data[0].managed_resource_uri, Some(format!("/api/v2/resource/{}", api::url::encode(managed))));
    let list = client.discovered_resources(env_id, &ListQuery::new().filter("managed", "false")).await.unwrap();
    assert_eq!(listed(&list).len(), 3);
    let single = client.discovered_resource(env_id, managed).await.unwrap();
    assert_eq!(single.managed_resource_uri, Some(list_uri(managed)), "{single:?}");

    // Filters (partial, case-insensitive), sort and paging.
    let list = client.discovered_resources(env_id, &ListQuery::new().filter("agent", "HOST2")).await.unwrap();
    assert_eq!(listed(&list), ["kvfile::Line[host2,key=mode]", managed]);
    let query = ListQuery::new().filter("resource_type", "line").filter("resource_id_value", "o");
    let list = client.discovered_resources(env_id, &query).await.unwrap();
    assert_eq!(listed(&list), ["kvfile::Line[host1,key=port]", "kvfile::Line[host2,key=mode]"]);
    let list = client.discovered_resources(env_id, &ListQuery::new().sort("resource_id_value.desc")).await.unwrap();
    assert_eq!(listed(&list)[0], managed, "x sorts last ascending");
    let page = client.discovered_resources(env_id, &ListQuery::new().limit(3)).await.unwrap();
    assert_eq!(listed(&page).len(), 3);
    assert_eq!(page.metadata.as_ref().unwrap()["after"], 1);
    let next = page.links.and_then(|l| l.next).expect("a next link");
    let rest = client.page::<DiscoveredResource>(&next, Some(env_id)).await.unwrap();
    assert_eq!(listed(&rest), [managed], "{next}");

    // A new report of a known id replaces it (through the typed client with the agent's token).
    let again = DiscoveredResourceInput {
        discovered_resource_id: "kvfile::Line[host1,key=port]".into(),
        values: json!({"value": "8080"}),
        discovery_resource_id: SCAN.into(),
    };
    let as_agent_client = Client::new(s.url.clone()).with_token(Some(agent.clone()));
    as_agent_client.report_discovered(env_id, &[again]).await.unwrap();
    let port_id = "kvfile::Line[host1,key=port]";
    let single = client.discovered_resource(env_id, port_id).await.unwrap();
    assert_eq!(Value::Object(single.values), json!({"value": "8080"}));

    // Deleted one by one (an unknown id is 404), and in a batch (unknown ids are ignored).
    let port_path = format!("/api/v2/discovered/{}", api::url::encode(port_id));
    let (status, body) = s.call("DELETE", &port_path, Some(&env), None).await;
    assert_eq!((status, &body), (200, &json!({"data": null})));
    let (status, message) = refusal(client.delete_discovered_resource(env_id, port_id).await);
    assert_eq!(status, 404, "{message}");
    assert!(message.contains("kvfile::Line[host1,key=port]"), "{message}");
    assert_eq!(refused(client.discovered_resource(env_id, port_id).await), 404);
    // Inmanta's client sends the batch to `/discovered/`.
    let ids_body = json!({"discovered_resource_ids": ["kvfile::Line[host1,key=name]", "kvfile::Line[nowhere,key=x]"]});
    let (status, body) = s.call("DELETE", "/api/v2/discovered/", Some(&env), Some(ids_body)).await;
    assert_eq!(status, 200, "{body}");
    let list = client.discovered_resources(env_id, &ListQuery::new()).await.unwrap();
    assert_eq!(listed(&list), ["kvfile::Line[host2,key=mode]", managed]);
    client.delete_discovered_resources(env_id, &["kvfile::Line[nowhere,key=y]".to_string()]).await.unwrap();

    // Clearing the environment forgets them.
    let (status, body) = s.call("DELETE", &format!("/api/v1/decommission/{env}"), None, None).await;
    assert_eq!(status, 200, "{body}");
    let list = client.discovered_resources(env_id, &ListQuery::new()).await.unwrap();
    assert_eq!(listed(&list), Vec::<String>::new());
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
        (
            json!({"discovered_resources": [found("kvfile::Line[a,key=b", SCAN, json!({}))]}),
            "discovered_resource_id: invalid resource id",
        ),
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
    let list = s.client().discovered_resources(env.parse().unwrap(), &ListQuery::new()).await.unwrap();
    assert_eq!(list.metadata.as_ref().unwrap()["total"], 0, "{list:?}");

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
    let other = s.new_environment("q", "f").await.to_string();
    let (status, answer) = as_agent(&s, &agent, "POST", "/api/v2/discovered", &other, Some(body)).await;
    assert_eq!(status, 403, "{answer}");
}
