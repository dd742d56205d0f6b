//! The token registry against real servers: every token the server issues is listed with its
//! creator, kind and expiry and can be revoked; a revocation reaches a second server on the
//! same PostgreSQL database within a second; `inmanta token bootstrap`; and Inmanta 20.1's own
//! `inmanta-cli token` commands against our server.

use crate::common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{BIN, TestServer};
use serde_json::{Value, json};

async fn call(s: &TestServer, token: Option<&str>, method: &str, path: &str, tid: Option<&str>) -> (u16, Value) {
    let client = common::client_with(token);
    let mut request = client.request(method.parse().unwrap(), format!("{}{path}", s.url));
    if let Some(tid) = tid {
        request = request.header("X-Inmanta-tid", tid);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn login(s: &TestServer, username: &str, password: &str) -> String {
    let response = reqwest::Client::new()
        .post(format!("{}/api/v2/login", s.url))
        .json(&json!({"username": username, "password": password}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    body["data"]["token"].as_str().unwrap().to_string()
}

/// The `jti` claim of a token of ours.
fn jti_of(token: &str) -> String {
    let claims = orchestrator::auth::jwt::peek(token).unwrap().claims;
    claims["jti"].as_str().expect("a registered token carries a jti").to_string()
}

#[tokio::test]
async fn every_issued_token_is_registered_listed_and_revocable() {
    let s = TestServer::start().await;
    let env = s.new_environment("p", "main").await.to_string();
    let client = s.client();
    client.create_user("rita", "Rita-password-1").await.unwrap();
    let rita = login(&s, "rita", "Rita-password-1").await;

    // An environment token with an expiry, made by the admin.
    let (status, body) = s
        .call("POST", "/api/v2/environment_auth", Some(&env), Some(json!({"client_types": ["agent"], "expire": 600})))
        .await;
    assert_eq!(status, 200, "{body}");
    let agent = body["data"].as_str().unwrap().to_string();

    // The admin sees every token with its kind, creator and expiry; never the token itself.
    let (status, list) = call(&s, s.token.as_deref(), "GET", "/api/v2/token", None).await;
    assert_eq!(status, 200, "{list}");
    let tokens = list["data"].as_array().unwrap();
    let find =
        |jti: &str| tokens.iter().find(|t| t["jti"] == jti).cloned().unwrap_or_else(|| panic!("{jti} in {list}"));
    let rita_row = find(&jti_of(&rita));
    assert_eq!(rita_row["kind"], "login");
    assert_eq!(rita_row["created_by"], "rita");
    assert!(rita_row["expires_at"].is_string(), "login tokens expire: {rita_row}");
    let agent_row = find(&jti_of(&agent));
    assert_eq!(agent_row["kind"], "environment");
    assert_eq!(agent_row["created_by"], common::ADMIN);
    assert_eq!(agent_row["environment"], env.as_str());
    assert_eq!(agent_row["client_types"], json!(["agent"]));
    assert!(agent_row["expires_at"].is_string(), "{agent_row}");
    assert!(!list.to_string().contains(&agent), "a token is shown once, at creation");

    // Rita sees only her own tokens, and may not touch the admin's.
    let (_, hers) = call(&s, Some(&rita), "GET", "/api/v2/token", None).await;
    let hers = hers["data"].as_array().unwrap().clone();
    assert!(!hers.is_empty() && hers.iter().all(|t| t["created_by"] == "rita"), "{hers:?}");
    let admin_jti = jti_of(s.token.as_deref().unwrap());
    assert_eq!(call(&s, Some(&rita), "GET", &format!("/api/v2/token/{admin_jti}"), None).await.0, 404);
    assert_eq!(call(&s, Some(&rita), "DELETE", &format!("/api/v2/token/{admin_jti}"), None).await.0, 404);

    // Revoked: refused at once, with Inmanta's reason; revoking twice is a conflict.
    assert_eq!(
        call(&s, Some(&agent), "GET", "/api/v1/file/0000000000000000000000000000000000000000", None).await.0,
        404,
        "the agent token works"
    );
    let (status, body) =
        call(&s, s.token.as_deref(), "DELETE", &format!("/api/v2/token/{}", jti_of(&agent)), None).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) =
        call(&s, Some(&agent), "GET", "/api/v1/file/0000000000000000000000000000000000000000", None).await;
    assert_eq!(
        (status, body["message"].as_str().unwrap()),
        (403, "Access denied: The provided token has been revoked.")
    );
    assert_eq!(call(&s, s.token.as_deref(), "DELETE", &format!("/api/v2/token/{}", jti_of(&agent)), None).await.0, 409);

    // A user revokes their own login; logging out revokes the token it is made with.
    let (status, _) = call(&s, Some(&rita), "GET", "/api/v2/current_user", None).await;
    assert_eq!(status, 200);
    let rita2 = login(&s, "rita", "Rita-password-1").await;
    assert_eq!(call(&s, Some(&rita2), "DELETE", &format!("/api/v2/token/{}", jti_of(&rita)), None).await.0, 200);
    assert_eq!(call(&s, Some(&rita), "GET", "/api/v2/current_user", None).await.0, 403);
    assert_eq!(call(&s, Some(&rita2), "POST", "/api/v2/logout", None).await.0, 200);
    let (status, body) = call(&s, Some(&rita2), "GET", "/api/v2/current_user", None).await;
    assert_eq!(status, 403, "{body}");

    // The CLI: list (with kind and creator), show and revoke.
    let (code, out, err) = s.cli(&["token", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("login") && out.contains("rita") && out.contains("environment"), "{out}");
    let (code, out, err) = s.cli(&["token", "create", "-e", &env, "--api", "--expire", "300"]);
    assert_eq!(code, 0, "{err}");
    let created = out.trim().strip_prefix("Token: ").expect("Token: <token>").to_string();
    let jti = jti_of(&created);
    let (code, out, err) = s.cli(&["token", "list", "-e", &env]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&jti), "{out}");
    let (code, out, _) = s.cli(&["token", "show", &jti]);
    assert_eq!(code, 0);
    assert!(out.contains(&jti) && out.contains(common::ADMIN), "{out}");
    let (code, _, err) = s.cli(&["token", "revoke", &jti]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(call(&s, Some(&created), "GET", "/api/v2/resource", Some(&env)).await.0, 403);

    // `inmanta token bootstrap`, on the server's machine: a registered token for everything.
    let out = Command::new(BIN)
        .args(["token", "bootstrap", "--expire", "120", "--database-url", &s.database_url])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let bootstrap = stdout.trim().strip_prefix("Token: ").expect("Token: <token>").to_string();
    assert_eq!(call(&s, Some(&bootstrap), "GET", "/api/v2/project", None).await.0, 200);
    assert_eq!(call(&s, Some(&bootstrap), "GET", "/api/v2/resource", Some(&env)).await.0, 200);
    let (_, row) = call(&s, s.token.as_deref(), "GET", &format!("/api/v2/token/{}", jti_of(&bootstrap)), None).await;
    assert_eq!(row["data"]["kind"], "bootstrap", "{row}");
}

/// Several servers need PostgreSQL.
#[tokio::test]
async fn a_revoked_token_is_refused_by_every_server_on_postgres_within_a_second() {
    if test_support::postgres_admin_url().is_none() {
        return;
    }
    let first = TestServer::start().await;
    let second = TestServer::start_on(&first.database_url, &[]).await;
    let env = first.new_environment("p", "main").await.to_string();
    let agent = first.environment_token(&env, &["agent", "api"]).await;
    let user = login(&first, common::ADMIN, common::ADMIN_PASSWORD).await;
    for token in [&agent, &user] {
        assert_eq!(call(&second, Some(token), "GET", "/api/v2/resource", Some(&env)).await.0, 200);
    }
    for token in [&agent, &user] {
        let (status, body) =
            call(&first, first.token.as_deref(), "DELETE", &format!("/api/v2/token/{}", jti_of(token)), None).await;
        assert_eq!(status, 200, "{body}");
        let revoked = Instant::now();
        loop {
            let (status, body) = call(&second, Some(token), "GET", "/api/v2/resource", Some(&env)).await;
            if status == 403 {
                assert_eq!(body["message"], "Access denied: The provided token has been revoked.");
                break;
            }
            assert!(revoked.elapsed() < Duration::from_secs(1), "the second server still accepts it: {status}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Inmanta 20.1's `inmanta-cli` (the reference install, scripts/inmanta-reference.sh).
fn inmanta_cli() -> Option<PathBuf> {
    let dir = std::env::var_os("INMANTA_REFERENCE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/inmanta/reference")))?;
    let cli = dir.join("venv/bin/inmanta-cli");
    cli.exists().then_some(cli)
}

/// 32 bytes, URL-safe base64: the shared `[auth_jwt_default]` key of the server and the CLI.
const SIGNING_KEY: &str = "c2VydmVyLWFuZC1jbGktc2hhcmUtdGhpcy1zaWduaW5nLWtleS0wMQ";

#[tokio::test]
async fn inmanta_cli_token_commands_work_against_us() {
    let Some(cli) = inmanta_cli() else {
        test_support::missing_prerequisite("Inmanta's inmanta-cli: scripts/inmanta-reference.sh install");
        return;
    };
    // Inmanta's way to share the signing key: an `[auth_jwt_default]` section with sign=true,
    // here through Inmanta's environment variables, for our server and for inmanta-cli alike.
    let signing = [
        ("INMANTA_AUTH_JWT_DEFAULT_ALGORITHM", "HS256"),
        ("INMANTA_AUTH_JWT_DEFAULT_SIGN", "true"),
        ("INMANTA_AUTH_JWT_DEFAULT_CLIENT_TYPES", "agent,compiler,api"),
        ("INMANTA_AUTH_JWT_DEFAULT_KEY", SIGNING_KEY),
    ];
    let s = TestServer::start_with(&signing).await;
    let env = s.new_environment("p", "main").await.to_string();
    let port = s.url.rsplit(':').next().unwrap().to_string();
    let work = tempfile::tempdir().unwrap();
    let run = |token: Option<&str>, args: &[&str]| {
        let mut command = Command::new(&cli);
        command.args(["--host", "127.0.0.1", "--port", &port]).args(args).current_dir(work.path()).envs(signing);
        if let Some(token) = token {
            command.env("INMANTA_CMDLINE_REST_TRANSPORT_TOKEN", token);
        }
        let out = command.output().expect("run inmanta-cli");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "inmanta-cli {args:?}: {stdout}{}", String::from_utf8_lossy(&out.stderr));
        stdout.trim().strip_prefix("Token: ").expect("Token: <token>").to_string()
    };

    // `token bootstrap` signs locally with the shared key; our server accepts that token.
    let bootstrap = run(None, &["token", "bootstrap"]);
    assert_eq!(call(&s, Some(&bootstrap), "GET", "/api/v2/project", None).await.0, 200);
    // `token create` through our API, acting with the admin's login and with the bootstrap token.
    for token in [s.token.as_deref().unwrap(), bootstrap.as_str()] {
        let created = run(Some(token), &["token", "create", "-e", &env, "--api", "--agent"]);
        assert_eq!(call(&s, Some(&created), "GET", "/api/v2/resource", Some(&env)).await.0, 200);
        let (_, list) = call(&s, s.token.as_deref(), "GET", "/api/v2/environment_auth", Some(&env)).await;
        let claims = orchestrator::auth::jwt::peek(&created).unwrap().claims;
        assert!(list.to_string().contains(claims["jti"].as_str().unwrap()), "registered: {list}");
    }
    // Tokens our server signs carry the shared section's issuer, so inmanta-cli's are alike.
    let ours = orchestrator::auth::jwt::peek(s.token.as_deref().unwrap()).unwrap();
    assert_eq!(ours.issuer(), orchestrator::auth::jwt::peek(&bootstrap).unwrap().issuer());
}

/// An idempotent environment token is the same on every request until it is revoked; asked for
/// again after that, it is a fresh one that works (issue 47: it came back as the dead token).
#[tokio::test]
async fn an_idempotent_token_asked_for_after_its_revocation_is_a_fresh_one() {
    let s = TestServer::start().await;
    let env = s.new_environment("p", "main").await.to_string();
    let ask = || async {
        let (status, body) = s
            .call(
                "POST",
                "/api/v2/environment_auth",
                Some(&env),
                Some(json!({"client_types": ["agent"], "idempotent": true})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["data"].as_str().unwrap().to_string()
    };
    let file = "/api/v1/file/0000000000000000000000000000000000000000";
    let first = ask().await;
    assert_eq!(ask().await, first, "idempotent");
    assert_eq!(call(&s, Some(&first), "GET", file, None).await.0, 404, "the token works");
    let (status, body) =
        call(&s, s.token.as_deref(), "DELETE", &format!("/api/v2/token/{}", jti_of(&first)), None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(call(&s, Some(&first), "GET", file, None).await.0, 403, "revoked");

    let second = ask().await;
    assert_ne!(second, first, "a fresh token after the revocation");
    assert_eq!(ask().await, second, "idempotent again");
    assert_eq!(call(&s, Some(&second), "GET", file, None).await.0, 404, "the fresh token works");
    assert_eq!(call(&s, Some(&first), "GET", file, None).await.0, 403, "the revoked one stays revoked");
}
