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

ensure_build_deps
ensure_sshd
ensure_age

log "format and lints"
cargo fmt --all --check
scripts/check-vocabulary.sh
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy -p app --features ssr --all-targets -- -D warnings
ensure_wasm_target
LEPTOS_OUTPUT_NAME=console cargo clippy -p frontend --target wasm32-unknown-unknown --features hydrate \
  --target-dir "$CARGO_TARGET_DIR/front" -- -D warnings

log "building the console and the server"
scripts/build-console.sh
cargo build -p server --bin inmanta

# Inmanta 20.1's inmanta-cli (the reference venv) runs in server/tests/token_registry.rs.
log "the reference install (inmanta-core 20.1) for the tests that run Inmanta's clients"
scripts/inmanta-reference.sh install
# ... and with the files module, for server/tests/references_vs_inmanta.rs (the real Inmanta deploys
# the references project there).
scripts/inmanta-reference-files.sh install

# A test that needs PostgreSQL has `postgres` in its name: the SQLite pass leaves those out, the
# PostgreSQL pass runs them. Any other test whose prerequisite is missing fails under CI=true
# (test-support/).
log "Rust tests on SQLite"
cargo test --workspace -- --skip postgres
cargo test -p app --features ssr

log "Rust tests on PostgreSQL"
source scripts/postgres.sh
ensure_postgres
INMANTA_TEST_POSTGRES="$POSTGRES_ADMIN_URL" cargo test -p orchestrator -p service -p server

# --- issue 18: schema fuzzing with schemathesis (PyPI, cached venv) against the server's OpenAPI
# document, on SQLite and on a fresh PostgreSQL database; any 5xx fails the run. The hardening and
# crash-restart tests run with the Rust tests above, on both databases. ---
log "schemathesis on SQLite and PostgreSQL"
scripts/schemathesis.sh
fuzz_db="fuzz_$(date +%s)_$RANDOM"
psql "$POSTGRES_ADMIN_URL" -qc "CREATE DATABASE $fuzz_db" >/dev/null
scripts/schemathesis.sh "${POSTGRES_ADMIN_URL%/*}/$fuzz_db"
psql "$POSTGRES_ADMIN_URL" -qc "DROP DATABASE $fuzz_db WITH (FORCE)" >/dev/null || true
# --- end issue 18 ---

# Inmanta's own clients (inmanta-cli, exporter, Python client of inmanta-core 20.1, from the
# package index into the cached reference venv; Python 3.13 from pyenv) against our server,
# compared with the recorded answers of the real Inmanta server. See docs/api.md.
log "Inmanta's clients against our server"
scripts/inmanta-clients/run.sh

# The release binary exactly as scripts/start.sh builds it (release console embedded); the binary
# browser test copies it alone into an empty directory.
log "building the release binary"
scripts/build-release.sh

log "the Debian package: install, run as the service user, upgrade, remove"
# Revision 1 around the debug build, the upgrade to revision 2 around the release build: two
# different builds of this version.
scripts/test-deb.sh --old-binary "$CARGO_TARGET_DIR/debug/inmanta" --binary "$CARGO_TARGET_DIR/release/inmanta"

log "browser tests"
ensure_chromium
state=$(mktemp -d)
# The browser tests sign in as this admin, made on the database before the server starts.
export E2E_USER=e2e E2E_PASSWORD="E2e-password-$RANDOM-x"
INMANTA_CONFIG_STATE_DIR="$state" INMANTA_PASSWORD="$E2E_PASSWORD" \
  "$CARGO_TARGET_DIR/debug/inmanta" user create "$E2E_USER" --admin --direct >/dev/null
"$CARGO_TARGET_DIR/debug/inmanta" server --bind-port 0 --state-dir "$state" \
  --console-path "$CARGO_TARGET_DIR/site" >"$state/stdout" 2>"$state/stderr" &
server_pid=$!
trap 'kill $server_pid 2>/dev/null || true; stop_postgres' EXIT
url=$(wait_for_server_url "$state" $server_pid 20)
# The binary test copies the release binary (with the release console embedded) alone elsewhere.
INMANTA_BINARY="$CARGO_TARGET_DIR/release/inmanta" INMANTA_URL="$url" end2end/run.sh

log "all tests passed in $(( $(date +%s) - started )) s"
