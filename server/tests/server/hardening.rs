//! Attacks of issue 18 against a real server (SQLite, or PostgreSQL with
//! `INMANTA_TEST_POSTGRES`): each test shows one of them now fails. docs/security.md lists them.

use crate::common;

use std::time::Duration;

use api::client::ListQuery;
use api::version::PutVersion;
use common::{TestServer, refusal, refused};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use uuid::Uuid;

/// A halted environment (the server's agents stay out) and the number of a reserved version.
async fn halted_environment(s: &TestServer) -> (Uuid, i64) {
    let env = s.new_environment("p", "e").await;
    let client = s.client();
    client.halt_environment(env).await.unwrap();
    (env, client.reserve_version(env).await.unwrap())
}

fn objects(values: Vec<Value>) -> Vec<Map<String, Value>> {
    values.into_iter().map(|v| v.as_object().unwrap().clone()).collect()
}

/// `VmRSS` and `VmHWM` (peak) of a process, in KiB.
fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Sends `POST path` with a JSON body of about `size` bytes, streamed in chunks without a
/// Content-Length (so the server cannot refuse it from the headers alone); returns the status,
/// or 0 when the server closed the connection before answering.
async fn stream_body(address: &str, path: &str, size: usize) -> u16 {
    let Ok(mut stream) = tokio::net::TcpStream::connect(address).await else { return 0 };
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    if stream.write_all(head.as_bytes()).await.is_err() {
        return 0;
    }
    let chunk = vec![b'a'; 1024 * 1024];
    let mut sent = 0;
    let mut pieces: Vec<Vec<u8>> = vec![b"{\"username\": \"".to_vec()];
    while sent < size {
        pieces.push(chunk.clone());
        sent += chunk.len();
    }
    pieces.push(b"\", \"password\": \"x\"}".to_vec());
    for piece in pieces {
        let framed = [format!("{:x}\r\n", piece.len()).into_bytes(), piece, b"\r\n".to_vec()].concat();
        if stream.write_all(&framed).await.is_err() {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut answer = vec![0u8; 256];
    let n = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut answer)).await.ok().and_then(Result::ok);
    let text = String::from_utf8_lossy(&answer[..n.unwrap_or(0)]).to_string();
    text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

#[tokio::test]
async fn oversized_login_bodies_are_refused_and_memory_returns() {
    let s = TestServer::start().await;
    let address = s.url.trim_start_matches("http://").to_string();
    let pid = s.pid().expect("server pid");
    // A few calls first so the baseline includes a warm server.
    for _ in 0..3 {
        s.call("GET", "/api/v2/health", None, None).await;
    }
    let (before, _) = memory_kib(pid);

    // 16 concurrent unauthenticated logins with 24 MB user names, streamed.
    let burst: Vec<_> = (0..16)
        .map(|_| {
            tokio::spawn({
                let address = address.clone();
                async move { stream_body(&address, "/api/v2/login", 24 * 1024 * 1024).await }
            })
        })
        .collect();
    let mut statuses = vec![];
    for task in burst {
        statuses.push(task.await.expect("client task"));
    }
    assert!(statuses.iter().all(|s| *s == 413 || *s == 0), "oversized logins are refused: {statuses:?}");
    assert!(statuses.contains(&413), "the server answers 413 (payload too large): {statuses:?}");

    // Announced too large: refused from the headers, before any of the body is read.
    let response = reqwest::Client::new()
        .post(format!("{}/api/v2/login", s.url))
        .header("content-type", "application/json")
        .body(format!("{{\"username\": \"{}\", \"password\": \"x\"}}", "a".repeat(8 * 1024)))
        .send()
        .await
        .expect("login");
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.expect("JSON error");
    assert!(body["message"].as_str().unwrap().contains("at most 4096 bytes"), "{body}");

    tokio::time::sleep(Duration::from_millis(300)).await;
    let (after, peak) = memory_kib(pid);
    eprintln!("server RSS: before {before} KiB, peak {peak} KiB, after the burst {after} KiB");
    assert!(
        peak < before + 64 * 1024,
        "the burst of 16 x 24 MB bodies was buffered: peak {peak} KiB, before {before} KiB"
    );
    assert!(after < before + 32 * 1024, "memory did not return: {after} KiB after, {before} KiB before");

    // The server still answers.
    assert_eq!(s.call("GET", "/api/v2/health", None, None).await.0, 200);
}

#[tokio::test]
async fn each_route_takes_the_bodies_it_needs() {
    let s = TestServer::start().await;
    // An ordinary call refuses a 2 MB body...
    let (status, body) = s.call("POST", "/api/v2/project/x", None, Some(json!({"name": "n".repeat(1_200_000)}))).await;
    assert_eq!(status, 413, "{body}");
    assert!(body["message"].as_str().unwrap().contains("at most 1048576 bytes"), "{body}");
    // ...while a version upload of 5 MB is fine.
    let (env, version) = halted_environment(&s).await;
    let resources: Vec<Value> = (0..2000)
        .map(|i| {
            json!({"id": format!("std::testing::NullResource[a,name=r{i}],v=0"), "name": format!("r{i}"),
                   "agentname": "a", "padding": "p".repeat(2500), "requires": [], "purged": false, "send_event": false})
        })
        .collect();
    let body = PutVersion { version, resources: objects(resources), ..Default::default() };
    s.client().put_version(env, &body).await.unwrap();
}

#[tokio::test]
async fn nul_bytes_and_huge_names_get_a_400_never_the_database_text() {
    let s = TestServer::start().await;
    let (env_id, version) = halted_environment(&s).await;
    let env = env_id.to_string();
    let project_id = s.client().environment(env_id).await.unwrap().project_id;
    let v = json!({"data": version});
    let huge = "x".repeat(50 * 1024);
    let cases: Vec<(&str, String, Option<&str>, Option<Value>)> = vec![
        ("POST", "/api/v2/login".into(), None, Some(json!({"username": "ad\u{0}min", "password": "x"}))),
        ("PUT", "/api/v2/project".into(), None, Some(json!({"name": "a\u{0}b"}))),
        ("PUT", "/api/v2/project".into(), None, Some(json!({"name": huge}))),
        ("PUT", "/api/v2/project".into(), None, Some(json!({"name": "evil\u{202e}fdp.exe"}))),
        ("PUT", "/api/v2/environment".into(), None, Some(json!({"project_id": project_id, "name": "a\u{0}b"}))),
        ("PUT", "/api/v2/environment".into(), None, Some(json!({"project_id": project_id, "name": huge}))),
        ("POST", "/api/v2/role".into(), None, Some(json!({"name": "r\u{0}"}))),
        ("POST", "/api/v2/user".into(), None, Some(json!({"username": "u\u{0}", "password": "Long-enough-pw-1"}))),
        // Found by schemathesis: a NUL in a user name, and in keys the call does not read.
        ("PATCH", "/api/v2/is_admin".into(), None, Some(json!({"username": "u\u{0}", "is_admin": true}))),
        ("PATCH", "/api/v2/is_admin".into(), None, Some(json!({"username": "admin", "is_admin": true, "x\u{0}": [1]}))),
        ("PATCH", "/api/v2/user/admin/password".into(), None, Some(json!({"password": "Long-enough-\u{0}-pw-1"}))),
        ("PUT", "/api/v2/parameters/a%00b".into(), Some(&env), Some(json!({"source": "user", "value": "v"}))),
        ("PUT", "/api/v1/parameter/n".into(), Some(&env), Some(json!({"source": "user", "value": "v\u{0}"}))),
        (
            "PUT",
            "/api/v1/parameter/n".into(),
            Some(&env),
            Some(json!({"source": "user", "value": "v", "resource_id": "std::File[a,path=/x\u{0}]"})),
        ),
        ("GET", "/api/v1/parameter/a%00b".into(), Some(&env), None),
        ("GET", "/api/v2/resource?filter.agent=a%00b".into(), Some(&env), None),
        ("GET", format!("/api/v2/resource?filter.agent={}", "a".repeat(5000)), Some(&env), None),
        ("GET", "/api/v2/resource?last_id=a%00b".into(), Some(&env), None),
        (
            "PUT",
            "/api/v1/version".into(),
            Some(&env),
            Some(
                json!({"version": v["data"], "resources": [{"id": "std::testing::NullResource[ag\u{0}ent,name=a],v=0",
                        "name": "a", "requires": [], "purged": false, "send_event": false}]}),
            ),
        ),
        (
            "PUT",
            "/api/v1/version".into(),
            Some(&env),
            Some(
                json!({"version": v["data"], "resources": [{"id": format!("std::testing::NullResource[a,name={huge}],v=0"),
                        "name": "a", "requires": [], "purged": false, "send_event": false}]}),
            ),
        ),
    ];
    for (method, path, tid, body) in cases {
        let (status, answer) = s.call(method, &path, tid, body).await;
        let message = answer["message"].as_str().unwrap_or_default().to_string();
        assert_eq!(status, 400, "{method} {}: {answer}", &path[..path.len().min(80)]);
        for leak in ["invalid byte sequence", "index row", "0x00", "database error", "sqlx", "postgres"] {
            assert!(!message.to_lowercase().contains(leak), "{method} {path}: leaks {leak:?}: {message}");
        }
    }
    // Nothing of it was stored.
    let projects = s.client().projects().await.unwrap();
    assert_eq!(projects.len(), 1, "{projects:?}");
}

#[tokio::test]
async fn the_console_sends_security_headers() {
    let s = TestServer::start().await;
    for path in ["/console/login", "/console"] {
        let response = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
            .get(format!("{}{path}", s.url))
            .send()
            .await
            .unwrap();
        let headers = response.headers();
        let csp = headers.get("content-security-policy").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
        assert!(csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'self'"), "{path}: {csp:?}");
        assert_eq!(headers.get("x-frame-options").map(|v| v.to_str().unwrap()), Some("DENY"), "{path}");
        assert_eq!(headers.get("x-content-type-options").map(|v| v.to_str().unwrap()), Some("nosniff"), "{path}");
    }
}

async fn login_token(s: &TestServer, username: &str, password: &str) -> String {
    let response = reqwest::Client::new()
        .post(format!("{}/api/v2/login", s.url))
        .json(&json!({"username": username, "password": password}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "login of {username}");
    let body: Value = response.json().await.unwrap();
    body["data"]["token"].as_str().unwrap().to_string()
}

async fn call_as(s: &TestServer, token: &str, method: &str, path: &str, tid: Option<&str>, body: Option<Value>) -> u16 {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = common::client_with(Some(token)).request(method, format!("{}{path}", s.url));
    if let Some(tid) = tid {
        request = request.header("X-Inmanta-tid", tid);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.unwrap().status().as_u16()
}

fn file_body(content: &str) -> (String, Value) {
    use base64::Engine;
    let hash = sha1_smol::Sha1::from(content.as_bytes()).digest().to_string();
    (hash, json!({"content": base64::engine::general_purpose::STANDARD.encode(content)}))
}

#[tokio::test]
async fn a_generated_password_must_change_before_anything_else() {
    let s = TestServer::start_without_users(&[]).await;
    let password = std::fs::read_to_string(s.state_dir.path().join("initial-admin-password")).unwrap();
    let token = login_token(&s, "admin", password.trim()).await;
    let (hash, upload) = file_body("hello");
    let diff = json!({"file_id_1": hash, "file_id_2": hash});
    for (method, path, body) in [
        ("GET", "/api/v2/current_user".to_string(), None),
        ("POST", "/api/v2/login/renew".to_string(), None),
        ("PUT", format!("/api/v1/file/{hash}"), Some(upload)),
        ("POST", "/api/v1/filediff".to_string(), Some(diff)),
        ("GET", "/api/v2/project".to_string(), None),
    ] {
        assert_eq!(call_as(&s, &token, method, &path, None, body).await, 403, "{method} {path}");
    }
    // Logging out stays possible.
    assert_eq!(call_as(&s, &token, "POST", "/api/v2/logout", None, None).await, 200);
}

#[tokio::test]
async fn only_exporters_write_the_file_store_and_within_its_quota() {
    let s = TestServer::start_with(&[("INMANTA_SERVER_FILE_STORE_QUOTA", "1000")]).await;
    let env = s.new_environment("p", "e").await.to_string();
    s.client().create_user("reader", "Reader-password-1").await.unwrap();
    let (status, body) = s
        .call("POST", "/api/v2/role_assignment/reader", None, Some(json!({"environment": env, "role": "read-only"})))
        .await;
    assert_eq!(status, 200, "{body}");
    let reader = login_token(&s, "reader", "Reader-password-1").await;
    let agent = s.environment_token(&env, &["agent"]).await;
    let compiler = s.environment_token(&env, &["compiler"]).await;

    let (hash, upload) = file_body(&"a".repeat(600));
    let path = format!("/api/v1/file/{hash}");
    assert_eq!(call_as(&s, &reader, "PUT", &path, None, Some(upload.clone())).await, 403, "a read-only user");
    assert_eq!(call_as(&s, &agent, "PUT", &path, None, Some(upload.clone())).await, 403, "an agent token");
    assert_eq!(call_as(&s, &compiler, "PUT", &path, None, Some(upload.clone())).await, 200, "a compiler token");
    // Reading stays open to every authenticated caller that knows the hash.
    assert_eq!(call_as(&s, &reader, "GET", &path, None, None).await, 200);

    // 600 of 1000 bytes are used: another 600 do not fit, the same file again does.
    let (other, second) = file_body(&"b".repeat(600));
    let (status, body) = s.call("PUT", &format!("/api/v1/file/{other}"), None, Some(second)).await;
    assert_eq!(status, 409, "{body}");
    assert!(body["message"].as_str().unwrap().contains("file-store-quota"), "{body}");
    assert_eq!(s.call("PUT", &path, None, Some(upload)).await.0, 200);
}

#[tokio::test]
async fn partial_filters_match_percent_and_underscore_literally_and_statuses_are_checked() {
    let s = TestServer::start().await;
    let client = s.client();
    let (env, version) = halted_environment(&s).await;
    let resources: Vec<Value> = ["100%", "a_b", "axb", "plain"]
        .iter()
        .map(|name| {
            json!({"id": format!("std::testing::NullResource[a,name={name}],v=0"), "name": name, "agentname": "a",
                   "requires": [], "purged": false, "send_event": false})
        })
        .collect();
    client
        .put_version(env, &PutVersion { version, resources: objects(resources), ..Default::default() })
        .await
        .unwrap();
    let names = async |value: &str| -> Vec<String> {
        let query = ListQuery::new().filter("resource_id_value", value);
        let page = client.resources(env, &query).await.unwrap();
        let mut names: Vec<String> = page.data.iter().map(|r| r.id_details.resource_id_value.clone()).collect();
        names.sort();
        names
    };
    assert_eq!(names("%").await, ["100%"], "% is a percent sign, not a wildcard");
    assert_eq!(names("a_b").await, ["a_b"], "_ is an underscore, not any character");

    let (status, message) = refusal(client.resources(env, &ListQuery::new().filter("status", "deployedd")).await);
    assert_eq!(status, 400, "{message}");
    assert!(message.contains("filter.status must be one of"), "{message}");
    client.resources(env, &ListQuery::new().filter("status", "!orphaned")).await.unwrap();
    assert_eq!(refused(client.agents(env, &ListQuery::new().filter("status", "sleepy")).await), 400);
}

#[tokio::test]
async fn the_openapi_document_describes_every_route() {
    let s = TestServer::start().await;
    let (status, doc) = s.call("GET", "/api/v2/docs?format=openapi", None, None).await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.0.3");
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() > 60, "{} paths", paths.len());
    assert!(paths["/api/v1/version"]["put"]["requestBody"].is_object());
}

#[tokio::test]
async fn swagger_ui_loads_from_the_server_and_shows_the_document() {
    let s = TestServer::start().await;
    // The page, and every script and style it names, come from the server itself; the page
    // names the document, which anyone may read.
    let anyone = reqwest::Client::new();
    let page = anyone.get(format!("{}/api/v2/docs", s.url)).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let policy = page.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(policy.contains("script-src 'self'"), "{policy}");
    let page = page.text().await.unwrap();
    assert!(page.contains("data-url=\"/api/v2/docs?format=openapi\""), "{page}");
    for asset in ["/api/v2/docs/swagger-ui-bundle.js", "/api/v2/docs/swagger-ui.css", "/api/v2/docs/initializer.js"] {
        assert!(page.contains(asset), "the page loads {asset}");
        let response = anyone.get(format!("{}{asset}", s.url)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{asset}");
        assert!(response.bytes().await.unwrap().len() > 100, "{asset}");
    }
    assert!(!page.contains("http://") && !page.contains("https://"), "nothing from elsewhere: {page}");
    let doc = anyone.get(format!("{}/api/v2/docs?format=openapi", s.url)).send().await.unwrap();
    assert_eq!(doc.status(), 200);
    assert_eq!(anyone.get(format!("{}/api/v2/docs/nothing.js", s.url)).send().await.unwrap().status(), 404);
    assert_eq!(anyone.get(format!("{}/api/v2/docs?format=yaml", s.url)).send().await.unwrap().status(), 400);

    // A real browser runs Swagger UI, which fetches the document and lists its operations.
    let candidates = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];
    let Some(chromium) = test_support::program("Chromium (scripts/lib.sh ensure_chromium)", &candidates) else {
        return;
    };
    let profile = tempfile::tempdir().unwrap();
    let output = tokio::process::Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=20000", "--dump-dom"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("{}/api/v2/docs", s.url))
        .output()
        .await
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&output.stdout);
    assert!(dom.contains("Inmanta orchestrator API"), "the document's title is shown: {dom}");
    assert!(dom.contains("/api/v2/resource"), "the operations are listed: {dom}");
}

#[tokio::test]
async fn tls_serves_https_with_secure_session_cookies() {
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    let made = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
        .args(["-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let (cert_s, key_s) = (cert.display().to_string(), key.display().to_string());
    let s = TestServer::start_without_users(&[
        ("INMANTA_SERVER_SSL_CERT_FILE", cert_s.as_str()),
        ("INMANTA_SERVER_SSL_KEY_FILE", key_s.as_str()),
    ])
    .await;
    assert!(s.url.starts_with("https://"), "{}", s.url);
    let password = std::fs::read_to_string(s.state_dir.path().join("initial-admin-password")).unwrap();
    let body = json!({"username": "admin", "password": password.trim()}).to_string();
    let out = std::process::Command::new("curl")
        .args(["-sS", "-i", "--cacert", &cert_s, "-H", "content-type: application/json", "-d", &body])
        .arg(format!("{}/api/v2/login", s.url))
        .output()
        .expect("curl");
    let answer = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}\n{}", String::from_utf8_lossy(&out.stderr));
    let cookie = answer.lines().find(|l| l.to_ascii_lowercase().starts_with("set-cookie:")).unwrap_or_default();
    assert!(cookie.contains("Secure") && cookie.contains("HttpOnly"), "{cookie}");
    // Plain HTTP to the TLS port gets no answer.
    let plain = std::process::Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5"])
        .arg(s.url.replacen("https://", "http://", 1) + "/api/v2/health")
        .output()
        .expect("curl");
    assert_ne!(String::from_utf8_lossy(&plain.stdout), "200");
}
