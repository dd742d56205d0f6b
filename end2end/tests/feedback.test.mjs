// Versions say what they are and what can be done with them, compare stays short, and every
// action answers: the version page's header shows the export's message, status, Promote and a
// dry run; compare starts collapsed with filters by kind and a search; Deploy, Repair, Promote
// and Halt ask in the console's own dialog (never the browser's confirm()) and report their
// outcome in a toast; a state has one colour on every page; changed settings are marked.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { BASE, suffix, start, stop, api, openConsole, waitForHydration, shot, answer, toast, nullResource } from "./lib.mjs";

let env;
let versions;

before(async () => {
  await start();
  const project = await api("PUT", "/api/v2/project", { name: `feedback-${suffix}` });
  env = await api("PUT", "/api/v2/environment", { name: `feedback-${suffix}`, project_id: project.id });
  await api("POST", "/api/v2/environment_settings/auto_deploy", { value: false }, env.id);
  // v1: r0..r29; v2: r0..r19 with a new value, r30..r39 added (r20..r29 deleted).
  const put = async (make, message) => {
    const version = await api("POST", "/api/v2/reserve_version", undefined, env.id);
    await api("PUT", "/api/v1/version", {
      version, resources: make(version), resource_state: {}, unknowns: [], compiler_version: "e2e",
      version_info: { export_metadata: { type: "api", message } },
    }, env.id);
    return version;
  };
  const v1 = await put((v) => Array.from({ length: 30 }, (_, i) => nullResource(v, `r${i}`, { value: "old" })), "first export");
  const v2 = await put((v) => [
    ...Array.from({ length: 20 }, (_, i) => nullResource(v, `r${i}`, { value: "new" })),
    ...Array.from({ length: 10 }, (_, i) => nullResource(v, `r${30 + i}`)),
  ], "Recompile trigger through API call");
  versions = { v1, v2 };
});

after(stop);

test("the version page shows message and status, promotes and links to a dry run", async (t) => {
  const { v2 } = versions;
  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/desiredstate/version?env=${env.id}&v=${v2}`);
  await waitForHydration(page);
  const header = page.locator("#version-header");
  assert.equal(await header.getAttribute("data-status"), "candidate");
  assert.equal((await page.textContent("#version-message")).trim(), "Recompile trigger through API call");
  assert.equal(
    await page.getAttribute("#version-dry-run", "href"),
    `/console/desiredstate/${v2}/compliancecheck?env=${env.id}`,
  );
  await shot(page, "version-header");

  // Cancel leaves the version a candidate; yes promotes it, with a toast.
  await page.click("#version-promote");
  assert.match(await answer(page, false), new RegExp(`Promote version ${v2}\\?`));
  const status = async () => (await api("GET", "/api/v2/desiredstate", undefined, env.id)).find((v) => v.version === v2).status;
  assert.equal(await status(), "candidate");
  await page.click("#version-promote");
  await answer(page);
  assert.ok(await toast(page, `Version ${v2} promoted`));
  await page.locator('#version-header[data-status="active"]').waitFor({ timeout: 15_000 });
  await page.locator("#version-promote").waitFor({ state: "detached" });
  // The versions table shows the messages too.
  await page.goto(`${BASE}/console/desiredstate?env=${env.id}`);
  await waitForHydration(page);
  assert.equal((await page.textContent(`#versions tr[data-version="${versions.v1}"] .version-message`)).trim(), "first export");
  assert.deepEqual(errors, [], "browser errors");
});

