#!/usr/bin/env bash
# Builds the web console's site without cargo-leptos: the `frontend` crate for wasm32 with the
# `hydrate` feature, wasm-bindgen (--target web), the stylesheet and public/ assets.
#
#   scripts/build-console.sh [--release] [--site DIR]
#
# Output (default DIR: $CARGO_TARGET_DIR/site), served by `inmanta server --console-path DIR`:
#   DIR/pkg/console.js, DIR/pkg/console_bg.wasm (+ console.wasm link), DIR/pkg/console.css,
#   DIR/favicon.svg ...
# The wasm is built in its own target dir ($CARGO_TARGET_DIR/front) so it never invalidates the
# host build. --release uses the size-optimised `wasm-release` profile. Set WASM_OPT to an npm
# binaryen wasm-opt to shrink it further (never Debian's binaryen: its wasm-opt breaks hydration).
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
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
site="${site:-$CARGO_TARGET_DIR/site}"
name=console                                  # = app::OUTPUT_NAME
front="$CARGO_TARGET_DIR/front"
out_dir=$([ "$profile" = dev ] && echo debug || echo "$profile")

ensure_wasm_target
ensure_wasm_bindgen

log "building the console wasm ($profile)"
# LEPTOS_OUTPUT_NAME is baked into leptos at compile time; keep it identical to the clippy line in
# scripts/test.sh so both share one cache.
LEPTOS_OUTPUT_NAME=$name cargo build -p frontend --lib --target wasm32-unknown-unknown --features hydrate \
  --profile "$profile" --target-dir "$front"

log "assembling the site in $site"
tmp="$site.tmp.$$"
rm -rf "$tmp" && mkdir -p "$tmp/pkg"
wasm-bindgen --target web --no-typescript --out-dir "$tmp/pkg" --out-name "$name" \
  "$front/wasm32-unknown-unknown/$out_dir/frontend.wasm"
if [ "$profile" != dev ] && [ -n "${WASM_OPT:-}" ]; then
  "$WASM_OPT" -Oz --enable-bulk-memory --enable-nontrapping-float-to-int \
    "$tmp/pkg/${name}_bg.wasm" -o "$tmp/pkg/${name}_bg.wasm"
fi
# The page asks for console_bg.wasm or console.wasm depending on whether the server's leptos was
# compiled with LEPTOS_OUTPUT_NAME set (cargo-leptos) or not (plain cargo): serve both names.
ln -s "${name}_bg.wasm" "$tmp/pkg/$name.wasm"
cp style/main.css "$tmp/pkg/$name.css"
cp -r public/. "$tmp/"
rm -rf "$site" && mv "$tmp" "$site"
log "console site ready: $site ($(du -shL "$site/pkg/${name}_bg.wasm" | cut -f1) wasm)"
