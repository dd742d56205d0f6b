// The operator's day in a real browser: switch environment, read versions, compare two versions,
// watch resources deploy live after a promote (no reload), read the logs of a failed resource,
// pause and unpause an agent, mark a notification read. Screenshots of every main page land in
// test-results/. Run by ../run.sh with INMANTA_URL pointing at a running server (its in-process
// agents deploy std::testing::NullResource for real).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { BASE, suffix, start, stop, api, openConsole, waitForHydration, shot, answer, toast, failingEnvironment } from "./lib.mjs";


let project;
let envA;
let envB;

before(async () => {
  await start();
  project = await api("PUT", "/api/v2/project", { name: `ops-${suffix}` });
  envA = await api("PUT", "/api/v2/environment", { name: `ops-a-${suffix}`, project_id: project.id });
  envB = await api("PUT", "/api/v2/environment", { name: `ops-b-${suffix}`, project_id: project.id });
  // Versions of envA wait for a promote (the default releases every new version at once).
  await api("POST", "/api/v2/environment_settings/auto_deploy", { value: false }, envA.id);
});

after(stop);


function nullResource(version, name, { agent = "agent1", fail = false, value = "", requires = [] } = {}) {
  return {
    id: `std::testing::NullResource[${agent},name=${name}],v=${version}`,
    name, agentname: agent, fail, value, int_value: 0, purged: false,
    send_event: true, receive_events: true,
    requires: requires.map((r) => `${r},v=${version}`),
  };
}

/** Stores a version of NullResources (not released). */
async function putVersion(env, make) {
  const version = await api("POST", "/api/v2/reserve_version", undefined, env);
  await api("PUT", "/api/v1/version", {
    version, resources: make(version), resource_state: {}, unknowns: [], version_info: {}, compiler_version: "e2e",
  }, env);
  return version;
}




test("switch environment through the header switcher", async (t) => {
  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/dashboard?env=${envA.id}`);
  await waitForHydration(page);
  assert.match(await page.textContent("#env-switcher"), new RegExp(envA.name));
  await page.click("#env-switcher");
  await page.fill("#env-search", envB.name);
  const links = page.locator(`.switcher-list a[data-env]`);
  assert.equal(await links.count(), 1);
  await links.first().click();
  await page.waitForURL((url) => url.search.includes(envB.id));
  assert.match(new URL(page.url()).pathname, /\/console\/dashboard$/);
  await page.locator("#env-switcher", { hasText: envB.name }).waitFor();
  await shot(page, "dashboard-empty");
  assert.deepEqual(errors, [], "browser errors");
});

test("versions, compare, promote and watch the resources deploy live", async (t) => {
  const v1 = await putVersion(envA.id, (v) => [nullResource(v, "n1"), nullResource(v, "n2", { value: "old" })]);
  const v2 = await putVersion(envA.id, (v) => [
    nullResource(v, "n2", { value: "new" }),
    nullResource(v, "n3", { requires: ["std::testing::NullResource[agent1,name=n2]"] }),
  ]);
  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/desiredstate?env=${envA.id}`);
  await page.locator(`#versions tr[data-version="${v2}"]`).waitFor();
  await waitForHydration(page);
  assert.equal(await page.locator("#versions tbody tr").count(), 2);
  await shot(page, "desired-state");

  // Compare: select both, open the compare view.
  await page.check(`#versions tr[data-version="${v1}"] input.select-version`);
  await page.check(`#versions tr[data-version="${v2}"] input.select-version`);
  await page.click("a#compare");
  await page.waitForURL(/\/console\/desiredstate\/compare/);
  await page.locator("#compare-summary").waitFor();
  assert.match(await page.textContent("#compare-summary"), /1 added, 1 modified, 1 deleted/);
  const modified = page.locator('details.diff-modified[data-id="std::testing::NullResource[agent1,name=n2]"]');
  assert.match(await modified.locator('tr[data-attribute="value"]').textContent(), /old.*new/s);
  await shot(page, "compare");

  // Resources page before anything is released, then promote v2 from another tab's point of view
  // (the REST API) and watch the page change without a reload.
  await page.goto(`${BASE}/console/resources?env=${envA.id}`);
  await waitForHydration(page);
  await page.locator("text=No resources yet").waitFor();
  await page.evaluate(() => { window.__notReloaded = true; });
  await api("POST", `/api/v2/desiredstate/${v2}/promote`, undefined, envA.id);
  await page.locator('#resources tr[data-status="deployed"]').nth(1).waitFor({ timeout: 30_000 });
  assert.equal(await page.evaluate(() => window.__notReloaded), true, "the page was reloaded");
  assert.equal(await page.locator("#resources tbody tr").count(), 2);
  assert.match(await page.textContent("#deploying-count"), /2 resources/);
  await shot(page, "resources");

  // A third version put and promoted from the console's Desired State page: the new resource
  // shows up deployed live on the resources page the operator goes back to.
  const v3 = await putVersion(envA.id, (v) => [
    nullResource(v, "n2", { value: "new" }),
    nullResource(v, "n3", { requires: ["std::testing::NullResource[agent1,name=n2]"] }),
    nullResource(v, "n4"),
  ]);
  await page.goto(`${BASE}/console/desiredstate?env=${envA.id}`);
  await waitForHydration(page);
  await page.click(`#versions tr[data-version="${v3}"] button.promote`);
  assert.match(await answer(page), new RegExp(`Promote version ${v3}\\?`));
  assert.ok(await toast(page, `Version ${v3} promoted`), "a success toast");
  await page.locator(`#versions tr[data-version="${v3}"] [data-status="active"]`).waitFor({ timeout: 15_000 });
  await page.goto(`${BASE}/console/resources?env=${envA.id}&sort=resource_id_value.asc`);
  await waitForHydration(page);
  await page.locator('#resources tr[data-id="std::testing::NullResource[agent1,name=n4]"][data-status="deployed"]')
    .waitFor({ timeout: 30_000 });

  // The summary bar filters.
  await page.click('.legend a.chip[data-state="deployed"]');
  await page.waitForURL(/filter\.status=deployed/);
  await page.locator("#resources tbody tr").first().waitFor();

  await page.goto(`${BASE}/console/dashboard?env=${envA.id}`);
  await waitForHydration(page);
  await page.locator("#deploy-progress .deploy-bar a").first().waitFor();
  await shot(page, "dashboard");
  assert.deepEqual(errors, [], "browser errors");
});

