//! The JSON lines the agent and its Python executor speak (the shim's module docstring,
//! agent/python/inmanta_executor.py, shows them as the Python side writes them).
//!
//! The agent writes a numbered [`Request`] ([`Numbered`]) and, while it runs, the
//! [`ServerAnswer`] to each [`ServerCall`] the executor makes; the executor writes its
//! [`Hello`] once, then for each request the [`Incoming`] lines: server calls, and one reply
//! ([`LoadAnswer`], [`HandlerReply`] or [`ResolveReply`], by the request's action).
//! A line that is none of these is an error naming what was wrong with it.

use std::collections::BTreeMap;

use api::resource::DiscoveredResourceInput;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::handler::{Change, HandlerStatus};

/// The first line the executor writes: inmanta-core imported (`ready`), or why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Hello {
    pub ready: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inmanta_core: Option<String>,
    /// Why inmanta-core cannot be imported (with `ready: false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A request or its reply with the number that pairs them: `{"id": n, ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Numbered<T> {
    pub id: u64,
    #[serde(flatten)]
    pub body: T,
}

/// What the agent asks of the executor, by its `action`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub(crate) enum Request {
    /// The code and environment of a started process: it imports the modules (answer:
    /// [`LoadAnswer`]).
    Load {
        /// Directories put first on `sys.path`.
        code: Vec<String>,
        /// Modules whose `inmanta_plugins.<name>` package is imported.
        load: Vec<String>,
        environment: String,
    },
    /// Runs the resource's handler (answer: [`HandlerReply`]).
    Deploy(HandlerRequest),
    DryRun(HandlerRequest),
    /// The handler's `check_facts`.
    Facts(HandlerRequest),
    /// Resolves the references of a resource whose handler is not Python (answer:
    /// [`ResolveReply`]).
    Resolve {
        resource: Value,
        /// Reference id -> the value the agent resolved itself.
        known: Map<String, Value>,
    },
}

/// The resource a handler runs for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct HandlerRequest {
    /// The resource's attributes with its versioned `id`.
    pub resource: Value,
    pub dependency_changed: bool,
}

/// The answer to [`Request::Load`]: the modules imported (`loaded`), the ones that failed with
/// their traceback; or an `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LoadAnswer {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub loaded: bool,
    /// Module name -> the traceback of its failed import.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The reply to a handler run (deploy, dry_run, facts). A run that could not start (the resource
/// does not deserialize, no handler) has no `resolved` and `discovered`; a request the executor
/// cannot serve has only an `error`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct HandlerReply {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<HandlerStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<Change>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<BTreeMap<String, AttributeChange>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs: Option<Vec<LogLine>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<Map<String, Value>>,
    /// What a discovery handler reported (`discovered_resource_create_batch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovered: Option<Vec<DiscoveredResourceInput>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<Resolved>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The reply to [`Request::Resolve`]: the attributes with the mutators' values in place, or the
/// `error` of the reference that failed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct ResolveReply {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attributes: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<Resolved>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs: Option<Vec<LogLine>>,
}

/// One changed attribute, as inmanta-core's handler context records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct AttributeChange {
    #[serde(default)]
    pub current: Value,
    #[serde(default)]
    pub desired: Value,
}

/// A log line of the handler context (inmanta-core's `LogLine` fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct LogLine {
    pub level: String,
    pub msg: String,
    #[serde(default)]
    pub args: Vec<Value>,
    #[serde(default)]
    pub kwargs: Map<String, Value>,
    #[serde(default)]
    pub timestamp: String,
}

/// What the references of a resource resolved to, redacted by the agent from what it reports:
/// the values, and the attributes the mutators filled.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub(crate) struct Resolved {
    #[serde(default)]
    pub values: Vec<Value>,
    #[serde(default)]
    pub attributes: Vec<String>,
}

/// What a handler (or a reference it resolves) asks of the server while a request runs, by its
/// `method`; answered with a [`ServerAnswer`] on the next line of the executor's stdin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub(crate) enum ServerCall {
    /// A file's content by its sha1 (a handler's `self.get_file`).
    GetFile { hash: String },
    /// The facts of a resource (std's fact reference).
    GetFacts { tid: String, rid: String },
    /// The values a resource's references resolved to, sent before its handler runs: the agent
    /// redacts them from the process's stderr.
    Redact { values: Vec<Value> },
    /// Any other API call of a handler (`self.get_client()`), as inmanta-core's client would
    /// send it; the agent sends it as itself ([`super::server_api`]).
    Api(ApiCall),
}

