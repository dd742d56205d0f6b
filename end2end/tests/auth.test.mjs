// Signing in, in a real browser: the console sends strangers to the login page, a wrong
// password is refused with the reason, a user sees only the environments she has a role in
// (the others are refused even by URL), and logging out ends the session.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { BASE, suffix, start, stop, api, newContext, watchErrors, signIn, waitForHydration, shot } from "./lib.mjs";

let project;
let visible;
let hidden;
const viewer = `viewer-${suffix}`;
const viewerPassword = "Viewer-password-123";

before(async () => {
  await start();
  project = await api("PUT", "/api/v2/project", { name: `auth-${suffix}` });
  visible = await api("PUT", "/api/v2/environment", { name: `auth-visible-${suffix}`, project_id: project.id });
  hidden = await api("PUT", "/api/v2/environment", { name: `auth-hidden-${suffix}`, project_id: project.id });
  await api("POST", "/api/v2/user", { username: viewer, password: viewerPassword });
  await api("POST", `/api/v2/role_assignment/${viewer}`, { environment: visible.id, role: "read-only" });
});

after(stop);

test("strangers are sent to the login page and a wrong password is refused", async (t) => {
  const context = await newContext();
  t.after(() => context.close());
  const page = await context.newPage();
  await page.goto(`${BASE}/console/resources?env=${visible.id}`);
  assert.equal(new URL(page.url()).pathname, "/console/login");
  assert.equal(await page.getAttribute("#username", "autocomplete"), "username");
  await shot(page, "login");
  await page.fill("#username", viewer);
  await page.fill("#password", "not-the-password");
  await page.press("#password", "Enter");
  await page.waitForSelector(".signin-error");
  assert.match(await page.textContent(".signin-error"), /Wrong username or password/);
  assert.equal(new URL(page.url()).pathname, "/console/login");
});

test("a read-only user sees only her environment and logs out", async (t) => {
  const context = await newContext();
  t.after(() => context.close());
  const page = await context.newPage();
  // Back to the page asked for, after the login.
  await page.goto(`${BASE}/console/agents?env=${visible.id}`);
  await page.fill("#username", viewer);
  await page.fill("#password", viewerPassword);
  await Promise.all([page.waitForURL(/\/console\/agents/), page.press("#password", "Enter")]);
  await waitForHydration(page);
  const errors = watchErrors(page);
  await page.goto(`${BASE}/console`);
  await waitForHydration(page);
  assert.equal((await page.textContent("#current-user")).trim(), viewer);
  await page.locator(`#environments tr[data-id="${visible.id}"]`).waitFor({ timeout: 10_000 });
  assert.equal(await page.locator(`#environments tr[data-id="${hidden.id}"]`).count(), 0, "no role, not listed");
  await shot(page, "environments-read-only-user");

  assert.deepEqual(errors, [], "browser errors");

  // Even by URL, another environment is refused: the same 404 page as for an environment that
  // does not exist, so its existence is not given away.
  await page.goto(`${BASE}/console/resources?env=${hidden.id}`);
  await waitForHydration(page);
  assert.match(await page.textContent("main"), /Environment not found/);
  assert.doesNotMatch(await page.textContent("main"), new RegExp(hidden.name));
  await page.goto(`${BASE}/console/resources?env=${visible.id}`);
  await waitForHydration(page);
  assert.doesNotMatch(await page.textContent("main"), /no role/);
  // What was refused about the hidden environment is expected; nothing else may fail.
  const unexpected = errors.filter((e) => !e.includes(hidden.id) && !e.includes("/console/fn/"));
  assert.deepEqual(unexpected, [], "browser errors");

  await Promise.all([page.waitForURL(/\/console\/login/), page.click("#logout")]);
  await page.goto(`${BASE}/console`);
  assert.equal(new URL(page.url()).pathname, "/console/login", "the session ended");
});

test("the admin signs in through the login page and sees every environment", async (t) => {
  const context = await newContext();
  t.after(() => context.close());
  const page = await context.newPage();
  await signIn(page);
  const errors = watchErrors(page);
  await page.goto(`${BASE}/console`);
  await waitForHydration(page);
  for (const env of [visible, hidden]) {
    await page.locator(`#environments tr[data-id="${env.id}"]`).waitFor({ timeout: 10_000 });
  }
  assert.deepEqual(errors, [], "browser errors");
});
