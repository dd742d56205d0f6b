// The dependency graph explains itself: short labels (the part of the id that tells resources
// apart), a legend of the states drawn, a search that highlights and counts matches, a
// "failures and what they block" view, and the neighbourhood of one resource, reached from its
// details page. With 10 000 resources the whole graph is cut (and says so) while the focused
// views still pick from every resource.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { BASE, suffix, start, stop, api, openConsole, waitForHydration, shot, failingEnvironment, nullResource, putVersion } from "./lib.mjs";

let setup;

before(async () => {
  await start();
  setup = await failingEnvironment("graph", 3);
});

after(stop);

const graphUrl = (env, query = "") => `${BASE}/console/resources/graph?env=${env}${query}`;
const nodeIds = (page) => page.locator("#graph a.node").evaluateAll((nodes) => nodes.map((n) => n.dataset.id).sort());

test("labels, legend, search and the failures view", async (t) => {
  const { env, broken } = setup;
  const { page, errors } = await openConsole(t);
  await page.goto(graphUrl(env.id));
  await waitForHydration(page);
  await page.locator(`#graph a.node[data-id="${broken}"]`).waitFor();
  assert.equal(await page.locator("#graph a.node").count(), 5);
  // Labels: the type's short name and the name, not the whole id.
  const label = (await page.locator(`#graph a.node[data-id="${broken}"] .node-label`).textContent()).trim();
  assert.equal(label, "NullResource broken");

  // The legend names each state drawn, with its count.
  const legend = (await page.locator("#graph-legend li[data-state]").allTextContents()).map((s) => s.trim());
  assert.ok(legend.includes("failed (1)"), JSON.stringify(legend));
  assert.ok(legend.includes("deployed (1)"), JSON.stringify(legend));
  assert.ok(legend.some((l) => /^skipped.* \(3\)$/.test(l)), JSON.stringify(legend));

  // Search: the matches stay bright, the others fade; the count is announced.
  await page.fill("#graph-search", "NEEDS-1");
  await page.locator("#graph-matches", { hasText: "1 match" }).waitFor();
  const opacity = (rid) => page.locator(`#graph a.node[data-id="${rid}"]`).evaluate((n) => getComputedStyle(n).opacity);
  assert.equal(await opacity("std::testing::NullResource[agent1,name=needs-1]"), "1");
  assert.equal(await opacity(broken), "0.35");
  await page.fill("#graph-search", "needs");
  await page.locator("#graph-matches", { hasText: "3 matches" }).waitFor();
  await shot(page, "graph-search");

  // Failures and what they block: the failed resource and its three dependents, not "fine".
  await page.click("#graph-failures");
  await page.waitForURL((u) => u.searchParams.get("view") === "failures");
  await page.locator('#graph a.node[data-id="std::testing::NullResource[agent1,name=fine]"]').waitFor({ state: "detached" });
  assert.deepEqual(await nodeIds(page), [
    broken,
    "std::testing::NullResource[agent1,name=needs-0]",
    "std::testing::NullResource[agent1,name=needs-1]",
    "std::testing::NullResource[agent1,name=needs-2]",
  ]);
  await shot(page, "graph-failures");
  await page.click("#graph-all");
  await page.locator('#graph a.node[data-id="std::testing::NullResource[agent1,name=fine]"]').waitFor();
  assert.deepEqual(errors, [], "browser errors");
});

test("a shared prefix of the names is left out of the labels", async (t) => {
  const project = await api("PUT", "/api/v2/project", { name: `graph-paths-${suffix}` });
  const env = await api("PUT", "/api/v2/environment", { name: `graph-paths-${suffix}`, project_id: project.id });
  await putVersion(env.id, (v) => ["a.conf", "b.conf", "c.conf"].map((f) => nullResource(v, `/etc/inmanta/e2e/config/${f}`)));
  const { page, errors } = await openConsole(t);
  await page.goto(graphUrl(env.id));
  await waitForHydration(page);
  await page.locator("#graph a.node").nth(2).waitFor();
  const labels = (await page.locator("#graph .node-label").allTextContents()).map((s) => s.trim()).sort();
  assert.deepEqual(labels, ["NullResource …a.conf", "NullResource …b.conf", "NullResource …c.conf"]);
  assert.deepEqual(errors, [], "browser errors");
});

test("the neighbourhood of a resource, from its details page", async (t) => {
  const { env, broken } = setup;
  const { page, errors } = await openConsole(t);
  const needs0 = "std::testing::NullResource[agent1,name=needs-0]";
  await page.goto(`${BASE}/console/resources/details?env=${env.id}&rid=${encodeURIComponent(needs0)}`);
  await waitForHydration(page);
  await page.click("#graph-around-link");
  await page.waitForURL((u) => u.pathname === "/console/resources/graph" && u.searchParams.get("around") === needs0);
  await page.locator(`#graph a.node[data-id="${needs0}"]`).waitFor();
  // Two hops: what it requires (broken) and what else requires that.
  assert.equal(await page.locator("#graph a.node").count(), 4);
  assert.match(await page.textContent("#graph-around"), /needs-0/);
  await page.click('#graph-views a[data-hops="1"]');
  await page.waitForURL((u) => u.searchParams.get("hops") === "1");
  await page.locator('#graph a.node[data-id="std::testing::NullResource[agent1,name=needs-1]"]').waitFor({ state: "detached" });
  assert.deepEqual(await nodeIds(page), [broken, needs0]);
  await shot(page, "graph-around");
  assert.deepEqual(errors, [], "browser errors");
});

test("with 10 000 resources the graph is cut, the focused views still reach every resource", async (t) => {
  const project = await api("PUT", "/api/v2/project", { name: `graph-10k-${suffix}` });
  const env = await api("PUT", "/api/v2/environment", { name: `graph-10k-${suffix}`, project_id: project.id });
  await api("POST", "/api/v2/actions/environment/halt", undefined, env.id);
  // A hundred chains of a hundred, each resource requiring the one before it.
  const id = (i) => `std::testing::NullResource[agent${Math.floor(i / 100)},name=r${i}]`;
  await putVersion(env.id, (v) => Array.from({ length: 10_000 }, (_, i) => nullResource(v, `r${i}`, {
    agent: `agent${Math.floor(i / 100)}`,
    requires: i % 100 ? [id(i - 1)] : [],
  })));
  const { page, errors } = await openConsole(t);
  await page.goto(graphUrl(env.id));
  await page.locator("#graph a.node").nth(4999).waitFor({ timeout: 60_000 });
  await waitForHydration(page);
  assert.equal(await page.locator("#graph a.node").count(), 5000);
  assert.match(await page.textContent("#graph-truncated"), /5000 more left out/);
  // The search answers on the 5 000 drawn.
  await page.fill("#graph-search", "name=r1234]");
  await page.locator("#graph-matches", { hasText: "1 match" }).waitFor();
  await shot(page, "graph-10000");

  // The neighbourhood of a resource the whole view may have cut.
  await page.goto(graphUrl(env.id, `&around=${encodeURIComponent(id(9950))}&hops=2`));
  await waitForHydration(page);
  await page.locator(`#graph a.node[data-id="${id(9950)}"]`).waitFor({ timeout: 30_000 });
  assert.deepEqual(await nodeIds(page), [id(9948), id(9949), id(9950), id(9951), id(9952)].sort());
  assert.deepEqual(errors, [], "browser errors");
});
