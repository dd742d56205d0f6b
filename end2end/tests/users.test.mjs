// Users and tokens in a real browser: an admin adds a user and gives her a role on the users
// page; on the settings page's tokens tab a token is generated, shown once, works against the
// REST API, and is refused (403, as Inmanta) once revoked.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { BASE, USER, PASSWORD, suffix, start, stop, api, login, openConsole, waitForHydration, shot, answer, toast } from "./lib.mjs";

let env;
const newUser = `alice-${suffix}`;

before(async () => {
  await start();
  const project = await api("PUT", "/api/v2/project", { name: `users-${suffix}` });
  env = await api("PUT", "/api/v2/environment", { name: `users-env-${suffix}`, project_id: project.id });
});

after(stop);

/** A REST call with an environment token; returns the HTTP status. */
async function withToken(token) {
  const response = await fetch(`${BASE}/api/v2/resource`, {
    headers: { authorization: `Bearer ${token}`, "x-inmanta-tid": env.id },
  });
  await response.text();
  return response.status;
}

test("an admin adds a user and gives her a role on the users page", async (t) => {
  const { page, errors } = await openConsole(t);
  await page.goto(`${BASE}/console/users?env=${env.id}`);
  await waitForHydration(page);
  await page.locator(`#users tr[data-user="${USER}"]`).waitFor();
  assert.equal(await page.locator('.sidebar a[aria-current="page"]').textContent(), "Users");

  // The policy's message when the password is too weak.
  await page.fill("#new-username", newUser);
  await page.fill("#new-password", "weak");
  await page.press("#new-password", "Enter");
  await page.locator("#add-user .action-error", { hasText: "12 to 128 characters" }).waitFor();

  await page.fill("#new-password", "Alice-password-123");
  await page.click('#add-user button[type="submit"]');
  await page.locator(`#users tr[data-user="${newUser}"]`).waitFor();
  await page.locator("#add-user .action-notice", { hasText: `User ${newUser} added.` }).waitFor();
  assert.equal(await page.inputValue("#new-username"), "", "the form is cleared");

  await page.selectOption("#assign-user", newUser);
  await page.selectOption("#assign-env", env.id);
  await page.selectOption("#assign-role-name", "noc");
  await page.click('#assign-role button[type="submit"]');
  const chip = page.locator(`#users tr[data-user="${newUser}"] li[data-env="${env.id}"][data-role="noc"]`);
  await chip.waitFor();
  assert.match(await chip.textContent(), new RegExp(`users-env-${suffix}`), "the role shows the environment's name");
  const assigned = await api("GET", `/api/v2/role_assignment/${newUser}`);
  assert.deepEqual(assigned.assignments?.[env.id] ?? assigned[env.id], ["noc"], JSON.stringify(assigned));
  await shot(page, "users");

  // Unassign and delete again, both confirmed in a dialog.
  await chip.locator("button").click();
  await answer(page);
  await chip.waitFor({ state: "detached" });
  await page.click(`#users tr[data-user="${newUser}"] button[data-action="delete"]`);
  assert.match(await answer(page), /Delete user/);
  await toast(page, `User ${newUser} deleted`);
  await page.locator(`#users tr[data-user="${newUser}"]`).waitFor({ state: "detached" });
  const users = await api("GET", "/api/v2/user");
  assert.ok(!users.some((u) => u.username === newUser), "deleted");

  // The refused password is the one failed request.
  const unexpected = errors.filter((e) => !e.includes("/console/fn/add_user"));
  assert.deepEqual(unexpected, [], "browser errors");
});

test("a token generated on the settings page works until it is revoked", async (t) => {
  const { page, errors } = await openConsole(t);
  await page.context().grantPermissions(["clipboard-read", "clipboard-write"], { origin: BASE });
  await page.goto(`${BASE}/console/settings?env=${env.id}&tab=tokens`);
  await waitForHydration(page);
  await page.locator("#no-tokens").waitFor();
  assert.equal(await page.getAttribute("#tab-tokens", "aria-selected"), "true");

  await page.check("#client-api");
  assert.ok(await page.isChecked("#client-agent"), "agent is ticked by default");
  assert.equal(await page.inputValue("#token-expiry"), "7 days");
  await page.click("#generate-token-button");
  await page.locator("#new-token").waitFor();
  const token = await page.inputValue("#new-token");
  assert.ok(token.split(".").length === 3, `a JWT: ${token}`);
  assert.match(await page.textContent(".token-once"), /will not be shown again/);
  await page.click("#copy-token");
  await page.locator("#copy-token", { hasText: "Copied" }).waitFor();

  assert.equal(await withToken(token), 200, "the new token is accepted");
  const row = page.locator('#tokens tr[data-revoked="false"]');
  await row.waitFor();
  const cells = await row.locator("td").allTextContents();
  assert.equal(cells[0], "api, agent");
  assert.equal(cells[1], USER, "created by the signed-in user");
  await shot(page, "tokens");

  // Shown once: a reload lists the token without its text.
  await page.reload();
  await waitForHydration(page);
  await page.locator('#tokens tr[data-revoked="false"]').waitFor();
  assert.ok(!(await page.content()).includes(token), "the token is not shown again");

  await page.click('#tokens tr[data-revoked="false"] button[data-action="revoke"]');
  await answer(page);
  await page.locator('#tokens tr[data-revoked="true"]').waitFor();
  assert.equal(await withToken(token), 403, "a revoked token is refused");

  assert.deepEqual(errors, [], "browser errors");
});

test("the users page lists every registered token, logins included, and revokes one", async (t) => {
  const { page, errors } = await openConsole(t);
  // A login token of the admin's, made through the API as the CLI does.
  const loginToken = await login(USER, PASSWORD);
  const jti = JSON.parse(Buffer.from(loginToken.split(".")[1], "base64url").toString()).jti;
  assert.ok(jti, "a login token carries a jti");
  assert.equal((await fetch(`${BASE}/api/v2/project`, { headers: { authorization: `Bearer ${loginToken}` } })).status, 200);

  await page.goto(`${BASE}/console/users`);
  await waitForHydration(page);
  const row = page.locator(`#registered-tokens tr[data-jti="${jti}"]`);
  await row.waitFor();
  assert.equal(await row.getAttribute("data-kind"), "login");
  assert.equal((await row.locator(".created-by").textContent()).trim(), USER, "the creator");
  assert.doesNotMatch(await row.locator(".expires").textContent(), /never/, "a login token expires");
  await shot(page, "registered-tokens");

  await row.locator('button[data-action="revoke"]').click();
  assert.match(await answer(page), /Revoke the login token of/);
  await page.locator(`#registered-tokens tr[data-jti="${jti}"][data-revoked="true"]`).waitFor();
  const refused = await fetch(`${BASE}/api/v2/project`, { headers: { authorization: `Bearer ${loginToken}` } });
  assert.equal(refused.status, 403, "a revoked login token is refused");
  assert.match((await refused.json()).message, /revoked/);
  assert.deepEqual(errors, [], "browser errors");
});
