// The operator's day end to end, as one story in the browser: log in, create a project and an
// environment pointed at a real git repository, recompile and watch the compile report succeed,
// promote the version it produced, watch the resources deploy live, read the logs of the one
// that fails, run a dry run and read it, pause and unpause its agent, switch environments, see
// the projects, log out. The compile is the server's own (git clone + `inmanta export` in a child process).
// The same day runs on a laptop and on a phone (390 px wide): there every page fits the screen
// and the pages are reached through the menu button.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BASE, suffix, start, stop, api, openConsole, waitForHydration, shot, answer, toast, pageWidth } from "./lib.mjs";

before(start);
after(stop);

/** A bare repository with one commit of a project of NullResources (one of them fails). */
function repository() {
  const root = mkdtempSync(join(tmpdir(), "e2e-day-"));
  const git = (cwd, ...args) =>
    execFileSync("git", ["-c", "user.name=e2e", "-c", "user.email=e2e@example.com", "-c", "init.defaultBranch=main", ...args], { cwd });
  const bare = join(root, "infra.git");
  execFileSync("git", ["init", "--bare", "--quiet", bare]);
  const work = join(root, "work");
  execFileSync("git", ["init", "--quiet", "-b", "main", work]);
  writeFileSync(join(work, "project.yml"), "name: day\nmodulepath: libs\ndownloadpath: libs\n");
  writeFileSync(join(work, "main.cf"), `import std::testing

web = std::testing::NullResource(name="web", agentname="day-agent")
db = std::testing::NullResource(name="db", agentname="day-agent", requires=web)
cache = std::testing::NullResource(name="cache", agentname="day-agent", fail=true)
`);
  git(work, "add", "--all");
  git(work, "commit", "--quiet", "-m", "first model");
  git(work, "push", "--quiet", `file://${bare}`, "main");
  return `file://${bare}`;
}

const PHONE = { width: 390, height: 844 };

test("an operator's day from a git repository", (t) => day(t, "laptop"));

test("an operator's day on a 390 px phone", (t) => day(t, "phone", PHONE));

async function day(t, device, viewport) {
  const repo = repository();
  const name = `day-${device}-${suffix}`;
  const other = await api("PUT", "/api/v2/environment", {
    name: `day-other-${device}-${suffix}`,
    project_id: (await api("PUT", "/api/v2/project", { name: `day-other-${device}-${suffix}` })).id,
  });
  // Signed in through the login page.
  const { page, errors } = await openConsole(t, viewport);
  const phone = viewport !== undefined;
  const shotName = (n) => (phone ? `${n}-phone` : n);
  // On the phone, nothing is wider than the screen.
  const fits = async (where) => {
    if (phone) assert.ok((await pageWidth(page)) <= PHONE.width, `${where} is ${await pageWidth(page)} px wide`);
  };

  // A new project and environment, pointed at the repository.
  await page.goto(`${BASE}/console/environment/create`);
  await waitForHydration(page);
  await fits("create environment");
  await page.fill("#new-project", name);
  await page.fill("#env-name", name);
  await page.fill("#env-repo", repo);
  await page.fill("#env-branch", "main");
  await page.click('#create-environment button[type="submit"]');
  await page.waitForURL(/\/console\/dashboard\?env=/);
  const env = new URL(page.url()).searchParams.get("env");
  // Versions wait for a promote.
  await api("POST", "/api/v2/environment_settings/auto_deploy", { value: false }, env);

  // Recompile and watch the report succeed without reloading; on the phone the compile reports
  // are reached through the menu.
  if (phone) {
    await waitForHydration(page);
    await fits("dashboard");
    await page.click("#menu-toggle");
    await page.locator("#sidebar a", { hasText: "Compile Reports" }).click();
    await page.waitForURL(/\/console\/compilereports/);
  } else {
    await page.goto(`${BASE}/console/compilereports?env=${env}`);
  }
  await waitForHydration(page);
  await fits("compile reports");
  await page.click("#recompile-menu");
  await page.click("#recompile");
  const done = page.locator('#compile-reports tr[data-status="success"]');
  await done.waitFor({ timeout: 60_000 });
  await done.locator("a", { hasText: "Show details" }).click();
  await page.locator("#compile-stages").waitFor();
  assert.equal(await page.locator("#compile-stages details.stage[open]").count(), 0, "no failed stage to open");
  await fits("compile details");
  await shot(page, shotName("day-compile-details"));

  // Promote the version it produced from the Desired State page, then watch the resources.
  await page.goto(`${BASE}/console/desiredstate?env=${env}`);
  await waitForHydration(page);
  await fits("desired state");
  await page.click('#versions tr[data-version="1"] button.promote');
  await answer(page);
  assert.ok(await toast(page, "Version 1 promoted"));
  await page.locator('#versions tr[data-version="1"] [data-status="active"]').waitFor({ timeout: 15_000 });
  await page.goto(`${BASE}/console/resources?env=${env}`);
  await waitForHydration(page);
  await page.locator('#resources tr[data-status="deployed"]').nth(1).waitFor({ timeout: 30_000 });
  const failed = page.locator('#resources tr[data-status="failed"]');
  await failed.waitFor({ timeout: 30_000 });
  await fits("resources");
  await shot(page, shotName("day-resources"));

  // The failed one's logs.
  await failed.locator("a").click();
  await page.waitForURL(/\/console\/resources\/details/);
  assert.match(await page.textContent("#resource-id"), /name=cache/);
  await page.click("#tab-logs");
  await page.locator('#logs tbody tr[data-level="ERROR"]').first().waitFor({ timeout: 15_000 });
  await fits("resource logs");

  // A dry run of the active version: nothing would change for the deployed ones.
  await page.goto(`${BASE}/console/desiredstate/1/compliancecheck?env=${env}`);
  await waitForHydration(page);
  await page.click("#dry-run");
  await page.waitForURL(/report=[0-9a-f-]{36}/);
  // The report fills in live, one resource at a time.
  await page.locator("#compare-summary", { hasText: "3 resources reported" }).waitFor({ timeout: 30_000 });
  await page.locator("#dry-run-progress").waitFor({ state: "detached", timeout: 30_000 });
  await fits("compliance check");
  await shot(page, shotName("day-compliance"));

  // Pause and unpause the agent.
  await page.goto(`${BASE}/console/agents?env=${env}`);
  await waitForHydration(page);
  const agent = page.locator('#agents tr[data-agent="day-agent"]');
  await agent.locator("button.pause-toggle").click();
  await page.locator('#agents tr[data-agent="day-agent"][data-status="paused"]').waitFor({ timeout: 10_000 });
  await page.locator('#agents tr[data-agent="day-agent"] button.pause-toggle').click();
  await page.locator('#agents tr[data-agent="day-agent"]:not([data-status="paused"])').waitFor({ timeout: 10_000 });
  await fits("agents");

  // Switch to the other environment, then log out.
  await page.click("#env-switcher");
  await page.fill("#env-search", other.name);
  await page.locator(".switcher-list a[data-env]", { hasText: other.name }).click();
  await page.waitForURL(new RegExp(`env=${other.id}`));
  // Projects are managed from the switcher too.
  await waitForHydration(page);
  await page.click("#env-switcher");
  await page.click("#manage-projects");
  await page.waitForURL(/\/console\/projects/);
  await page.locator(`#projects tr[data-name="${name}"]`).waitFor();
  await fits("projects");
  await shot(page, shotName("projects"));
  assert.deepEqual(errors, [], "browser errors");
  await Promise.all([page.waitForURL(/\/console\/login/), page.click("#logout")]);
}
