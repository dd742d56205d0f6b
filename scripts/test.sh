#!/usr/bin/env bash
# The whole test suite: formatting and lints, the console build, the Rust tests on SQLite and on
# PostgreSQL, and the browser tests in headless Chromium. Installs what it needs when missing.
# A local PostgreSQL that accepts `postgres` without password on 127.0.0.1:5432 is used when
# there is one; otherwise a throwaway cluster is started (and removed) for the run.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
# A whole run gains nothing from incremental caches (tens of GB in the shared target directory)
# and a nearly full disk turns the server's health to warning, which tests check.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
started=$(date +%s)

# Each stage's wall time: printed when the stage ends and as a table when the run ends (also when
# it fails: the stage it failed in is marked), so a slow run says where its time went.
stage_names=()
stage_seconds=()
stage_name=""
stage_started=0
stage() {
  end_stage
  stage_name=$1
  stage_started=$(date +%s)
  log "$1"
}
end_stage() {
  [ -n "$stage_name" ] || return 0
  stage_names+=("$stage_name${1:-}")
  stage_seconds+=($(($(date +%s) - stage_started)))
  log "${stage_names[-1]}: $(mmss "${stage_seconds[-1]}")"
  stage_name=""
}
mmss() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }
stage_table() {
  local i
  printf '\n%-70s %8s\n' "stage" "min:s" >&2
  for i in "${!stage_names[@]}"; do printf '%-70s %8s\n' "${stage_names[$i]}" "$(mmss "${stage_seconds[$i]}")" >&2; done
  printf '%-70s %8s\n' "the whole run" "$(mmss $(($(date +%s) - started)))" >&2
}
server_pid=""
release_pid=""
on_exit() {
  local status=$?
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  [ -n "$release_pid" ] && kill "$release_pid" 2>/dev/null
  declare -F stop_postgres >/dev/null && stop_postgres
  [ "$status" = 0 ] || end_stage " (FAILED)"
  stage_table
}
trap on_exit EXIT

ensure_build_deps
ensure_sshd
ensure_age
ensure_faketime
# server/tests/server/hardening.rs drives Chromium through the swagger page in the Rust stages,
# long before the browser tests.
ensure_chromium
ensure_neovim

stage "format and lints"
cargo fmt --all --check
scripts/check-vocabulary.sh
# Checks every target of every member with the features a workspace build gives them, `app`'s
# with `ssr` (the server asks for it): a second pass over `-p app --features ssr` checked the same
# targets again under other dependency features, so the whole console tree twice.
cargo clippy --workspace --all-targets -- -D warnings
ensure_wasm_target
LEPTOS_OUTPUT_NAME=console cargo clippy -p frontend --target wasm32-unknown-unknown --features hydrate \
  --target-dir "$CARGO_TARGET_DIR/front" -- -D warnings

stage "building the console, the server and the tests"
scripts/build-console.sh
# The binary the later stages run is the one the tests build (`target/debug/inmanta`, with the
# dev-dependencies' features, e.g. tokio's test-util): a separate `cargo build -p server` resolves
# tokio and libc with other features and so built the whole tree a second time.
cargo test --workspace --no-run

# The release build needs nothing the tests make, and the tests leave much of the two cores idle
# (servers waiting on deploys, Python clients, the fuzzer): it runs beside them at the lowest CPU
# priority, so the tests keep the CPU whenever they want it. Its output goes to a log, shown when
# it fails; cargo locks each profile's directory apart, so the debug builds below are not blocked.
release_log="$CARGO_TARGET_DIR/release-build.log"
release_started=$(date +%s)
nice -n 19 scripts/build-release.sh >"$release_log" 2>&1 &
release_pid=$!

# Inmanta 20.1's inmanta-cli (the reference venv) runs in server/tests/server/token_registry.rs.
stage "the reference install (inmanta-core 20.1) for the tests that run Inmanta's clients"
scripts/inmanta-reference.sh install
# ... and with the files module, for server/tests/server/references_vs_inmanta.rs (the real
# Inmanta deploys the references project there).
scripts/inmanta-reference-files.sh install

# A test that needs PostgreSQL has `postgres` in its name: the SQLite pass leaves those out, the
# PostgreSQL pass runs them. Any other test whose prerequisite is missing fails under CI=true
# (test-support/). `app`'s tests run here with `ssr`, as the workspace builds it.
stage "Rust tests on SQLite"
cargo test --workspace -- --skip postgres

