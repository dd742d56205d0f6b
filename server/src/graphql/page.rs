//! `/console/graphiql`: a small query page of our own, served from the binary (GraphiQL's npm
//! bundle is several megabytes of JavaScript and would come from a CDN otherwise). It posts the
//! query and variables to `POST /api/v2/graphql` with the console session, shows the answer, and
//! lists the schema's queries and types from `GET /api/v2/graphql/schema`.

use axum::http::{HeaderValue, header};
use axum::response::{Html, IntoResponse, Response};

pub const PATH: &str = "/console/graphiql";

pub async fn graphiql() -> Response {
    let mut response = Html(PAGE).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

const PAGE: &str = r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>GraphQL - Inmanta</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 0; color: #151515; }
  header { background: #151515; color: #fff; padding: .6rem 1rem; display: flex; gap: 1rem; align-items: center; }
  header a { color: #9ec7f0; }
  main { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 1rem; padding: 1rem; }
  @media (max-width: 800px) { main { grid-template-columns: minmax(0, 1fr); } }
  label { font-weight: 600; display: block; margin: .5rem 0 .25rem; }
  textarea, pre { width: 100%; box-sizing: border-box; font-family: ui-monospace, monospace; font-size: .85rem;
    border: 1px solid #c7c7c7; border-radius: 4px; padding: .5rem; }
  textarea#query { min-height: 18rem; }
  textarea#variables { min-height: 6rem; }
  pre { min-height: 24rem; margin: 0; background: #f5f5f5; overflow: auto; white-space: pre-wrap; }
  button { background: #0066cc; color: #fff; border: 0; border-radius: 4px; padding: .5rem 1.2rem; font-size: 1rem;
    margin-top: .5rem; cursor: pointer; }
  #status { margin-left: .75rem; }
  details { margin-top: 1rem; }
  code { font-size: .85rem; }
</style>
</head>
<body>
<header><strong>GraphQL</strong><span>POST /api/v2/graphql</span><a href="/console">Back to the console</a></header>
<main>
  <section>
    <label for="query">Query</label>
    <textarea id="query" spellcheck="false">query {
  environments {
    edges { node { id name halted isExpertMode isCompiling } }
  }
}</textarea>
    <label for="variables">Variables (JSON)</label>
    <textarea id="variables" spellcheck="false">{}</textarea>
    <button id="run" type="button">Run (Ctrl+Enter)</button><span id="status" role="status"></span>
    <details id="schema"><summary>Schema</summary><pre id="types">loading...</pre></details>
  </section>
  <section>
    <label for="result">Answer</label>
    <pre id="result" aria-live="polite"></pre>
  </section>
</main>
<script>
(function () {
  var q = document.getElementById("query"), v = document.getElementById("variables");
  var out = document.getElementById("result"), status = document.getElementById("status");
  function run() {
    var variables;
    try { variables = v.value.trim() ? JSON.parse(v.value) : null; }
    catch (e) { status.textContent = "The variables are not JSON: " + e.message; return; }
    status.textContent = "running...";
    fetch("/api/v2/graphql", { method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ query: q.value, variables: variables }) })
      .then(function (r) { return r.json().then(function (body) { return [r.status, body]; }); })
      .then(function (a) { status.textContent = "HTTP " + a[0]; out.textContent = JSON.stringify(a[1], null, 2); })
      .catch(function (e) { status.textContent = "failed: " + e.message; });
  }
  function typeName(t) {
    if (t.kind === "NON_NULL") return typeName(t.ofType) + "!";
    if (t.kind === "LIST") return "[" + typeName(t.ofType) + "]";
    return t.name;
  }
  document.getElementById("run").addEventListener("click", run);
  document.addEventListener("keydown", function (e) { if (e.ctrlKey && e.key === "Enter") run(); });
  fetch("/api/v2/graphql/schema", { credentials: "same-origin" }).then(function (r) { return r.json(); })
    .then(function (body) {
      var lines = [];
      body.data.__schema.types.forEach(function (t) {
        if (t.name.indexOf("__") === 0 || t.kind === "SCALAR") return;
        lines.push((t.kind === "INPUT_OBJECT" ? "input " : t.kind === "ENUM" ? "enum " : "type ") + t.name);
        (t.fields || []).forEach(function (f) {
          var args = f.args.map(function (a) { return a.name + ": " + typeName(a.type); }).join(", ");
          lines.push("  " + f.name + (args ? "(" + args + ")" : "") + ": " + typeName(f.type));
        });
        (t.inputFields || []).forEach(function (f) { lines.push("  " + f.name + ": " + typeName(f.type)); });
        (t.enumValues || []).forEach(function (e) { lines.push("  " + e.name); });
      });
      document.getElementById("types").textContent = lines.join("\n");
    })
    .catch(function (e) { document.getElementById("types").textContent = "no schema: " + e.message; });
})();
</script>
</body>
</html>
"#;