test("compare starts collapsed, filters by kind and searches", async (t) => {
  const { v1, v2 } = versions;
  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/desiredstate/compare?env=${env.id}&from=${v1}&to=${v2}`);
  await waitForHydration(page);
  assert.match(await page.textContent("#compare-summary"), /10 added, 20 modified, 10 deleted/);
  const all = page.locator("#compare details.diff");
  assert.equal(await all.count(), 40);
  assert.equal(await page.locator("#compare details.diff[open]").count(), 0, "collapsed by default");
  // Collapsed, 40 changes fit in a few screens (each one line).
  const height = await page.locator("#compare").evaluate((e) => e.getBoundingClientRect().height);
  assert.ok(height < 40 * 60, `compare is ${height} px high`);
  const visible = () => page.locator("#compare details.diff:not([hidden])").count();

  await page.click('.compare-tools button[data-kind="deleted"]');
  await page.locator("#compare-shown", { hasText: "10 of 40 shown" }).waitFor();
  assert.equal(await visible(), 10);
  assert.equal(await page.locator("#compare details.diff-deleted:not([hidden])").count(), 10);
  await page.click('.compare-tools button[data-kind="modified"]');
  await page.fill("#compare-search", "name=r1]");
  await page.locator("#compare-shown", { hasText: "1 of 40 shown" }).waitFor();
  const one = page.locator("#compare details.diff:not([hidden])");
  assert.equal(await one.getAttribute("data-id"), "std::testing::NullResource[agent1,name=r1]");
  await one.locator("summary").click();
  assert.match(await one.locator('tr[data-attribute="value"]').textContent(), /old.*new/s);
  await page.click('.compare-tools button[data-kind=""]');
  await page.fill("#compare-search", "");
  await page.locator("#compare-shown", { hasText: "40 of 40 shown" }).waitFor();
  await page.click("#compare-expand");
  assert.equal(await page.locator("#compare details.diff[open]").count(), 40);
  await shot(page, "compare-filters");
  assert.deepEqual(errors, [], "browser errors");
});

test("deploy, repair and halt ask in the console's dialog and answer with a toast", async (t) => {
  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/resources?env=${env.id}`);
  await waitForHydration(page);
  await page.click("#deploy");
  assert.match(await answer(page), /Deploy every resource/);
  assert.ok(await toast(page, "Deploy started"));
  await page.click("#repair");
  // Escape says no.
  await page.locator("#confirm-dialog").waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.id), "confirm-yes", "focus on the answer");
  await page.keyboard.press("Escape");
  await page.locator("#confirm-dialog").waitFor({ state: "detached" });
  await page.click("#repair");
  await answer(page);
  assert.ok(await toast(page, "Repair started"));
  await shot(page, "toasts");

  await page.click("#halt-toggle");
  assert.match(await answer(page), /Halt environment/);
  // Halting waits for the deploys the repair started to stop.
  assert.ok(await toast(page, "halted", 60_000));
  await page.locator("#halted-banner").waitFor();
  await page.locator("#halt-toggle", { hasText: "Resume" }).waitFor();
  await page.click("#halt-toggle");
  assert.match(await answer(page), /Resume environment/);
  assert.ok(await toast(page, "resumed", 60_000));
  await page.locator("#halted-banner").waitFor({ state: "detached" });
  assert.deepEqual(errors, [], "browser errors (a native dialog would be one)");
});

test("a state has one colour on every page; changed settings are marked", async (t) => {
  const { page, errors } = await openConsole(t);
  const colour = async (path, selector) => {
    await page.goto(`${BASE}${path}`);
    await waitForHydration(page);
    const badge = page.locator(selector).first();
    await badge.waitFor({ timeout: 30_000 });
    return badge.evaluate((b) => getComputedStyle(b).backgroundColor);
  };
  const e = `env=${env.id}`;
  const good = [
    await colour(`/console/desiredstate?${e}`, '.badge[data-status="active"]'),
    await colour(`/console/resources?${e}`, '.badge[data-status="deployed"]'),
    await colour(`/console/agents?${e}`, '.badge[data-status="up"]'),
  ];
  assert.equal(new Set(good).size, 1, `active, deployed and up: ${good}`);
  // auto_deploy was turned off (before), the other settings keep their defaults.
  await page.goto(`${BASE}/console/settings?${e}&tab=configuration`);
  await waitForHydration(page);
  const changed = page.locator('tr[data-setting="auto_deploy"]');
  assert.equal(await changed.getAttribute("data-changed"), "true");
  assert.equal(await changed.locator(".badge-changed").count(), 1);
  const untouched = page.locator('tr[data-setting="server_compile"]');
  assert.equal(await untouched.getAttribute("data-changed"), "false");
  assert.equal(await untouched.locator(".badge-changed").count(), 0);
  await shot(page, "settings-changed");
  assert.deepEqual(errors, [], "browser errors");
});
