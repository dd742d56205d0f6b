//! Cross-site request forgery (issue 36): another site cannot make a visitor's browser log in,
//! log out or call the console's server functions; the same site, non-browser clients and
//! bearer-token clients of the REST API keep working.

use crate::common;

use common::{ADMIN, ADMIN_PASSWORD, TestServer};
use serde_json::{Value, json};

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// Posts the console's login form with the given extra headers; the status, the session
/// cookie set (if any) and the body.
async fn console_login(s: &TestServer, headers: &[(&str, &str)]) -> (u16, Option<String>, String) {
    let mut request = no_redirects().post(format!("{}/console/login", s.url)).form(&[
        ("username", ADMIN),
        ("password", ADMIN_PASSWORD),
        ("next", "/console"),
    ]);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let cookie = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_string())
        .next();
    (status, cookie, response.text().await.unwrap())
}

#[tokio::test]
async fn a_cross_site_console_login_is_refused_and_a_same_origin_one_works() {
    let s = TestServer::start().await;
    for headers in [
        vec![("origin", "https://evil.example")],
        vec![("origin", "null")],
        vec![("referer", "https://evil.example/page.html")],
        vec![("sec-fetch-site", "cross-site")],
        // A look-alike of the server's own origin on another port.
        vec![("origin", "http://127.0.0.1:1")],
    ] {
        let (status, cookie, body) = console_login(&s, &headers).await;
        assert_eq!(status, 403, "{headers:?}: {body}");
        assert_eq!(cookie, None, "{headers:?}: no session is started");
        let message: Value = serde_json::from_str(&body).expect("a JSON error");
        assert!(message["message"].as_str().unwrap().contains("cross-site request refused"), "{body}");
    }

    // The console's own form, as a browser sends it from the server's page.
    let referer = format!("{}/console/login", s.url);
    let same = [("origin", s.url.as_str()), ("referer", referer.as_str()), ("sec-fetch-site", "same-origin")];
    let (status, cookie, body) = console_login(&s, &same).await;
    assert_eq!(status, 303, "{body}");
    let cookie = cookie.expect("a session cookie");

    // With that session: a cross-site server function call and logout are refused, the
    // same-origin call is served.
    let call = |origin: &str| {
        no_redirects()
            .post(format!("{}/console/fn/create_environment", s.url))
            .header("cookie", &cookie)
            .header("origin", origin)
            .form(&[
                ("project_id", ""),
                ("new_project", "p"),
                ("name", "e"),
                ("repository", ""),
                ("branch", ""),
                ("description", ""),
            ])
            .send()
    };
    assert_eq!(call("https://evil.example").await.unwrap().status(), 403);
    assert!(s.client().projects().await.unwrap().is_empty(), "nothing was created");
    let response = call(&s.url).await.unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    assert_eq!(s.client().projects().await.unwrap().len(), 1);
    let logout = |origin: &str| {
        no_redirects()
            .post(format!("{}/console/logout", s.url))
            .header("cookie", &cookie)
            .header("origin", origin)
            .send()
    };
    assert_eq!(logout("https://evil.example").await.unwrap().status(), 403);
    assert_eq!(logout(&s.url).await.unwrap().status(), 303);
}

#[tokio::test]
async fn the_api_login_refuses_other_sites_and_bearer_clients_are_not_affected() {
    let s = TestServer::start().await;
    // A form of another site can post JSON-looking text/plain to the API's login, which would
    // set the session cookie too.
    let body = json!({"username": ADMIN, "password": ADMIN_PASSWORD}).to_string();
    let response = no_redirects()
        .post(format!("{}/api/v2/login", s.url))
        .header("content-type", "text/plain")
        .header("origin", "https://evil.example")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    assert!(response.headers().get("set-cookie").is_none());
    // Without browser headers (the CLI, scripts), the login works as before.
    let response = no_redirects().post(format!("{}/api/v2/login", s.url)).body(body).send().await.unwrap();
    assert_eq!(response.status(), 200);

    // A bearer token is never attached by a browser on its own: whatever the Origin, the call
    // is the token holder's.
    let response = s
        .http
        .put(format!("{}/api/v2/project", s.url))
        .header("origin", "https://elsewhere.example")
        .header("sec-fetch-site", "cross-site")
        .json(&json!({"name": "from-a-script"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
}

#[tokio::test]
async fn behind_a_trusted_proxy_its_forwarded_host_is_the_origin_and_allowed_origins_pass() {
    let s = TestServer::start_with(&[
        ("INMANTA_SERVER_TRUSTED_PROXIES", "127.0.0.1"),
        ("INMANTA_SERVER_ALLOWED_ORIGINS", "https://ops.example"),
    ])
    .await;
    let proxied = [
        ("x-forwarded-host", "inmanta.example.com"),
        ("x-forwarded-proto", "https"),
        ("origin", "https://inmanta.example.com"),
    ];
    let (status, cookie, body) = console_login(&s, &proxied).await;
    assert_eq!(status, 303, "{body}");
    assert!(cookie.is_some());
    let (status, _, body) = console_login(&s, &[("origin", "https://ops.example")]).await;
    assert_eq!(status, 303, "{body}");
    let (status, _, body) = console_login(&s, &[("origin", "https://evil.example")]).await;
    assert_eq!(status, 403, "{body}");
}

#[tokio::test]
async fn behind_a_proxy_that_sends_the_upstream_as_host_requests_without_the_session_cookie_pass() {
    // Inmanta's web console with authentication off, behind nginx's default `proxy_pass`: the
    // Host is the upstream's address, the Origin the site's, and no session cookie is sent.
    let s = TestServer::start_with(&[("INMANTA_SERVER_AUTH", "false")]).await;
    let post = |cookie: Option<&str>, fetch_site: Option<&str>| {
        let mut request = no_redirects()
            .put(format!("{}/api/v2/project", s.url))
            .header("origin", "https://inmanta.example.com")
            .json(&json!({"name": format!("p{}", rand_suffix())}));
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        if let Some(site) = fetch_site {
            request = request.header("sec-fetch-site", site);
        }
        request.send()
    };
    let response = post(None, None).await.unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let response = post(Some("theme=dark"), None).await.unwrap();
    assert_eq!(response.status(), 200, "another cookie is no credential: {}", response.text().await.unwrap());
    // The browser's own word that the page is of this origin.
    let response = post(Some("inmanta_session=x"), Some("same-origin")).await.unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    // Still refused: the browser says another site sent it, or it carries the session cookie
    // from another origin.
    assert_eq!(post(None, Some("cross-site")).await.unwrap().status(), 403);
    let response = post(Some("inmanta_session=x"), None).await.unwrap();
    assert_eq!(response.status(), 403);
    let body: Value = response.json().await.unwrap();
    assert!(body["message"].as_str().unwrap().contains("cross-site request refused"), "{body}");
    assert_eq!(s.client().projects().await.unwrap().len(), 3);
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}
