#!/usr/bin/env bash
# The differential client test: Inmanta's own clients (inmanta-cli, the exporter, the Python
# client of inmanta-core 20.1) run the harness sequence against OUR server, and every step is
# compared with what the real Inmanta server answered (record.jsonl, made by record.sh).
#
#   scripts/inmanta-clients/run.sh [INMANTA_BINARY]
#
# Needs the reference venv (installed by scripts/inmanta-reference.sh when missing; Python 3.13
# from pyenv or PATH) and a built `inmanta` binary ($CARGO_TARGET_DIR/debug/inmanta by default).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../lib.sh"
binary="${1:-$CARGO_TARGET_DIR/debug/inmanta}"
[ -x "$binary" ] || { echo "no inmanta binary at $binary: cargo build -p server --bin inmanta" >&2; exit 1; }
if ! "$ROOT/scripts/inmanta-reference.sh" install; then
  echo "the Inmanta clients (inmanta-core 20.1) need Python 3.13: pyenv install 3.13, or set INMANTA_REFERENCE_PYTHON" >&2
  exit 1
fi
python="$("$ROOT/scripts/inmanta-reference.sh" path)/python"

state=$(mktemp -d -t inmanta-clients-ours.XXXXXX)
# Like the reference server the harness runs against: no authentication, no console.
INMANTA_SERVER_AUTH=false INMANTA_WEB_CONSOLE_ENABLED=false \
  "$binary" server --bind-port 0 --state-dir "$state" >"$state/stdout" 2>"$state/stderr" &
server_pid=$!
trap 'kill $server_pid 2>/dev/null || true; wait $server_pid 2>/dev/null || true; rm -rf "$state"' EXIT
url=$(wait_for_server_url "$state" $server_pid 30)
port=${url##*:}
port=${port%%/*}

log "Inmanta's clients against our server (port $port)"
started=$(date +%s)
harness_status=0
XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-/tmp}" "$python" "$HERE/harness.py" --port "$port" --out "$state/ours.jsonl" \
  || harness_status=$?
# INMANTA_CLIENTS_OUT=FILE keeps our answers (to read a difference, or to compare by hand).
[ -n "${INMANTA_CLIENTS_OUT:-}" ] && cp "$state/ours.jsonl" "$INMANTA_CLIENTS_OUT"
"$python" "$HERE/compare.py" "$HERE/record.jsonl" "$state/ours.jsonl"
[ "$harness_status" = 0 ] || { echo "the harness stopped early (exit $harness_status)" >&2; exit 1; }
log "Inmanta's clients: same answers as Inmanta 20.1 in $(( $(date +%s) - started )) s"
