// Starts GraphiQL on the console's /console/graphiql page (server/src/graphql/page.rs).
//
// The server answers in Inmanta's form: the GraphQL result inside the REST envelope's `data`
// (`{"data": {"data": ..., "errors": ["message", ...], "extensions": {}}}`), and a plain
// `{"message": ...}` when the request itself is refused. GraphiQL expects a bare GraphQL result,
// so the fetcher unwraps the envelope and turns each error message into `{message}`. It posts to
// /console/graphql, the same endpoint behind the console's session: the request goes out with
// the session cookie, as every console call does (the page holds no API token).
(function () {
  "use strict";

  async function fetcher(params) {
    const response = await fetch("/console/graphql", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({
        query: params.query,
        variables: params.variables || null,
        operationName: params.operationName || null,
      }),
    });
    const body = await response.json().catch(() => null);
    const result = body && body.data && typeof body.data === "object" && "data" in body.data ? body.data : null;
    if (result === null) {
      const message = (body && body.message) || `HTTP ${response.status} ${response.statusText}`;
      return { errors: [{ message }] };
    }
    const answer = { data: result.data };
    if (Array.isArray(result.errors) && result.errors.length > 0) {
      answer.errors = result.errors.map((e) => (typeof e === "string" ? { message: e } : e));
    }
    return answer;
  }

  const mount = document.getElementById("graphiql");
  const environment = mount.dataset.environment;
  const defaultQuery = environment
    ? `# The resources of the environment this page was opened from.\n` +
      `query {\n  resources(filter: {environment: "${environment}"}, first: 20) {\n    totalCount\n` +
      `    edges { node { resourceId state { lastHandlerRun compliance blocked } } }\n  }\n}\n`
    : `# The environments you may see.\nquery {\n  environments {\n` +
      `    edges { node { id name halted isCompiling } }\n  }\n}\n`;
  ReactDOM.createRoot(mount).render(
    React.createElement(GraphiQL, { fetcher, defaultQuery, defaultEditorToolsVisibility: false }),
  );
})();
