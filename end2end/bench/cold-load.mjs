// Cold load of the console at 20 Mbit/s and 40 ms round trip (Chromium's network throttling):
// bytes on the wire and time until the page is interactive (hydrated), browser cache disabled.
// A benchmark, not a test: figures go to docs/performance.md.
//
//   INMANTA_URL=http://127.0.0.1:PORT E2E_USER=... E2E_PASSWORD=... node end2end/bench/cold-load.mjs [PATH] [RUNS]
//
// PATH defaults to /console (the environments page); RUNS to 5 (the median is reported).
import { start, stop, newContext, signIn, BASE } from "../tests/lib.mjs";

const path = process.argv[2] ?? "/console";
const runs = Number(process.argv[3] ?? 5);
const MBIT = 1_000_000 / 8;

await start();
const results = [];
for (let i = 0; i < runs; i++) {
  const context = await newContext();
  const page = await context.newPage();
  await signIn(page);
  const cdp = await context.newCDPSession(page);
  await cdp.send("Network.enable");
  await cdp.send("Network.setCacheDisabled", { cacheDisabled: true });
  await cdp.send("Network.emulateNetworkConditions", {
    offline: false, latency: 40, downloadThroughput: 20 * MBIT, uploadThroughput: 20 * MBIT,
  });
  const sizes = new Map();
  cdp.on("Network.loadingFinished", (e) => sizes.set(e.requestId, e.encodedDataLength));
  const started = Date.now();
  await page.goto(`${BASE}${path}`, { waitUntil: "commit" });
  await page.waitForSelector('.layout[data-hydrated="true"]', { timeout: 60_000 });
  const interactive = Date.now() - started;
  await page.waitForLoadState("networkidle").catch(() => {});
  // Everything the page fetched, but the live event stream (it never finishes).
  const bytes = [...sizes.values()].reduce((a, b) => a + b, 0);
  results.push({ interactive, bytes });
  await context.close();
}
await stop();
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const report = {
  path, runs,
  interactive_ms_median: median(results.map((r) => r.interactive)),
  bytes_median: median(results.map((r) => r.bytes)),
  all: results,
};
console.log(JSON.stringify(report, null, 2));
