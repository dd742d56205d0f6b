// What every browser test shares: the server under test, a Chromium driven by playwright-core,
// REST calls with a bearer token, and console pages signed in through the real login page.
// Credentials come from E2E_USER / E2E_PASSWORD (scripts/test.sh creates that admin).
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export let BASE = (process.env.INMANTA_URL ?? "http://127.0.0.1:8888").replace(/\/+$/, "");
export let USER = process.env.E2E_USER ?? "e2e";
export let PASSWORD = process.env.E2E_PASSWORD ?? "E2e-password-123";
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const ARTIFACTS =
  process.env.E2E_ARTIFACTS ?? join(dirname(fileURLToPath(import.meta.url)), "..", "test-results");
export const suffix = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;

let browser;
let token;

/** Starts Chromium and logs in to the API; call from `before`. A test file that starts its own
 * server passes its address and admin (`{ base, user, password }`). */
export async function start(server = {}) {
  BASE = server.base ?? BASE;
  USER = server.user ?? USER;
  PASSWORD = server.password ?? PASSWORD;
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  token = await login(USER, PASSWORD);
}

export async function stop() {
  await browser?.close();
}

/** A bearer token for the user, from POST /api/v2/login. */
export async function login(username, password) {
  const response = await fetch(`${BASE}/api/v2/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ username, password }),
  });
  const text = await response.text();
  assert.ok(response.ok, `login of ${username} -> ${response.status}: ${text}`);
  return JSON.parse(text).data.token;
}

/** A REST call as the test admin (or with `as` another token); returns `data` when there is one. */
export async function api(method, path, body, env, as = token) {
  const headers = { authorization: `Bearer ${as}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (env) headers["x-inmanta-tid"] = env;
  const response = await fetch(`${BASE}${path}`, { method, headers, body: body !== undefined ? JSON.stringify(body) : undefined });
  const text = await response.text();
  assert.ok(response.ok, `${method} ${path} -> ${response.status}: ${text}`);
  return text ? JSON.parse(text).data ?? JSON.parse(text) : null;
}

/** A fresh browser context (its own cookies), not signed in; `viewport` defaults to a laptop's;
 * `options` are Playwright's (`{ javaScriptEnabled: false }`: the console before its wasm). */
export async function newContext(viewport = { width: 1280, height: 800 }, options = {}) {
  return browser.newContext({ viewport, ...options });
}

/** Records every browser error of a page (console errors, exceptions, failed requests). */
export function watchErrors(page) {
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(`console.error: ${m.text()} (${m.location()?.url})`); });
  page.on("pageerror", (e) => errors.push(`pageerror: ${e}`));
  page.on("requestfailed", (r) => {
    // Leaving a page cuts its event stream and aborts the refetches that live updates started
    // (net::ERR_ABORTED); those are not errors.
    const aborted = r.failure()?.errorText === "net::ERR_ABORTED";
    if (!r.url().includes("/console/events") && !aborted) errors.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  page.on("response", (r) => { if (r.status() >= 400) errors.push(`HTTP ${r.status()}: ${r.url()}`); });
  // The console asks in its own dialog: a native confirm()/alert() is an error.
  page.on("dialog", (d) => {
    errors.push(`native dialog: ${d.message()}`);
    d.dismiss().catch(() => {});
  });
  return errors;
}

/** Answers the console's confirmation dialog (`yes`: go ahead, else cancel); returns its question. */
export async function answer(page, yes = true) {
  const dialog = page.locator("#confirm-dialog");
  await dialog.waitFor();
  const question = (await dialog.locator("#confirm-text").textContent()).trim();
  await dialog.locator(yes ? "#confirm-yes" : "#confirm-no").click();
  await dialog.waitFor({ state: "detached" });
  return question;
}

/** Waits for a toast containing `text`; returns whether it reports success. */
export async function toast(page, text, timeout = 15_000) {
  const t = page.locator("#toasts .toast", { hasText: text });
  await t.first().waitFor({ timeout });
  return (await t.first().getAttribute("data-ok")) === "true";
}

/** The page's width in CSS pixels (wider than the viewport means sideways scrolling). */
export async function pageWidth(page) {
  return page.evaluate(() => document.documentElement.scrollWidth);
}

/** Signs in through the console's login page, the way a person does. */
export async function signIn(page, username = USER, password = PASSWORD) {
  await page.goto(`${BASE}/console/login`);
  await page.fill("#username", username);
  await page.fill("#password", password);
  await Promise.all([page.waitForURL((url) => !url.pathname.startsWith("/console/login")), page.press("#password", "Enter")]);
  // Let the landing page finish loading its wasm, so the next navigation aborts nothing.
  await waitForHydration(page);
}

/** A signed-in console page that records browser errors; closed when the test ends. */
export async function openConsole(t, viewport) {
  const context = await newContext(viewport);
  const page = await context.newPage();
  await signIn(page);
  const errors = watchErrors(page);
  t.after(() => context.close());
  return { page, errors };
}

export async function waitForHydration(page) {
  await page.waitForSelector('.layout[data-hydrated="true"]', { timeout: 20_000 });
}

export async function shot(page, name) {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** A std::testing::NullResource of `version` (fails on deploy with `fail`). */
export function nullResource(version, name, { agent = "agent1", fail = false, value = "", requires = [] } = {}) {
  return {
    id: `std::testing::NullResource[${agent},name=${name}],v=${version}`,
    name, agentname: agent, fail, value, int_value: 0, purged: false,
    send_event: true, receive_events: true,
    requires: requires.map((r) => `${r},v=${version}`),
  };
}

/** Stores a version of NullResources made by `make(version)`; returns its number. */
export async function putVersion(env, make) {
  const version = await api("POST", "/api/v2/reserve_version", undefined, env);
  await api("PUT", "/api/v1/version", {
    version, resources: make(version), resource_state: {}, unknowns: [], version_info: {}, compiler_version: "e2e",
  }, env);
  return version;
}

/** An environment whose released version has a failing resource `broken` with `dependents`
 * resources that require it (skipped), and `fine` deployed; resolves once the deploy settled. */
export async function failingEnvironment(name, dependents = 3) {
  const project = await api("PUT", "/api/v2/project", { name: `${name}-project-${suffix}` });
  const env = await api("PUT", "/api/v2/environment", { name: `${name}-${suffix}`, project_id: project.id });
  const broken = "std::testing::NullResource[agent1,name=broken]";
  const version = await putVersion(env.id, (v) => [
    nullResource(v, "broken", { fail: true }),
    nullResource(v, "fine"),
    ...Array.from({ length: dependents }, (_, i) => nullResource(v, `needs-${i}`, { requires: [broken] })),
  ]);
  // auto_deploy releases new versions by default; wait until nothing is left to deploy.
  for (let i = 0; i < 100; i++) {
    const rows = await api("GET", "/api/v2/resource?limit=100", undefined, env.id);
    if (rows.length === 2 + dependents && rows.every((r) => !["available", "deploying"].includes(r.status))) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  return { project, env, version, broken };
}
