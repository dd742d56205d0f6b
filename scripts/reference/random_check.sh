#!/usr/bin/env bash
# Random well-typed models through both compilers (docs/compiler-conformance.md):
#
#   scripts/reference/random_check.sh [COUNT] [SEED] [JOBS]     (defaults: 1000 models from seed 0, 2 processes)
#
# 1. scripts/reference/random_models.py writes COUNT models (seeds SEED .. SEED+COUNT-1);
# 2. the real Inmanta (scripts/inmanta-reference.sh) compiles and exports each one, and
#    annotate_cases.py writes its answer into the model as conformance directives;
# 3. our compiler runs them through tests/conformance.rs (copied beside the cases as zz_rand_*.cf
#    for the run, removed afterwards);
# 4. explain_disagreements.py sorts every difference into a known kind; exit 1 if one is unexplained.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
source "$root/scripts/lib.sh"
count="${1:-1000}" seed="${2:-0}" jobs="${3:-2}"
work="$(mktemp -d)"
cases="$root/compiler/tests/cases"
trap 'rm -f "$cases"/zz_rand_*.cf; rm -rf "$work"' EXIT

python3 "$here/random_models.py" --out "$work/models" --count "$count" --seed "$seed"
py="$("$root/scripts/inmanta-reference.sh" path)/python"
ls "$work"/models/*.cf | split -n "r/$jobs" - "$work/part."
for part in "$work"/part.*; do
  xargs "$py" "$here/annotate_cases.py" <"$part" >"$part.answers" &
done
wait
rejected=$(cat "$work"/part.*.answers | grep -c '"ok": false' || true)
echo "$count models compiled by Inmanta; $rejected rejected by Inmanta (the generator aims at none)"

for f in "$work"/models/*.cf; do cp "$f" "$cases/zz_$(basename "$f")"; done
(cd "$root" && CASE=zz_rand_ cargo test -q -p compiler --test conformance >"$work/ours.txt" 2>&1) || true
python3 "$here/explain_disagreements.py" "$work/ours.txt"
