//! The console's URLs: the query state of the current page (environment, table state), links
//! that change it, and links to other pages.

use crate::error::ConsoleError;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use leptos_router::params::ParamsMap;

use crate::BASE;
use crate::model::TableQuery;
pub use api::url::encode;

/// The resource id of a page's `?rid=` as a server function takes it. The URL is text anyone may
/// edit: a malformed id is an error the page shows, saying what a resource id looks like, and no
/// call is made. A resource version id names its resource, as the REST routes read it.
pub fn rid_argument(text: &str) -> Result<crate::model::ResourceId, ConsoleError> {
    crate::model::ResourceId::parse(text).map_err(|e| ConsoleError::refused(e.to_string()))
}

/// A query value of the current URL.
pub fn query(key: &'static str) -> Memo<String> {
    let q = use_query_map();
    Memo::new(move |_| q.with(|q| q.get(key).unwrap_or_default()))
}

/// The environment of the page (`?env=`).
pub fn env() -> Memo<String> {
    query("env")
}

pub const CURSOR_KEYS: &[&str] = &["start", "end", "first_id", "last_id"];

/// `path` with the current query, changed by `changes` (`None` removes a key). Any change other
/// than the cursor itself sends the table back to its first page.
pub fn link(path: &str, current: &ParamsMap, changes: &[(&str, Option<String>)]) -> String {
    let mut q = current.clone();
    let paging = changes.iter().all(|(k, _)| CURSOR_KEYS.contains(k));
    if !paging || changes.is_empty() {
        for key in CURSOR_KEYS {
            q.remove(key);
        }
    }
    for (key, value) in changes {
        q.remove(key);
        if let Some(value) = value {
            q.insert(key.to_string(), value.clone());
        }
    }
    format!("{path}{}", query_string(&q))
}

/// The links of a page's tabs (key, label): the `tab` query parameter picks one, the first
/// when unset; each link keeps the rest of the query.
#[component]
pub fn TabLinks(path: &'static str, tabs: &'static [(&'static str, &'static str)]) -> impl IntoView {
    let tab = query("tab");
    let q = use_query_map();
    move || {
        let current = q.get();
        let chosen = tab.get();
        let active_tab = if chosen.is_empty() { tabs[0].0 } else { chosen.as_str() };
        tabs.iter()
            .map(|(key, label)| {
                let href = link(path, &current, &[("tab", Some(key.to_string()))]);
                let active = active_tab == *key;
                view! {
                    <a role="tab" class="tab" class:active=active aria-selected=active.to_string() href=href id=format!("tab-{key}")>
                        {*label}
                    </a>
                }
            })
            .collect_view()
    }
}

/// `?k=v&...` of a query map, escaping only what must be (ids and dots stay readable).
pub fn query_string(q: &ParamsMap) -> String {
    let pairs: Vec<String> = q.latest_values().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect();
    if pairs.is_empty() { String::new() } else { format!("?{}", pairs.join("&")) }
}

/// The router's `navigate` takes paths below the console's base: strip it from a full href.
pub fn in_app(href: &str) -> String {
    let rest = href.strip_prefix(BASE).unwrap_or(href);
    if rest.starts_with('/') { rest.to_string() } else { format!("/{rest}") }
}

/// A console page of the current environment.
pub fn env_link(page: &str, env: &str) -> String {
    format!("{BASE}/{page}?env={}", encode(env))
}

/// The table state of the current URL: `filter.<name>`, `sort`, `limit` and the cursor.
pub fn table_query() -> Memo<TableQuery> {
    let q = use_query_map();
    Memo::new(move |_| {
        q.with(|q| {
            let mut t = TableQuery { env: q.get("env").unwrap_or_default(), ..Default::default() };
            for (key, value) in q.latest_values() {
                if let Some(name) = key.strip_prefix("filter.")
                    && !value.is_empty()
                {
                    t.filters.insert(name.to_string(), value.to_string());
                }
            }
            t.sort = q.get("sort").filter(|s| !s.is_empty());
            t.limit = q.get("limit").and_then(|l| l.parse().ok());
            t.start = q.get("start");
            t.end = q.get("end");
            t.first_id = q.get("first_id");
            t.last_id = q.get("last_id");
            t
        })
    })
}

/// A link to a compile's details page.
pub fn compile_link(env: &str, id: &str) -> String {
    format!("{BASE}/compilereports/{}?env={}", encode(id), encode(env))
}

/// A notification's `uri` as a console link in `env`: Inmanta's API path of a compile report
/// (`/api/v2/compilereport/<id>`, what compile notifications hold) opens its details page; a
/// console link stored without its environment gets it.
pub fn console_uri(uri: &str, env: &str) -> String {
    if let Some(id) = uri.strip_prefix("/api/v2/compilereport/").filter(|id| !id.is_empty() && !id.contains('/')) {
        return compile_link(env, id);
    }
    if !uri.starts_with(BASE) || uri.contains("env=") {
        return uri.to_string();
    }
    let separator = if uri.contains('?') { '&' } else { '?' };
    format!("{uri}{separator}env={}", encode(env))
}

/// A version's page.
pub fn version_link(env: &str, version: impl std::fmt::Display) -> String {
    format!("{}&v={version}", crate::routes::VERSION.of(env))
}

/// The compliance check page of a version.
pub fn compliance_link(env: &str, version: i64) -> String {
    format!("{BASE}/desiredstate/{version}/compliancecheck?env={}", encode(env))
}
