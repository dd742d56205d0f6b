#!/usr/bin/env bash
# Runs the browser tests of the console against a running server.
#
#   INMANTA_URL=http://127.0.0.1:8888 end2end/run.sh [node --test args...]
#
# Installs node_modules (npm ci, from the committed package-lock.json) and Chromium (Debian) when
# missing; playwright-core drives /usr/bin/chromium (CHROMIUM_PATH), Playwright's own browser
# download is never used. Screenshots go to end2end/test-results/.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"
: "${INMANTA_URL:?set INMANTA_URL to the server to test, e.g. http://127.0.0.1:8888}"
export INMANTA_URL
ensure_chromium
ensure_node_modules
cd "$ROOT/end2end"
log "browser tests against $INMANTA_URL"
exec node --test --test-concurrency=1 --test-reporter=spec "$@" tests/
