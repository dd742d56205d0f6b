// The environments page in a real browser: server-rendered, hydrated, and listing environments
// created through the REST API. Run by ../run.sh with INMANTA_URL pointing at a running server.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const BASE = (process.env.INMANTA_URL ?? "http://127.0.0.1:8888").replace(/\/+$/, "");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ARTIFACTS = process.env.E2E_ARTIFACTS ?? join(dirname(fileURLToPath(import.meta.url)), "..", "test-results");
const suffix = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;

let browser;

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
});

async function api(method, path, body) {
  const response = await fetch(`${BASE}${path}`, {
    method,
    headers: body ? { "content-type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await response.text();
  assert.ok(response.ok, `${method} ${path} -> ${response.status}: ${text}`);
  return JSON.parse(text).data;
}

/** A page that records every browser error (console errors, uncaught exceptions, failed requests). */
async function openConsole(t) {
  const page = await browser.newPage();
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(`console.error: ${m.text()} (${m.location()?.url})`); });
  page.on("pageerror", (e) => errors.push(`pageerror: ${e}`));
  page.on("requestfailed", (r) => errors.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on("response", (r) => { if (r.status() >= 400) errors.push(`HTTP ${r.status()}: ${r.url()}`); });
  t.after(() => page.close());
  return { page, errors };
}

async function waitForHydration(page) {
  await page.waitForSelector('.layout[data-hydrated="true"]', { timeout: 15_000 });
}

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
