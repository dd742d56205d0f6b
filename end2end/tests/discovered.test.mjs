// Discovered resources and the dashboard's metrics charts in a real browser, at 1 400 and 390 px:
// an agent (with an agent token) reports what a discovery handler found; the console lists the
// rows with paging, filters them, links the discovering and the managed resource, and deletes
// one. The dashboard charts the metrics the server records once a minute (the test waits for a
// recorded minute, at most about 70 s).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import {
  BASE, suffix, start, stop, api, openConsole, waitForHydration, shot, answer, toast, pageWidth, putVersion, nullResource,
} from "./lib.mjs";

const WIDE = { width: 1400, height: 900 };
const PHONE = { width: 390, height: 844 };
const MANAGED = "std::testing::NullResource[agent1,name=n1]";
const DISCOVERY = "std::testing::NullResource[agent1,name=n0]";
const SCAN = "e2e::Scan[agent2,name=scan]";
const HOSTS = Array.from({ length: 24 }, (_, i) => `e2e::Host[agent2,name=h${String(i + 1).padStart(2, "0")}]`);

let env;

before(async () => {
  await start();
  const project = await api("PUT", "/api/v2/project", { name: `disc-${suffix}` });
  env = (await api("PUT", "/api/v2/environment", { name: `disc-${suffix}`, project_id: project.id })).id;
  // A released version manages n0 (the discovery resource) and n1 (also discovered).
  await putVersion(env, (v) => [nullResource(v, "n0"), nullResource(v, "n1")]);
  // What an agent does: report with an agent token of the environment.
  const agent = await api("POST", "/api/v2/environment_auth", { client_types: ["agent"] }, env);
  const found = (id, by, values) => ({ discovered_resource_id: id, discovery_resource_id: by, values });
  await api("POST", "/api/v2/discovered", {
    discovered_resources: [
      found(MANAGED, DISCOVERY, { name: "n1", value: "" }),
      ...HOSTS.map((id, i) => found(id, SCAN, { name: `h${i + 1}`, ports: [22, 80 + i] })),
    ],
  }, env, agent);
});

after(stop);

/** The ids of the listed rows. */
async function listed(page) {
  return page.locator("#discovered tr[data-id]").evaluateAll((rows) => rows.map((r) => r.dataset.id));
}

for (const [name, viewport] of [["wide", WIDE], ["phone", PHONE]]) {
  test(`discovered resources at ${viewport.width} px: list, page, filter, links, delete`, async (t) => {
    const { page, errors } = await openConsole(t, viewport);
    await page.goto(`${BASE}/console/dashboard?env=${env}`);
    await waitForHydration(page);
    // Reachable from the environment's navigation (behind the menu button on a phone).
    if (viewport === PHONE) await page.click(".menu-button");
    await page.locator(".sidebar a", { hasText: "Discovered Resources" }).click();
    await page.waitForURL((url) => url.pathname === "/console/discovered");
    await page.locator("#discovered").waitFor();
    await waitForHydration(page);

    // 25 rows (the earlier run of this test deleted one), 20 to a page.
    const total = name === "wide" ? 25 : 24;
    assert.equal((await listed(page)).length, 20);
    assert.match(await page.textContent(".pager-count"), new RegExp(`1–20 of ${total}`));
    await page.click('.pager a[rel="next"]');
    await page.locator(".pager-count", { hasText: `21–${total} of ${total}` }).waitFor();
    assert.equal((await listed(page)).length, total - 20);
    if (viewport === PHONE) {
      assert.ok((await pageWidth(page)) <= PHONE.width, `the page is ${await pageWidth(page)} px wide`);
    }
    await shot(page, `discovered-${name}`);

    // Filter on the type: the one managed row, which links to its resource and to the resource
    // that discovered it.
    await page.fill("#filter-resource_type", "NullResource");
    await page.press("#filter-resource_type", "Enter");
    await page.waitForURL((url) => url.searchParams.get("filter.resource_type") === "NullResource");
    // The unfiltered second page holds the managed row too: wait for the filtered count.
    await page.locator(".pager-count", { hasText: /^1–1 of 1$/ }).waitFor();
    assert.deepEqual(await listed(page), [MANAGED]);
    const row = page.locator(`#discovered tr[data-id="${MANAGED}"]`);
    assert.equal(await row.getAttribute("data-managed"), "true");
    assert.equal((await row.locator(".discovery-link").textContent()).trim(), DISCOVERY);
    await row.locator(".discovery-link").click();
    await page.waitForURL((url) => url.pathname === "/console/resources/details");
    await page.locator("#resource-id", { hasText: DISCOVERY }).waitFor();
    await page.goBack();
    await page.locator(`#discovered tr[data-id="${MANAGED}"] .managed-link`).click();
    await page.locator("#resource-id", { hasText: MANAGED }).waitFor();

    // The managed filter, then the values of a host and its unlinked discovery resource.
    await page.goto(`${BASE}/console/discovered?env=${env}&filter.managed=false&filter.resource_id_value=h0`);
    await waitForHydration(page);
    const hosts = await listed(page);
    assert.ok(hosts.length >= 8 && hosts.every((id) => id.startsWith("e2e::Host[agent2,name=h0")), hosts.join());
    const first = page.locator("#discovered tr[data-id]").first();
    assert.equal((await first.locator(".discovery-id").textContent()).trim(), SCAN);
    await first.locator(".discovered-values summary").click();
    assert.match(await first.locator(".discovered-values").textContent(), /ports/);

    // Delete one: asked first, then gone from the list and from the API.
    const victim = name === "wide" ? HOSTS[0] : HOSTS[1];
    await page.locator(`#discovered tr[data-id="${victim}"] .delete-discovered`).click();
    assert.match(await answer(page), /Forget the discovered resource/);
    assert.ok(await toast(page, "deleted"));
    await page.locator(`#discovered tr[data-id="${victim}"]`).waitFor({ state: "detached" });
    const left = await api("GET", `/api/v2/discovered?limit=1000`, undefined, env);
    assert.ok(!left.some((d) => d.discovered_resource_id === victim), "deleted through the API too");
    assert.deepEqual(errors, []);
  });
}

