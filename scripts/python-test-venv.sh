#!/bin/sh
# Prints the Python of a cached virtual environment holding inmanta-core and the module wheels the
# Python handler tests use (from the package index, so it needs network once; cached afterwards in
# ~/.cache/inmanta/pyhandlers, or $INMANTA_TEST_VENV_ROOT). The interpreter must be Python 3.12 or
# newer (inmanta-module-std uses 3.12 syntax): $INMANTA_TEST_PYTHON, else python3.13, python3.12,
# else the newest of pyenv's.
set -eu
REQUIREMENTS="inmanta-module-apt==1.1.0 inmanta-module-files==2.11.1"
ROOT="${INMANTA_TEST_VENV_ROOT:-$HOME/.cache/inmanta/pyhandlers}"
KEY=$(printf '%s' "$REQUIREMENTS" | sha1sum | cut -c1-12)
VENV="$ROOT/venv-$KEY"
mkdir -p "$ROOT"
exec 9>"$ROOT/.lock"
flock 9
if [ ! -e "$VENV/.complete" ]; then
    PYTHON="${INMANTA_TEST_PYTHON:-}"
    if [ -z "$PYTHON" ]; then
        for candidate in python3.13 python3.12 \
            "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.13*/bin/python \
            "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.12*/bin/python; do
            if command -v "$candidate" >/dev/null 2>&1 &&
                "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
                PYTHON="$candidate"
                break
            fi
        done
    fi
    if [ -z "$PYTHON" ]; then
        echo "no Python 3.12 or newer found: set INMANTA_TEST_PYTHON" >&2
        exit 1
    fi
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" >&2
    "$VENV/bin/pip" install --quiet --disable-pip-version-check $REQUIREMENTS >&2
    touch "$VENV/.complete"
fi
echo "$VENV/bin/python"
