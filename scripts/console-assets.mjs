// Finishes the console's site for serving (called by scripts/build-console.sh):
//
//   node scripts/console-assets.mjs SITE [--fast]
//
// - renames pkg/console.js, pkg/console_bg.wasm and pkg/console.css to content-hashed names
//   (pkg/console.<hash>.js ...), so the server can let browsers cache them for good and a page
//   never pairs a new script with an old wasm;
// - writes manifest.json naming them (read by the server, embedded or from --console-path);
// - writes a brotli (.br) and a gzip (.gz) copy next to every file where that is smaller, which
//   the server sends by Accept-Encoding. --fast (debug builds) uses quicker, larger settings.
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync, renameSync, readdirSync, statSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { brotliCompressSync, gzipSync, constants } from "node:zlib";

const [site, ...flags] = process.argv.slice(2);
if (!site) {
  console.error("usage: console-assets.mjs SITE [--fast]");
  process.exit(2);
}
const fast = flags.includes("--fast");

const hashed = {};
for (const [key, from, ext] of [["js", "console.js", "js"], ["wasm", "console_bg.wasm", "wasm"], ["css", "console.css", "css"]]) {
  const path = join(site, "pkg", from);
  const hash = createHash("sha256").update(readFileSync(path)).digest("hex").slice(0, 16);
  const name = `console.${hash}.${ext}`;
  renameSync(path, join(site, "pkg", name));
  hashed[key] = `pkg/${name}`;
}
writeFileSync(join(site, "manifest.json"), JSON.stringify(hashed, null, 2) + "\n");

function* files(dir) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) yield* files(path);
    else yield path;
  }
}

let identity = 0, brotli = 0;
for (const path of [...files(site)]) {
  if (path.endsWith(".br") || path.endsWith(".gz") || relative(site, path) === "manifest.json") continue;
  const data = readFileSync(path);
  identity += data.length;
  const br = brotliCompressSync(data, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: fast ? 5 : 11,
      [constants.BROTLI_PARAM_LGWIN]: 24,
      [constants.BROTLI_PARAM_SIZE_HINT]: data.length,
    },
  });
  const gz = gzipSync(data, { level: fast ? 6 : 9 });
  for (const [suffix, copy] of [[".br", br], [".gz", gz]]) {
    if (copy.length < data.length) writeFileSync(path + suffix, copy);
    else rmSync(path + suffix, { force: true });
  }
  brotli += Math.min(br.length, data.length);
}
console.error(`console assets: ${Object.values(hashed).join(", ")}; ${identity} bytes, ${brotli} with brotli`);
