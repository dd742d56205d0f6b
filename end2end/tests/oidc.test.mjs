// Single sign-on through a real OpenID provider (npm `oidc-provider`, started here with a
// client for the console, users whose ID tokens carry a roles claim, and an RSA key): in a real
// browser a user logs in through it, lands in the console with the roles the claim gives, is
// refused where they do not reach, and logs out (our session and the provider's end). Tokens
// signed by the provider's key work on the API and the `inmanta` CLI, every wrong variant is
// refused with its reason, and a rotated key is picked up without a restart. The local login
// form is the break-glass: refused while `[web-ui] oidc_local_fallback` is off, working when on.
//
// Starts its own server from INMANTA_BINARY (default: the release build in $CARGO_TARGET_DIR,
// else the debug build) with E2E_CONSOLE_SITE as --console-path when set; INMANTA_URL is unused.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { createServer } from "node:net";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { startProvider, sign, newKey } from "../oidc/provider.mjs";
import { start, stop, api, newContext, watchErrors, waitForHydration, shot, suffix } from "./lib.mjs";

const target = process.env.CARGO_TARGET_DIR ?? join(homedir(), ".cache", "inmanta", "target");
const BINARY = process.env.INMANTA_BINARY
  ?? [join(target, "release", "inmanta"), join(target, "debug", "inmanta")].find(existsSync);
const ADMIN = "breakglass";
const PASSWORD = `Oidc-test-${Date.now()}-x`;
const users = {};

let dir;
let port;
let base;
let idp;
let server;
let visible;
let hidden;

