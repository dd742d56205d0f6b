//! Users, login, sessions and tokens against a real server process (docs/security.md). The walk
//! over every route of the router is a unit test of the binary (src/rest/route_walk.rs).

use crate::common;

use std::process::Command;
use std::time::Duration;

use api::client::Client;
use api::environment::EnvironmentCreate;
use common::{BIN, TestServer, client_with, refusal, refused};
use serde_json::{Value, json};

async fn login(s: &TestServer, username: &str, password: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/api/v2/login", s.url))
        .json(&json!({"username": username, "password": password}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn get_as(s: &TestServer, token: Option<&str>, path: &str, tid: Option<&str>) -> (u16, Value) {
    let mut request = client_with(token).get(format!("{}{path}", s.url));
    if let Some(tid) = tid {
        request = request.header("X-Inmanta-tid", tid);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A new environment in the first project (made when there is none); its id as text.
async fn environment(s: &TestServer, name: &str) -> String {
    let client = s.client();
    let project = match client.projects().await.unwrap().into_iter().next() {
        Some(p) => p.id,
        None => client.create_project("p").await.unwrap().id,
    };
    let body = EnvironmentCreate { project_id: project, name: name.into(), ..Default::default() };
    client.create_environment(&body).await.unwrap().id.to_string()
}

/// A typed client of `s` that acts with `token`.
fn client_as(s: &TestServer, token: &str) -> Client {
    Client::new(s.url.clone()).with_token(Some(token.to_string()))
}

#[tokio::test]
async fn first_start_creates_an_admin_who_must_change_the_password() {
    let s = TestServer::start_without_users(&[]).await;
    let file = s.state_dir.path().join("initial-admin-password");
    let password = std::fs::read_to_string(&file).expect("the generated password is written to a file");
    let password = password.trim();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "only the owner may read it");
    }
    assert_eq!(s.log().matches(password).count(), 1, "logged exactly once");

    // No credentials: 401 with a message saying how to log in; health stays open.
    let (status, body) = get_as(&s, None, "/api/v2/project", None).await;
    assert_eq!(status, 401);
    assert!(body["message"].as_str().unwrap().contains("log in"), "{body}");
    assert_eq!(get_as(&s, None, "/api/v2/health", None).await.0, 200);

    let (status, body) = login(&s, "admin", password).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["user"]["password_change_required"], true);
    let token = body["data"]["token"].as_str().unwrap().to_string();
    // Until the password changes, nothing else is allowed.
    let (status, body) = get_as(&s, Some(&token), "/api/v2/project", None).await;
    assert_eq!(status, 403, "{body}");
    assert!(body["message"].as_str().unwrap().contains("change the generated password"), "{body}");

    let admin = client_as(&s, &token);
    assert_eq!(refused(admin.set_password("admin", "short", Some(password)).await), 400, "the policy applies");
    admin.set_password("admin", "My-own-password-42", Some(password)).await.unwrap();
    // The old token ended with the old password (a refused token: 403); the new password works.
    assert_eq!(get_as(&s, Some(&token), "/api/v2/project", None).await.0, 403);
    assert_eq!(login(&s, "admin", password).await.0, 401);
    let (status, body) = login(&s, "admin", "My-own-password-42").await;
    assert_eq!(status, 200);
    let token = body["data"]["token"].as_str().unwrap();
    assert_eq!(get_as(&s, Some(token), "/api/v2/project", None).await.0, 200);
    let (_, me) = get_as(&s, Some(token), "/api/v2/current_user", None).await;
    assert_eq!(me["data"]["username"], "admin");
}

#[tokio::test]
async fn login_tokens_expire_and_logins_are_rate_limited() {
    let s = TestServer::start_with(&[
        ("INMANTA_SERVER_LOGIN_SESSION_EXPIRE", "1"),
        ("INMANTA_SERVER_LOGIN_MAX_FAILURES", "3"),
    ])
    .await;
    let (status, body) = login(&s, common::ADMIN, common::ADMIN_PASSWORD).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"]["expires_in"], 1);
    let token = body["data"]["token"].as_str().unwrap().to_string();
    assert_eq!(get_as(&s, Some(&token), "/api/v2/project", None).await.0, 200);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    // As Inmanta: a token that is refused is a 403 saying which check failed.
    let (status, body) = get_as(&s, Some(&token), "/api/v2/project", None).await;
    assert_eq!(status, 403);
    assert_eq!(body["message"], "Access denied: Signature has expired", "{body}");
    // A forged token (signed with another key) is not accepted.
    let forged = format!("{}x", &token[..token.len() - 1]);
    assert_eq!(get_as(&s, Some(&forged), "/api/v2/project", None).await.0, 403);

    for _ in 0..3 {
        assert_eq!(login(&s, common::ADMIN, "Wrong-password-123").await.0, 401);
    }
    // Locked for a while, even with the right password.
    let (status, body) = login(&s, common::ADMIN, common::ADMIN_PASSWORD).await;
    assert_eq!(status, 429, "{body}");
    let log = s.log();
    assert!(log.contains("login failed"), "failures are logged");
    assert!(!log.contains("Wrong-password-123"), "without the password");
}

#[tokio::test]
async fn environment_tokens_are_scoped_listed_and_revocable() {
    let s = TestServer::start_with(&[("RUST_LOG", "debug")]).await;
    let a = environment(&s, "a").await;
    let b = environment(&s, "b").await;
    let token = s.environment_token(&a, &["api"]).await;
    assert_eq!(get_as(&s, Some(&token), "/api/v2/resource", Some(&a)).await.0, 200);
    let (status, body) = get_as(&s, Some(&token), "/api/v2/resource", Some(&b)).await;
    assert_eq!(status, 403, "{body}");
    // An agent token cannot use the user API.
    let agent = s.environment_token(&a, &["agent"]).await;
    assert_eq!(get_as(&s, Some(&agent), "/api/v2/resource", Some(&a)).await.0, 403);

    // Expiring tokens.
    let (status, body) =
        s.call("POST", "/api/v2/environment_auth", Some(&a), Some(json!({"client_types": ["api"], "expire": 1}))).await;
    assert_eq!(status, 200, "{body}");
    let short = body["data"].as_str().unwrap().to_string();
    assert_eq!(get_as(&s, Some(&short), "/api/v2/resource", Some(&a)).await.0, 200);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(get_as(&s, Some(&short), "/api/v2/resource", Some(&a)).await.0, 403);

    // Listed without the token itself; revoked ones are refused.
    let (_, list) = s.call("GET", "/api/v2/environment_auth", Some(&a), None).await;
    let tokens = list["data"].as_array().unwrap();
    assert_eq!(tokens.len(), 3, "{list}");
    assert!(!list.to_string().contains(&token), "a token is shown once, at creation");
    assert_eq!(tokens.iter().filter(|t| t["last_used"].is_string()).count(), 3, "{list}");
    let jti = tokens.iter().find(|t| t["client_types"] == json!(["agent"])).unwrap()["jti"].as_str().unwrap();
    assert_eq!(s.call("DELETE", &format!("/api/v2/environment_auth/{jti}"), Some(&a), None).await.0, 200);
    let (status, body) = get_as(&s, Some(&agent), "/api/v1/file/0000", None).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["message"], "Access denied: The provided token has been revoked.", "{body}");
    assert_eq!(s.call("DELETE", &format!("/api/v2/environment_auth/{jti}"), Some(&a), None).await.0, 404);

    // An idempotent token is the same token each time.
    let idem = json!({"client_types": ["compiler"], "idempotent": true});
    let first = s.call("POST", "/api/v2/environment_auth", Some(&a), Some(idem.clone())).await.1;
    let second = s.call("POST", "/api/v2/environment_auth", Some(&a), Some(idem)).await.1;
    assert_eq!(first, second);

    // Users list without hashes; no token appears in the log.
    let (_, users) = s.call("GET", "/api/v2/user", None, None).await;
    assert!(!users.to_string().contains("argon2"), "{users}");
    let log = s.log();
    for secret in [&token, &agent, &short, s.token.as_ref().unwrap()] {
        assert!(!log.contains(secret.as_str()), "a token reached the log");
    }
    assert!(!log.contains(common::ADMIN_PASSWORD));
}

#[tokio::test]
async fn roles_limit_users_to_their_environments() {
    let s = TestServer::start().await;
    let a = environment(&s, "a").await;
    let b = environment(&s, "b").await;
    let client = s.client();
    client.create_user("olivia", "Olivia-password-1").await.unwrap();
    let (status, _) = s
        .call("POST", "/api/v2/role_assignment/olivia", None, Some(json!({"environment": a, "role": "read-only"})))
        .await;
    assert_eq!(status, 200);
    let token = client.login("olivia", "Olivia-password-1").await.unwrap().token;
    let olivia = client_as(&s, &token);

    // She sees environment a only, reads it, changes nothing, and cannot manage users.
    let (_, list) = get_as(&s, Some(&token), "/api/v2/environment", None).await;
    let names: Vec<&str> = list["data"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a"]);
    assert_eq!(get_as(&s, Some(&token), &format!("/api/v2/environment/{b}"), None).await.0, 403);
    assert_eq!(get_as(&s, Some(&token), "/api/v2/resource", Some(&a)).await.0, 200);
    let (status, message) = refusal(olivia.halt_environment(a.parse().unwrap()).await);
    assert_eq!(status, 403);
    assert!(message.contains("read-only"), "{message}");
    assert_eq!(get_as(&s, Some(&token), "/api/v2/user", None).await.0, 403);

    // Promoted to noc, she may halt; the change applies to the token she already has.
    s.call("POST", "/api/v2/role_assignment/olivia", None, Some(json!({"environment": a, "role": "noc"}))).await;
    olivia.halt_environment(a.parse().unwrap()).await.unwrap();
    let (_, roles) = s.call("GET", "/api/v2/role_assignment/olivia", None, None).await;
    assert_eq!(roles["data"]["assignments"][&a], json!(["noc", "read-only"]));

    // Unknown roles and the last admin are refused clearly.
    let (status, body) =
        s.call("POST", "/api/v2/role_assignment/olivia", None, Some(json!({"environment": a, "role": "wizard"}))).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(refused(client.delete_user(common::ADMIN).await), 409);
    // Deleting her ends her access.
    client.delete_user("olivia").await.unwrap();
    assert_eq!(get_as(&s, Some(&token), "/api/v2/resource", Some(&a)).await.0, 403);
}

#[tokio::test]
async fn console_sessions_are_renewed_at_login_and_end_at_logout() {
    let s = TestServer::start().await;
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    // Without a session, pages redirect to the login page and calls are refused.
    let page = http.get(format!("{}/console/resources", s.url)).send().await.unwrap();
    assert_eq!(page.status(), 303);
    assert!(page.headers()["location"].to_str().unwrap().starts_with("/console/login?next="));
    let call = http.post(format!("{}/console/fn/list_environments", s.url)).send().await.unwrap();
    assert_eq!(call.status(), 401);
    let events = http.get(format!("{}/console/events", s.url)).send().await.unwrap();
    assert_eq!(events.status(), 401);

    // A session id planted before login is not the one used after it.
    let planted = "inmanta_session=AAAAAAAAAAAAAAAAAAAAAA";
    let response = http
        .post(format!("{}/console/login", s.url))
        .header("cookie", planted)
        .form(&[("username", common::ADMIN), ("password", common::ADMIN_PASSWORD), ("next", "/console/agents")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()["location"], "/console/agents");
    let cookie = response.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");
    let session = cookie.split(';').next().unwrap().to_string();
    assert_ne!(session, planted);
    let page = http.get(format!("{}/console/resources", s.url)).header("cookie", &session).send().await.unwrap();
    assert_eq!(page.status(), 200);

    // A wrong password shows the form again with the reason, and no session.
    let response = http
        .post(format!("{}/console/login", s.url))
        .form(&[("username", common::ADMIN), ("password", "nope")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert!(response.text().await.unwrap().contains("Wrong username or password"));

    let response = http.post(format!("{}/console/logout", s.url)).header("cookie", &session).send().await.unwrap();
    assert_eq!(response.status(), 303);
    let page = http.get(format!("{}/console/resources", s.url)).header("cookie", &session).send().await.unwrap();
    assert_eq!(page.status(), 303, "the old session is gone");
}

#[tokio::test]
async fn the_cli_works_with_a_token_and_users_can_be_made_on_the_database() {
    let s = TestServer::start().await;
    let port = s.url.rsplit(':').next().unwrap().to_string();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let output = Command::new(BIN)
            .args(args)
            .args(["--host", "127.0.0.1", "--port", &port])
            .envs(env.iter().copied())
            .current_dir(s.state_dir.path())
            .output()
            .unwrap();
        (output.status.code().unwrap_or(-1), String::from_utf8_lossy(&output.stdout).into_owned(), {
            String::from_utf8_lossy(&output.stderr).into_owned()
        })
    };
    let (code, _, err) = run(&["project", "list"], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("log in"), "{err}");

    // `user create --direct` works on the database, with no server involved.
    let (code, out, err) = run(
        &["user", "create", "dora", "--admin", "--direct", "--database-url", &s.database_url],
        &[("INMANTA_PASSWORD", "Dora-password-123")],
    );
    assert_eq!(code, 0, "{out}{err}");
    let (code, token, err) = run(&["user", "login", "dora", "--password", "Dora-password-123"], &[]);
    assert_eq!(code, 0, "{err}");
    let token = token.trim();
    let (code, out, err) = run(&["project", "create", "-n", "from-cli", "--token", token], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, _) = run(&["project", "list"], &[("INMANTA_CMDLINE_REST_TRANSPORT_TOKEN", token)]);
    assert_eq!(code, 0);
    assert!(out.contains("from-cli"), "{out}");
    let (code, out, _) = run(&["user", "list", "--token", token], &[]);
    assert_eq!(code, 0);
    assert!(out.contains("dora") && out.contains(common::ADMIN), "{out}");

    // An agent without a valid agent token is refused and says why instead of retrying forever.
    let env = environment(&s, "agents").await;
    let api_token = s.environment_token(&env, &["api"]).await;
    let (code, _, err) = run(&["agent", "--name", "a1", "-e", &env, "--token", &api_token], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("403") && err.contains("agent token"), "{err}");
    let (code, _, err) = run(&["agent", "--name", "a1", "-e", &env], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("401"), "no token at all: {err}");
    let other = environment(&s, "elsewhere").await;
    let foreign = s.environment_token(&other, &["agent"]).await;
    let (code, _, err) = run(&["agent", "--name", "a1", "-e", &env, "--token", &foreign], &[]);
    assert_eq!(code, 2, "another environment's agent token: {err}");
}
