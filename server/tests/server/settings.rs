//! Environment settings are checked by what they mean (issue 36): values that would silently
//! turn a timer off, overflow a clock or delete what was just stored are refused with 400 and a
//! message naming the setting and what it takes, on the v1 and v2 routes alike.

use crate::common;

use common::TestServer;
use serde_json::{Value, json};

/// Values every route must refuse: each was answered 200 before.
fn absurd() -> Vec<(&'static str, Value)> {
    vec![
        ("autostart_agent_deploy_interval", json!(-1)),
        ("autostart_agent_deploy_interval", json!("-1")),
        ("autostart_agent_deploy_interval", json!(1.5)),
        ("autostart_agent_deploy_interval", json!("")),
        ("autostart_agent_deploy_interval", json!("every hour")),
        ("autostart_agent_deploy_interval", json!("99999999999999999999")),
        ("autostart_agent_repair_interval", json!(-600)),
        ("autostart_agent_repair_interval", json!("61 * * * *")),
        ("autostart_agent_repair_interval", json!("0 0 30 2 *")),
        ("auto_full_compile", json!("nonsense")),
        ("auto_full_compile", json!("* * *")),
        ("available_versions_to_keep", json!(0)),
        ("resource_action_logs_retention", json!(0)),
        ("notification_retention", json!(0)),
        ("notification_retention", json!(1_000_000_000)),
        ("environment_metrics_retention", json!(1_000_000_000_000i64)),
        ("recompile_backoff", json!(1e300)),
    ]
}

/// Sensible values, with what is read back.
fn sensible() -> Vec<(&'static str, Value, Value)> {
    vec![
        ("autostart_agent_deploy_interval", json!(0), json!("0")),
        ("autostart_agent_deploy_interval", json!(30), json!("30")),
        ("autostart_agent_deploy_interval", json!("*/5 * * * *"), json!("*/5 * * * *")),
        ("autostart_agent_repair_interval", json!("3600"), json!("3600")),
        ("auto_full_compile", json!("0 3 * * *"), json!("0 3 * * *")),
        ("auto_full_compile", json!(""), json!("")),
        ("available_versions_to_keep", json!(1), json!(1)),
        ("resource_action_logs_retention", json!(30), json!(30)),
        ("notification_retention", json!("90"), json!(90)),
        ("environment_metrics_retention", json!(0), json!(0)),
        ("recompile_backoff", json!(2.5), json!(2.5)),
    ]
}

#[tokio::test]
async fn absurd_settings_are_refused_on_v1_and_v2_and_sensible_ones_kept() {
    let s = TestServer::start().await;
    let env = s.new_environment("p", "e").await.to_string();
    let env = Some(env.as_str());
    for version in ["v1", "v2"] {
        for (name, value) in absurd() {
            let path = format!("/api/{version}/environment_settings/{name}");
            let (status, body) = s.call("POST", &path, env, Some(json!({"value": value}))).await;
            let message = body["message"].as_str().unwrap_or_default();
            assert_eq!(status, 400, "{version} {name} = {value}: {body}");
            assert!(message.contains(name) && message.contains("expected"), "{version} {name} = {value}: {message}");
        }
        for (name, value, stored) in sensible() {
            let path = format!("/api/{version}/environment_settings/{name}");
            let (status, body) = s.call("POST", &path, env, Some(json!({"value": value}))).await;
            assert_eq!(status, 200, "{version} {name} = {value}: {body}");
            let (_, body) = s.call("GET", &format!("/api/v2/environment_settings/{name}"), env, None).await;
            assert_eq!(body["data"]["settings"][name], stored, "{version} {name} = {value}");
        }
    }
    // Nothing absurd was stored on the way.
    let (_, body) = s.call("GET", "/api/v2/environment_settings", env, None).await;
    assert_eq!(body["data"]["settings"]["autostart_agent_repair_interval"], "3600", "{body}");
    assert_eq!(body["data"]["settings"]["available_versions_to_keep"], 1, "{body}");
}

/// A write answers as its API does: v1 with an empty body, v2 with `{"data": null}`.
#[tokio::test]
async fn setting_writes_answer_as_their_api() {
    let s = TestServer::start().await;
    let env = s.new_environment("p", "e").await.to_string();
    let env = Some(env.as_str());
    for (version, answer) in [("v1", Value::Null), ("v2", json!({"data": null}))] {
        let path = format!("/api/{version}/environment_settings/auto_deploy");
        assert_eq!(s.call("POST", &path, env, Some(json!({"value": false}))).await, (200, answer.clone()), "{version}");
        assert_eq!(s.call("DELETE", &path, env, None).await, (200, answer), "{version}");
    }
}

#[tokio::test]
async fn protected_settings_are_checked_the_same_way() {
    let s = TestServer::start().await;
    let env = s.new_environment("p", "e").await.to_string();
    // What `inmanta export` pushes from project.yml, with a compiler token.
    let token = s.environment_token(&env, &["compiler"]).await;
    let body = json!({"settings": {"autostart_agent_deploy_interval": -1}, "protected_by": "project.yml"});
    let response = common::client_with(Some(&token))
        .post(format!("{}/api/v2/protected_environment_settings", s.url))
        .header("X-Inmanta-tid", &env)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let answer: Value = response.json().await.unwrap();
    assert!(answer["message"].as_str().unwrap().contains("autostart_agent_deploy_interval"), "{answer}");
}

/// The console's settings form: a value the API refuses with 400 is refused with 400 there too,
/// with the same message for the user, not a 500 (issue 47).
#[tokio::test]
async fn the_console_settings_form_refuses_a_bad_value_with_400() {
    let s = TestServer::start().await;
    let env = s.new_environment("p", "e").await.to_string();
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let referer = format!("{}/console/login", s.url);
    let login = http
        .post(format!("{}/console/login", s.url))
        .header("origin", &s.url)
        .header("referer", &referer)
        .form(&[("username", common::ADMIN), ("password", common::ADMIN_PASSWORD), ("next", "/console")])
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 303);
    let cookie = login.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    let save = |value: &'static str| {
        http.post(format!("{}/console/fn/save_setting", s.url))
            .header("cookie", &cookie)
            .header("origin", &s.url)
            // The form as the console posts it (URL-encoded, as also without its wasm).
            .form(&[
                ("env", env.as_str()),
                ("name", "autostart_agent_deploy_interval"),
                ("value", value),
                ("reset", "false"),
            ])
            .send()
    };
    let refused = save("every hour").await.unwrap();
    assert_eq!(refused.status(), 400);
    let text = refused.text().await.unwrap();
    assert!(text.contains("autostart_agent_deploy_interval"), "the message names the setting: {text}");
    let saved = save("120").await.unwrap();
    assert_eq!(saved.status(), 200, "{}", saved.text().await.unwrap());
}
