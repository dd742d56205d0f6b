// GraphiQL at /console/graphiql in a real browser at 1 400 px: the page loads GraphiQL's bundle
// from the server itself (no CDN), reads the schema by introspection through the console's
// session, runs the query it opens with (the resources of the environment it was opened from)
// and shows the answer; its documentation explorer lists the schema's queries.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { BASE, suffix, start, stop, api, openConsole, shot, putVersion, nullResource } from "./lib.mjs";

const WIDE = { width: 1400, height: 900 };
let env;

before(async () => {
  await start();
  const project = await api("PUT", "/api/v2/project", { name: `giql-${suffix}` });
  env = (await api("PUT", "/api/v2/environment", { name: `giql-${suffix}`, project_id: project.id })).id;
  await putVersion(env, (v) => [nullResource(v, "g1"), nullResource(v, "g2")]);
});

after(stop);

test("GraphiQL at 1400 px: schema, a query and its answer", async (t) => {
  const { page, errors } = await openConsole(t, WIDE);
  const offsite = [];
  page.on("request", (r) => { if (!r.url().startsWith(BASE)) offsite.push(r.url()); });
  await page.goto(`${BASE}/console/graphiql?env=${env}`);
  await page.locator(".graphiql-container").waitFor({ timeout: 20_000 });

  // The editor opens with the environment's resources query; run it.
  await page.locator(".graphiql-query-editor .CodeMirror").waitFor();
  const query = await page.evaluate(() => document.querySelector(".graphiql-query-editor .CodeMirror").CodeMirror.getValue());
  assert.match(query, new RegExp(`environment: "${env}"`));
  await page.locator(".graphiql-execute-button").click();
  const response = page.locator(".graphiql-response .CodeMirror");
  await response.locator("text=totalCount").waitFor({ timeout: 15_000 });
  const text = await page.evaluate(() => document.querySelector(".graphiql-response .CodeMirror").CodeMirror.getValue());
  const answer = JSON.parse(text);
  assert.equal(answer.data.resources.totalCount, 2, text);
  const ids = answer.data.resources.edges.map((e) => e.node.resourceId).sort();
  assert.deepEqual(ids, ["std::testing::NullResource[agent1,name=g1]", "std::testing::NullResource[agent1,name=g2]"]);
  assert.equal(answer.errors, undefined, text);

  // The schema came through introspection: the documentation explorer lists the root queries.
  await page.locator('[aria-label="Show Documentation Explorer"]').click();
  await page.locator(".graphiql-doc-explorer").getByText("Query", { exact: true }).first().click();
  for (const field of ["environments", "notifications", "resources", "resourceSummary"]) {
    await page.locator(".graphiql-doc-explorer").getByText(field, { exact: true }).first().waitFor();
  }

  // An invalid query answers GraphQL's errors in GraphiQL's form.
  await page.evaluate(() => document.querySelector(".graphiql-query-editor .CodeMirror").CodeMirror.setValue("{ noSuchField }"));
  await page.locator(".graphiql-execute-button").click();
  await response.locator("text=noSuchField").waitFor({ timeout: 15_000 });
  const failed = await page.evaluate(() => document.querySelector(".graphiql-response .CodeMirror").CodeMirror.getValue());
  assert.match(JSON.parse(failed).errors[0].message, /noSuchField/);

  await shot(page, "graphiql-wide");
  assert.deepEqual(offsite, [], "every file comes from the server");
  // The invalid query is answered with 400, as Inmanta does; nothing else may fail.
  assert.deepEqual(errors.filter((e) => !/\b400\b/.test(e)), []);
});
