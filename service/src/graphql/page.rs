//! `/console/graphiql`: GraphiQL (npm `graphiql`, its browser bundle with React's UMD builds),
//! on the schema of `POST /api/v2/graphql`. Its files are part of the console's built site
//! (`scripts/build-console.sh` copies them from `frontend/graphiql/node_modules` into
//! `graphiql/`), so they are embedded in the binary with the console and served under
//! `/console/graphiql/` like the console's other files: nothing comes from a CDN.
//! `frontend/graphiql/start.js` starts it with a fetcher that posts to [`ENDPOINT`] (the GraphQL
//! endpoint as the user signed in to the console, by its session cookie like every console call)
//! and unwraps Inmanta's answer envelope.
//!
//! Without a built site (a developer who never built the console) the page says how to build it.

use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};

pub const PATH: &str = "/console/graphiql";

/// Where the page posts its queries: the GraphQL endpoint behind the console's session.
pub const ENDPOINT: &str = "/console/graphql";

/// The site file whose presence says GraphiQL was built into the console.
pub const BUNDLE: &str = "graphiql/graphiql.min.js";

/// `?env=<id>`: the environment of the console page that links here.
#[derive(serde::Deserialize)]
pub struct PageQuery {
    pub env: Option<String>,
}

/// The page; `built` says whether the console's site holds GraphiQL's files. `environment` (the
/// `env` of the console page it was opened from) seeds the first query.
pub fn graphiql(built: bool, environment: Option<uuid::Uuid>) -> Response {
    let body = if built { page(environment) } else { NOT_BUILT.to_string() };
    let mut response = Html(body).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn page(environment: Option<uuid::Uuid>) -> String {
    // A UUID is safe in an attribute as is.
    let env = environment.map(|e| format!(" data-environment=\"{e}\"")).unwrap_or_default();
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>GraphiQL - Inmanta</title>
<link rel="icon" href="/console/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/console/graphiql/graphiql.min.css">
<style>
  html, body {{ height: 100%; margin: 0; }}
  body {{ display: flex; flex-direction: column; font-family: system-ui, sans-serif; }}
  header {{ display: flex; gap: 1rem; align-items: center; padding: .4rem 1rem; background: #151515; color: #fff; }}
  header a {{ color: #9ec7f0; }}
  #graphiql {{ flex: 1; min-height: 0; }}
</style>
</head>
<body>
<header><strong>GraphQL</strong><span>POST /api/v2/graphql</span><a href="/console">Back to the console</a></header>
<div id="graphiql"{env}>Loading GraphiQL...</div>
<noscript>GraphiQL needs JavaScript; the API is POST /api/v2/graphql.</noscript>
<script src="/console/graphiql/react.production.min.js"></script>
<script src="/console/graphiql/react-dom.production.min.js"></script>
<script src="/console/graphiql/graphiql.min.js"></script>
<script src="/console/graphiql/start.js"></script>
</body>
</html>
"#
    )
}

const NOT_BUILT: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>GraphiQL - Inmanta</title></head>
<body><h1>GraphiQL is not built into this server</h1>
<p>GraphiQL comes with the console's site: build it with <code>scripts/build-console.sh</code> and
rebuild the server, or start the server with <code>--console-path</code> naming a built site. The
GraphQL API itself is served: <code>POST /api/v2/graphql</code>, schema at
<code>GET /api/v2/graphql/schema</code>.</p>
<p><a href="/console">Back to the console</a></p></body></html>
"#;
