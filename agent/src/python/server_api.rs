//! The server's API for Python handlers: what a handler's `self.get_client()` sends beyond the
//! calls the agent answers itself (`get_file`, `get_facts`, discovered resources). The executor
//! turns the call into its HTTP request with inmanta-core's own method registry; the agent sends
//! it through a [`ServerApi`] with the agent's own credentials, in the agent's own environment.

use serde_json::{Value, json};

use super::protocol::{ApiCall, ServerAnswer};

/// The tid header, spelled as inmanta-core's client sends it (matched case-insensitively).
const TID_HEADER: &str = "X-Inmanta-tid";

/// One API request of a handler: what inmanta-core's `MethodProperties.build_call` made of it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiRequest {
    /// `GET`, `PUT`, `POST`, `PATCH`, `DELETE`, `HEAD`.
    pub method: String,
    /// Starts with `/api/`; the query string, if any, included.
    pub path_and_query: String,
    /// The call's own headers; the tid is always the agent's environment, and no credentials
    /// of the handler's are among them.
    pub headers: Vec<(String, String)>,
    /// The JSON body of a `POST`, `PUT` or `PATCH`.
    pub body: Option<Value>,
}

/// Sends the API requests of Python handlers to the server, as the agent. The server's
/// in-process agents call its own router with a caller limited to the environment; a remote
/// agent sends them over HTTP with its agent token.
pub trait ServerApi: Send + Sync {
    /// The status and JSON answer of `request`, sent for an agent of `environment`. A request
    /// that cannot be sent is answered with a status and a `{"message": ...}` too (never a hang:
    /// an implementation bounds how long it waits).
    fn call(&self, environment: &str, request: &ApiRequest) -> (u16, Value);
}

/// A [`ServerApi`] for executors without a server: every request is answered 501.
pub struct NoServerApi;

impl ServerApi for NoServerApi {
    fn call(&self, _environment: &str, request: &ApiRequest) -> (u16, Value) {
        (
            501,
            json!({"message": format!(
                "{} {}: this agent has no connection to the server's API",
                request.method, request.path_and_query
            )}),
        )
    }
}

/// Headers a handler may not set: the agent's credentials are its own, and the transport's
/// headers are the transport's.
const DROPPED_HEADERS: &[&str] =
    &["authorization", "cookie", "host", "content-length", "content-encoding", "content-type", "connection"];

/// Answers an `api` server call of the executor (`{"method": "api", "http_method", "url",
/// "headers", "body"}`) as `{"code": ..., "result": ...}`: refused with 403 when it names another
/// environment in its tid header, with 400 when it is no API request; sent through `api`
/// otherwise.
pub(crate) fn serve(api: &dyn ServerApi, environment: &str, call: &ApiCall) -> ServerAnswer {
    let (code, result) = match request_of(environment, call) {
        Ok(request) => api.call(environment, &request),
        Err((code, message)) => (code, json!({"message": message})),
    };
    ServerAnswer::new(code, result)
}

