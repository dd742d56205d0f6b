"""The request loop."""

import os
import sys

from .bridge import Bridge
from .errors import last_frame
from .paired import pair_dataclasses
from .protocol import receive, send


_BRIDGE = Bridge()


def serve(request):
    """The answer to one request of the compiler."""
    op = request.get("op")
    try:
        if op == "load":
            return _BRIDGE.load(request)
        if op == "call":
            return _BRIDGE.call(request)
        if op == "export":
            return _BRIDGE.export(request)
        if op == "dependencies":
            return _BRIDGE.dependencies(request)
        if op == "resource_id":
            return _BRIDGE.resource_id(request)
        if op == "dataclasses":
            return {"ok": pair_dataclasses(request["entities"])}
        return {"error": {"type": "CompilerException", "message": f"unknown request {op!r}", "frame": ""}}
    except Exception as e:  # a bug of this bridge, reported rather than hanging the compiler
        return {"error": {"type": "CompilerException", "message": f"{type(e).__name__}: {e}", "frame": last_frame(e)}}


def main():
    ready = {"ready": sys.version.split()[0]}
    send(ready)
    while True:
        request = receive()
        op = request.get("op")
        if op == "exit":
            return
        if op == "fork":
            # a compile served by a copy of this process as it is now (modules imported, no
            # compile run): the copy answers on the same pipes until its "exit", then this one is
            # ready again (see the compiler's python/spare.rs)
            child = os.fork()
            if child == 0:
                send({"forked": os.getpid()})
                _serve_one_compile()
            os.waitpid(child, 0)
            send(ready)
            continue
        send(serve(request))


def _serve_one_compile():
    """The forked copy: serves until the compile's "exit" (or the end of its stdin), and ends
    without running the exit handlers of the process it was copied from."""
    while True:
        request = receive()
        if request.get("op") == "exit":
            sys.stdout.flush()
            os._exit(0)
        send(serve(request))