/// An API call as the executor builds it with inmanta-core's method registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ApiCall {
    pub http_method: String,
    /// The path and query string.
    pub url: String,
    #[serde(default)]
    pub headers: serde_json::Map<String, Value>,
    #[serde(default)]
    pub body: Value,
}

/// `{"code": ..., "result": ...}`, what inmanta-core's client calls return.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ServerAnswer {
    pub code: u16,
    pub result: Value,
}

impl ServerAnswer {
    pub(crate) fn new(code: u16, result: Value) -> ServerAnswer {
        ServerAnswer { code, result }
    }
}

/// A line the agent writes after the first request: the next request, or a server call's answer.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum Outgoing<'a> {
    Request(&'a Numbered<Request>),
    ServerAnswer { server_answer: &'a ServerAnswer },
}

/// A line the executor writes while it serves a request: a server call, or the reply `R`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Incoming<R> {
    ServerCall(ServerCall),
    Reply(Numbered<R>),
}

impl<'de, R: serde::de::DeserializeOwned> Deserialize<'de> for Incoming<R> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Incoming<R>, D::Error> {
        let mut object = Map::<String, Value>::deserialize(deserializer)?;
        match object.remove("server_call") {
            Some(call) => ServerCall::deserialize(call)
                .map(Incoming::ServerCall)
                .map_err(|e| D::Error::custom(format!("a server call: {e}"))),
            None => Numbered::<R>::deserialize(Value::Object(object))
                .map(Incoming::Reply)
                .map_err(|e| D::Error::custom(format!("a reply: {e}"))),
        }
    }
}

/// As the executor writes it (a stand-in executor in a test writes these).
impl<R: Serialize> Serialize for Incoming<R> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(untagged)]
        enum Line<'a, R> {
            ServerCall { server_call: &'a ServerCall },
            Reply(&'a Numbered<R>),
        }
        match self {
            Incoming::ServerCall(server_call) => Line::ServerCall { server_call },
            Incoming::Reply(reply) => Line::<R>::Reply(reply),
        }
        .serialize(serializer)
    }
}

/// One line of the executor, or what is wrong with it (the line is quoted). Read as JSON first,
/// so that numbers keep their exact value inside tagged and flattened types.
pub(crate) fn parse_line<T: serde::de::DeserializeOwned>(line: &str) -> Result<T, String> {
    serde_json::from_str::<Value>(line)
        .and_then(T::deserialize)
        .map_err(|e| format!("it wrote a line that is not the protocol ({e}): {line}"))
}

