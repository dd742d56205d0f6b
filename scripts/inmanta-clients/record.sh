#!/usr/bin/env bash
# Record the real Inmanta server's answers to the client harness, once, into record.jsonl.
# Needs the reference install and starts the real server (scripts/inmanta-reference.sh server);
# CI never runs this: it replays the sequence against our server (run.sh) and compares.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
out="${1:-$HERE/record.jsonl}"
python="$("$ROOT/scripts/inmanta-reference.sh" path)/python"
# shellcheck disable=SC2016
"$ROOT/scripts/inmanta-reference.sh" server run bash -c \
  '"$0" "$1/harness.py" --port "$INMANTA_REFERENCE_PORT" --out "$2"' "$python" "$HERE" "$out"
echo "recorded $(wc -l <"$out") steps into $out" >&2
