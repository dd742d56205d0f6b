//! Tokens signed by outside issuers (`[auth_jwt_<name>]`, docs/security.md) against a real
//! server: keys made by openssl, the provider's JWKS served over HTTP by the test, every refusal
//! checked for its reason, a rotated key picked up without a restart, and the `inmanta` CLI
//! acting with such a token.

use crate::common;

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::TestServer;
use orchestrator::auth::outside::jsonwebtoken::jwk::{Jwk, JwkSet, KeyAlgorithm};
use orchestrator::auth::outside::jsonwebtoken::{self, Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// A private key made by openssl, in the DER form `jsonwebtoken` signs with.
fn openssl_key(dir: &std::path::Path, name: &str, algorithm: Algorithm) -> EncodingKey {
    let pem = dir.join(format!("{name}.pem"));
    let der = dir.join(format!("{name}.der"));
    let generate: &[&str] = match algorithm {
        Algorithm::RS256 => &["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
        Algorithm::ES256 => &["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
        _ => &["genpkey", "-algorithm", "ED25519"],
    };
    let run = |args: &[&str]| {
        let out = Command::new("openssl").args(args).output().expect("openssl (apt-get install openssl)");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    run(&[generate, &["-out", pem.to_str().unwrap()]].concat());
    match algorithm {
        // jsonwebtoken reads RSA keys as PKCS#1, the others as PKCS#8.
        Algorithm::RS256 => {
            run(&[
                "rsa",
                "-in",
                pem.to_str().unwrap(),
                "-traditional",
                "-outform",
                "DER",
                "-out",
                der.to_str().unwrap(),
            ]);
            EncodingKey::from_rsa_der(&std::fs::read(&der).unwrap())
        }
        Algorithm::ES256 => {
            run(&[
                "pkcs8",
                "-topk8",
                "-nocrypt",
                "-in",
                pem.to_str().unwrap(),
                "-outform",
                "DER",
                "-out",
                der.to_str().unwrap(),
            ]);
            EncodingKey::from_ec_der(&std::fs::read(&der).unwrap())
        }
        _ => {
            run(&[
                "pkcs8",
                "-topk8",
                "-nocrypt",
                "-in",
                pem.to_str().unwrap(),
                "-outform",
                "DER",
                "-out",
                der.to_str().unwrap(),
            ]);
            EncodingKey::from_ed_der(&std::fs::read(&der).unwrap())
        }
    }
}

/// The public half of `key` as a JWK with this `kid`.
fn public_jwk(key: &EncodingKey, algorithm: Algorithm, kid: &str) -> Jwk {
    let mut jwk = Jwk::from_encoding_key(key, algorithm).expect("a public JWK");
    jwk.common.key_id = Some(kid.to_string());
    jwk.common.key_algorithm = Some(match algorithm {
        Algorithm::RS256 => KeyAlgorithm::RS256,
        Algorithm::ES256 => KeyAlgorithm::ES256,
        _ => KeyAlgorithm::EdDSA,
    });
    jwk
}

/// A JWKS endpoint: serves whatever set it holds now, and counts its requests.
struct JwksServer {
    url: String,
    set: Arc<Mutex<JwkSet>>,
    fetches: Arc<AtomicUsize>,
}

impl JwksServer {
    async fn start(keys: Vec<Jwk>) -> JwksServer {
        let set = Arc::new(Mutex::new(JwkSet { keys }));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (served, counted) = (set.clone(), fetches.clone());
        let app = axum::Router::new().route(
            "/jwks",
            axum::routing::get(move || {
                let (served, counted) = (served.clone(), counted.clone());
                async move {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let set = served.lock().unwrap().clone();
                    axum::Json(serde_json::to_value(set).unwrap())
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/jwks", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        JwksServer { url, set, fetches }
    }
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn sign(key: &EncodingKey, algorithm: Algorithm, kid: Option<&str>, claims: &Value) -> String {
    let mut header = Header::new(algorithm);
    header.kid = kid.map(str::to_string);
    jsonwebtoken::encode(&header, claims, key).expect("sign")
}

async fn get(s: &TestServer, token: Option<&str>, path: &str, tid: Option<&str>) -> (u16, String) {
    let mut request = common::client_with(token).get(format!("{}{path}", s.url));
    if let Some(tid) = tid {
        request = request.header("X-Inmanta-tid", tid);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    (status, body["message"].as_str().unwrap_or_default().to_string())
}

/// Asserts a 403 whose message is `Access denied: ...` and contains `reason`.
async fn refused_with(s: &TestServer, token: &str, reason: &str) {
    let (status, message) = get(s, Some(token), "/api/v2/project", None).await;
    assert_eq!(status, 403, "{reason}: {message}");
    assert!(message.starts_with("Access denied: "), "{message}");
    assert!(message.contains(reason), "expected {reason:?} in {message:?}");
}

const IDP: &str = "https://idp.example.com/realms/ops";
const CI: &str = "https://ci.example.com";
/// 32 bytes, URL-safe base64 as Inmanta's `key` option takes it.
const CI_KEY: &str = "Y2ktc2hhcmVkLXNlY3JldC1mb3ItdGhlLXBpcGVsaW5lcy0xMjM0NTY3OA";

#[tokio::test]
async fn outside_tokens_are_checked_by_their_issuer() {
    let keys = tempfile::tempdir().unwrap();
    let rsa = openssl_key(keys.path(), "rsa", Algorithm::RS256);
    let rsa_next = openssl_key(keys.path(), "rsa-next", Algorithm::RS256);
    let stranger = openssl_key(keys.path(), "stranger", Algorithm::RS256);
    let ec = openssl_key(keys.path(), "ec", Algorithm::ES256);
    let ed = openssl_key(keys.path(), "ed", Algorithm::EdDSA);
    let jwks = JwksServer::start(vec![
        public_jwk(&rsa, Algorithm::RS256, "k1"),
        public_jwk(&ec, Algorithm::ES256, "ec1"),
        public_jwk(&ed, Algorithm::EdDSA, "ed1"),
    ])
    .await;
    let s = TestServer::start_with(&[
        ("INMANTA_AUTH_JWT_IDP_ALGORITHM", "RS256"),
        ("INMANTA_AUTH_JWT_IDP_ISSUER", IDP),
        ("INMANTA_AUTH_JWT_IDP_AUDIENCE", "inmanta"),
        ("INMANTA_AUTH_JWT_IDP_CLIENT_TYPES", "api"),
        ("INMANTA_AUTH_JWT_IDP_JWKS_URI", &jwks.url),
        ("INMANTA_AUTH_JWT_IDP_JWT_USERNAME_CLAIM", "preferred_username"),
        ("INMANTA_AUTH_JWT_IDP_ROLES_CLAIM", "inmanta_roles"),
        ("INMANTA_AUTH_JWT_EC_ALGORITHM", "ES256"),
        ("INMANTA_AUTH_JWT_EC_ISSUER", "https://ec.example.com"),
        ("INMANTA_AUTH_JWT_EC_CLIENT_TYPES", "api"),
        ("INMANTA_AUTH_JWT_EC_JWKS_URI", &jwks.url),
        ("INMANTA_AUTH_JWT_ED_ALGORITHM", "EdDSA"),
        ("INMANTA_AUTH_JWT_ED_ISSUER", "https://ed.example.com"),
        ("INMANTA_AUTH_JWT_ED_CLIENT_TYPES", "api"),
        ("INMANTA_AUTH_JWT_ED_JWKS_URI", &jwks.url),
        ("INMANTA_AUTH_JWT_CI_ALGORITHM", "HS256"),
        ("INMANTA_AUTH_JWT_CI_ISSUER", CI),
        ("INMANTA_AUTH_JWT_CI_KEY", CI_KEY),
        ("INMANTA_AUTH_JWT_CI_CLIENT_TYPES", "api,agent,compiler"),
    ])
    .await;
    let env_a = s.new_environment("p", "a").await.to_string();
    let env_b = s.new_environment("q", "b").await.to_string();

    // A user of the provider: the roles per environment come from the configured claim.
    let user = |extra: Value| {
        let mut claims = json!({
            "iss": IDP, "aud": ["inmanta", "account"], "exp": now() + 300, "iat": now(),
            "preferred_username": "ann", "sub": "5c0f-ann",
            "inmanta_roles": {env_a.clone(): ["read-only"]},
        });
        claims.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        claims
    };
    let ann = sign(&rsa, Algorithm::RS256, Some("k1"), &user(json!({})));
    assert_eq!(get(&s, Some(&ann), "/api/v2/resource", Some(&env_a)).await.0, 200, "her role reads env a");
    let (status, message) = get(&s, Some(&ann), "/api/v2/resource", Some(&env_b)).await;
    assert_eq!(status, 403, "no role in env b: {message}");
    assert!(message.contains("ann"), "the user is named by jwt_username_claim: {message}");
    let (status, message) =
        s_post(&s, &ann, "/api/v1/environment_settings/auto_deploy", &env_a, json!({"value": true})).await;
    assert_eq!(status, 403, "read-only may not change settings: {message}");
    let admin = sign(&rsa, Algorithm::RS256, Some("k1"), &user(json!({"urn:inmanta:is_admin": true})));
    assert_eq!(get(&s, Some(&admin), "/api/v2/resource", Some(&env_b)).await.0, 200, "admins see everything");
    // ES256 and EdDSA issuers, from the same key set.
    let other =
        |iss: &str| json!({"iss": iss, "aud": iss, "exp": now() + 300, "sub": "bob", "urn:inmanta:is_admin": true});
    let es = sign(&ec, Algorithm::ES256, Some("ec1"), &other("https://ec.example.com"));
    assert_eq!(get(&s, Some(&es), "/api/v2/project", None).await.0, 200, "ES256");
    let eddsa = sign(&ed, Algorithm::EdDSA, Some("ed1"), &other("https://ed.example.com"));
    assert_eq!(get(&s, Some(&eddsa), "/api/v2/project", None).await.0, 200, "EdDSA");

    // Each wrong variant is refused with its reason; no token at all is a 401.
    assert_eq!(get(&s, None, "/api/v2/project", None).await.0, 401);
    refused_with(
        &s,
        &sign(&rsa, Algorithm::RS256, Some("k1"), &user(json!({"iss": "https://evil.example.com"}))),
        "Unknown issuer",
    )
    .await;
    refused_with(
        &s,
        &sign(&rsa, Algorithm::RS256, Some("k1"), &user(json!({"aud": "someone-else"}))),
        "Invalid audience",
    )
    .await;
    refused_with(
        &s,
        &sign(&rsa, Algorithm::RS256, Some("k1"), &user(json!({"exp": now() - 60}))),
        "Signature has expired",
    )
    .await;
    refused_with(&s, &sign(&rsa, Algorithm::RS256, Some("k1"), &user(json!({"nbf": now() + 600}))), "not yet valid")
        .await;
    refused_with(&s, &sign(&stranger, Algorithm::RS256, Some("k1"), &user(json!({}))), "Signature verification failed")
        .await;
    refused_with(&s, &sign(&rsa, Algorithm::RS256, None, &user(json!({}))), "kid is missing").await;
    let hs = sign(&EncodingKey::from_secret(b"guessed"), Algorithm::HS256, Some("k1"), &user(json!({})));
    refused_with(&s, &hs, "Algorithm HS256 is not supported").await;
    let payload = ann.split('.').nth(1).unwrap();
    refused_with(&s, &format!("eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.{payload}."), "Algorithm none is not supported")
        .await;
    refused_with(&s, "not-a-token", "Unable to decode").await;

    // Key rotation: a token with a kid the cache lacks refetches the set (at most once per few
    // seconds), so a key the provider adds is accepted without a restart.
    let fetches = jwks.fetches.load(Ordering::SeqCst);
    let rotated = sign(&rsa_next, Algorithm::RS256, Some("k2"), &user(json!({})));
    refused_with(&s, &rotated, "does not match a known key").await;
    refused_with(&s, &rotated, "does not match a known key").await;
    assert!(jwks.fetches.load(Ordering::SeqCst) <= fetches + 1, "unknown kids refetch at most once per few seconds");
    jwks.set.lock().unwrap().keys.push(public_jwk(&rsa_next, Algorithm::RS256, "k2"));
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let (status, message) = get(&s, Some(&rotated), "/api/v2/resource", Some(&env_a)).await;
        if status == 200 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the rotated key was not picked up: {status} {message}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(get(&s, Some(&ann), "/api/v2/resource", Some(&env_a)).await.0, 200, "the old key still works");

    // A pipeline's HS256 token bound to one environment, for the API and agents.
    let ci = EncodingKey::from_secret(&base64_url(CI_KEY));
    let pipeline = sign(
        &ci,
        Algorithm::HS256,
        None,
        &json!({"iss": CI, "aud": CI, "exp": now() + 300, "urn:inmanta:ct": "api,agent", "urn:inmanta:env": env_a}),
    );
    assert_eq!(get(&s, Some(&pipeline), "/api/v2/resource", Some(&env_a)).await.0, 200);
    let (status, message) = get(&s, Some(&pipeline), "/api/v2/resource", Some(&env_b)).await;
    assert_eq!(status, 403, "bound to env a: {message}");
    let forged = sign(
        &EncodingKey::from_secret(b"0123456789abcdef0123456789abcdef"),
        Algorithm::HS256,
        None,
        &json!({"iss": CI, "aud": CI}),
    );
    refused_with(&s, &forged, "Signature verification failed").await;

    // The `inmanta` CLI acts with such a token (`--token`).
    let port = s.url.rsplit(':').next().unwrap();
    let out = Command::new(common::BIN)
        .args(["environment", "list", "--host", "127.0.0.1", "--port", port, "--token", &admin])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&env_b), "{stdout}");
    let out = Command::new(common::BIN)
        .args(["environment", "list", "--host", "127.0.0.1", "--port", port, "--token", &rotated])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&env_a) && !stdout.contains(&env_b), "only her environment is listed: {stdout}");
}

fn base64_url(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text).unwrap()
}

async fn s_post(s: &TestServer, token: &str, path: &str, tid: &str, body: Value) -> (u16, String) {
    let response = common::client_with(Some(token))
        .post(format!("{}{path}", s.url))
        .header("X-Inmanta-tid", tid)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    (status, body["message"].as_str().unwrap_or_default().to_string())
}
