#!/bin/sh
# Prints the Python of a cached virtual environment for module tests with pytest-inmanta: Inmanta
# 20.1 (pytest-inmanta runs its loader, and its compiler unless --inmanta-compiler rs) with the
# modules the tests use, from the package index (network once; cached in
# ~/.cache/inmanta/pytest-inmanta, or $INMANTA_PYTEST_VENV_ROOT). inmanta-core 20.1 needs Python
# 3.13: $INMANTA_TEST_PYTHON, else python3.13, else pyenv's. The plugin of
# packaging/pytest-inmanta-rs is not installed here: tests load it with PYTHONPATH and `-p`.
# pytest stays below 9: pytest-inmanta 4.0.0 declares --install_mode and --install-mode with one
# destination, which pytest 9 refuses.
set -eu
REQUIREMENTS="inmanta-core==20.1.0 pytest-inmanta==4.0.0 pytest==8.4.2 inmanta-module-std==8.7.5 inmanta-module-fs==1.2.0 inmanta-module-mitogen==0.2.5"
ROOT="${INMANTA_PYTEST_VENV_ROOT:-$HOME/.cache/inmanta/pytest-inmanta}"
KEY=$(printf '%s' "$REQUIREMENTS" | sha1sum | cut -c1-12)
VENV="$ROOT/venv-$KEY"
mkdir -p "$ROOT"
exec 9>"$ROOT/.lock"
flock 9
if [ ! -e "$VENV/.complete" ]; then
    PYTHON="${INMANTA_TEST_PYTHON:-}"
    if [ -z "$PYTHON" ]; then
        for candidate in python3.13 "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.13*/bin/python; do
            if command -v "$candidate" >/dev/null 2>&1 &&
                "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' 2>/dev/null; then
                PYTHON="$candidate"
                break
            fi
        done
    fi
    if [ -z "$PYTHON" ]; then
        echo "no Python 3.13 found: set INMANTA_TEST_PYTHON" >&2
        exit 1
    fi
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" >&2
    "$VENV/bin/pip" install --quiet --disable-pip-version-check $REQUIREMENTS >&2
    touch "$VENV/.complete"
fi
echo "$VENV/bin/python"
