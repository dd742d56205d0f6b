//! Tests of the console as a whole: pages rendered through the shell and the route table, and
//! server functions of several pages called in one scenario.

use crate::pages::{agents, compiles, desired_state, environment, status};
use crate::test_support::*;
use crate::*;
use axum::http::StatusCode;

#[tokio::test]
async fn environment_pages_render_with_their_data() {
    let (_dir, o) = orchestrator_with(&[]).await;
    let env = environment_with_versions(&o, 3).await;
    let router = router(Some(o));

    let (status, html) = get(router.clone(), &format!("/console/dashboard?env={env}")).await;
    assert_eq!(status, StatusCode::OK);
    for needle in ["<title>Dashboard · Inmanta</title>", "deploy-bar", "of 3 resources", "Latest versions", "candidate"]
    {
        assert!(html.contains(needle), "{needle} missing in {html}");
    }
    // The shell: sidebar, switcher with the current environment, bell.
    for needle in ["Desired State", "infra / production", "notification-bell", "halt-toggle", "theme-toggle"] {
        assert!(html.contains(needle), "{needle} missing in {html}");
    }

    let (_, html) = get(router.clone(), &format!("/console/desiredstate?env={env}")).await;
    assert!(html.contains(r#"data-version="1""#) && html.contains(r#"data-version="2""#), "{html}");
    assert!(html.contains("Promote"), "{html}");

    let (_, html) = get(router.clone(), &format!("/console/desiredstate/version?env={env}&v=2")).await;
    assert!(html.contains("std::testing::NullResource[agent1,name=n2]"), "{html}");

    let (_, html) = get(router.clone(), &format!("/console/desiredstate/compare?env={env}&from=1&to=2")).await;
    assert!(html.contains("0 added, 1 modified, 0 deleted"), "{html}");
    assert!(html.contains(r#"data-attribute="value""#), "{html}");

    let (_, html) = get(router.clone(), &format!("/console/resources?env={env}&sort=resource_id_value.asc")).await;
    assert!(html.contains("0 deploying / 3 resources"), "{html}");
    let rows: Vec<usize> =
        (0..3).map(|i| html.find(&format!("NullResource[agent1,name=n{i}]")).expect("row")).collect();
    assert!(rows.windows(2).all(|w| w[0] < w[1]), "sorted by value: {html}");
    assert!(html.contains(r#"id="deploy""#) && html.contains(r#"id="repair""#), "{html}");

    let (_, html) =
        get(router.clone(), &format!("/console/resources?env={env}&filter.resource_id_value=n1&limit=50")).await;
    assert!(html.contains("name=n1]") && !html.contains("name=n2]\""), "{html}");
    assert!(html.contains("1–1 of 1"), "{html}");

    let rid = "std::testing::NullResource%5Bagent1%2Cname%3Dn1%5D";
    let (_, html) = get(router.clone(), &format!("/console/resources/details?env={env}&rid={rid}&tab=requires")).await;
    assert!(html.contains("std::testing::NullResource[agent1,name=n0]"), "{html}");
    // The tab links: each keeps the query and sets its tab; the one shown is selected.
    let requires = html.find(r#"id="tab-requires""#).expect("the requires tab");
    let link = &html[html[..requires].rfind("<a").unwrap()..requires];
    assert!(link.contains(r#"aria-selected="true""#) && link.contains("tab=requires"), "{link}");
    assert!(html.contains(r#"id="tab-history""#) && html.contains(r#"id="tab-attributes""#), "{html}");

    let (_, html) = get(router.clone(), &format!("/console/agents?env={env}")).await;
    assert!(html.contains(r#"data-agent="agent1""#) && html.contains("Pause"), "{html}");

    let (_, html) = get(router.clone(), &format!("/console/settings?env={env}")).await;
    assert!(html.contains("Type <code>production</code> to confirm") || html.contains("to confirm"), "{html}");
    assert!(html.contains(r#"id="tab-tokens""#), "{html}");
    let (_, html) = get(router.clone(), &format!("/console/settings?env={env}&tab=configuration")).await;
    assert!(html.contains(r#"data-setting="auto_deploy""#), "{html}");
    let (_, html) = get(router.clone(), &format!("/console/settings?env={env}&tab=tokens")).await;
    assert!(html.contains("No tokens yet") && html.contains("Generate token"), "{html}");
    let (_, html) = get(router.clone(), "/console/users").await;
    assert!(html.contains("Add user") && html.contains("12 to 128 characters"), "{html}");

    let (_, html) = get(router.clone(), &format!("/console/resources/graph?env={env}")).await;
    assert!(html.contains(r#"data-id="std::testing::NullResource[agent1,name=n2]""#), "{html}");
    assert_eq!(html.matches("class=\"edge ").count(), 2, "{html}");

    for page in ["parameters", "facts", "notificationcenter"] {
        let (status, html) = get(router.clone(), &format!("/console/{page}?env={env}")).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert!(html.contains("No "), "{page}: empty state missing in {html}");
    }
}

#[tokio::test]
async fn compile_and_dry_run_server_functions() {
    let _ = any_spawner::Executor::init_tokio();
    let (_dir, o) = orchestrator_with(&[]).await;
    let env = environment_with_versions(&o, 1).await;
    let owner = Owner::new();
    owner.set();
    provide_context(o.clone());
    provide_context(orchestrator::auth::Principal::Unrestricted);
    let e = env.to_string();
    assert_eq!(compiles::fns::recompile(e.clone(), true).await.unwrap(), "Compile queued.");
    assert_eq!(compiles::fns::recompile(e.clone(), true).await.unwrap(), "Joined a compile that was already waiting.");
    let page =
        compiles::fns::compile_reports(model::TableQuery { env: e.clone(), ..Default::default() }).await.unwrap();
    assert_eq!(page.rows.len(), 1);
    assert_eq!((page.rows[0].status.as_str(), page.rows[0].force_update), ("queued", true));
    assert!(page.rows[0].message.contains("web console"), "{:?}", page.rows[0]);
    let mut bad = model::TableQuery { env: e.clone(), ..Default::default() };
    bad.filters.insert("status".into(), "sleeping".into());
    assert!(compiles::fns::compile_reports(bad).await.unwrap_err().to_string().contains("queued, running"));
    o.set_environment_setting(env, "server_compile", &serde_json::json!(false)).await.unwrap();
    assert!(!compiles::fns::server_compile_enabled(e.clone()).await.unwrap());
    let err = compiles::fns::recompile(e.clone(), false).await.unwrap_err();
    assert!(err.to_string().contains("server_compile"), "{err}");
    // No scheduler in this test: a dry run explains itself.
    let err = desired_state::fns::dry_run(e.clone(), 1).await.unwrap_err();
    assert!(err.to_string().contains("scheduler"), "{err}");
    let status = status::load_server_status().await.unwrap();
    assert_eq!((status.database.as_str(), status.database_status.as_str()), ("sqlite", "OK"));
    assert_eq!(status.status, "Warning", "no scheduler: {status:?}");
}

#[tokio::test]
async fn environment_pages_without_environment_say_what_to_do() {
    let (_dir, o) = orchestrator_with(&[]).await;
    let (status, html) = get(router(Some(o)), "/console/resources").await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("No environment selected"), "{html}");
}

#[tokio::test]
async fn server_functions_act_on_the_orchestrator() {
    let _ = any_spawner::Executor::init_tokio();
    let (_dir, o) = orchestrator_with(&[]).await;
    let env = environment_with_versions(&o, 2).await;
    let owner = Owner::new();
    owner.set();
    provide_context(o.clone());
    provide_context(orchestrator::auth::Principal::Unrestricted);
    let e = env.to_string();
    desired_state::fns::version_action(e.clone(), 2, false).await.unwrap();
    assert!(o.get_version_model(env, 2).await.unwrap().released);
    layout::set_halted(e.clone(), true).await.unwrap();
    assert!(crate::fns::environment(e.clone()).await.unwrap().halted);
    layout::set_halted(e.clone(), false).await.unwrap();
    environment::fns::save_setting(e.clone(), "autostart_agent_deploy_interval".into(), Some("120".into()), false)
        .await
        .unwrap();
    let row = environment::fns::settings(e.clone())
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.name == "autostart_agent_deploy_interval");
    assert_eq!(row.map(|r| (r.value, r.is_default)), Some(("120".into(), false)));
    assert!(
        environment::fns::save_setting(e.clone(), "auto_deploy".into(), Some("maybe".into()), false).await.is_err()
    );
    // The text of the input is parsed by the setting's type in the orchestrator.
    environment::fns::save_setting(e.clone(), "auto_deploy".into(), Some("false".into()), false).await.unwrap();
    assert_eq!(o.environment_settings(env).await.unwrap().settings["auto_deploy"], api::SettingValue::Bool(false));
    agents::agent_action(e.clone(), "agent1".into(), "pause".into()).await.unwrap();
    let agents = agents::agents(model::TableQuery { env: e.clone(), ..Default::default() }).await.unwrap();
    assert_eq!(agents.rows[0].status, "paused");
    let err = environment::fns::remove_environment(e.clone(), "wrong".into(), true).await.unwrap_err();
    assert!(err.to_string().contains("production"), "{err}");
    // No scheduler in this test: deploy explains itself.
    let err = crate::fns::deploy(e.clone(), false, None).await.unwrap_err();
    assert!(err.to_string().contains("scheduler"), "{err}");
    let id = environment::fns::create_environment(
        String::new(),
        "apps".into(),
        "dev".into(),
        String::new(),
        "main".into(),
        String::new(),
    )
    .await
    .unwrap();
    assert!(crate::fns::list_environments().await.unwrap().iter().any(|x| x.id == id && x.project_name == "apps"));
    environment::fns::remove_environment(e.clone(), "production".into(), true).await.unwrap();
    assert!(crate::fns::environment(e).await.is_err());
}

/// Server functions check the signed-in user: a read-only user reads her environment, sees
/// no other, and changes nothing; without a user nothing is served.
#[tokio::test]
async fn server_functions_check_the_signed_in_user() {
    let _ = any_spawner::Executor::init_tokio();
    let (_dir, o) = orchestrator_with(&[]).await;
    let env = environment_with_versions(&o, 1).await;
    let project = o.list_projects().await.unwrap()[0].id;
    let hidden = o
        .create_environment(api::environment::EnvironmentCreate {
            project_id: project,
            name: "hidden".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let owner = Owner::new();
    owner.set();
    provide_context(o.clone());
    let e = env.to_string();
    let error =
        desired_state::fns::versions(model::TableQuery { env: e.clone(), ..Default::default() }).await.unwrap_err();
    assert!(error.to_string().contains("not signed in"), "{error}");

    o.create_user("rita", "Rita-password-123", false, false).await.unwrap();
    o.assign_role("rita", env, "read-only").await.unwrap();
    let rita = o.user_record("rita").await.unwrap().unwrap();
    provide_context(rita.principal());
    let listed = crate::fns::list_environments().await.unwrap();
    assert_eq!(listed.iter().map(|e| e.id.clone()).collect::<Vec<_>>(), vec![e.clone()]);
    assert!(desired_state::fns::versions(model::TableQuery { env: e.clone(), ..Default::default() }).await.is_ok());
    let error = layout::set_halted(e.clone(), true).await.unwrap_err();
    assert!(error.to_string().contains("not allowed"), "{error}");
    assert!(!o.get_environment(env, Default::default()).await.unwrap().halted);
    let error = crate::fns::environment(hidden.id.to_string()).await.unwrap_err();
    assert!(error.to_string().contains("no role"), "{error}");
}

/// A failure on the server's side reaches the browser as a fixed message with an error id, as the
/// REST API answers it: never the database's own text (only the server log has that).
#[tokio::test]
async fn a_database_error_reaches_the_browser_as_an_error_id_only() {
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;
    let (_dir, o) = orchestrator_with(&[("infra", "production")]).await;
    sqlx::query("DROP TABLE environment").execute(o.store().pool()).await.unwrap();
    let request = Request::post("/console/fn/list_environments")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::empty())
        .unwrap();
    let response = router(Some(o)).oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    let body = String::from_utf8_lossy(&body);
    assert!(body.contains("internal server error (error id "), "{body}");
    for leak in ["no such table", "environment", "database error", "sqlite"] {
        assert!(!body.to_lowercase().contains(leak), "{leak:?} reached the browser: {body}");
    }
}

/// A server function called with a malformed resource id is refused with 400 and a message
/// naming the id and the form of one; a well-formed id of no resource is the orchestrator's 404
/// text (as every orchestrator refusal reaches the browser).
#[tokio::test]
async fn a_malformed_resource_id_is_refused_before_the_call() {
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;
    let (_dir, o) = orchestrator_with(&[]).await;
    let env = environment_with_versions(&o, 1).await;
    let call = |rid: &str| {
        let body = serde_json::json!({"env": env.to_string(), "rid": rid}).to_string();
        Request::post("/console/fn/resource_details")
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap()
    };
    let response = router(Some(o.clone())).oneshot(call("not-an-id")).await.unwrap();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    let error: crate::error::ConsoleError = serde_json::from_slice(&body).unwrap();
    let crate::error::ConsoleError::Refused(message) = &error else { panic!("not a refusal: {error:?}") };
    assert!(message.contains(r#"invalid resource id "not-an-id""#), "{message}");
    assert!(message.contains("<namespace>::<Type>[<agent>,<attribute>=<value>]"), "{message}");

    let response = router(Some(o)).oneshot(call("std::testing::NullResource[agent1,name=n0]")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    // The page parses its `?rid=` the same way before it calls.
    let error = crate::components::rid_argument("fs::File[a]").unwrap_err().to_string();
    assert!(error.contains(r#"invalid resource id "fs::File[a]""#), "{error}");
}

/// Parameters and facts are two pages over one table: each lists its own rows with its own
/// columns, and a long value folds.
#[tokio::test]
async fn parameters_and_facts_pages_list_their_own_rows() {
    use orchestrator::parameters::NewParameter;
    let (_dir, o) = orchestrator_with(&[]).await;
    let env = environment_with_versions(&o, 1).await;
    let router = router(Some(o.clone()));

    let (_, html) = get(router.clone(), &format!("/console/parameters?env={env}")).await;
    assert!(html.contains("No parameters") && html.contains("inmanta param set"), "{html}");
    let (_, html) = get(router.clone(), &format!("/console/facts?env={env}")).await;
    assert!(html.contains("No facts"), "{html}");

    let rid = "std::testing::NullResource[agent1,name=n0]";
    let set = |name: &str, source: &str, value: serde_json::Value, resource_id: Option<&str>| NewParameter {
        name: name.into(),
        source: source.into(),
        value,
        resource_id: resource_id.map(str::to_string),
        metadata: None,
        expires: None,
        recompile: false,
    };
    o.set_parameter(env, set("region", "user", "eu-west".into(), None)).await.unwrap();
    o.set_parameter(env, set("disk", "fact", "x".repeat(200).into(), Some(rid))).await.unwrap();

    let (_, html) = get(router.clone(), &format!("/console/parameters?env={env}")).await;
    assert!(html.contains(r#"id="parameters""#) && html.contains("region") && html.contains("eu-west"), "{html}");
    assert!(html.contains("Source") && !html.contains("disk"), "{html}");
    let (_, html) = get(router.clone(), &format!("/console/facts?env={env}")).await;
    assert!(html.contains(r#"id="facts""#) && html.contains("disk") && !html.contains("region"), "{html}");
    assert!(html.contains("/console/resources/details?env=") && html.contains("200 characters"), "{html}");
}
