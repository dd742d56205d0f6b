#!/usr/bin/env bash
# Inmanta's own web-console (inmanta/web-console, the React app Inmanta 20.1 ships) in front of
# our server and in front of the real Inmanta 20.1, both holding the same content; every OSS page
# visited with Debian's Chromium, with authentication off and on (local login and a token), write
# actions included; what each page shows compared (scripts/compare-web-console/).
#
#   scripts/compare-web-console.sh CONSOLE_DIST [OUT_DIR]
#
# CONSOLE_DIST is the console's built dist/ directory: this project neither vendors the console
# nor builds it (docs/api.md, "Inmanta's web console"). Needs the reference install
# (scripts/inmanta-reference.sh install), /usr/bin/chromium, node with playwright-core on
# NODE_PATH (PLAYWRIGHT_CORE_DIR/node_modules) and a built debug `inmanta`.
# Writes OUT_DIR/{inmanta,ours}-{off,login,token}.json and the tables (compare-*.md).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/lib.sh"
dist="$(cd "${1:?usage: $0 CONSOLE_DIST [OUT_DIR]}" && pwd)"
out="${2:-$(mktemp -d -t compare-web-console.XXXXXX)}"
mkdir -p "$out"
binary="${INMANTA_BINARY:-$CARGO_TARGET_DIR/debug/inmanta}"
[ -f "$dist/index.html" ] || { echo "no built console at $dist (index.html missing)" >&2; exit 1; }
[ -x "$binary" ] || { echo "no inmanta binary at $binary: cargo build -p server --bin inmanta" >&2; exit 1; }
[ -x /usr/bin/chromium ] || { echo "/usr/bin/chromium is missing: apt-get install chromium" >&2; exit 1; }
export NODE_PATH="${PLAYWRIGHT_CORE_DIR:-$HOME/.cache/inmanta/compare-node}/node_modules"
[ -d "$NODE_PATH/playwright-core" ] || { echo "playwright-core is not in $NODE_PATH (npm install playwright-core there)" >&2; exit 1; }
"$ROOT/scripts/inmanta-reference.sh" install
python="$("$ROOT/scripts/inmanta-reference.sh" path)/python"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}"
ADMIN=admin PASSWORD=Compare-admin-password-1

pids=()
ref_state=""
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  [ -n "$ref_state" ] && "$ROOT/scripts/inmanta-reference-server.sh" stop "$ref_state" || true
}
trap cleanup EXIT

# Ours: one database, first without authentication (content and the auth-off visit), then with.
ours_state=$(mktemp -d -t compare-ours.XXXXXX)
start_ours() {  # auth true|false
  INMANTA_SERVER_AUTH="$1" INMANTA_WEB_CONSOLE_ENABLED=false \
    "$binary" server --bind-port 0 --state-dir "$ours_state" >"$ours_state/stdout" 2>>"$ours_state/stderr" &
  pids+=($!)
  ours_url=$(wait_for_server_url "$ours_state" $! 60)
  ours_url=${ours_url%/}
}
start_ours false
log "seeding ours at $ours_url"
"$python" "$HERE/compare-web-console/seed.py" --url "$ours_url" --out "$out/ours-seed.json"

log "starting Inmanta 20.1"
eval "$("$ROOT/scripts/inmanta-reference-server.sh" start)"
ref_state="$INMANTA_REFERENCE_STATE"
"$python" "$HERE/compare-web-console/seed.py" --url "$INMANTA_REFERENCE_URL" --out "$out/inmanta-seed.json"

visit() {  # name backend seed auth extra...
  local name="$1" backend="$2" seed="$3" auth="$4"; shift 4
  log "visiting $name (auth $auth)"
  node "$HERE/compare-web-console/visit.mjs" --dist "$dist" --backend "$backend" --seed "$seed" --auth "$auth" \
    --out "$out/$name-$auth.json" "$@"
}
visit ours "$ours_url" "$out/ours-seed.json" off
visit inmanta "$INMANTA_REFERENCE_URL" "$out/inmanta-seed.json" off
status=0
"$python" "$HERE/compare-web-console/compare.py" "$out/inmanta-off.json" "$out/ours-off.json" --details \
  | tee "$out/compare-off.md" || status=1

if [ "${COMPARE_AUTH:-1}" = 1 ]; then
  # Authentication on: our server restarted on the same database with a user; Inmanta's with
  # [server] auth and a signing key, its user made by its own `inmanta user` command.
  kill "${pids[-1]}"; wait "${pids[-1]}" 2>/dev/null || true
  INMANTA_PASSWORD="$PASSWORD" "$binary" user create "$ADMIN" --admin --direct --database-url "sqlite://$ours_state/inmanta.db" >/dev/null
  start_ours true
  ours_token=$(curl -sf -X POST -H 'Content-Type: application/json' \
    -d "{\"username\":\"$ADMIN\",\"password\":\"$PASSWORD\"}" "$ours_url/api/v2/login" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["data"]["token"])')
  "$ROOT/scripts/inmanta-reference-server.sh" restart-auth "$ref_state" "$ADMIN" "$PASSWORD"
  ref_token=$(curl -sf -X POST -H 'Content-Type: application/json' \
    -d "{\"username\":\"$ADMIN\",\"password\":\"$PASSWORD\"}" "$INMANTA_REFERENCE_URL/api/v2/login" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["data"]["token"])')
  visit ours "$ours_url" "$out/ours-seed.json" login --user "$ADMIN" --password "$PASSWORD"
  visit inmanta "$INMANTA_REFERENCE_URL" "$out/inmanta-seed.json" login --user "$ADMIN" --password "$PASSWORD"
  visit ours "$ours_url" "$out/ours-seed.json" token --token "$ours_token"
  visit inmanta "$INMANTA_REFERENCE_URL" "$out/inmanta-seed.json" token --token "$ref_token"
  for auth in login token; do
    "$python" "$HERE/compare-web-console/compare.py" "$out/inmanta-$auth.json" "$out/ours-$auth.json" --details \
      | tee "$out/compare-$auth.md" || status=1
  done
fi
log "records and tables in $out"
exit $status
