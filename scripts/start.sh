#!/usr/bin/env bash
# Builds the console and the server (release) and starts `inmanta server` on the embedded SQLite
# database under data/server. Extra arguments go to `inmanta server` (e.g. --bind-port 9000).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

# The console and the server, side by side; the release site has its own directory
# ($CARGO_TARGET_DIR/site-release), so the debug builds of scripts/test.sh keep theirs.
scripts/build-release.sh
log "starting the server (Ctrl-C stops it)"
# The console is embedded in the binary (built before it); --console-path DIR would override it.
exec "$CARGO_TARGET_DIR/release/inmanta" server --state-dir data/server "$@"
