// Serves a built Inmanta web-console (its dist/) at /console/ in front of one server and visits
// every OSS page with Debian's Chromium (playwright-core, never a downloaded browser), then does
// the write actions. Writes, per page: the text it shows, its links, and the API calls it made
// with their status codes, normalised (ids, dates, times) so two servers' records compare.
//
//   node visit.mjs --dist DIR --backend URL --seed seed.json --auth off|login|token
//                  [--user U --password P | --token T] --out FILE
//
// Needs playwright-core (NODE_PATH, e.g. a `npm install playwright-core` directory).
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

// ESM ignores NODE_PATH: playwright-core is required from the directory it names.
const { chromium } = createRequire(path.join(process.env.NODE_PATH ?? "node_modules", "..", "visit.cjs"))("playwright-core");

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, arg, i, all) => (arg.startsWith("--") ? [...acc, [arg.slice(2), all[i + 1]]] : acc), []),
);
const dist = path.resolve(args.dist);
const backend = new URL(args.backend);
const seed = JSON.parse(fs.readFileSync(args.seed, "utf8"));
const auth = args.auth ?? "off";
const env = seed.environment;

const types = { ".js": "text/javascript", ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml",
  ".json": "application/json", ".woff2": "font/woff2", ".ico": "image/x-icon", ".png": "image/png", ".ttf": "font/ttf" };

// What inmanta-ui writes into config.js: the login method, none without authentication.
const configJs = (auth === "off" ? "" : 'window.auth = { method: "database" };\n') + "export const features = [];\n";

