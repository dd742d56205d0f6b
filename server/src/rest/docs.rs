//! The API's own description, generated from the route table the router is built from (so it
//! cannot miss a route): `GET /api/v2/docs?format=openapi` answers an OpenAPI 3 document,
//! `GET /api/v2/docs` a page listing every route with who may call it.

use std::sync::Arc;

use axum::Extension;
use axum::http::{Method, header};
use axum::response::{Html, IntoResponse, Response};
use orchestrator::auth::Access;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::extract::Query;
use super::limits::{BodyLimit, Limits};
use super::{RouteRule, Routes, global};

pub fn router() -> Routes {
    Routes::new().get("/api/v2/docs", global("docs.read"), docs)
}

/// The generated document, built once when the router is.
#[derive(Clone)]
pub struct ApiDocs(pub Arc<Value>);

#[derive(Deserialize)]
struct DocsQuery {
    format: Option<String>,
}

async fn docs(Extension(ApiDocs(doc)): Extension<ApiDocs>, Query(q): Query<DocsQuery>) -> Response {
    match q.format.as_deref() {
        Some("openapi") => axum::Json((*doc).clone()).into_response(),
        _ => ([(header::CONTENT_SECURITY_POLICY, "default-src 'none'; style-src 'unsafe-inline'")], Html(page(&doc)))
            .into_response(),
    }
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
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Inmanta's REST API (reference/api.md). Environment-scoped calls take the environment id in \
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
    if matches!(route.method, Method::POST | Method::PUT | Method::PATCH) {
        let bytes = limits.bytes(route.body);
        op["requestBody"] = json!({
            "required": false,
            "description": format!("a JSON object of at most {bytes} bytes"),
            "content": {"application/json": {"schema": {"type": "object"}}},
        });
        op["responses"]["413"] = error("the body is larger than this call takes");
    }
    op
}

fn summary(route: &RouteRule) -> String {
    let who = match route.rule.access {
        Access::Public => "anyone".to_string(),
        Access::Authenticated(_) => "any logged-in caller".to_string(),
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

/// A plain page of every route, for people.
fn page(doc: &Value) -> String {
    let mut rows = String::new();
    if let Some(paths) = doc["paths"].as_object() {
        for (path, methods) in paths {
            for (method, op) in methods.as_object().into_iter().flatten() {
                let summary = op["summary"].as_str().unwrap_or_default();
                let who = summary.split_once(" (").map(|(_, w)| w.trim_end_matches(')')).unwrap_or_default();
                rows.push_str(&format!(
                    "<tr><td>{}</td><td><code>{}</code></td><td>{}</td></tr>\n",
                    method.to_ascii_uppercase(),
                    escape(path),
                    escape(who)
                ));
            }
        }
    }
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Inmanta API</title>\
         <style>body{{font-family:sans-serif;margin:2em}}td{{padding:2px 12px}}tr:nth-child(even){{background:#f3f3f3}}</style>\
         </head><body><h1>Inmanta orchestrator API</h1><p>The OpenAPI 3 document: \
         <a href=\"?format=openapi\">/api/v2/docs?format=openapi</a>. Environment-scoped calls take the environment \
         id in the <code>X-Inmanta-tid</code> header.</p><table><tr><th>method</th><th>path</th><th>who may call it</th></tr>\n\
         {rows}</table></body></html>"
    )
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
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
    }
}
