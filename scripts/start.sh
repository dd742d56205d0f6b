#!/usr/bin/env bash
# Builds the console and the server (release) and starts `inmanta server` on the embedded SQLite
# database under data/server. Extra arguments go to `inmanta server` (e.g. --bind-port 9000).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

ensure_build_deps
log "building the console"
# The release site has its own directory, so the debug builds of scripts/test.sh keep theirs.
site="$CARGO_TARGET_DIR/site-release"
scripts/build-console.sh --release --site "$site"
log "building the server"
INMANTA_CONSOLE_SITE="$site" cargo build --release -p server --bin inmanta
log "starting the server (Ctrl-C stops it)"
# The console is embedded in the binary (built before it); --console-path DIR would override it.
exec "$CARGO_TARGET_DIR/release/inmanta" server --state-dir data/server "$@"
