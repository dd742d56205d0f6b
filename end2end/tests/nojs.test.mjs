// The console with JavaScript off, as it is before its wasm has loaded: a person signs in, creates
// an environment, releases a version, halts and resumes the environment and is told what went
// wrong when a form is refused, all through plain HTML forms. The server runs each form's server
// function and answers with a redirect to the page that shows the result (or, for a refusal, the
// same page with the refusal in its query).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { BASE, USER, PASSWORD, suffix, start, stop, api, newContext, nullResource, putVersion, shot } from "./lib.mjs";

before(start);
after(stop);

/** Submits the form holding `button` and waits for the page the server sends next. */
async function post(page, button) {
  await Promise.all([page.waitForNavigation(), page.click(button)]);
}

test("without JavaScript: sign in, create an environment, release a version, halt and resume", async (t) => {
  const context = await newContext(undefined, { javaScriptEnabled: false });
  t.after(() => context.close());
  const page = await context.newPage();
  const failures = [];
  page.on("response", (r) => { if (r.status() >= 500) failures.push(`HTTP ${r.status()}: ${r.url()}`); });
  await page.goto(`${BASE}/console/login`);
  await page.fill("#username", USER);
  await page.fill("#password", PASSWORD);
  await Promise.all([page.waitForURL((url) => !url.pathname.startsWith("/console/login")), page.press("#password", "Enter")]);
  // No script of the page runs: the console is never hydrated (Playwright's own evaluate still works).
  await page.waitForTimeout(500);
  assert.equal(await page.getAttribute(".layout", "data-hydrated"), "false", "JavaScript must be off");

  // A new environment in an existing project: the server shows its dashboard next.
  const project = await api("PUT", "/api/v2/project", { name: `nojs-${suffix}` });
  await page.goto(`${BASE}/console/environment/create`);
  await page.selectOption("#project", project.id);
  await page.fill("#env-name", `nojs-env-${suffix}`);
  await post(page, '#create-environment button[type="submit"]');
  assert.match(new URL(page.url()).pathname, /\/console\/dashboard$/);
  const env = new URL(page.url()).searchParams.get("env");
  const created = await api("GET", `/api/v2/environment/${env}`);
  assert.equal(created.name, `nojs-env-${suffix}`);
  assert.equal(created.project_id, project.id);

  // A stored version, released from its page.
  await api("POST", "/api/v2/environment_settings/auto_deploy", { value: false }, env);
  const version = await putVersion(env, (v) => [nullResource(v, "a"), nullResource(v, "b")]);
  await page.goto(`${BASE}/console/desiredstate/version?env=${env}&v=${version}`);
  assert.equal(await page.getAttribute("#version-header", "data-status"), "candidate");
  await post(page, "#version-promote");
  const versions = await api("GET", "/api/v2/desiredstate?limit=10", undefined, env);
  assert.equal(versions.find((v) => v.version === version)?.status, "active");
  await page.goto(`${BASE}/console/desiredstate/version?env=${env}&v=${version}`);
  assert.equal(await page.getAttribute("#version-header", "data-status"), "active");
  await shot(page, "nojs-version-released");

  // Halt and resume from the sidebar.
  await page.goto(`${BASE}/console/resources?env=${env}`);
  await post(page, "#halt-toggle");
  assert.equal((await api("GET", `/api/v2/environment/${env}`)).halted, true);
  assert.match(await page.textContent("#halt-toggle"), /Resume/);
  await post(page, "#halt-toggle");
  assert.equal((await api("GET", `/api/v2/environment/${env}`)).halted, false);

  // A refused form says why on its page, and changes nothing.
  await page.goto(`${BASE}/console/settings?env=${env}`);
  await page.fill("#confirm-delete", "not-its-name");
  await post(page, '.danger-action:has(#confirm-delete) button[type="submit"]');
  const refusal = page.locator('.danger-action:has(#confirm-delete) .action-error');
  assert.match(await refusal.textContent(), /type the environment's name/);
  assert.equal(await refusal.getAttribute("data-status"), "400");
  assert.equal((await api("GET", `/api/v2/environment/${env}`)).name, `nojs-env-${suffix}`);

  assert.deepEqual(failures, [], "server errors");
});