const front = http.createServer((req, res) => {
  const url = new URL(req.url, "http://front");
  if (url.pathname === "/" ) {
    res.writeHead(302, { location: "/console/" });
    return res.end();
  }
  if (url.pathname.startsWith("/console")) {
    if (path.basename(url.pathname) === "config.js") {
      res.writeHead(200, { "content-type": "text/javascript" });
      return res.end(configJs);
    }
    // The console names its files relative to the page (vite's base "./"): a file under a
    // nested page's path is the one of that name at the top of dist/, any other path the app.
    const isFile = (f) => f.startsWith(dist) && fs.existsSync(f) && fs.statSync(f).isFile();
    let file = path.join(dist, url.pathname.slice("/console".length));
    if (!isFile(file)) file = path.join(dist, path.basename(url.pathname));
    if (!isFile(file)) file = path.join(dist, "index.html");
    res.writeHead(200, { "content-type": types[path.extname(file)] ?? "application/octet-stream" });
    return fs.createReadStream(file).pipe(res);
  }
  // Everything else goes to the server, its Host the server's own (nginx's default).
  const upstream = http.request(
    { host: backend.hostname, port: backend.port, method: req.method, path: req.url,
      headers: { ...req.headers, host: backend.host } },
    (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on("error", (e) => { res.writeHead(502); res.end(String(e)); });
  req.pipe(upstream);
});
await new Promise((ok) => front.listen(0, "127.0.0.1", ok));
const base = `http://127.0.0.1:${front.address().port}`;

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const normalise = (text) =>
  text
    .replace(UUID, "<id>")
    .replace(/\d{4}[-/]\d{2}[-/]\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?/g, "<date>")
    .replace(/\d{4}\/\d{2}\/\d{2}/g, "<day>")
    .replace(/\b\d{1,2}:\d{2}(:\d{2})?(:\d{3})?( ?[AP]M)?\b/g, "<time>")
    .replace(/\b(a few|an?|\d+) (seconds?|minutes?|hours?|days?) ago\b/g, "<ago>")
    .replace(/\b\d+(\.\d+)? ?(ms|seconds?|s)\b/g, "<duration>")
    .replace(/127\.0\.0\.1:\d+/g, "<host>")
    .replace(/\b[0-9a-f]{32,64}\b/g, "<hash>")
    .replace(/[ \t]+/g, " ");

const q = (p) => `${p}${p.includes("?") ? "&" : "?"}env=${env}`;
const rid = encodeURIComponent("std::testing::NullResource[internal,name=broken]");
const [v1, v2] = seed.versions;
const pages = [
  ["home", "/console/"],
  ["environment create", "/console/environment/create"],
  ["dashboard", q("/console/dashboard")],
  ["resources", q("/console/resources")],
  ["resource details", q(`/console/resources/${rid}`)],
  ["agents", q("/console/agents")],
  ["facts", q("/console/facts")],
  ["discovered resources", q("/console/resource-discovery")],
  ["discovered resource details", q(`/console/resource-discovery/${encodeURIComponent(seed.discovered)}`)],
  ["compile reports", q("/console/compilereports")],
  ["compile details", q(`/console/compilereports/${seed.compile}`)],
  ["desired state", q("/console/desiredstate")],
  ["desired state details", q(`/console/desiredstate/${v2}`)],
  ["desired state resource", q(`/console/desiredstate/${v2}/resource/${rid}`)],
  ["desired state resource by version id",
    q(`/console/desiredstate/${v2}/resource/${encodeURIComponent("std::testing::NullResource[internal,name=broken],v=" + v2)}`)],
  ["desired state compare", q(`/console/desiredstate/compare/${v1}/${v2}`)],
  ["compliance check", q(`/console/desiredstate/${v2}/compliancecheck`)],
  ["parameters", q("/console/parameters")],
  ["notifications", q("/console/notificationcenter")],
  ["settings", q("/console/settings")],
  ["status", q("/console/status")],
  ["graphiql", q("/console/graphiql")],
  ["user management", q("/console/user_management")],
];

// A write action: the page, then the controls to use, each [role, accessible name] (the
// console's aria-labels where it has them); a step whose control is missing is recorded.
const actions = [
  ["deploy", q("/console/resources"), [["button", "Deploy"]]],
  ["repair", q("/console/resources"), [["button", "Repair"]]],
  ["dry run", q(`/console/desiredstate/${v2}/compliancecheck`), [["button", "Perform dry run"]]],
  ["recompile", q("/console/compilereports"), [["button", "RecompileButton"]]],
  ["halt", q("/console/dashboard"), [["button", "STOP"], ["button", "Yes"]]],
  ["resume", q("/console/dashboard"), [["button", "Resume"], ["button", "Yes"]]],
  ["settings", q("/console/settings"),
    [["tab", "Configuration"], ["switch", "Toggle-auto_deploy"], ["row-save", "Toggle-auto_deploy"]]],
  ["notification read", q("/console/notificationcenter"),
    [["button", "notifications-dropdown"], ["menuitem", "Mark as read"]]],
];

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
let calls = [];
let inflight = 0;
context.on("request", () => inflight++);
context.on("requestfinished", () => inflight--);
context.on("requestfailed", () => inflight--);
context.on("response", (response) => {
  const url = new URL(response.url());
  if (url.pathname.startsWith("/console")) return;
  const keys = [...url.searchParams.keys()].filter((k) => k !== "env").sort();
  const request = response.request();
  const body = request.postData();
  calls.push(`${request.method()} ${normalise(decodeURIComponent(url.pathname))}${keys.length ? "?" + [...new Set(keys)].join("&") : ""}` +
    `${body && request.method() !== "GET" && url.pathname.includes("graphql") ? " " + normalise(body).slice(0, 80) : ""} -> ${response.status()}`);
});
const consoleErrors = [];
context.on("console", (m) => m.type() === "error" && consoleErrors.push(normalise(m.text()).slice(0, 200)));

const page = await context.newPage();
const record = { auth, pages: {}, actions: {} };

// Until the network is quiet and no panel says it is loading (a slower server is not a
// difference), at most 30 s; then a moment for the last renders.
async function settle() {
  try { await page.waitForLoadState("networkidle", { timeout: 15000 }); } catch {}
  // A write that takes its time (Inmanta halts its scheduler before it answers) is awaited too.
  for (let waited = 0; inflight > 0 && waited < 30000; waited += 100) await page.waitForTimeout(100);
  try {
    await page.waitForFunction(() => !/\bLoading\b/.test(document.body.innerText), null, { timeout: 15000 });
  } catch {}
  await page.waitForTimeout(1500);
}

async function login() {
  if (auth === "token") {
    // A token login: what the console keeps after a local login, set beforehand.
    // Both before the app's first start, which drops a token without its user name.
    await context.addCookies([{ name: "inmanta_user", value: args.token, url: base }]);
    await context.addInitScript(() => localStorage.setItem("inmanta_user", "admin"));
  } else if (auth === "login") {
    await page.goto(base + "/console/");
    await settle();
    await page.getByLabel(/user ?name/i).first().fill(args.user);
    await page.getByLabel(/password/i).first().fill(args.password);
    await page.getByRole("button", { name: /log ?in|sign ?in/i }).first().click();
    await settle();
  }
}

async function snapshot() {
  const text = await page.evaluate(() => document.body.innerText);
  const links = await page.evaluate(() => [...document.querySelectorAll("a[href]")].map((a) => a.getAttribute("href")));
  return {
    text: normalise(text).split("\n").map((l) => l.trim()).filter(Boolean),
    links: [...new Set(links.map(normalise))].sort(),
  };
}

await login();
record.login = { calls: [...new Set(calls)].sort() };
for (const [name, url] of pages) {
  calls = [];
  consoleErrors.length = 0;
  await page.goto(base + url);
  await settle();
  record.pages[name] = { ...(await snapshot()), calls: [...new Set(calls)].sort(), errors: [...new Set(consoleErrors)] };
}
for (const [name, url, steps] of actions) {
  await page.goto(base + url);
  await settle();
  calls = [];
  const clicked = [];
  for (const [role, label] of steps) {
    const control = role === "row-save"
      ? page.locator("tr", { has: page.getByRole("switch", { name: label, exact: true }) })
          .getByRole("button", { name: "SaveAction", exact: true })
      : page.getByRole(role, { name: label, exact: true });
    if ((await control.count()) > 0 && (await control.first().isEnabled())) {
      // force: a PatternFly switch's input sits under its drawn toggle.
      try {
        await control.first().click({ force: true, timeout: 10000 });
        clicked.push(`${role} ${label}`);
      } catch (e) {
        clicked.push(`(${role} ${label} not clickable)`);
      }
      await settle();
    } else {
      clicked.push(`(no ${role} ${label})`);
    }
  }
  record.actions[name] = { clicked, calls: [...new Set(calls)].sort(), after: (await snapshot()).text };
}
fs.writeFileSync(args.out, JSON.stringify(record, null, 1));
await browser.close();
front.close();
