"""Starts `inmanta lsp` where editors start Inmanta's Python language server (inmantals)."""

import os
import shutil
import sys

ENV_VAR = "INMANTALS_INMANTA"
"""The `inmanta` binary to run, when it is not the first one on PATH that is not a Python script."""

_PLACES = ("/usr/bin/inmanta", "/usr/local/bin/inmanta", "/opt/inmanta/bin/inmanta")


def _is_native(path):
    # Inmanta's own `inmanta` (inmanta-core, often in the same virtual environment) is a Python
    # console script: a text file starting with `#!`
    try:
        with open(path, "rb") as f:
            return f.read(2) != b"#!"
    except OSError:
        return False


def find_inmanta():
    """The path of the Rust `inmanta` binary, or None."""
    configured = os.environ.get(ENV_VAR)
    if configured:
        return configured
    candidates = []
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        found = shutil.which("inmanta", path=directory) if directory else None
        if found:
            candidates.append(found)
    candidates.extend(p for p in _PLACES if os.access(p, os.X_OK))
    for candidate in candidates:
        if _is_native(candidate):
            return candidate
    return None


def run_language_server():
    """Replaces this process by `inmanta lsp`, which speaks LSP on the same stdin and stdout."""
    inmanta = find_inmanta()
    if inmanta is None:
        sys.stderr.write(
            "inmantals: no `inmanta` binary of the Rust compiler found: put it on PATH "
            f"or set {ENV_VAR} to its path (docs/editors.md)\n"
        )
        sys.exit(2)
    sys.stdout.flush()
    os.execv(inmanta, [inmanta, "lsp"])
