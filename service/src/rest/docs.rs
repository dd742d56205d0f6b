//! The API's own description, generated from the route table the router is built from (so it
//! cannot miss a route): `GET /api/v2/docs?format=openapi` answers an OpenAPI 3 document,
//! `GET /api/v2/docs` Swagger UI on it. Each operation's query parameters and body come from
//! its handler's extractor types ([`super::describe`]). Swagger UI's files (npm
//! `swagger-ui-dist`) are vendored in `service/assets/swagger-ui` and embedded in the binary, so
//! the page needs nothing from the internet.
//!
//! Both are public: the document is the same for every installation (it is built from the
//! binary's route table) and holds no data, and a browser opening the page has no bearer token
//! to fetch it with. Every call the page makes is authorized as usual (its Authorize button
//! takes a token).

use std::sync::Arc;

use axum::Extension;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use orchestrator::auth::Access;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::error::ApiError;
use super::extract::Query;
use super::limits::{BodyLimit, Limits};
use super::{RouteRule, Routes, public};

pub fn router() -> Routes {
    Routes::new().get("/api/v2/docs", public(), docs).get("/api/v2/docs/{asset}", public(), asset)
}

/// The generated document, built once when the router is.
#[derive(Clone)]
pub struct ApiDocs(pub Arc<Value>);

#[derive(Deserialize)]
struct DocsQuery {
    format: Option<String>,
}

/// Where the page finds the document.
const DOCUMENT: &str = "/api/v2/docs?format=openapi";

/// Scripts and styles only from this server; Swagger UI sets some inline styles and shows
/// images from data URLs.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                           img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";

async fn docs(Extension(ApiDocs(doc)): Extension<ApiDocs>, Query(q): Query<DocsQuery>) -> Response {
    match q.format.as_deref() {
        Some("openapi") => axum::Json((*doc).clone()).into_response(),
        None => ([(header::CONTENT_SECURITY_POLICY, PAGE_POLICY)], Html(page())).into_response(),
        Some(other) => ApiError::bad_request(format!(
            "Invalid request: format={other:?} is not known; use format=openapi for the OpenAPI document, or no \
             format for the Swagger UI page"
        ))
        .into_response(),
    }
}

/// Swagger UI's page; `initializer.js` reads the document's address from `data-url`.
fn page() -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Inmanta API</title>\
         <link rel=\"stylesheet\" href=\"/api/v2/docs/swagger-ui.css\"></head><body>\
         <div id=\"swagger-ui\" data-url=\"{DOCUMENT}\"></div>\
         <noscript>Swagger UI needs JavaScript; the OpenAPI document is at <a href=\"{DOCUMENT}\">{DOCUMENT}</a>.</noscript>\
         <script src=\"/api/v2/docs/swagger-ui-bundle.js\"></script>\
         <script src=\"/api/v2/docs/initializer.js\"></script></body></html>"
    )
}

/// Swagger UI's files, embedded at build time; its bundle (1.7 MB) only gzipped (0.5 MB), as sent
/// to every browser, and decompressed for a client that accepts no gzip.
async fn asset(Path(name): Path<String>, request: HeaderMap) -> Response {
    let (content_type, body): (&str, &'static [u8]) = match name.as_str() {
        "swagger-ui-bundle.js" => {
            let gzip = include_bytes!("../../assets/swagger-ui/swagger-ui-bundle.js.gz").as_slice();
            let headers = [
                (header::CONTENT_TYPE, "text/javascript"),
                (header::CACHE_CONTROL, "public, max-age=3600"),
                (header::VARY, "accept-encoding"),
            ];
            if super::encoding::accepts(&request, "gzip") {
                return (headers, [(header::CONTENT_ENCODING, "gzip")], gzip).into_response();
            }
            return (headers, super::encoding::gunzip(gzip)).into_response();
        }
        "swagger-ui.css" => ("text/css", include_bytes!("../../assets/swagger-ui/swagger-ui.css").as_slice()),
        "initializer.js" => ("text/javascript", include_bytes!("../../assets/swagger-ui/initializer.js").as_slice()),
        _ => {
            return ApiError::new(StatusCode::NOT_FOUND, format!("no such file of the API page: {name}"))
                .into_response();
        }
    };
    // The files change only with the binary.
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "public, max-age=3600")], body).into_response()
}

/// The OpenAPI 3.0 document of `table`.
pub fn openapi(table: &[RouteRule], limits: &Limits) -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for route in table {
        let method = route.method.as_str().to_ascii_lowercase();
        let entry = paths.entry(route.path.to_string()).or_insert_with(|| json!({}));
        entry[method] = operation(route, limits);
    }
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "Inmanta orchestrator API",
            "version": api::VERSION,
            "description": "Inmanta's REST API (docs/api.md in the repository). Environment-scoped calls take the environment id in \
                            the X-Inmanta-tid header. Every error is JSON {\"message\": ...}.",
        },
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["message"],
                    "properties": {"message": {"type": "string"}, "error_details": {}},
                },
            },
        },
    })
}

