#!/usr/bin/env bash
# Builds the release `inmanta` binary with the release console embedded, the console and the
# server side by side: on two cores neither build keeps both busy on its own (the console's `app`
# crate is one long serial codegen, the server's tail is a few big crates), so they overlap. The
# server's build script waits for the console's site (server/build.rs, while
# INMANTA_CONSOLE_SITE_PENDING exists) and is the only step of the server's build that does.
#
#   scripts/build-release.sh [--site DIR] [--profile release|dist]
#
# Prints nothing on stdout; the binary is $CARGO_TARGET_DIR/<profile>/inmanta.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

site="$CARGO_TARGET_DIR/site-release"
profile=release
while [ $# -gt 0 ]; do
  case "$1" in
    --site) site="$2"; shift ;;
    --profile) profile="$2"; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
ensure_build_deps

pending="$site.pending"
mkdir -p "$(dirname "$site")"
touch "$pending"
console_pid=""
server_pid=""
cleanup() {
  rm -f "$pending"
  for pid in $console_pid $server_pid; do kill "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

log "building the console and the server side by side"
( scripts/build-console.sh --release --site "$site"; status=$?; rm -f "$pending"; exit $status ) >&2 &
console_pid=$!
INMANTA_CONSOLE_SITE="$site" INMANTA_CONSOLE_SITE_PENDING="$pending" \
  cargo build --profile "$profile" -p server --bin inmanta >&2 &
server_pid=$!

if ! wait "$console_pid"; then
  console_pid=""
  echo "the console's build failed (above); the server's build is stopped" >&2
  exit 1
fi
console_pid=""
wait "$server_pid"
server_pid=""
