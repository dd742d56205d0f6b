// Every console page, checked by axe-core (WCAG 2 A and AA, contrast included) in the light and
// the dark theme: no serious or critical violation. At 390 px wide (a phone) every page fits the
// screen (wide tables scroll inside their own area), the menu button opens the navigation, and
// the skip link is the first thing the keyboard reaches.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { BASE, start, stop, openConsole, newContext, waitForHydration, shot, failingEnvironment, signIn } from "./lib.mjs";

const AXE = createRequire(import.meta.url).resolve("axe-core/axe.min.js");
let setup;

before(async () => {
  await start();
  setup = await failingEnvironment("a11y", 2);
});

after(stop);

function pages() {
  const { env, broken } = setup;
  const e = `env=${env.id}`;
  return [
    "/console", "/console/projects", "/console/environment/create", `/console/dashboard?${e}`,
    `/console/compilereports?${e}`, `/console/desiredstate?${e}`, `/console/desiredstate/version?${e}&v=${setup.version}`,
    `/console/desiredstate/compare?${e}&from=${setup.version}&to=${setup.version}`,
    `/console/desiredstate/${setup.version}/compliancecheck?${e}`,
    `/console/resources/graph?${e}&view=failures`,
    `/console/resources/graph?${e}&around=${encodeURIComponent(broken)}&hops=1`,
    "/console/no/such/page",
    `/console/resources?${e}`, `/console/resources/details?${e}&rid=${encodeURIComponent(broken)}`,
    `/console/resources/details?${e}&rid=${encodeURIComponent(broken)}&tab=logs`, `/console/resources/graph?${e}`,
    `/console/discovered?${e}`, `/console/agents?${e}`, `/console/parameters?${e}`, `/console/facts?${e}`, `/console/notificationcenter?${e}`,
    `/console/settings?${e}`, `/console/status?${e}`, `/console/users?${e}`,
  ];
}

async function axe(page) {
  await page.addScriptTag({ path: AXE });
  return page.evaluate(async () => {
    const result = await window.axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21aa"] } });
    return result.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`);
  });
}

test("axe-core finds no serious or critical violation on any page, light and dark", async (t) => {
  const { page } = await openConsole(t);
  const found = [];
  for (const scheme of ["light", "dark"]) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const path of pages()) {
      await page.goto(`${BASE}${path}`);
      await waitForHydration(page);
      for (const v of await axe(page)) found.push(`${scheme} ${path}: ${v}`);
    }
  }
  // The login page too.
  const context = await newContext();
  t.after(() => context.close());
  const login = await context.newPage();
  await login.goto(`${BASE}/console/login`);
  for (const v of await axe(login)) found.push(`login: ${v}`);
  assert.deepEqual(found, []);
});

test("at 390 px every page fits the screen and the menu opens the navigation", async (t) => {
  const context = await newContext({ width: 390, height: 844 });
  t.after(() => context.close());
  const phone = await context.newPage();
  await signIn(phone);
  for (const path of pages()) {
    await phone.goto(`${BASE}${path}`);
    await waitForHydration(phone);
    const width = await phone.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(width <= 390, `${path} is ${width} px wide`);
  }
  const { env } = setup;
  await phone.goto(`${BASE}/console/dashboard?env=${env.id}`);
  await waitForHydration(phone);
  assert.equal(await phone.locator("#sidebar").isVisible(), false);
  await phone.click("#menu-toggle");
  await phone.locator("#sidebar").waitFor({ state: "visible" });
  await shot(phone, "phone-menu");
  await phone.locator("#sidebar a", { hasText: /^\s*Resources\s*$/ }).click();
  await phone.waitForURL((u) => u.pathname === "/console/resources");
  assert.equal(await phone.locator("#sidebar").isVisible(), false, "the menu closes after choosing a page");
  // The table scrolls inside its own area, the page does not (once the page's data arrived).
  await phone.locator("#resources").waitFor();
  const table = await phone.evaluate(() => {
    const t = document.querySelector("#resources");
    return { scroll: t.scrollWidth, client: t.clientWidth, page: document.documentElement.scrollWidth };
  });
  assert.ok(table.page <= 390, JSON.stringify(table));
  await shot(phone, "phone-resources");
});

test("the skip link is the first stop of the keyboard and moves to the content", async (t) => {
  const { page } = await openConsole(t);
  await page.goto(`${BASE}/console/dashboard?env=${setup.env.id}`);
  await waitForHydration(page);
  await page.keyboard.press("Tab");
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), "Skip to content");
  assert.ok(await page.locator(".skip-link").isVisible());
  await page.keyboard.press("Enter");
  assert.match(page.url(), /#main$/);
});