fn operation(route: &RouteRule, limits: &Limits) -> Value {
    let mut parameters: Vec<Value> = path_parameters(route.path)
        .into_iter()
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
        .collect();
    let environment_header =
        matches!(route.rule.access, Access::Environment(..)) && route.rule.environment_in_path.is_none();
    if environment_header {
        parameters.push(json!({
            "name": api::TID_HEADER, "in": "header", "required": true,
            "schema": {"type": "string", "format": "uuid"}, "description": "the environment id",
        }));
    }
    for (name, schema, required) in &route.takes.query {
        parameters.push(json!({"name": name, "in": "query", "required": required, "schema": schema}));
    }
    let error = |what: &str| json!({"description": what, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}});
    let mut responses = json!({
        "200": {"description": "done", "content": {"application/json": {"schema": {}}}},
        "400": error("the request is not valid: the message says what to fix"),
        "404": error("no such object"),
    });
    if route.rule.access != Access::Public {
        responses["401"] = error("no or invalid credentials");
        responses["403"] = error("the caller may not do this");
    }
    let mut op = json!({
        "operationId": format!("{}_{}", route.method.as_str().to_ascii_lowercase(), route.path.trim_start_matches('/').replace(['/', '{', '}'], "_")),
        "summary": summary(route),
        "parameters": parameters,
        "responses": responses,
    });
    if route.rule.access != Access::Public {
        op["security"] = json!([{"bearer": []}]);
    }
    // The body the handler reads, if any; an empty body counts as `{}` (Inmanta's clients send
    // none when every argument is optional).
    if let Some(schema) = route.takes.body.clone() {
        let bytes = limits.bytes(route.body);
        let required = schema["required"].as_array().is_some_and(|r| !r.is_empty());
        op["requestBody"] = json!({
            "required": required,
            "description": format!("JSON of at most {bytes} bytes"),
            "content": {"application/json": {"schema": schema}},
        });
        op["responses"]["413"] = error("the body is larger than this call takes");
    }
    op
}

fn summary(route: &RouteRule) -> String {
    let who = match route.rule.access {
        Access::Public => "anyone".to_string(),
        Access::Authenticated(..) => "any logged-in caller".to_string(),
        Access::Global(label, _) => format!("server-wide permission {label}"),
        Access::Environment(label, _) => format!("environment permission {label}"),
    };
    let body = match route.body {
        BodyLimit::Small => ", small body",
        BodyLimit::Normal => "",
        BodyLimit::Large => ", large body",
    };
    format!("{} {} ({who}{body})", route.method, route.path)
}

fn path_parameters(path: &str) -> Vec<String> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(|name| name.trim_start_matches('*').to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_route_is_in_the_document() {
        let table = super::super::rule_table();
        let limits = Limits::new(1 << 20, std::time::Duration::from_secs(1));
        let doc = openapi(&table, &limits);
        assert_eq!(doc["openapi"], "3.0.3");
        for route in &table {
            let op = &doc["paths"][route.path][route.method.as_str().to_ascii_lowercase()];
            assert!(op.is_object(), "{} {} is missing", route.method, route.path);
        }
        let login = &doc["paths"]["/api/v2/login"]["post"];
        assert!(login.get("security").is_none(), "login is public");
        let version = &doc["paths"]["/api/v1/version/{id}"]["get"];
        assert_eq!(version["parameters"][0]["name"], "id");
        assert_eq!(version["parameters"][1]["name"], api::TID_HEADER);
        assert_eq!(version["parameters"][2]["name"], "include_logs", "the handler's query parameters");
        // Bodies are described from the handlers' types: fields, their kinds, required ones.
        let put = &doc["paths"]["/api/v1/version"]["put"]["requestBody"];
        let schema = &put["content"]["application/json"]["schema"];
        assert_eq!(schema["properties"]["version"]["type"], "integer", "{schema}");
        assert_eq!(schema["properties"]["resources"]["type"], "array", "{schema}");
        assert!(schema["required"].as_array().unwrap().contains(&json!("version")), "{schema}");
        assert_eq!(put["required"], true);
        // A call whose handler reads no body has none in the document.
        assert!(doc["paths"]["/api/v2/reserve_version"]["post"].get("requestBody").is_none());
        let login = &doc["paths"]["/api/v2/login"]["post"]["requestBody"]["content"]["application/json"]["schema"];
        assert_eq!(login["required"], json!(["username", "password"]));
        if std::env::var_os("PRINT_OPENAPI").is_some() {
            println!("{}", serde_json::to_string_pretty(&doc).unwrap());
        }
    }
}
