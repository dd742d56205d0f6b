#!/usr/bin/env bash
# Makes the upgrade fixture of the current release: a database of every kind of row, as this
# release leaves it, in server/tests/fixtures/release-<version>/ (inmanta.db for SQLite and
# postgres.sql, a plain pg_dump). Run it once per release, before the release is tagged, and
# commit the result: later releases must migrate it and serve every route (server/tests/server/upgrade.rs).
#
#   scripts/make-upgrade-fixture.sh
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/postgres.sh"
cd "$ROOT"

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
out="$ROOT/server/tests/fixtures/release-$version"
mkdir -p "$out"
log "SQLite fixture of release $version"
INMANTA_FIXTURE_DIR="$out" cargo test -p server --test server -- --ignored --exact upgrade::make_release_fixture
ensure_postgres
trap stop_postgres EXIT
log "PostgreSQL fixture of release $version"
INMANTA_FIXTURE_DIR="$out" INMANTA_TEST_POSTGRES="$POSTGRES_ADMIN_URL" \
  cargo test -p server --test server -- --ignored --exact upgrade::make_release_fixture
ls -l "$out"
