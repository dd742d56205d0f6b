#!/bin/sh
# Prints the Python of a cached virtual environment for module tests with pytest-inmanta: Inmanta
# 20.1 (pytest-inmanta runs its loader, and its compiler unless --inmanta-compiler rs) with the
# modules the tests use, from the package index (network once; cached in
# ~/.cache/inmanta/pytest-inmanta, or $INMANTA_PYTEST_VENV_ROOT). inmanta-core 20.1 needs Python
# 3.13: $INMANTA_TEST_PYTHON, else python3.13, else pyenv's. The plugin of
# packaging/pytest-inmanta-rs is not installed here: tests load it with PYTHONPATH and `-p`.
# pytest stays below 9: pytest-inmanta 4.0.0 declares --install_mode and --install-mode with one
# destination, which pytest 9 refuses.
#
# With a module's package (`pytest-inmanta-venv.sh inmanta-module-files==2.11.1`): a venv of its
# own where that module's source tree is installed editable (`pip install -e .`, as
# pytest-inmanta asks of the module under test) with its dependencies, and a second line: that
# source tree, laid out again from the module's source distribution (an sdist that
# `inmanta module build` made has model/, files/, templates/ and setup.cfg inside
# inmanta_plugins/<name>/; the source tree has them at its top), its own tests/ included.
set -eu
REQUIREMENTS="inmanta-core==20.1.0 pytest-inmanta==4.0.0 pytest==8.4.2 inmanta-module-std==8.7.5 inmanta-module-fs==1.2.0 inmanta-module-mitogen==0.2.5"
MODULE="${1:-}"
ROOT="${INMANTA_PYTEST_VENV_ROOT:-$HOME/.cache/inmanta/pytest-inmanta}"
KEY=$(printf '%s' "$REQUIREMENTS${MODULE:+ $MODULE}" | sha1sum | cut -c1-12)
VENV="$ROOT/venv-$KEY"
SOURCE="$ROOT/source-$KEY"
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
    rm -rf "$VENV" "$SOURCE"
    "$PYTHON" -m venv "$VENV" >&2
    PIP="$VENV/bin/pip --quiet --disable-pip-version-check"
    EDITABLE=""
    if [ -n "$MODULE" ]; then
        mkdir -p "$SOURCE/sdist"
        $PIP download --no-deps --no-binary :all: -d "$SOURCE/sdist" "$MODULE" >&2
        "$VENV/bin/python" - "$SOURCE/sdist" "$SOURCE/tree" <<'PY'
import os, shutil, sys, tarfile
sdists, tree = sys.argv[1:3]
(archive,) = [f for f in os.listdir(sdists) if f.endswith(".tar.gz")]
with tarfile.open(os.path.join(sdists, archive)) as t:
    t.extractall(sdists, filter="data")
(top,) = [d for d in os.listdir(sdists) if os.path.isdir(os.path.join(sdists, d))]
shutil.move(os.path.join(sdists, top), tree)
(name,) = [d for d in os.listdir(os.path.join(tree, "inmanta_plugins"))]
inner = os.path.join(tree, "inmanta_plugins", name)
for part in ("model", "files", "templates", "setup.cfg"):
    if os.path.exists(os.path.join(inner, part)):
        if os.path.isfile(os.path.join(tree, part)):
            os.remove(os.path.join(tree, part))
        shutil.move(os.path.join(inner, part), os.path.join(tree, part))
for made in os.listdir(tree):
    if made.endswith(".egg-info") or made == "PKG-INFO":
        path = os.path.join(tree, made)
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
PY
        EDITABLE="-e $SOURCE/tree"
    fi
    # shellcheck disable=SC2086
    $PIP install $REQUIREMENTS $EDITABLE >&2
    touch "$VENV/.complete"
fi
echo "$VENV/bin/python"
if [ -n "$MODULE" ]; then
    echo "$SOURCE/tree"
fi
