#!/usr/bin/env bash
# The reference install of the real Inmanta (inmanta-core 20.1 with its std, fs and mitogen modules,
# from the package index), the oracle our compiler and server are judged against. Only needed to
# record what Inmanta answers; the recorded answers live in the repository and CI reads those.
#
#   scripts/inmanta-reference.sh install        install (once) into $INMANTA_REFERENCE_DIR
#   scripts/inmanta-reference.sh python ARGS    run the reference venv's Python
#   scripts/inmanta-reference.sh inmanta ARGS   run the real `inmanta` command
#   scripts/inmanta-reference.sh path           print the venv's bin directory
#   scripts/inmanta-reference.sh server ...     the real server (scripts/inmanta-reference-server.sh)
#
# INMANTA_REFERENCE_EXTRA (pinned requirements, space-separated) adds packages to the install; use
# it with an INMANTA_REFERENCE_DIR of its own so the plain reference install stays as pinned here
# (scripts/inmanta-reference-files.sh adds the files module that way).
#
# Python 3.13 is needed by inmanta-core 20.1: taken from $INMANTA_REFERENCE_PYTHON, pyenv, or PATH.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

REF_DIR="${INMANTA_REFERENCE_DIR:-$HOME/.cache/inmanta/reference}"
VENV="$REF_DIR/venv"
# Pinned: the recorded answers are those of exactly these versions.
PACKAGES=(
  "inmanta-core==20.1.0"
  "inmanta-module-std==8.7.5"
  "inmanta-module-fs==1.2.0"
  "inmanta-module-mitogen==0.2.5"
  "inmanta-module-exec==2.1.1"
)
# shellcheck disable=SC2206 # a list of pinned requirements, split on spaces on purpose
EXTRA=(${INMANTA_REFERENCE_EXTRA:-})
PACKAGES+=("${EXTRA[@]}")

find_python313() {
  local candidates=("${INMANTA_REFERENCE_PYTHON:-}" "$HOME/.pyenv/versions/3.13.0/bin/python")
  if command -v pyenv >/dev/null; then
    local v
    v=$(pyenv versions --bare 2>/dev/null | grep -E '^3\.13(\.|$)' | tail -1 || true)
    [ -n "$v" ] && candidates+=("$(pyenv root)/versions/$v/bin/python")
  fi
  candidates+=("$(command -v python3.13 || true)")
  for p in "${candidates[@]}"; do
    if [ -n "$p" ] && [ -x "$p" ] && "$p" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))'; then
      echo "$p"; return 0
    fi
  done
  echo "Python 3.13 not found: install it (pyenv install 3.13) or set INMANTA_REFERENCE_PYTHON" >&2
  return 1
}

install() {
  local stamp="$VENV/.installed" want
  want=$(printf '%s\n' "${PACKAGES[@]}")
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  log "installing the reference Inmanta into $VENV"
  mkdir -p "$REF_DIR"
  local py
  py=$(find_python313)
  rm -rf "$VENV"
  "$py" -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q "${PACKAGES[@]}"
  echo "$want" >"$stamp"
}

cmd="${1:-install}"
shift || true
case "$cmd" in
  install) install ;;
  python) install; exec "$VENV/bin/python" "$@" ;;
  inmanta) install; exec "$VENV/bin/inmanta" "$@" ;;
  path) install; echo "$VENV/bin" ;;
  server) exec "$(dirname "$0")/inmanta-reference-server.sh" "$@" ;;
  *) echo "usage: $0 install|python|inmanta|path|server" >&2; exit 2 ;;
esac