/// A line the agent writes, without its newline.
pub(crate) fn to_line(message: &impl Serialize) -> String {
    // Only maps with string keys and JSON values: serializing cannot fail.
    serde_json::to_string(message).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn value(line: &str) -> Value {
        serde_json::from_str(line).unwrap()
    }

    /// A line the agent writes: ours serializes to the JSON the shim reads, and reads back.
    fn written<T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(ours: T, line: &str) {
        assert_eq!(value(&to_line(&ours)), value(line));
        assert_eq!(parse_line::<T>(line).unwrap(), ours);
    }

    /// A line the shim writes: it reads as `expected`, and writes back as the same JSON.
    fn read<T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(line: &str, expected: T) {
        let parsed: T = parse_line(line).unwrap();
        assert_eq!(parsed, expected);
        assert_eq!(value(&to_line(&parsed)), value(line));
    }

    #[test]
    fn hello_lines() {
        read(
            r#"{"ready": true, "python": "3.13.0", "inmanta_core": "20.1.0"}"#,
            Hello { ready: true, python: Some("3.13.0".into()), inmanta_core: Some("20.1.0".into()), error: None },
        );
        read(
            r#"{"ready": false, "python": "3.13.0", "error": "inmanta-core cannot be imported by /usr/bin/python3"}"#,
            Hello {
                ready: false,
                python: Some("3.13.0".into()),
                inmanta_core: None,
                error: Some("inmanta-core cannot be imported by /usr/bin/python3".into()),
            },
        );
    }

    #[test]
    fn requests() {
        written(
            Numbered {
                id: 1,
                body: Request::Load {
                    code: vec!["/cache/code/abc".into()],
                    load: vec!["std".into(), "files".into()],
                    environment: "6c66ca44-da58-4924-ad17-151abc2f3726".into(),
                },
            },
            r#"{"id": 1, "action": "load", "code": ["/cache/code/abc"], "load": ["std", "files"],
                "environment": "6c66ca44-da58-4924-ad17-151abc2f3726"}"#,
        );
        let resource = json!({"id": "files::File[h1,path=/tmp/a],v=3", "path": "/tmp/a"});
        for (action, body) in [
            ("deploy", Request::Deploy(HandlerRequest { resource: resource.clone(), dependency_changed: true })),
            ("dry_run", Request::DryRun(HandlerRequest { resource: resource.clone(), dependency_changed: false })),
            ("facts", Request::Facts(HandlerRequest { resource: resource.clone(), dependency_changed: false })),
        ] {
            let changed = matches!(body, Request::Deploy(_));
            written(
                Numbered { id: 7, body },
                &format!(
                    r#"{{"id": 7, "action": "{action}", "resource": {resource}, "dependency_changed": {changed}}}"#
                ),
            );
        }
        let known = json!({"f0d6b4a4-5cb4-4a4c-a3f8-2b1c3d4e5f60": "s3cret"});
        written(
            Numbered {
                id: 9,
                body: Request::Resolve { resource: resource.clone(), known: known.as_object().unwrap().clone() },
            },
            &format!(r#"{{"id": 9, "action": "resolve", "resource": {resource}, "known": {known}}}"#),
        );
    }

    #[test]
    fn load_answers() {
        read(
            r#"{"id": 1, "loaded": true, "errors": {"apt": "Traceback (most recent call last):\n..."}}"#,
            Incoming::Reply(Numbered {
                id: 1,
                body: LoadAnswer {
                    loaded: true,
                    errors: Some([("apt".to_string(), "Traceback (most recent call last):\n...".to_string())].into()),
                    error: None,
                },
            }),
        );
        read(
            r#"{"id": 2, "error": "the executor has no code loaded yet"}"#,
            Incoming::Reply(Numbered {
                id: 2,
                body: LoadAnswer {
                    loaded: false,
                    errors: None,
                    error: Some("the executor has no code loaded yet".into()),
                },
            }),
        );
        read(
            r#"{"id": 3, "loaded": true, "errors": {}}"#,
            Incoming::Reply(Numbered {
                id: 3,
                body: LoadAnswer { loaded: true, errors: Some(BTreeMap::new()), error: None },
            }),
        );
    }

    fn log_line() -> LogLine {
        LogLine {
            level: "INFO".into(),
            msg: "Created %(path)s".into(),
            args: vec![],
            kwargs: [("path".to_string(), json!("/tmp/a"))].into_iter().collect(),
            timestamp: "2026-12-03T07:30:00.123456".into(),
        }
    }

    const LOG: &str = r#"{"level": "INFO", "msg": "Created %(path)s", "args": [], "kwargs": {"path": "/tmp/a"},
        "timestamp": "2026-12-03T07:30:00.123456"}"#;

    #[test]
    fn handler_replies() {
        // Executor.handle's reply after the handler ran
        read(
            &format!(
                r#"{{"id": 7, "resolved": {{"values": ["s3cret"], "attributes": ["password"]}}, "status": "deployed",
                    "change": "created", "changes": {{"path": {{"current": null, "desired": "/tmp/a"}}}},
                    "facts": {{"size": 3}}, "logs": [{LOG}],
                    "discovered": [{{"discovered_resource_id": "files::File[h1,path=/tmp/b]",
                                    "values": {{"path": "/tmp/b"}},
                                    "discovery_resource_id": "files::Finder[h1,name=f]"}}]}}"#
            ),
            Incoming::Reply(Numbered {
                id: 7,
                body: HandlerReply {
                    status: Some(HandlerStatus::Deployed),
                    change: Some(Change::Created),
                    changes: Some(
                        [("path".to_string(), AttributeChange { current: Value::Null, desired: json!("/tmp/a") })]
                            .into(),
                    ),
                    logs: Some(vec![log_line()]),
                    facts: Some(json!({"size": 3}).as_object().unwrap().clone()),
                    discovered: Some(vec![DiscoveredResourceInput {
                        discovered_resource_id: "files::File[h1,path=/tmp/b]".into(),
                        values: json!({"path": "/tmp/b"}),
                        discovery_resource_id: "files::Finder[h1,name=f]".into(),
                    }]),
                    resolved: Some(Resolved { values: vec![json!("s3cret")], attributes: vec!["password".into()] }),
                    error: None,
                },
            }),
        );
        // Executor._failure: no handler for the resource
        read(
            &format!(
                r#"{{"id": 8, "status": "unavailable", "change": "nochange", "changes": {{}}, "facts": {{}},
                    "logs": [{LOG}]}}"#
            ),
            Incoming::Reply(Numbered {
                id: 8,
                body: HandlerReply {
                    status: Some(HandlerStatus::Unavailable),
                    change: Some(Change::NoChange),
                    changes: Some(BTreeMap::new()),
                    logs: Some(vec![log_line()]),
                    facts: Some(Map::new()),
                    ..HandlerReply::default()
                },
            }),
        );
    }

    #[test]
    fn resolve_replies() {
        read(
            &format!(
                r#"{{"attributes": {{"id": "a::B[h,n=1],v=2", "password": "s3cret"}}, "id": 9,
                    "resolved": {{"values": ["s3cret"], "attributes": []}}, "logs": [{LOG}]}}"#
            ),
            Incoming::Reply(Numbered {
                id: 9,
                body: ResolveReply {
                    attributes: Some(
                        json!({"id": "a::B[h,n=1],v=2", "password": "s3cret"}).as_object().unwrap().clone(),
                    ),
                    error: None,
                    resolved: Some(Resolved { values: vec![json!("s3cret")], attributes: vec![] }),
                    logs: Some(vec![log_line()]),
                },
            }),
        );
        read(
            r#"{"error": "reference vault::Secret 4e1b: KeyError: 'x'", "id": 10, "resolved": {"values": [], "attributes": []}, "logs": []}"#,
            Incoming::Reply(Numbered {
                id: 10,
                body: ResolveReply {
                    attributes: None,
                    error: Some("reference vault::Secret 4e1b: KeyError: 'x'".into()),
                    resolved: Some(Resolved::default()),
                    logs: Some(vec![]),
                },
            }),
        );
    }

    #[test]
    fn server_calls_and_answers() {
        // _server_call: dict(args, method=method)
        read::<Incoming<HandlerReply>>(
            r#"{"server_call": {"hash": "3f786850e387550fdab836ed7e6dc881de23001b", "method": "get_file"}}"#,
            Incoming::ServerCall(ServerCall::GetFile { hash: "3f786850e387550fdab836ed7e6dc881de23001b".into() }),
        );
        read::<Incoming<HandlerReply>>(
            r#"{"server_call": {"tid": "6c66ca44-da58-4924-ad17-151abc2f3726", "rid": "a::B[h,n=1]", "method": "get_facts"}}"#,
            Incoming::ServerCall(ServerCall::GetFacts {
                tid: "6c66ca44-da58-4924-ad17-151abc2f3726".into(),
                rid: "a::B[h,n=1]".into(),
            }),
        );
        read::<Incoming<ResolveReply>>(
            r#"{"server_call": {"values": ["s3cret", "{\"a\": 1}"], "method": "redact"}}"#,
            Incoming::ServerCall(ServerCall::Redact { values: vec![json!("s3cret"), json!("{\"a\": 1}")] }),
        );
        let answer = ServerAnswer::new(200, json!({"content": "aGVsbG8="}));
        assert_eq!(
            value(&to_line(&Outgoing::ServerAnswer { server_answer: &answer })),
            value(r#"{"server_answer": {"code": 200, "result": {"content": "aGVsbG8="}}}"#)
        );
    }

    #[test]
    fn malformed_lines_name_what_is_wrong() {
        let err =
            parse_line::<Incoming<HandlerReply>>(r#"{"server_call": {"method": "restart", "now": true}}"#).unwrap_err();
        assert!(err.contains("a server call: unknown variant `restart`"), "{err}");
        assert!(err.contains(r#"{"server_call": {"method": "restart", "now": true}}"#), "{err}");
        let err = parse_line::<Incoming<HandlerReply>>(r#"{"server_call": {"method": "get_file"}}"#).unwrap_err();
        assert!(err.contains("a server call: missing field `hash`"), "{err}");
        let err = parse_line::<Incoming<HandlerReply>>(r#"{"id": 3, "status": "exploded"}"#).unwrap_err();
        assert!(err.contains("a reply: \"exploded\" is not a handler status"), "{err}");
        let err = parse_line::<Incoming<HandlerReply>>(r#"{"status": "deployed"}"#).unwrap_err();
        assert!(err.contains("a reply: missing field `id`"), "{err}");
        let err = parse_line::<Incoming<LoadAnswer>>("Traceback (most recent call last):").unwrap_err();
        assert!(err.starts_with("it wrote a line that is not the protocol (expected value"), "{err}");
        let err = parse_line::<Numbered<Request>>(r#"{"id": 1, "action": "restart"}"#).unwrap_err();
        assert!(err.contains("unknown variant `restart`"), "{err}");
    }
}
