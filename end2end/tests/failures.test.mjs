// A console that explains what went wrong, and routes that never answer a raw error: a failed
// resource shows its last error in the resources table and its header, the resources waiting on
// it say "blocked by" with a link to it, the dashboard lists what needs attention; `/console/`
// and unknown pages answer the console's own pages, an unknown environment its 404 page.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { BASE, suffix, start, stop, api, openConsole, waitForHydration, shot, failingEnvironment, nullResource, putVersion } from "./lib.mjs";

let setup;

before(async () => {
  await start();
  setup = await failingEnvironment("explain", 3);
});

after(stop);

test("a failed resource shows its error; its dependents say what blocks them, with a link", async (t) => {
  const { env, broken } = setup;
  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/resources?env=${env.id}`);
  await waitForHydration(page);
  const failed = page.locator(`#resources tr[data-id="${broken}"]`);
  assert.equal(await failed.getAttribute("data-status"), "failed");
  // NullResource with fail=true raises in the handler: its error line is the problem.
  const error = (await failed.locator("td.problem .last-error").textContent()).trim();
  assert.ok(error.length > 0, "the failed row shows its last error");

  const dependent = page.locator('#resources tr[data-id="std::testing::NullResource[agent1,name=needs-0]"]');
  const blocked = dependent.locator("td.problem .blocked-by");
  assert.match(await blocked.textContent(), /blocked by std::testing::NullResource\[agent1,name=broken\] \(failed\)/);
  await shot(page, "failures-resources");

  // The link leads to the failed resource, whose header repeats the error.
  await blocked.locator("a").click();
  await page.waitForURL((u) => u.pathname === "/console/resources/details" && u.searchParams.get("rid") === broken);
  assert.equal((await page.locator("#resource-problem .last-error").textContent()).trim(), error);
  await shot(page, "failures-details");
  assert.deepEqual(errors, [], "browser errors");
});

test("the dashboard lists what needs attention, each a link to the resources concerned", async (t) => {
  const { env } = setup;
  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/dashboard?env=${env.id}`);
  await waitForHydration(page);
  const card = page.locator("#needs-attention");
  const items = (await card.locator("li").allTextContents()).map((s) => s.trim());
  assert.ok(items.includes("1 resource failed"), JSON.stringify(items));
  assert.ok(items.includes("3 resources blocked by a dependency"), JSON.stringify(items));
  await card.locator("a", { hasText: "1 resource failed" }).click();
  await page.waitForURL((u) => u.pathname === "/console/resources" && u.searchParams.get("filter.status") === "failed");
  await page.locator('#resources tr[data-status="failed"]').waitFor();
  assert.equal(await page.locator("#resources tbody tr").count(), 1);
  assert.deepEqual(errors, [], "browser errors");
});

test("/console/ and unknown pages answer console pages; an unknown environment its 404 page", async (t) => {
  const { page, errors } = await openConsole(t);
  const slash = await page.goto(`${BASE}/console/`);
  assert.equal(slash.status(), 200);
  assert.equal(new URL(page.url()).pathname, "/console");
  assert.equal(await page.title(), "Environments · Inmanta");

  const unknownPage = await page.goto(`${BASE}/console/no/such/page/`);
  assert.equal(unknownPage.status(), 404);
  assert.equal(unknownPage.headers()["content-type"].split(";")[0], "text/html");
  await page.getByRole("heading", { name: "Page not found" }).waitFor();
  await waitForHydration(page);

  for (const id of ["00000000-0000-4000-8000-000000000000", "not-a-uuid"]) {
    const response = await page.goto(`${BASE}/console/resources?env=${id}`);
    assert.equal(response.status(), 404, id);
    await page.locator("#environment-not-found").waitFor();
    await waitForHydration(page);
  }
  await shot(page, "environment-not-found");
  // The 404s above are what this test asks for; nothing else failed.
  const expected = (e) =>
    /^HTTP 404: .*\/console\/(no\/such|resources\?env=)/.test(e)
    || /^console\.error: Failed to load resource: .* 404 .*\(http[^ ]*\/console\/(no\/such|resources\?env=)/.test(e);
  assert.deepEqual(errors.filter((e) => !expected(e)), [], "browser errors");
});

test("failed resources come first; the log has one line per event, with its version", async (t) => {
  const { env, broken, version } = setup;
  const { page, errors } = await openConsole(t);
  // Default sort: the failed one first, though "z-broken" is last by name.
  const project = await api("PUT", "/api/v2/project", { name: `sorted-${suffix}` });
  const sorted = await api("PUT", "/api/v2/environment", { name: `sorted-${suffix}`, project_id: project.id });
  await putVersion(sorted.id, (v) => [nullResource(v, "a-fine"), nullResource(v, "m-fine"), nullResource(v, "z-broken", { fail: true })]);
  for (let i = 0; i < 100; i++) {
    const rows = await api("GET", "/api/v2/resource?limit=10", undefined, sorted.id);
    if (rows.length === 3 && rows.every((r) => !["available", "deploying"].includes(r.status))) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  await page.goto(`${BASE}/console/resources?env=${sorted.id}`);
  await waitForHydration(page);
  assert.equal(
    await page.locator("#resources tbody tr").first().getAttribute("data-id"),
    "std::testing::NullResource[agent1,name=z-broken]",
  );

  await page.goto(`${BASE}/console/resources/details?env=${env.id}&rid=${encodeURIComponent(broken)}&tab=logs`);
  await waitForHydration(page);
  const rows = page.locator("#logs tbody tr");
  await rows.first().waitFor({ timeout: 15_000 });
  const lines = await rows.evaluateAll((trs) => trs.map((tr) => ({
    version: tr.dataset.version,
    text: [...tr.querySelectorAll("td")].map((td) => td.textContent.trim()).join(" | "),
  })));
  assert.ok(lines.every((l) => l.version === String(version)), JSON.stringify(lines));
  // Each event once: no two lines alike (same time, version, action, level and message).
  assert.equal(new Set(lines.map((l) => l.text)).size, lines.length, JSON.stringify(lines));
  assert.deepEqual(errors, [], "browser errors");
});
