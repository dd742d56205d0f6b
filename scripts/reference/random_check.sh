#!/usr/bin/env bash
# Random well-typed models through both compilers (docs/compiler-conformance.md):
#
#   scripts/reference/random_check.sh [COUNT] [SEED] [JOBS]     (defaults: 1000 models from seed 0, 2 processes)
#
# 1. scripts/reference/random_models.py writes COUNT models (seeds SEED .. SEED+COUNT-1);
# 2. scripts/reference/record.sh records the real Inmanta's answer beside each one;
# 3. the conformance bin compiles them with ours and prints every disagreement;
# 4. explain_disagreements.py sorts the disagreements into known kinds; exit 1 if one is unexplained.
# KEEP=DIR keeps the models, answers and report in DIR instead of a temporary directory.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
source "$root/scripts/lib.sh"
count="${1:-1000}" seed="${2:-0}" jobs="${3:-2}"
if [ -n "${KEEP:-}" ]; then
  work="$KEEP"
  mkdir -p "$work"
else
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi

python3 "$here/random_models.py" --out "$work/models" --count "$count" --seed "$seed"
"$here/record.sh" --jobs "$jobs" "$work/models" | tail -1
rejected=$(grep -L '"outcome": "ok"' "$work"/models/*.inmanta.json | wc -l)
echo "$rejected of $count models not compiled by Inmanta (the generator aims at none)"
(cd "$root" && cargo run -q -p compiler --bin conformance -- "$work/models" >"$work/report.txt") || true
python3 "$here/explain_disagreements.py" "$work/report.txt"
