#!/usr/bin/env bash
# Builds the web console's site without cargo-leptos: the `frontend` crate for wasm32 with the
# `hydrate` feature, wasm-bindgen (--target web), the stylesheet and public/ assets, then
# content-hashed names, a manifest and brotli/gzip copies (scripts/console-assets.mjs).
#
#   scripts/build-console.sh [--release] [--site DIR]
#
# Output (default DIR: $CARGO_TARGET_DIR/site): DIR/manifest.json, DIR/pkg/console.<hash>.js,
# .wasm and .css (each with .br and .gz), DIR/favicon.svg ..., DIR/graphiql/ (GraphiQL's bundle
# from npm, pinned by frontend/graphiql/package-lock.json, for /console/graphiql). A server built
# afterwards embeds it (server/build.rs); `inmanta server --console-path DIR` serves it from disk instead.
# The wasm is built in its own target dir ($CARGO_TARGET_DIR/front) so it never invalidates the
# host build. --release uses the size-optimised `wasm-release` profile, drops the wasm's names
# and producers sections and runs wasm-opt from npm binaryen (frontend/package.json; never
# Debian's binaryen, whose wasm-opt breaks hydration). WASM_OPT=none skips wasm-opt.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

profile=dev
site=""
while [ $# -gt 0 ]; do
  case "$1" in
    --release) profile=wasm-release ;;
    --site) site="$2"; shift ;;
    --site=*) site="${1#--site=}" ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
site="${site:-$CARGO_TARGET_DIR/site}"
name=console                                  # the names scripts/console-assets.mjs hashes
front="$CARGO_TARGET_DIR/front"
out_dir=$([ "$profile" = dev ] && echo debug || echo "$profile")

ensure_wasm_target
# The tools the site's assembly needs install while the wasm compiles (a cold machine compiles
# wasm-bindgen-cli: minutes that would otherwise come before the console's own build).
# npm first, once: the two npm installs below run at the same time and must not both apt-get it.
command -v npm >/dev/null || { log "installing Node.js and npm (Debian)"; apt_install nodejs npm; }
ensure_wasm_bindgen & tools=($!)
ensure_graphiql & tools+=($!)
if [ "$profile" != dev ] && [ "${WASM_OPT:-}" != none ]; then
  ensure_binaryen & tools+=($!)
  WASM_OPT="${WASM_OPT:-$ROOT/frontend/node_modules/.bin/wasm-opt}"
fi

log "building the console wasm ($profile)"
# LEPTOS_OUTPUT_NAME is baked into leptos at compile time; keep it identical to the clippy line in
# scripts/test.sh so both share one cache.
LEPTOS_OUTPUT_NAME=$name cargo build -p frontend --lib --target wasm32-unknown-unknown --features hydrate \
  --profile "$profile" --target-dir "$front"
for pid in "${tools[@]}"; do wait "$pid"; done

log "assembling the site in $site"
tmp="$site.tmp.$$"
rm -rf "$tmp" && mkdir -p "$tmp/pkg"
strip=()
[ "$profile" = dev ] || strip=(--remove-name-section --remove-producers-section)
wasm-bindgen --target web --no-typescript "${strip[@]}" --out-dir "$tmp/pkg" --out-name "$name" \
  "$front/wasm32-unknown-unknown/$out_dir/frontend.wasm"
if [ "$profile" != dev ] && [ "${WASM_OPT:-none}" != none ]; then
  log "optimising the wasm ($WASM_OPT -Oz)"
  "$WASM_OPT" -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue \
    "$tmp/pkg/${name}_bg.wasm" -o "$tmp/pkg/${name}_bg.wasm"
fi
cat style/[0-9][0-9]-*.css > "$tmp/pkg/$name.css"
cp -r public/. "$tmp/"
# GraphiQL for /console/graphiql: its bundle, React's UMD builds and our start script.
graphiql_modules=frontend/graphiql/node_modules
mkdir -p "$tmp/graphiql"
cp "$graphiql_modules/graphiql/graphiql.min.js" "$graphiql_modules/graphiql/graphiql.min.css" \
  "$graphiql_modules/react/umd/react.production.min.js" "$graphiql_modules/react-dom/umd/react-dom.production.min.js" \
  frontend/graphiql/start.js "$tmp/graphiql/"
fast=()
[ "$profile" = dev ] && fast=(--fast)
node scripts/console-assets.mjs "$tmp" "${fast[@]}"
if [ -f "$site/manifest.json" ] && diff -rq "$tmp" "$site" >/dev/null 2>&1; then
  # Unchanged: the old site (and its mtime) stays, so the server's build does not embed it anew.
  rm -rf "$tmp"
else
  rm -rf "$site" && mv "$tmp" "$site"
fi
log "console site ready: $site (rebuild the server to embed it: cargo build -p server)"
