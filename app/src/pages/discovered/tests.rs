//! The discovered resources page, rendered by the server, and its server functions.

use axum::http::StatusCode;
use leptos::prelude::*;

use super::*;
use crate::test_support::*;

const MANAGED: &str = "std::testing::NullResource[agent1,name=n1]";
const DISCOVERY: &str = "std::testing::NullResource[agent1,name=n0]";
const UNMANAGED: &str = "test::Host[agent2,name=web1]";
const UNMANAGED_DISCOVERY: &str = "test::HostDiscovery[agent2,name=scan]";

async fn with_discovered() -> (tempfile::TempDir, orchestrator::Orchestrator, uuid::Uuid) {
    let (dir, o) = orchestrator_with(&[]).await;
    let env = environment_with_versions(&o, 3).await;
    let report = |id: &str, by: &str, values: serde_json::Value| api::resource::DiscoveredResourceInput {
        discovered_resource_id: id.into(),
        values,
        discovery_resource_id: by.into(),
    };
    o.create_discovered_resources(
        env,
        &[
            report(MANAGED, DISCOVERY, serde_json::json!({"name": "n1", "value": "seen"})),
            report(UNMANAGED, UNMANAGED_DISCOVERY, serde_json::json!({"name": "web1", "ports": [80, 443]})),
        ],
    )
    .await
    .unwrap();
    (dir, o, env)
}

#[tokio::test]
async fn the_page_lists_filters_and_links_the_discovering_and_managed_resources() {
    let (_dir, o, env) = with_discovered().await;
    let router = router(Some(o));

    let (status, html) = get(router.clone(), &format!("/console/discovered?env={env}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("<title>Discovered Resources · Inmanta</title>"), "{html}");
    assert!(html.contains(&format!(r#"data-id="{MANAGED}" data-managed="true""#)), "{html}");
    assert!(html.contains(&format!(r#"data-id="{UNMANAGED}" data-managed="false""#)), "{html}");
    // The managed one and its (managed) discovery resource link to their resource pages.
    let link = |rid: &str| crate::layout::resource_link(&env.to_string(), &id(rid)).replace('&', "&amp;");
    assert!(html.contains(&format!(r#"href="{}" class="managed-link""#, link(MANAGED))), "{html}");
    assert!(html.contains(&format!(r#"href="{}" class="mono discovery-link""#, link(DISCOVERY))), "{html}");
    // Neither exists for the other: it is not managed, its discovery resource is not either.
    assert!(html.contains("not managed"), "{html}");
    assert!(html.contains(&format!(r#"<span class="mono discovery-id">{UNMANAGED_DISCOVERY}</span>"#)), "{html}");
    assert!(html.contains("[80,443]") || html.contains("443"), "values shown: {html}");
    assert!(html.contains("1–2 of 2"), "{html}");
    // The sidebar leads here.
    assert!(html.contains(&format!(r#"href="/console/discovered?env={env}""#)), "{html}");

    let (_, html) = get(router.clone(), &format!("/console/discovered?env={env}&filter.agent=agent2")).await;
    assert!(html.contains(UNMANAGED) && !html.contains(&format!(r#"data-id="{MANAGED}""#)), "{html}");
    let (_, html) = get(router.clone(), &format!("/console/discovered?env={env}&filter.managed=true")).await;
    assert!(html.contains(&format!(r#"data-id="{MANAGED}""#)) && !html.contains(UNMANAGED), "{html}");
    let (_, html) = get(router.clone(), &format!("/console/discovered?env={env}&filter.resource_type=nothing")).await;
    assert!(html.contains("No discovered resources match the filters"), "{html}");
}

#[tokio::test]
async fn delete_forgets_one_and_reading_needs_the_environment() {
    let _ = any_spawner::Executor::init_tokio();
    let (_dir, o, env) = with_discovered().await;
    let owner = Owner::new();
    owner.set();
    provide_context(o.clone());
    provide_context(orchestrator::auth::Principal::Unrestricted);
    let query = TableQuery { env: env.to_string(), ..Default::default() };

    let page = discovered_resources(query.clone()).await.unwrap();
    assert_eq!(page.rows.len(), 2);
    let managed = page.rows.iter().find(|r| r.id == id(MANAGED)).unwrap();
    assert!(managed.managed && managed.discovery_managed, "{managed:?}");
    assert_eq!(managed.values, vec![("name".to_string(), "n1".to_string()), ("value".into(), "seen".into())]);

    delete_discovered(env.to_string(), id(UNMANAGED)).await.unwrap();
    let page = discovered_resources(query.clone()).await.unwrap();
    assert_eq!(page.rows.iter().map(|r| r.id.to_string()).collect::<Vec<_>>(), vec![MANAGED]);
    let error = delete_discovered(env.to_string(), id(UNMANAGED)).await.unwrap_err();
    assert!(error.to_string().contains(UNMANAGED), "{error}");

    // A user with no role in the environment reads nothing.
    o.create_user("nora", "Nora-password-123", false, false).await.unwrap();
    provide_context(o.user_record("nora").await.unwrap().unwrap().principal());
    let error = discovered_resources(query).await.unwrap_err();
    assert!(error.to_string().contains("not allowed"), "{error}");
}

fn id(text: &str) -> api::ResourceId {
    api::ResourceId::parse(text).unwrap()
}