stage "Rust tests on PostgreSQL"
source scripts/postgres.sh
ensure_postgres
# The test binaries of orchestrator, service and server exactly as the build stage made them, run
# again with PostgreSQL. `cargo test -p orchestrator -p service -p server` resolves the
# dependencies' features for those three crates alone (without the other members'
# dev-dependencies): it rebuilt tokio and about 75 crates above it, in place of the workspace's, so
# the next run's build stage rebuilt them once more.
for test_binary in $(workspace_test_binaries orchestrator service server); do
  (cd "${test_binary%%:*}" && INMANTA_TEST_POSTGRES="$POSTGRES_ADMIN_URL" "${test_binary#*:}")
done

# --- issue 18: schema fuzzing with schemathesis (PyPI, cached venv) against the server's OpenAPI
# document, on SQLite and on a fresh PostgreSQL database; any 5xx fails the run. The hardening and
# crash-restart tests run with the Rust tests above, on both databases. The two runs are apart
# (own server, own database) and each keeps one core busy at most: they run side by side, each
# into its own log, shown when it ends. ---
stage "schemathesis on SQLite and PostgreSQL, side by side"
fuzz_db="fuzz_$(date +%s)_$RANDOM"
psql "$POSTGRES_ADMIN_URL" -qc "CREATE DATABASE $fuzz_db" >/dev/null
fuzz_logs=$(mktemp -d)
ensure_schemathesis >/dev/null
scripts/schemathesis.sh >"$fuzz_logs/sqlite" 2>&1 &
fuzz_sqlite=$!
scripts/schemathesis.sh "${POSTGRES_ADMIN_URL%/*}/$fuzz_db" >"$fuzz_logs/postgres" 2>&1 &
fuzz_postgres=$!
fuzz_status=0
wait "$fuzz_sqlite" || fuzz_status=1
wait "$fuzz_postgres" || fuzz_status=1
cat "$fuzz_logs/sqlite" "$fuzz_logs/postgres" >&2
rm -rf "$fuzz_logs"
psql "$POSTGRES_ADMIN_URL" -qc "DROP DATABASE $fuzz_db WITH (FORCE)" >/dev/null || true
[ "$fuzz_status" = 0 ] || { echo "schemathesis found server errors (above)" >&2; exit 1; }
# --- end issue 18 ---

# Inmanta's own clients (inmanta-cli, exporter, Python client of inmanta-core 20.1, from the
# package index into the cached reference venv; Python 3.13 from pyenv) against our server,
# compared with the recorded answers of the real Inmanta server. See docs/api.md.
stage "Inmanta's clients against our server"
scripts/inmanta-clients/run.sh

# The release binary exactly as scripts/start.sh builds it (release console embedded); the binary
# browser test copies it alone into an empty directory.
stage "the release binary (waiting for its build, started after the debug build)"
release_status=0
wait "$release_pid" || release_status=$?
release_pid=""
if [ "$release_status" != 0 ]; then
  cat "$release_log" >&2
  echo "the release build failed (above)" >&2
  exit 1
fi
tail -3 "$release_log" >&2
log "the release build took $(mmss $(($(date +%s) - release_started))) beside the stages above"

stage "the Debian package: install, run as the service user, upgrade, remove"
# Revision 1 around the debug build, the upgrade to revision 2 around the release build: two
# different builds of this version.
scripts/test-deb.sh --old-binary "$CARGO_TARGET_DIR/debug/inmanta" --binary "$CARGO_TARGET_DIR/release/inmanta"

stage "browser tests"
state=$(mktemp -d)
# The browser tests sign in as this admin, made on the database before the server starts.
export E2E_USER=e2e E2E_PASSWORD="E2e-password-$RANDOM-x"
INMANTA_CONFIG_STATE_DIR="$state" INMANTA_PASSWORD="$E2E_PASSWORD" \
  "$CARGO_TARGET_DIR/debug/inmanta" user create "$E2E_USER" --admin --direct >/dev/null
"$CARGO_TARGET_DIR/debug/inmanta" server --bind-port 0 --state-dir "$state" \
  --console-path "$CARGO_TARGET_DIR/site" >"$state/stdout" 2>"$state/stderr" &
server_pid=$!
url=$(wait_for_server_url "$state" $server_pid 20)
# The binary test copies the release binary (with the release console embedded) alone elsewhere.
INMANTA_BINARY="$CARGO_TARGET_DIR/release/inmanta" INMANTA_URL="$url" end2end/run.sh

end_stage
log "all tests passed in $(mmss $(($(date +%s) - started)))"
