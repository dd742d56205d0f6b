// Compile reports, compile details, the compliance check (dry run) and the server status in a real
// browser. The compile is a real one of the server's compile runner: the environment's repository
// does not exist, so the "Cloning repository" stage fails. The dry run is a real one of the
// server's in-process agents: an fs::File whose content on disk differs from the version's.
// Screenshots land in test-results/. Run by ../run.sh with INMANTA_URL pointing at a running server
// on this machine (the dry run reads a file this test writes).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BASE, suffix, start, stop, api, openConsole, waitForHydration, shot } from "./lib.mjs";


let project;

before(async () => {
  await start();
  project = await api("PUT", "/api/v2/project", { name: `compiles-${suffix}` });
});

after(stop);





test("recompile live, then a failed compile's details with the failed stage open", async (t) => {
  const env = await api("PUT", "/api/v2/environment", {
    name: `compile-${suffix}`, project_id: project.id, repository: `/nonexistent/e2e-repo-${suffix}`, branch: "main",
  });
  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/compilereports?env=${env.id}`);
  await waitForHydration(page);
  await page.locator("text=No compile reports yet").waitFor();
  await page.evaluate(() => { window.__notReloaded = true; });

  // Recompile from the menu: the compile shows up and fails without a reload.
  await page.click("#recompile-menu");
  assert.equal(await page.$eval("#recompile-details", (menu) => menu.open), true);
  await page.click("#recompile");
  await page.locator("text=Compile queued.").waitFor();
  const failed = page.locator('#compile-reports tr[data-status="failed"]');
  await failed.waitFor({ timeout: 30_000 });
  assert.equal(await page.evaluate(() => window.__notReloaded), true, "the page was reloaded");
  assert.match(await failed.textContent(), /Recompile from the web console/);
  await shot(page, "compile-reports");

  // The status filter.
  await page.click('.toolbar a.chip:text-is("success")');
  await page.waitForURL(/filter\.status=success/);
  await page.locator("text=No compile reports match the filter").waitFor();
  await page.click("text=Clear the filter");
  await page.waitForURL((url) => !url.search.includes("filter.status"));

  // Details: the timeline, the request, the stages; only the failed one is open.
  await page.locator('#compile-reports tr[data-status="failed"] a', { hasText: "Show details" }).click();
  await page.waitForURL(/\/console\/compilereports\/[0-9a-f-]{36}/);
  await page.locator("#compile-stages").waitFor();
  await waitForHydration(page);
  const open = page.locator("#compile-stages details.stage[open]");
  assert.equal(await open.count(), 1);
  assert.equal(await open.getAttribute("data-stage"), "Cloning repository");
  assert.match(await open.locator("pre.stderr").textContent(), /nonexistent|does not exist|not a git repository/i);
  assert.match(await open.locator(".return-code.failed").textContent(), /✕ \d+/);
  const init = page.locator('#compile-stages details.stage[data-stage="Init"]');
  assert.equal(await init.getAttribute("open"), null);
  await init.locator("summary").click();
  await init.locator("pre.stdout").waitFor();
  assert.match(await page.textContent("#compile-facts"), /Trigger\s*console/);
  assert.match(await page.textContent(".timeline"), /Requested.*Started.*Completed/s);
  await shot(page, "compile-details");

  // The dashboard lists it.
  await page.click('.sidebar a:text-is("Dashboard")');
  await page.waitForURL(/\/console\/dashboard/);
  await page.locator('#latest-compiles tr[data-status="failed"]').waitFor();
  assert.deepEqual(errors, [], "browser errors");
});

test("the Recompile menu is disabled with a hint when server compiles are off", async (t) => {
  const env = await api("PUT", "/api/v2/environment", { name: `no-compile-${suffix}`, project_id: project.id });
  await api("POST", "/api/v2/environment_settings/server_compile", { value: false }, env.id);
  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/compilereports?env=${env.id}`);
  await waitForHydration(page);
  assert.equal(await page.isDisabled("#recompile-menu"), true);
  assert.match(await page.textContent("#recompile-hint"), /server_compile/);
  assert.deepEqual(errors, [], "browser errors");
});

test("compliance check: perform a dry run and read its diff", async (t) => {
  const env = await api("PUT", "/api/v2/environment", { name: `dryrun-${suffix}`, project_id: project.id });
  // The version is not released (so nothing deploys the file).
  await api("POST", "/api/v2/environment_settings/auto_deploy", { value: false }, env.id);
  const dir = mkdtempSync(join(tmpdir(), "inmanta-e2e-"));
  const path = join(dir, "motd");
  writeFileSync(path, "welcome\nold line\n");
  const version = await api("POST", "/api/v2/reserve_version", undefined, env.id);
  const file = `fs::File[localhost,path=${path}]`;
  await api("PUT", "/api/v1/version", {
    version,
    resources: [
      { id: `${file},v=${version}`, path, content: "welcome\nnew line\n", purged: false, requires: [],
        send_event: false, receive_events: false },
      { id: `std::testing::NullResource[localhost,name=same],v=${version}`, name: "same", agentname: "localhost",
        fail: false, value: "", int_value: 0, purged: false, send_event: false, receive_events: false, requires: [] },
    ],
    resource_state: {}, unknowns: [], version_info: {}, compiler_version: "e2e",
  }, env.id);

  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/desiredstate?env=${env.id}`);
  await waitForHydration(page);
  await page.locator(`#versions tr[data-version="${version}"] a.compliance`).click();
  await page.waitForURL(new RegExp(`/console/desiredstate/${version}/compliancecheck`));
  await page.locator("text=No dry runs of this version yet").waitFor();
  await waitForHydration(page);

  await page.click("#dry-run");
  await page.waitForURL(/report=[0-9a-f-]{36}/);
  const diff = page.locator(`details.diff-modified[data-id="${file}"]`);
  await diff.waitFor({ timeout: 30_000 });
  await page.locator("#dry-run-progress").waitFor({ state: "detached", timeout: 30_000 });
  assert.match(await page.textContent("#compare-summary"), /2 resources reported: 1 unmodified, 1 modified/);
  const unified = diff.locator("pre.unified-diff");
  assert.match(await unified.locator(".diff-del").allTextContents().then((l) => l.join("\n")), /-old line/);
  assert.match(await unified.locator(".diff-add").allTextContents().then((l) => l.join("\n")), /\+new line/);
  assert.equal(await page.locator("#dry-run-reports a.chip").count(), 1);
  await shot(page, "compliance-check");
  // A dry run changes nothing.
  assert.equal(readFileSync(path, "utf8"), "welcome\nold line\n");
  assert.deepEqual(errors, [], "browser errors");
});

test("server status page", async (t) => {
  const env = await api("PUT", "/api/v2/environment", { name: `status-${suffix}`, project_id: project.id });
  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/dashboard?env=${env.id}`);
  await waitForHydration(page);
  await page.click('.sidebar a:text-is("Server Status")');
  await page.waitForURL(/\/console\/status/);
  await page.locator("#components").waitFor();
  assert.match(await page.textContent("#status-product"), /Inmanta/);
  assert.match(await page.textContent("#status-database"), /sqlite|postgres/);
  for (const name of ["core.server", "core.database", "core.scheduler_manager", "core.compiler"]) {
    assert.equal(await page.locator(`#components tr[data-component="${name}"]`).count(), 1, name);
  }
  assert.equal(await page.getAttribute('#components tr[data-component="core.scheduler_manager"] .badge', "data-status"), "OK");
  await page.click("#status-refresh");
  await shot(page, "server-status");
  assert.deepEqual(errors, [], "browser errors");
});
