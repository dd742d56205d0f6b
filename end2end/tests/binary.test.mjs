// The `inmanta` binary alone serves the whole console: copied into an empty directory (no site
// directory anywhere, nothing in its environment pointing at one), it starts, the login page and
// the console work, the wasm arrives compressed with an immutable cache header, and a reload takes
// it from the browser's cache. Starts its own server from INMANTA_BINARY (default: the release
// build in $CARGO_TARGET_DIR, else the debug build); INMANTA_URL is not used.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { copyFileSync, chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { start, stop, newContext, watchErrors, waitForHydration, shot } from "./lib.mjs";

const target = process.env.CARGO_TARGET_DIR ?? join(homedir(), ".cache", "inmanta", "target");
const BINARY = process.env.INMANTA_BINARY
  ?? [join(target, "release", "inmanta"), join(target, "debug", "inmanta")].find(existsSync);
const PASSWORD = `Binary-test-${Date.now()}-x`;

let dir;
let server;
let url;

before(async () => {
  assert.ok(BINARY && existsSync(BINARY), `no inmanta binary (set INMANTA_BINARY): ${BINARY}`);
  dir = mkdtempSync(join(tmpdir(), "inmanta-binary-"));
  copyFileSync(BINARY, join(dir, "inmanta"));
  chmodSync(join(dir, "inmanta"), 0o755);
  // Only what any shell has: no CARGO_TARGET_DIR, LEPTOS_SITE_ROOT or INMANTA_* settings.
  const env = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: dir };
  execFileSync("./inmanta", ["user", "create", "admin2", "--admin", "--direct"], {
    cwd: dir, env: { ...env, INMANTA_CONFIG_STATE_DIR: join(dir, "state"), INMANTA_PASSWORD: PASSWORD }, stdio: "pipe",
  });
  server = spawn("./inmanta", ["server", "--bind-port", "0", "--state-dir", "state"], { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  server.stderr.on("data", (d) => { stderr += d; });
  url = await new Promise((resolve, reject) => {
    let out = "";
    server.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[^ ]+)/);
      if (m) resolve(m[1]);
    });
    server.on("exit", (code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
  });
  // Nothing but the binary and its state directory.
  assert.deepEqual(readdirSync(dir).sort(), ["inmanta", "state"]);
  await start({ base: url, user: "admin2", password: PASSWORD });
});

after(async () => {
  await stop();
  server?.kill("SIGTERM");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("the binary alone serves the console: compressed, cached for good, taken from cache on reload", async (t) => {
  const context = await newContext();
  t.after(() => context.close());
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  const fromCache = new Set();
  const received = new Map();
  cdp.on("Network.requestServedFromCache", (e) => fromCache.add(e.requestId));
  cdp.on("Network.responseReceived", (e) => {
    if (e.response.url.endsWith(".wasm")) received.set(e.requestId, e.response);
  });

  const login = await page.goto(`${url}/console/login`);
  assert.equal(login.status(), 200);
  await page.fill("#username", "admin2");
  await page.fill("#password", PASSWORD);
  const wasm = page.waitForResponse((r) => r.url().endsWith(".wasm"));
  await Promise.all([page.waitForURL((u) => !u.pathname.startsWith("/console/login")), page.press("#password", "Enter")]);
  // The admin made with --direct has a real password: straight to the console.
  const errors = watchErrors(page);
  const first = await wasm;
  await waitForHydration(page);
  assert.match(first.url(), /\/console\/pkg\/console\.[0-9a-f]{16}\.wasm$/);
  const headers = first.headers();
  assert.equal(headers["content-encoding"], "br");
  assert.equal(headers["content-type"], "application/wasm");
  assert.equal(headers["cache-control"], "public, max-age=31536000, immutable");

  // The page itself is compressed and revalidated every time.
  const html = await context.request.get(`${url}/console`, { headers: { "accept-encoding": "gzip, br" } });
  assert.equal(html.status(), 200);
  assert.equal(html.headers()["content-encoding"], "gzip");
  assert.equal(html.headers()["cache-control"], "no-cache");

  received.clear();
  fromCache.clear();
  await page.reload();
  await waitForHydration(page);
  const again = [...received.entries()];
  assert.equal(again.length, 1, "the wasm is asked for once on reload");
  const [requestId, response] = again[0];
  assert.ok(fromCache.has(requestId) || response.fromDiskCache || response.fromMemoryCache,
    `the wasm came from the network on reload: ${JSON.stringify(response.headers)}`);
  await shot(page, "binary-alone");
  assert.deepEqual(errors, [], "browser errors");
});
