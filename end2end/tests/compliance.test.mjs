// Compliance of report-only resources in the console: the dashboard counts compliant and
// non-compliant resources and links to those found different, the resources page filters them,
// and a resource's page shows its compliance with what its check found different. On a laptop
// (1 400 px) and a phone (390 px), where nothing may scroll sideways.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { BASE, suffix, start, stop, api, openConsole, waitForHydration, shot, nullResource, putVersion, pageWidth } from "./lib.mjs";

let env;
const drift = "std::testing::NullResource[agent1,name=drift]";

before(async () => {
  await start();
  const project = await api("PUT", "/api/v2/project", { name: `compliance-project-${suffix}` });
  env = await api("PUT", "/api/v2/environment", { name: `compliance-${suffix}`, project_id: project.id });
  await putVersion(env.id, (v) => [
    { ...nullResource(v, "ok"), report_only: true },
    // Asks to be purged but exists: a report-only check finds it different and changes nothing.
    { ...nullResource(v, "drift"), report_only: true, purged: true },
    nullResource(v, "enforced"),
  ]);
  for (let i = 0; i < 100; i++) {
    const rows = await api("GET", "/api/v2/resource?limit=100", undefined, env.id);
    if (rows.length === 3 && rows.every((r) => !["available", "deploying"].includes(r.status))) break;
    await new Promise((r) => setTimeout(r, 200));
  }
});

after(stop);

for (const [name, viewport] of [["laptop", { width: 1400, height: 900 }], ["phone", { width: 390, height: 844 }]]) {
  test(`${name}: the dashboard counts compliance and leads to the resource found different`, async (t) => {
    const { page, errors } = await openConsole(t, viewport);
    await page.goto(`${BASE}/console/dashboard?env=${env.id}`);
    await waitForHydration(page);
    const card = page.locator("#compliance");
    assert.equal(await card.getAttribute("data-total"), "3");
    assert.equal(await card.getAttribute("data-non-compliant"), "1");
    const counts = (await card.locator(".compliance-count").allTextContents()).map((s) => s.trim());
    assert.ok(counts.includes("2 compliant") && counts.includes("1 non-compliant"), JSON.stringify(counts));
    assert.ok((await pageWidth(page)) <= viewport.width, "the dashboard fits the screen");
    await shot(page, `compliance-dashboard-${name}`);

    await card.locator("#non-compliant-link").click();
    await page.waitForURL((u) => u.pathname === "/console/resources" && u.searchParams.get("filter.status") === "non_compliant");
    await page.locator(`#resources tr[data-id="${drift}"]`).waitFor();
    assert.equal(await page.locator("#resources tbody tr").count(), 1);
    assert.ok((await pageWidth(page)) <= viewport.width, "the resources page fits the screen");

    await page.locator(`#resources tr[data-id="${drift}"] a`).first().click();
    await page.waitForURL((u) => u.pathname === "/console/resources/details" && u.searchParams.get("rid") === drift);
    const compliance = page.locator("#resource-compliance");
    await compliance.waitFor();
    assert.equal(await compliance.getAttribute("data-compliance"), "non_compliant");
    const row = compliance.locator('#compliance-diff tr[data-attribute="purged"] td');
    assert.deepEqual((await row.allTextContents()).map((s) => s.trim()), ["purged", "false", "true"]);
    assert.ok((await pageWidth(page)) <= viewport.width, "the details page fits the screen");
    await shot(page, `compliance-details-${name}`);
    assert.deepEqual(errors, [], "browser errors");
  });
}
