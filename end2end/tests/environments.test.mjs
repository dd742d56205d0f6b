// The environments page in a real browser: server-rendered, hydrated, and listing environments
// created through the REST API. Run by ../run.sh with INMANTA_URL pointing at a running server.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { BASE, ARTIFACTS, suffix, start, stop, api, openConsole, waitForHydration } from "./lib.mjs";



before(async () => {
  await start();
});

after(stop);




test("root redirects to the console", async () => {
  const response = await fetch(`${BASE}/`, { redirect: "manual" });
  assert.ok([302, 303, 307, 308].includes(response.status), `status ${response.status}`);
  assert.equal(response.headers.get("location"), "/console");
});

test("the console lists environments created through the API and hydrates", async (t) => {
  const project = await api("PUT", "/api/v2/project", { name: `e2e-project-${suffix}` });
  const first = await api("PUT", "/api/v2/environment", { name: `e2e-first-${suffix}`, project_id: project.id });

  const { page, errors } = await openConsole(t);
  const response = await page.goto(`${BASE}/console`, { waitUntil: "load" });
  assert.equal(response.status(), 200);
  assert.equal(await page.title(), "Environments · Inmanta");

  // Server-rendered: the row is in the HTML before any wasm runs.
  const row = page.locator(`#environments tr[data-id="${first.id}"]`);
  await row.waitFor({ timeout: 10_000 });
  const cells = await row.locator("td").allTextContents();
  assert.deepEqual(cells.map((c) => c.trim()), [first.name, project.name, project.id, first.id]);

  await waitForHydration(page);

  // An environment created after the page loaded appears on "Reload": the button only works once
  // hydrated, and it calls the list_environments server function from the browser.
  const second = await api("PUT", "/api/v2/environment", { name: `e2e-second-${suffix}`, project_id: project.id });
  const serverFn = page.waitForResponse((r) => r.url().endsWith("/console/fn/list_environments"));
  await page.click("#reload");
  assert.equal((await serverFn).status(), 200);
  await page.locator(`#environments tr[data-id="${second.id}"]`).waitFor({ timeout: 10_000 });
  assert.equal(await page.locator(`#environments tr[data-id="${first.id}"]`).count(), 1);

  await page.screenshot({ path: join(ARTIFACTS, "environments.png"), fullPage: true });
  await page.emulateMedia({ colorScheme: "dark" });
  await page.screenshot({ path: join(ARTIFACTS, "environments-dark.png"), fullPage: true });
  assert.deepEqual(errors, [], "browser errors");
});

test("an unknown console page is a 404 that still hydrates", async (t) => {
  const { page, errors } = await openConsole(t);
  const response = await page.goto(`${BASE}/console/no-such-page`, { waitUntil: "load" });
  assert.equal(response.status(), 404);
  assert.match(await page.textContent("h1"), /Page not found/);
  await waitForHydration(page);
  // the document's own 404 is expected; nothing else may fail
  assert.deepEqual(errors.filter((e) => !e.includes("/console/no-such-page")), [], "browser errors");
});
