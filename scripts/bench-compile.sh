#!/usr/bin/env bash
# The compiler as a user runs it: whole `inmanta compile` / `inmanta export -j` processes of the
# release binary, side by side with the reference Inmanta 20.1 (scripts/inmanta-reference.sh) in
# the same generated project (../shared/bench/gen_project.py), runs alternated, medians of wall,
# user and system time and of the peak RSS (/usr/bin/time). Each row carries the 1-minute load
# average before it: the two cores are shared, and wall times grow with the load.
#
#   scripts/bench-compile.sh                 10, 10 000 (ours and Inmanta's) and 100 000 resources
#   scripts/bench-compile.sh --million       also 1 000 000 resources (ours; minutes, GBs)
#   scripts/bench-compile.sh --no-reference  only ours
#
# BENCH_RUNS (default 5) runs per row; INMANTA_BIN the binary to measure (default: the release
# build of `server`, built when missing); GEN_PROJECT the generator; BENCH_DIR where the projects
# are generated (default a temporary directory, removed at the end).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

RUNS="${BENCH_RUNS:-5}"
MILLION=0
REFERENCE=1
for arg in "$@"; do
  case "$arg" in
    --million) MILLION=1 ;;
    --no-reference) REFERENCE=0 ;;
    *) echo "usage: $0 [--million] [--no-reference]" >&2; exit 2 ;;
  esac
done

GEN="${GEN_PROJECT:-$ROOT/../shared/bench/gen_project.py}"
[ -f "$GEN" ] || GEN=/work/shared/bench/gen_project.py
[ -x /usr/bin/time ] || as_root apt-get install -y time >/dev/null
BIN="${INMANTA_BIN:-$CARGO_TARGET_DIR/release/inmanta}"
if [ -z "${INMANTA_BIN:-}" ]; then
  log "building the release inmanta"
  (cd "$ROOT" && cargo build --release -p server --bin inmanta)
fi
REF=""
if [ "$REFERENCE" = 1 ]; then
  REF="$ROOT/scripts/inmanta-reference.sh"
  "$REF" install
fi

WORK="${BENCH_DIR:-$(mktemp -d)}"
[ -n "${BENCH_DIR:-}" ] || trap 'rm -rf "$WORK"' EXIT

load() { cut -d' ' -f1 /proc/loadavg; }

# project N: generates (once) the N-resource project and prints its directory
project() {
  local dir="$WORK/n$1"
  if [ ! -f "$dir/main.cf" ]; then
    mkdir -p "$WORK/deployed-$1"
    python3 "$GEN" "$1" "$dir" --root "$WORK/deployed-$1" >/dev/null
  fi
  echo "$dir"
}

# one_run OUT DIR CMD...: runs CMD in DIR under /usr/bin/time, appends "wall user sys maxrss_kib"
# (the wall clock from the shell, with the start of /usr/bin/time and env in it: /usr/bin/time's
# own has two decimals, too few for a small project)
one_run() {
  local out=$1 dir=$2 start end
  shift 2
  start=$EPOCHREALTIME
  /usr/bin/time -f '%U %S %M' -o "$out.last" env -C "$dir" "$@" >/dev/null 2>"$out.err" || {
    echo "failed in $dir: $*" >&2; cat "$out.err" >&2; exit 1; }
  end=$EPOCHREALTIME
  echo "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.4f", b - a }') $(tail -1 "$out.last")" >>"$out"
}

# median FILE COLUMN
median() { cut -d' ' -f"$2" "$1" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# row LABEL FILE LOAD: one line of the table
row() {
  local wall user sys rss
  wall=$(median "$2" 1); user=$(median "$2" 2); sys=$(median "$2" 3); rss=$(median "$2" 4)
  awk -v l="$1" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v ld="$3" 'BEGIN {
    cpu = u + s; pct = cpu > 0 ? 100 * s / cpu : 0
    printf "| %s | %.3f s | %.2f s | %.2f s (%.0f %%) | %.0f MB | %s |\n", l, w, u, s, pct, r / 1024, ld }'
}

# measure LABEL N MODE [ref]: RUNS alternated runs of ours (and the reference's) in one project
measure() {
  local label=$1 n=$2 mode=$3 with_ref=${4:-} dir ours="$WORK/ours.$$" theirs="$WORK/theirs.$$" before
  dir=$(project "$n")
  rm -f "$ours" "$theirs"
  local ours_cmd=("$BIN" compile) ref_cmd=("$REF" inmanta compile)
  if [ "$mode" = export ]; then
    ours_cmd=("$BIN" export -j "$WORK/ours.json")
    ref_cmd=("$REF" inmanta export -j "$WORK/theirs.json")
  fi
  before=$(load)
  # one untimed run each: the page cache, and the reference's first-compile set-up
  one_run "$WORK/warm" "$dir" "${ours_cmd[@]}"
  [ -n "$with_ref" ] && one_run "$WORK/warm" "$dir" "${ref_cmd[@]}"
  for _ in $(seq 1 "$RUNS"); do
    one_run "$ours" "$dir" "${ours_cmd[@]}"
    [ -n "$with_ref" ] && one_run "$theirs" "$dir" "${ref_cmd[@]}"
  done
  local after
  after=$(load)
  row "$label, ours" "$ours" "$before–$after"
  if [ -n "$with_ref" ]; then
    row "$label, Inmanta 20.1" "$theirs" "$before–$after"
    awk -v a="$(median "$theirs" 1)" -v b="$(median "$ours" 1)" 'BEGIN { printf "| %s: ratio of the median walls | **%.1f×** | | | | |\n", "'"$label"'", a / b }'
  fi
}

ref_flag=""
[ -n "$REF" ] && ref_flag=ref
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $RUNS runs, $(git -C "$ROOT" rev-parse --short HEAD)"
echo
echo "| what | wall | user | system (of CPU) | peak RSS | load before–after |"
echo "|---|---:|---:|---:|---:|---|"
measure "compile, 10 resources" 10 compile
measure "compile, 10 000" 10000 compile $ref_flag
measure "export -j, 10 000" 10000 export $ref_flag
measure "compile, 100 000" 100000 compile
measure "export -j, 100 000" 100000 export
if [ "$MILLION" = 1 ]; then
  RUNS=$(( RUNS < 3 ? RUNS : 3 ))
  measure "compile, 1 000 000" 1000000 compile
  measure "export -j, 1 000 000" 1000000 export
fi
