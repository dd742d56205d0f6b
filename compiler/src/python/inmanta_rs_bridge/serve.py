"""The request loop."""

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
    send({"ready": sys.version.split()[0]})
    while True:
        request = receive()
        if request.get("op") == "exit":
            return
        send(serve(request))
