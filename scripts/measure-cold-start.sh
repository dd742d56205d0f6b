#!/usr/bin/env bash
# Times the README's first command on a cold machine: `scripts/start.sh` in a fresh clone of this
# repository's HEAD, with an empty cargo home (every crate downloaded and compiled), an empty target
# directory, no wasm-bindgen-cli and an empty npm cache, from the command to the console's login
# page answering. Run it on a quiet machine (nothing else building): the figure is wall time.
# What it cannot make cold: the Rust toolchain and its wasm32 target (rustup's, shared) and
# Debian's packages; a fresh machine adds their install (about a minute).
#
#   scripts/measure-cold-start.sh [WORK_DIR]     (default: a new temporary directory, removed)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-}"
keep=1
[ -n "$work" ] || { work=$(mktemp -d); keep=""; }
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill -- -"$server_pid" 2>/dev/null || true
  [ -n "$keep" ] || rm -rf "$work"
}
trap cleanup EXIT

git clone -q "$ROOT" "$work/src"
mkdir -p "$work/cargo-home/bin" "$work/tools"
# rustup's proxies under their own names, without the rest of ~/.cargo/bin (an installed
# wasm-bindgen among it).
for tool in cargo rustc rustdoc rustup; do ln -sf "$(command -v "$tool")" "$work/tools/$tool"; done
path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -vx "$HOME/.cargo/bin" | paste -sd:)
port=$((20000 + RANDOM % 20000))

started=$(date +%s)
(
  cd "$work/src"
  export PATH="$work/cargo-home/bin:$work/tools:$path" CARGO_HOME="$work/cargo-home" \
    CARGO_TARGET_DIR="$work/target" npm_config_cache="$work/npm-cache"
  exec setsid scripts/start.sh --bind-port "$port"
) >"$work/start.log" 2>&1 &
server_pid=$!
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/console/login")" = 200 ]; do
  kill -0 "$server_pid" 2>/dev/null || { tail -30 "$work/start.log" >&2; echo "scripts/start.sh ended" >&2; exit 1; }
  sleep 2
done
elapsed=$(( $(date +%s) - started ))
size=$(stat -c %s "$work/target/release/inmanta")
printf 'cold scripts/start.sh: login page after %d min %02d s; binary %.1f MB; log in %s\n' \
  $((elapsed / 60)) $((elapsed % 60)) "$(echo "$size / 1000000" | bc -l)" "$work/start.log"
