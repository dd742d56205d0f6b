"""What the bridge's tests share: the package on the path, a compiler end that answers from a
script, and the shared state emptied between tests.

Run from the repository: `python -m unittest discover -s compiler/tests/python_bridge` with a
Python that has inmanta-core (compiler/tests/compiler/bridge_python.rs does, with scripts/python-test-venv.sh).
"""

import io
import json
import os
import sys

PACKAGE_PARENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "python")
if PACKAGE_PARENT not in sys.path:
    sys.path.insert(0, os.path.normpath(PACKAGE_PARENT))

from inmanta_rs_bridge import protocol  # noqa: E402


class CompilerEnd:
    """The compiler's side of a channel: `replies` are the lines it answers with, in order; `sent`
    is what the bridge wrote, one document per line."""

    def __init__(self, *replies, serve=None):
        self.reader = io.StringIO("".join(json.dumps(r) + "\n" for r in replies))
        self.writer = io.StringIO()
        self.channel = protocol.Channel(self.reader, self.writer, serve)

    def __enter__(self):
        self.previous = protocol._channel
        protocol.connect(self.channel)
        return self

    def __exit__(self, *exc):
        protocol.connect(self.previous)

    @property
    def sent(self):
        return [json.loads(line) for line in self.writer.getvalue().splitlines()]


def core():
    """inmanta-core's names as the bridge imported them; a test that needs them fails, saying why,
    when this Python has no inmanta-core."""
    from inmanta_rs_bridge import core

    if core.IMPORT_ERROR:
        raise AssertionError(core.IMPORT_ERROR)
    return core


def clear_state():
    """Forgets every type, instance, reference and pairing an earlier test left."""
    from inmanta_rs_bridge import state

    for name, value in vars(state).items():
        if not name.startswith("__") and isinstance(value, dict):
            value.clear()
