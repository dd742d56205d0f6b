"""Errors as the compiler gets them: the final answer of a request that failed."""

import importlib.util
import os
import sys
import traceback

from .core import inmanta


class WaitingForCompiler(Exception):
    """An attribute a plugin read is not set yet: the compiler runs the call again later."""


# Frames in these files are the bridge's own, never the place an error is reported at: every part
# of this package, and code compiled from a string (the `python -c` line that starts the bridge,
# the methods `dataclasses` generates).
_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def is_own_frame(filename):
    return filename.startswith(_OWN_DIR) or "<string>" in filename


def last_frame(exc):
    frames = traceback.extract_tb(exc.__traceback__)
    # the innermost frame that is not this bridge
    for f in reversed(frames):
        if not is_own_frame(f.filename):
            return f"{f.filename}:{f.lineno} in {f.name}"
    return frames[-1].filename + ":" + str(frames[-1].lineno) if frames else ""


def error_answer(exc):
    if isinstance(exc, WaitingForCompiler):
        return {"unset": True}
    if isinstance(exc, (inmanta.ast.UnsetException, inmanta.ast.MultiUnsetException)):
        return {"unset": True}
    if isinstance(exc, inmanta.ast.UnknownException):
        return {"ok": {"$u": 1}}
    kind = type(exc).__name__
    python_class = None
    if isinstance(exc, inmanta.plugins.PluginException):
        kind = "PluginException"
        # Inmanta reports an explicit plugin exception as the class the plugin raised
        python_class = f"{type(exc).__module__}.{type(exc).__qualname__}"
    message = describe(exc)
    # the frame that raised first: the innermost cause
    innermost = exc
    cause = exc.__cause__
    while cause is not None and cause is not innermost:
        message += f": caused by {type(cause).__name__}: {describe(cause)}"
        innermost = cause
        cause = cause.__cause__
    error = {"type": kind, "message": message, "frame": last_frame(innermost)}
    if python_class is not None:
        error["class"] = python_class
    return {"error": error}


def import_failure(exc, module, fq_import):
    """A module's Python code that does not import, reported as Inmanta reports it: a
    CompilerException located at the line of the failing file that raised."""
    spec = sys.modules.get(fq_import)
    path = getattr(spec, "__file__", None) or ""
    if not path:
        found = importlib.util.find_spec(fq_import) if "." not in fq_import or fq_import.rsplit(".", 1)[0] in sys.modules else None
        path = getattr(found, "origin", None) or ""
    line = None
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename == path:
            line = frame.lineno
            break
    kind = type(exc).__qualname__ if type(exc).__module__ in (None, "builtins") else f"{type(exc).__module__}.{type(exc).__qualname__}"
    message = f"Unable to load all plug-ins for module {module}:\n\t{kind} while loading plugin module {fq_import}: {exc}"
    return {"error": {"type": "CompilerException", "message": message, "frame": last_frame(exc), "file": path, "line": line or 0}}


def describe(exc):
    return getattr(exc, "msg", None) or str(exc) or type(exc).__name__