async function freePort() {
  const probe = createServer();
  await new Promise((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

function config(localFallback) {
  return `[server]
auth_method = oidc

[web-ui]
oidc_local_fallback = ${localFallback}

[oidc_test]
issuer = ${idp.issuer}
client_id = inmanta
client_secret = inmanta-test-secret
display_name = Test IdP
roles_claim = inmanta_roles

[auth_jwt_idp]
algorithm = RS256
issuer = ${idp.issuer}
audience = inmanta
jwks_uri = ${idp.issuer}/jwks
client_types = api
jwt_username_claim = preferred_username
roles_claim = inmanta_roles
`;
}

async function startServer(localFallback) {
  const file = join(dir, "inmanta.cfg");
  writeFileSync(file, config(localFallback));
  const args = ["-c", file, "server", "--bind-port", String(port), "--state-dir", join(dir, "state")];
  if (process.env.E2E_CONSOLE_SITE) args.push("--console-path", process.env.E2E_CONSOLE_SITE);
  server = spawn(BINARY, args, { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  server.stderr.on("data", (d) => { stderr += d; });
  await new Promise((resolve, reject) => {
    let out = "";
    server.stdout.on("data", (d) => {
      out += d;
      if (/listening on http/.test(out)) resolve();
    });
    server.on("exit", (code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
  });
}

async function stopServer() {
  if (!server || server.exitCode !== null) return;
  const exited = new Promise((resolve) => server.once("exit", resolve));
  server.kill("SIGTERM");
  await exited;
}

before(async () => {
  assert.ok(BINARY && existsSync(BINARY), `no inmanta binary (set INMANTA_BINARY): ${BINARY}`);
  dir = mkdtempSync(join(tmpdir(), "inmanta-oidc-"));
  port = await freePort();
  base = `http://127.0.0.1:${port}`;
  idp = await startProvider({
    redirectUris: [`${base}/console/oidc/callback`],
    postLogoutRedirectUris: [`${base}/console/login`],
    users,
  });
  execFileSync(BINARY, ["user", "create", ADMIN, "--admin", "--direct"], {
    env: { ...process.env, INMANTA_CONFIG_STATE_DIR: join(dir, "state"), INMANTA_PASSWORD: PASSWORD }, stdio: "pipe",
  });
  await startServer(false);
  // The API's login keeps taking local users, as Inmanta's does: the test's admin calls.
  await start({ base, user: ADMIN, password: PASSWORD });
  const project = await api("PUT", "/api/v2/project", { name: `oidc-${suffix}` });
  visible = await api("PUT", "/api/v2/environment", { name: `oidc-visible-${suffix}`, project_id: project.id });
  hidden = await api("PUT", "/api/v2/environment", { name: `oidc-hidden-${suffix}`, project_id: project.id });
  users.ann = { inmanta_roles: { [visible.id]: ["read-only"] } };
  users.bob = { "urn:inmanta:is_admin": true };
});

after(async () => {
  await stop();
  await stopServer();
  await idp?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Logs in on the provider's own page (any password does) and waits to be back in the console. */
async function loginAtProvider(page, login) {
  await page.locator('input[name="login"]').waitFor();
  assert.ok(page.url().startsWith(idp.issuer), `at the provider: ${page.url()}`);
  await page.fill('input[name="login"]', login);
  await page.fill('input[name="password"]', "anything");
  await Promise.all([
    page.waitForURL((u) => u.origin === base && u.pathname.startsWith("/console") && !u.pathname.startsWith("/console/oidc") && !u.pathname.startsWith("/console/login")),
    page.click('button[type="submit"]'),
  ]);
  await waitForHydration(page);
}

/** A REST call with a bearer token: `{ status, body }`. */
async function call(path, token) {
  const headers = token === undefined ? {} : { authorization: `Bearer ${token}` };
  const response = await fetch(`${base}${path}`, { headers });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

test("the login page offers the provider, and no local form while break-glass is off", async (t) => {
  const context = await newContext();
  t.after(() => context.close());
  const page = await context.newPage();
  await page.goto(`${base}/console/login`);
  assert.equal((await page.textContent('a[data-provider="test"]')).trim(), "Log in with Test IdP");
  assert.equal(await page.locator("#password").count(), 0, "no local form");
  await shot(page, "login-oidc-only");
  // Posting the form anyway is refused.
  const form = new URLSearchParams({ username: ADMIN, password: PASSWORD });
  const response = await fetch(`${base}/console/login`, { method: "POST", body: form, redirect: "manual" });
  assert.equal(response.status, 403);
  assert.match(await response.text(), /Local login is disabled/);
});

test("a user of the provider lands with the claim's roles, is refused elsewhere, and logs out", async (t) => {
  const context = await newContext();
  t.after(() => context.close());
  const page = await context.newPage();
  // Back to the page asked for, after the provider's login.
  await page.goto(`${base}/console/agents?env=${visible.id}`);
  assert.equal(new URL(page.url()).pathname, "/console/login");
  await page.click('a[data-provider="test"]');
  await loginAtProvider(page, "ann");
  assert.equal(new URL(page.url()).pathname, "/console/agents");
  const errors = watchErrors(page);
  assert.equal((await page.textContent("#current-user")).trim(), "ann");

  // The user was created at the first login, as a user of the provider.
  const listed = (await api("GET", "/api/v2/user")).find((u) => u.username === "ann");
  assert.equal(listed?.auth_method, "oidc", JSON.stringify(listed));

  await page.goto(`${base}/console`);
  await waitForHydration(page);
  await page.locator(`#environments tr[data-id="${visible.id}"]`).waitFor({ timeout: 10_000 });
  assert.equal(await page.locator(`#environments tr[data-id="${hidden.id}"]`).count(), 0, "no role there, not listed");
  await shot(page, "environments-oidc-user");

  // Where the claim gives no role: refused (the same page as an environment that does not exist).
  await page.goto(`${base}/console/resources?env=${hidden.id}`);
  await waitForHydration(page);
  assert.match(await page.textContent("main"), /Environment not found/);
  // read-only reaches no tokens.
  await page.goto(`${base}/console/settings?env=${visible.id}&tab=tokens`);
  await waitForHydration(page);
  await page.locator("main", { hasText: "Tokens are for environment expert admins" }).waitFor();
  const unexpected = errors.filter((e) => !e.includes(hidden.id) && !e.includes("/console/fn/"));
  assert.deepEqual(unexpected, [], "browser errors");

  // Logging out ends our session, then the provider's (its end-session page asks to confirm).
  await page.click("#logout");
  await page.waitForURL((u) => u.origin === idp.issuer);
  await Promise.all([page.waitForURL(`${base}/console/login`), page.click('button[value="yes"]')]);
  await page.goto(`${base}/console`);
  assert.equal(new URL(page.url()).pathname, "/console/login", "our session ended");
  // The provider asks for the login again: its session ended too.
  await page.click('a[data-provider="test"]');
  await page.locator('input[name="login"]').waitFor();
});

test("the provider's admin claim makes a global admin who sees every environment", async (t) => {
  const context = await newContext();
  t.after(() => context.close());
  const page = await context.newPage();
  await page.goto(`${base}/console/login`);
  await page.click('a[data-provider="test"]');
  await loginAtProvider(page, "bob");
  await page.goto(`${base}/console`);
  await waitForHydration(page);
  await page.locator(`#environments tr[data-id="${hidden.id}"]`).waitFor({ timeout: 10_000 });
  await page.locator(`#environments tr[data-id="${visible.id}"]`).waitFor();
});

test("tokens signed by the provider's key work on the API and the CLI; wrong ones are refused with their reason", async () => {
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    iss: idp.issuer, aud: "inmanta", sub: "ann", preferred_username: "ann",
    inmanta_roles: { [visible.id]: ["read-only"] }, iat: now, exp: now + 300,
  };
  const key = idp.keys[0];
  const header = { alg: "RS256", typ: "JWT", kid: key.kid };
  const good = sign(header, claims, key);

  const ok = await call("/api/v2/environment", good);
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  const ids = ok.body.data.map((e) => e.id);
  assert.ok(ids.includes(visible.id) && !ids.includes(hidden.id), `only the claim's environment: ${ids}`);

  const cli = execFileSync(BINARY, ["environment", "list", "--json", "--host", "127.0.0.1", "--port", String(port), "--token", good], { encoding: "utf8" });
  assert.ok(cli.includes(visible.id) && !cli.includes(hidden.id), cli);

  const stranger = newKey(key.kid);
  // HS256 with the RSA key's public modulus as the secret: the classic confusion attack.
  const hs256 = sign({ ...header, alg: "HS256" }, claims, key.n);
  const refusals = [
    ["another issuer", sign(header, { ...claims, iss: "https://elsewhere.example.com" }, key), "Unknown issuer for token"],
    ["another audience", sign(header, { ...claims, aud: "someone-else" }, key), "Invalid audience"],
    ["alg none", sign({ alg: "none", typ: "JWT", kid: key.kid }, claims), "Algorithm none is not supported."],
    ["alg HS256", hs256, "Algorithm HS256 is not supported."],
    ["an unknown kid", sign({ ...header, kid: "nobody-knows" }, claims, key), "The kid provided in the token does not match a known key."],
    ["expired", sign(header, { ...claims, iat: now - 900, exp: now - 600 }, key), "Signature has expired"],
    ["signed by another key", sign(header, claims, stranger), "Signature verification failed"],
  ];
  for (const [what, token, reason] of refusals) {
    const refused = await call("/api/v2/environment", token);
    assert.equal(refused.status, 403, `${what}: ${JSON.stringify(refused.body)}`);
    assert.equal(refused.body.message, `Access denied: ${reason}`, what);
  }
  assert.equal((await call("/api/v2/environment")).status, 401, "no token at all");

  // The provider rotates its key: tokens of the new one are accepted without a restart, once
  // the refetch limit (5 s since the last fetch, which the unknown kid above caused) allows.
  const rotated = idp.rotate();
  await new Promise((resolve) => setTimeout(resolve, 5_500));
  const fresh = await call("/api/v2/environment", sign({ ...header, kid: rotated.kid }, claims, rotated));
  assert.equal(fresh.status, 200, JSON.stringify(fresh.body));
});

test("break-glass: the local form works only when oidc_local_fallback is on", async (t) => {
  await stopServer();
  await startServer(true);
  const context = await newContext();
  t.after(() => context.close());
  const page = await context.newPage();
  await page.goto(`${base}/console/login`);
  await page.locator('a[data-provider="test"]').waitFor();
  await page.fill("#username", ADMIN);
  await page.fill("#password", PASSWORD);
  await Promise.all([page.waitForURL((u) => !u.pathname.startsWith("/console/login")), page.press("#password", "Enter")]);
  await waitForHydration(page);
  assert.equal((await page.textContent("#current-user")).trim(), ADMIN);
  await shot(page, "login-break-glass");
});