for (const [name, viewport] of [["wide", WIDE], ["phone", PHONE]]) {
  test(`the dashboard charts the recorded metrics at ${viewport.width} px`, async (t) => {
    const { page, errors } = await openConsole(t, viewport);
    const chart = page.locator('figure[data-metric="resource.resource_count"]');
    // The server records a minute once it is over: reload until the first one shows.
    const deadline = Date.now() + 75_000;
    for (;;) {
      await page.goto(`${BASE}/console/dashboard?env=${env}`);
      await waitForHydration(page);
      await page.locator("#metrics .metric-charts, #metrics-empty").first().waitFor();
      if ((await chart.count()) > 0 && Number(await chart.getAttribute("data-recorded")) > 0) break;
      assert.ok(Date.now() < deadline, "no metrics recorded within 75 s");
      await page.waitForTimeout(5_000);
    }
    // Two managed resources, one line per state they were in; agents too; no compile ran.
    const states = await chart.locator("path.series").evaluateAll((p) => p.map((e) => e.dataset.category));
    assert.ok(states.length >= 1, states.join());
    assert.match(await chart.locator(".legend").textContent(), /\b2\b|\b1\b/);
    assert.ok((await page.locator('figure[data-metric="resource.agent_count"] path.series').count()) >= 1);
    for (const metric of ["orchestrator.compile_time", "orchestrator.compile_waiting_time", "orchestrator.compile_rate"]) {
      const empty = page.locator(`figure[data-metric="${metric}"] .metric-empty`);
      assert.match(await empty.textContent(), /Nothing recorded in the last hour/);
    }
    const box = await chart.locator("svg").boundingBox();
    assert.ok(box.width > 100 && box.height > 40, JSON.stringify(box));
    if (viewport === PHONE) {
      assert.ok(box.x + box.width <= PHONE.width, JSON.stringify(box));
      assert.ok((await pageWidth(page)) <= PHONE.width, `the dashboard is ${await pageWidth(page)} px wide`);
    }

    // Another span: the same charts over the week.
    await page.click('#metrics a[data-span="week"]');
    await page.waitForURL((url) => url.searchParams.get("metrics") === "week");
    await page.locator('#metrics .metric-charts[data-span="week"]').waitFor();
    assert.equal(await page.getAttribute('#metrics a[data-span="week"]', "aria-current"), "true");
    await shot(page, `metrics-${name}`);
    assert.deepEqual(errors, []);
  });
}
