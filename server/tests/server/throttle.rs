//! Login throttling that cannot be turned against the user (issue 18 point 4), against a real
//! server: clients connect from different loopback addresses (127.0.0.x), and through a
//! trusted proxy that names the client in `X-Forwarded-For`.

use crate::common;

use std::net::IpAddr;
use std::time::Duration;

use common::TestServer;
use serde_json::{Value, json};

/// A login from `from` (a loopback source address), optionally through a proxy header.
async fn login_from(
    s: &TestServer,
    from: &str,
    forwarded: Option<&str>,
    user: &str,
    password: &str,
) -> (u16, Value, Option<u64>) {
    let from: IpAddr = from.parse().unwrap();
    let client = reqwest::Client::builder().local_address(from).build().unwrap();
    let mut request =
        client.post(format!("{}/api/v2/login", s.url)).json(&json!({"username": user, "password": password}));
    if let Some(forwarded) = forwarded {
        request = request.header("X-Forwarded-For", forwarded);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let retry = response.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse().ok());
    (status, response.json().await.unwrap_or(Value::Null), retry)
}

#[tokio::test]
async fn wrong_passwords_from_one_address_do_not_lock_the_user_out_of_another() {
    let s = TestServer::start().await;
    for _ in 0..5 {
        let (status, body, _) = login_from(&s, "127.0.0.2", None, common::ADMIN, "Wrong-password-1").await;
        assert_eq!(status, 401, "{body}");
    }
    // The attacker's address now waits, even with the right password...
    let (status, body, retry) = login_from(&s, "127.0.0.2", None, common::ADMIN, common::ADMIN_PASSWORD).await;
    assert_eq!(status, 429, "{body}");
    assert!(retry.is_some_and(|r| r >= 1), "Retry-After says how long");
    // ...and the user logs in from anywhere else.
    let (status, body, _) = login_from(&s, "127.0.0.3", None, common::ADMIN, common::ADMIN_PASSWORD).await;
    assert_eq!(status, 200, "{body}");
    // Every attempt is logged with its address, never the password.
    let log = s.log();
    assert!(log.contains("login failed") && log.contains("127.0.0.2"), "{log}");
    assert!(log.contains("login refused"), "{log}");
    assert!(!log.contains("Wrong-password-1"));
}

#[tokio::test]
async fn a_shared_address_does_not_lock_out_other_users() {
    let s = TestServer::start().await;
    s.client().create_user("bob", "Bob-password-123").await.unwrap();
    // Someone behind the shared address sprays guesses over many accounts, more than its cap.
    for n in 0..30 {
        let user = if n % 3 == 0 { common::ADMIN.to_string() } else { format!("user{n}") };
        login_from(&s, "127.0.0.4", None, &user, "Guess-123456").await;
    }
    // Bob, behind the same address, gets in: at worst after the address's short pace.
    let (mut status, mut body, retry) = login_from(&s, "127.0.0.4", None, "bob", "Bob-password-123").await;
    if status == 429 {
        let wait = retry.expect("Retry-After");
        assert!(wait <= 2, "a shared address is paced for a moment, not locked: {wait} s");
        tokio::time::sleep(Duration::from_secs(wait)).await;
        (status, body, _) = login_from(&s, "127.0.0.4", None, "bob", "Bob-password-123").await;
    }
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn forwarded_for_is_believed_only_from_a_trusted_proxy() {
    let s = TestServer::start_with(&[("INMANTA_SERVER_TRUSTED_PROXIES", "127.0.0.5")]).await;
    // Behind the proxy: the client of X-Forwarded-For is the one that waits.
    for _ in 0..5 {
        login_from(&s, "127.0.0.5", Some("203.0.113.1"), common::ADMIN, "Wrong-password-2").await;
    }
    let right = common::ADMIN_PASSWORD;
    assert_eq!(login_from(&s, "127.0.0.5", Some("203.0.113.1"), common::ADMIN, right).await.0, 429);
    assert_eq!(login_from(&s, "127.0.0.5", Some("203.0.113.2"), common::ADMIN, right).await.0, 200);
    // Anyone else claiming a new address with the header is still counted by its own address.
    for n in 0..5 {
        login_from(&s, "127.0.0.6", Some(&format!("198.51.100.{n}")), common::ADMIN, "Wrong-password-3").await;
    }
    assert_eq!(login_from(&s, "127.0.0.6", Some("198.51.100.77"), common::ADMIN, right).await.0, 429);
    assert!(s.log().contains("203.0.113.1"), "the log names the real client");
}

#[tokio::test]
async fn failures_spread_over_two_servers_on_postgres_count_once() {
    // Two servers on one database behind a load balancer (docs/ha.md): the proxy is trusted
    // by both, and guesses alternate between them. Several servers need PostgreSQL; on SQLite
    // the same sharing is shown by the unit test of two throttles on one database file.
    if test_support::postgres_admin_url().is_none() {
        return;
    }
    let proxy = [("INMANTA_SERVER_TRUSTED_PROXIES", "127.0.0.7")];
    let a = TestServer::start_with(&proxy).await;
    let b = TestServer::start_on(&a.database_url, &proxy).await;
    for n in 0..5 {
        let server = if n % 2 == 0 { &a } else { &b };
        let (status, body, _) =
            login_from(server, "127.0.0.7", Some("203.0.113.9"), common::ADMIN, "Wrong-password-4").await;
        assert_eq!(status, 401, "{body}");
    }
    // Five failures over both servers use up the free ones on each of them.
    let right = common::ADMIN_PASSWORD;
    for server in [&a, &b] {
        let (status, body, retry) = login_from(server, "127.0.0.7", Some("203.0.113.9"), common::ADMIN, right).await;
        assert_eq!(status, 429, "{body}");
        assert!(retry.is_some_and(|r| r >= 1), "Retry-After says how long");
    }
    // The user from another client address gets in through either server.
    assert_eq!(login_from(&b, "127.0.0.7", Some("203.0.113.10"), common::ADMIN, right).await.0, 200);
    assert_eq!(login_from(&a, "127.0.0.7", Some("203.0.113.10"), common::ADMIN, right).await.0, 200);
}