test("a failed resource shows its logs", async (t) => {
  const env = await api("PUT", "/api/v2/environment", { name: `ops-fail-${suffix}`, project_id: project.id });
  // auto_deploy (the default) releases the version as soon as it is stored.
  await putVersion(env.id, (v) => [nullResource(v, "broken", { agent: "agent9", fail: true })]);
  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/resources?env=${env.id}`);
  await waitForHydration(page);
  const row = page.locator('#resources tr[data-status="failed"]');
  await row.waitFor({ timeout: 30_000 });
  await row.locator("a").click();
  await page.waitForURL(/\/console\/resources\/details/);
  await page.locator("#resource-id").waitFor();
  assert.match(await page.textContent("#resource-id"), /name=broken/);
  await page.click("#tab-logs");
  await page.locator("#logs tbody tr").first().waitFor({ timeout: 15_000 });
  const levels = await page.locator("#logs tbody tr").evaluateAll((rows) => rows.map((r) => r.dataset.level));
  assert.ok(levels.includes("ERROR"), `levels ${levels}`);
  await page.selectOption("#log-level", "ERROR");
  await page.waitForURL(/level=ERROR/);
  await page.waitForFunction(() => [...document.querySelectorAll("#logs tbody tr")].every((r) => r.dataset.level === "ERROR"));
  await shot(page, "resource-logs");
  await page.click("#tab-attributes");
  await page.locator('tr[data-attribute="fail"]').waitFor();
  await shot(page, "resource-details");
  assert.deepEqual(errors, [], "browser errors");
});

test("pause and unpause an agent", async (t) => {
  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/agents?env=${envA.id}`);
  await waitForHydration(page);
  const row = page.locator('#agents tr[data-agent="agent1"]');
  await row.waitFor();
  await row.locator("button.pause-toggle").click();
  await page.locator('#agents tr[data-agent="agent1"][data-status="paused"]').waitFor({ timeout: 10_000 });
  await shot(page, "agents");
  await page.locator('#agents tr[data-agent="agent1"] button.pause-toggle').click();
  await page.locator('#agents tr[data-agent="agent1"]:not([data-status="paused"])').waitFor({ timeout: 10_000 });
  assert.deepEqual(errors, [], "browser errors");
});

