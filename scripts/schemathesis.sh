#!/usr/bin/env bash
# Schema fuzzing: schemathesis (from PyPI, in a cached venv) generates requests from the server's
# own OpenAPI document (GET /api/v2/docs?format=openapi) and fails on any 5xx answer.
# Usage: scripts/schemathesis.sh [DATABASE_URL]   (default: SQLite in a temp dir)
# SCHEMATHESIS_EXAMPLES (default 8) bounds the examples per operation, and so the run time.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

venv=$(ensure_schemathesis)

bin="${INMANTA_BIN:-$CARGO_TARGET_DIR/debug/inmanta}"
[ -x "$bin" ] || cargo build -p server --bin inmanta
state=$(mktemp -d)
database=(); [ -n "${1:-}" ] && database=(--database-url "$1")
# Without auth the fuzzer reaches every handler instead of stopping at 401.
"$bin" server --no-auth --bind-port 0 --state-dir "$state" "${database[@]}" >"$state/stdout" 2>"$state/stderr" &
server_pid=$!
trap 'kill $server_pid 2>/dev/null || true; rm -rf "$state"' EXIT
url=$(wait_for_server_url "$state" $server_pid 30)

# An environment for the environment-scoped calls (the fuzzer's own X-Inmanta-tid values are
# random ids: 404 is a right answer, but it would test little else).
project=$(curl -fsS -X PUT "$url/api/v2/project" -H 'content-type: application/json' -d '{"name": "fuzz"}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["id"])')
env=$(curl -fsS -X PUT "$url/api/v2/environment" -H 'content-type: application/json' \
  -d "{\"project_id\": \"$project\", \"name\": \"fuzz\"}" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["id"])')

log "schemathesis against $url (${1:-SQLite})"
status=0
"$venv/bin/schemathesis" run "$url/api/v2/docs?format=openapi" \
  --checks not_a_server_error \
  --max-examples "${SCHEMATHESIS_EXAMPLES:-8}" \
  --header "X-Inmanta-tid: $env" \
  --exclude-path-regex '^/api/v2/(agent/session|docs)' \
  --phases examples,fuzzing \
  --no-color || status=$?
if [ "$status" != 0 ]; then
  echo "--- server log (errors) ---" >&2
  grep -i "error" "$state/stderr" | tail -40 >&2 || true
fi
exit "$status"