fn request_of(environment: &str, call: &ApiCall) -> Result<ApiRequest, (u16, String)> {
    let method = call.http_method.to_ascii_uppercase();
    if !["GET", "PUT", "POST", "PATCH", "DELETE", "HEAD"].contains(&method.as_str()) {
        return Err((400, format!("a handler's API call has no HTTP method the API knows ({method:?})")));
    }
    let path_and_query = call.url.as_str();
    if !path_and_query.starts_with("/api/") || path_and_query.contains("..") {
        return Err((400, format!("a handler's API call goes to {path_and_query:?}, not to a path under /api/")));
    }
    let mut headers = Vec::new();
    for (name, value) in &call.headers {
        let value = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if name.eq_ignore_ascii_case(TID_HEADER) {
            if !value.eq_ignore_ascii_case(environment) {
                return Err((
                    403,
                    format!(
                        "a handler of environment {environment} cannot act on environment {value}: \
                         its API calls are the agent's, in the agent's environment"
                    ),
                ));
            }
        } else if !DROPPED_HEADERS.iter().any(|h| name.eq_ignore_ascii_case(h)) {
            headers.push((name.clone(), value));
        }
    }
    headers.push((TID_HEADER.to_string(), environment.to_string()));
    let body = Some(call.body.clone()).filter(|b| !b.is_null());
    Ok(ApiRequest { method, path_and_query: path_and_query.to_string(), headers, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENV: &str = "5f1b0bb6-6f4a-4b43-9d4b-6f2e6c7b3c11";

    /// The call as the agent reads it from the executor's `server_call` (`"method": "api"`).
    fn api_call(mut call: Value) -> ApiCall {
        call["method"] = json!("api");
        match serde_json::from_value(call).expect("a server call") {
            super::super::protocol::ServerCall::Api(call) => call,
            other => panic!("not an API call: {other:?}"),
        }
    }

    #[test]
    fn a_call_is_sent_in_the_agents_environment_without_the_handlers_credentials() {
        let call = json!({
            "method": "api", "http_method": "put", "url": "/api/v1/parameter/p",
            "headers": {"x-inmanta-tid": ENV.to_uppercase(), "Authorization": "Bearer stolen", "X-Other": 3},
            "body": {"value": "v"},
        });
        let request = request_of(ENV, &api_call(call)).unwrap();
        assert_eq!(request.method, "PUT");
        assert_eq!(request.path_and_query, "/api/v1/parameter/p");
        assert_eq!(
            request.headers,
            [("X-Other".to_string(), "3".to_string()), (TID_HEADER.to_string(), ENV.to_string())]
        );
        assert_eq!(request.body, Some(json!({"value": "v"})));
    }

    #[test]
    fn a_call_without_a_tid_gets_the_agents() {
        let call = json!({"method": "api", "http_method": "GET", "url": "/api/v2/resource?limit=5", "body": null});
        let request = request_of(ENV, &api_call(call)).unwrap();
        assert_eq!(request.headers, [(TID_HEADER.to_string(), ENV.to_string())]);
        assert_eq!(request.path_and_query, "/api/v2/resource?limit=5");
        assert_eq!(request.body, None);
    }

    #[test]
    fn another_environments_tid_is_refused_with_403() {
        let other = "0b5f0a3e-1111-4222-8333-944455556666";
        let call = json!({"http_method": "GET", "url": "/api/v1/parameter/p", "headers": {"X-Inmanta-tid": other}});
        let (code, message) = request_of(ENV, &api_call(call.clone())).unwrap_err();
        assert_eq!(code, 403);
        assert!(message.contains(other) && message.contains(ENV), "{message}");
        // Refused before anything is sent: even an agent without a server answers 403.
        let answer = serve(&NoServerApi, ENV, &api_call(call));
        assert_eq!(answer.code, 403);
        assert_eq!(answer.result["message"], message);
    }

    #[test]
    fn a_path_outside_the_api_is_refused_with_400() {
        for url in ["/console/x", "http://elsewhere/api/v1/x", "/api/../metrics", ""] {
            let (code, _) = request_of(ENV, &api_call(json!({"http_method": "GET", "url": url}))).unwrap_err();
            assert_eq!(code, 400, "{url}");
        }
        let (code, message) =
            request_of(ENV, &api_call(json!({"http_method": "TRACE", "url": "/api/v1/x"}))).unwrap_err();
        assert_eq!(code, 400);
        assert!(message.contains("TRACE"), "{message}");
    }

    #[test]
    fn without_a_server_every_call_is_answered_501() {
        let call = json!({"http_method": "GET", "url": "/api/v1/parameter/p"});
        let answer = serve(&NoServerApi, ENV, &api_call(call));
        assert_eq!(answer.code, 501);
        assert!(answer.result["message"].as_str().unwrap().contains("no connection to the server's API"));
    }
}
