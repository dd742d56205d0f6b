//! The content-addressed file store over a real socket.

use crate::common;

use common::TestServer;
use serde_json::{Value, json};

// sha1 of "hello\n" and of "hello\nworld\n".
const HELLO: &str = "f572d396fae9206628714fb2ce00f72e94f2258f";
const HELLO_WORLD: &str = "58853e8a5e8272b1012f9a52a80758b27bd0d3cb";

#[tokio::test]
async fn upload_stat_get_and_diff() {
    let s = TestServer::start().await;
    let (status, _) = s.call("HEAD", &format!("/api/v1/file/{HELLO}"), None, None).await;
    assert_eq!(status, 404);
    let (status, body) =
        s.call("POST", "/api/v1/file", None, Some(json!({"files": [HELLO, HELLO_WORLD, HELLO]}))).await;
    assert_eq!((status, body), (200, json!({"files": [HELLO, HELLO_WORLD]})), "missing ones, each once");

    // Inmanta's client sends the id in the body too, and no content type.
    let response = s
        .http
        .put(format!("{}/api/v1/file/{HELLO}", s.url))
        .body(json!({"id": HELLO, "content": "aGVsbG8K"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let (status, _) = s.call("PUT", &format!("/api/v1/file/{HELLO}"), None, Some(json!({"content": "aGVsbG8K"}))).await;
    assert_eq!(status, 200, "uploading twice is fine");
    let (status, _) =
        s.call("PUT", &format!("/api/v1/file/{HELLO_WORLD}"), None, Some(json!({"content": "aGVsbG8Kd29ybGQK"}))).await;
    assert_eq!(status, 200);

    let (status, _) = s.call("HEAD", &format!("/api/v1/file/{HELLO}"), None, None).await;
    assert_eq!(status, 200);
    let (status, body) = s.call("GET", &format!("/api/v1/file/{HELLO}"), None, None).await;
    assert_eq!((status, body), (200, json!({"content": "aGVsbG8K"})));
    let (_, body) = s.call("POST", "/api/v1/file", None, Some(json!({"files": [HELLO, HELLO_WORLD]}))).await;
    assert_eq!(body, json!({"files": []}));

    let (status, body) =
        s.call("POST", "/api/v1/filediff", None, Some(json!({"file_id_1": HELLO, "file_id_2": HELLO_WORLD}))).await;
    assert_eq!(status, 200);
    let lines: Vec<&str> = body["diff"].as_array().unwrap().iter().map(|l| l.as_str().unwrap()).collect();
    assert!(lines.contains(&"+world"), "{lines:?}");
    assert!(lines.contains(&" hello"), "{lines:?}");
}

#[tokio::test]
async fn bad_uploads_are_refused() {
    let s = TestServer::start().await;
    let (status, body) =
        s.call("PUT", &format!("/api/v1/file/{HELLO}"), None, Some(json!({"content": "d3Jvbmc="}))).await;
    assert_eq!(status, 400, "hash mismatch: {body}");
    assert!(body["message"].as_str().unwrap().contains("does not match"));
    let (status, _) = s.call("PUT", &format!("/api/v1/file/{HELLO}"), None, Some(json!({"content": "%%%"}))).await;
    assert_eq!(status, 400, "not base64");
    let (status, _) = s.call("PUT", "/api/v1/file/short", None, Some(json!({"content": ""}))).await;
    assert_eq!(status, 400, "not a sha1");
    let (status, body) = s.call("GET", &format!("/api/v1/file/{HELLO}"), None, None).await;
    assert_eq!(status, 404);
    assert!(body["message"].is_string());
    let (status, _) = s.call("POST", "/api/v1/file", None, Some(json!({"files": ["nope"]}))).await;
    assert_eq!(status, 400);
    let (_, body) = s.call("POST", "/api/v1/file", None, Some(json!({"files": []}))).await;
    assert_eq!(body, json!({"files": []}));
    let _: Value = body;
}

#[tokio::test]
async fn files_upload_in_batches() {
    let s = TestServer::start().await;
    let (status, body) = s
        .call(
            "PUT",
            "/api/v2/files",
            None,
            Some(json!({"files": {HELLO: "aGVsbG8K", HELLO_WORLD: "aGVsbG8Kd29ybGQK"}})),
        )
        .await;
    assert_eq!((status, body), (200, json!({"data": 2})));
    let (_, body) = s.call("POST", "/api/v1/file", None, Some(json!({"files": [HELLO, HELLO_WORLD]}))).await;
    assert_eq!(body, json!({"files": []}), "both stored");
    let (status, body) = s.call("GET", &format!("/api/v1/file/{HELLO_WORLD}"), None, None).await;
    assert_eq!((status, body), (200, json!({"content": "aGVsbG8Kd29ybGQK"})));
    let (status, _) = s.call("PUT", "/api/v2/files", None, Some(json!({"files": {HELLO: "aGVsbG8K"}}))).await;
    assert_eq!(status, 200, "uploading again is fine");

    // One bad file refuses the whole batch: nothing of it is stored.
    const OTHER: &str = "bea43e7033e19327183416f23fe2ee1b64c25f4a"; // sha1 of "other\n"
    let (status, body) =
        s.call("PUT", "/api/v2/files", None, Some(json!({"files": {OTHER: "b3RoZXIK", HELLO: "d3Jvbmc="}}))).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["message"].as_str().unwrap().contains("does not match"), "{body}");
    let (_, body) = s.call("POST", "/api/v1/file", None, Some(json!({"files": [OTHER]}))).await;
    assert_eq!(body, json!({"files": [OTHER]}), "nothing of a refused batch is stored");
    let (status, _) = s.call("PUT", "/api/v2/files", None, Some(json!({"files": {OTHER: "%%%"}}))).await;
    assert_eq!(status, 400, "not base64");
}