test("mark a notification read from the drawer and the centre", async (t) => {
  // A resource that starts failing makes an unread notification (orchestrator's
  // notify_new_failures): wait for it through the API, so the page below renders it.
  const { env } = await failingEnvironment("ops-notify", 0);
  let notifications = [];
  for (let i = 0; i < 100 && notifications.length === 0; i++) {
    notifications = await api("GET", "/api/v2/notification", undefined, env.id);
    if (notifications.length === 0) await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(notifications.length > 0, "the failed deploy made no notification within 20 s");
  assert.ok(notifications.some((n) => !n.read && n.title === "Resource deploy failed"), JSON.stringify(notifications));
  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/notificationcenter?env=${env.id}`);
  await waitForHydration(page);
  await page.locator("#notifications li.unread").first().waitFor({ timeout: 20_000 });
  const unreadBefore = Number(await page.textContent("#unread-count"));
  await page.click("#notification-bell");
  await page.locator("#notification-drawer .drawer-item").first().waitFor();
  await shot(page, "notification-drawer");
  await page.locator("#notification-drawer .drawer-item button", { hasText: "Mark read" }).first().click();
  await page.waitForFunction((n) => Number(document.querySelector("#unread-count")?.textContent ?? 0) < n, unreadBefore);
  await shot(page, "notifications");
  assert.deepEqual(errors, [], "browser errors");
});

test("settings, parameters, facts and create environment pages render and hydrate", async (t) => {
  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/settings?env=${envA.id}&tab=configuration`);
  await waitForHydration(page);
  await page.locator('#settings tr[data-setting="auto_deploy"]').waitFor();
  await shot(page, "settings");
  await page.goto(`${BASE}/console/parameters?env=${envA.id}`);
  await waitForHydration(page);
  await shot(page, "parameters");
  await page.goto(`${BASE}/console/facts?env=${envA.id}`);
  await waitForHydration(page);
  await shot(page, "facts");
  await page.goto(`${BASE}/console/environment/create`);
  await waitForHydration(page);
  await page.fill("#new-project", `created-${suffix}`);
  await page.fill("#env-name", `created-env-${suffix}`);
  await page.click('#create-environment button[type="submit"]');
  await page.waitForURL(/\/console\/dashboard\?env=/);
  await page.locator("#env-switcher", { hasText: `created-env-${suffix}` }).waitFor();
  await page.emulateMedia({ colorScheme: "dark" });
  await shot(page, "dashboard-dark");
  assert.deepEqual(errors, [], "browser errors");
});

test("the dependency graph draws the resources and opens one on click", async (t) => {
  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/resources/graph?env=${envA.id}`);
  await waitForHydration(page);
  const node = page.locator('#graph a.node[data-id="std::testing::NullResource[agent1,name=n3]"]');
  await node.waitFor();
  assert.ok(await page.locator("#graph path.edge").count() >= 1, "requires edges");
  // Zoom and pan change the view box.
  const before = await page.getAttribute("#graph", "viewBox");
  await page.hover("#graph");
  await page.mouse.wheel(0, -300);
  await page.waitForFunction((b) => document.querySelector("#graph").getAttribute("viewBox") !== b, before);
  await shot(page, "graph");
  await node.click();
  await page.waitForURL(/\/console\/resources\/details/);
  await page.locator("#resource-id").waitFor();
  assert.deepEqual(errors, [], "browser errors");
});

test("the dependency graph stays usable with 1 000 resources", async (t) => {
  const env = await api("PUT", "/api/v2/environment", { name: `ops-big-${suffix}`, project_id: project.id });
  await api("POST", "/api/v2/actions/environment/halt", undefined, env.id);
  // Ten chains of a hundred, each resource requiring the one before it.
  await putVersion(env.id, (v) => Array.from({ length: 1000 }, (_, i) => nullResource(v, `r${i}`, {
    agent: `agent${Math.floor(i / 100)}`,
    requires: i % 100 ? [`std::testing::NullResource[agent${Math.floor(i / 100)},name=r${i - 1}]`] : [],
  })));
  const { page, errors } = await openConsole(t);
  const started = Date.now();
  await page.goto(`${BASE}/console/resources/graph?env=${env.id}`);
  await page.locator("#graph a.node").nth(999).waitFor({ timeout: 30_000 });
  const drawn = Date.now() - started;
  await waitForHydration(page);
  assert.equal(await page.locator("#graph a.node").count(), 1000);
  assert.equal(await page.locator("#graph path.edge").count(), 990);
  // Zooming answers while a thousand nodes are on screen.
  const zoomStarted = Date.now();
  const before = await page.getAttribute("#graph", "viewBox");
  await page.hover("#graph");
  await page.mouse.wheel(0, -300);
  await page.waitForFunction((b) => document.querySelector("#graph").getAttribute("viewBox") !== b, before);
  console.log(`graph of 1000 resources: drawn in ${drawn} ms, zoom answered in ${Date.now() - zoomStarted} ms`);
  await shot(page, "graph-1000");
  await page.locator('#graph a.node[data-id="std::testing::NullResource[agent7,name=r777]"]').click();
  await page.waitForURL(/\/console\/resources\/details/);
  assert.deepEqual(errors, [], "browser errors");
});
