#!/usr/bin/env bash
# The reference install of scripts/inmanta-reference.sh plus the `files` module (and `config`, which
# it needs), pinned, in a directory of its own so the plain reference install keeps exactly its own
# pins. Same commands as inmanta-reference.sh (install, python, inmanta, path, server ...); used by
# server/tests/server/references_vs_inmanta.rs, where the real Inmanta deploys the references project.
set -euo pipefail
export INMANTA_REFERENCE_DIR="${INMANTA_REFERENCE_FILES_DIR:-$HOME/.cache/inmanta/reference-files}"
export INMANTA_REFERENCE_EXTRA="inmanta-module-files==2.11.1 inmanta-module-config==0.8.0"
exec "$(dirname "$0")/inmanta-reference.sh" "$@"
