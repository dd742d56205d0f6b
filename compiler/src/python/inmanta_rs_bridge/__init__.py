# The Python side of the compiler's plugin bridge (compiler/src/python/bridge.rs).
#
# Runs in the project's Python environment, next to the compiler, for one compile. It imports the
# `inmanta_plugins` packages of the modules the model loads, reports their plugins and `@resource`
# classes, and serves plugin calls and resource exports. Entity instances stay in the compiler:
# they reach plugins as inmanta-core's own DynamicProxy over a stand-in instance whose attribute
# reads are questions back to the compiler.
#
# Protocol: one JSON document per line on stdin/stdout. The compiler sends a request; this side
# answers with zero or more questions ({"get": ...}, {"type": ...}, {"conforms": ...}, {"call": ...},
# {"plugins": ...}, {"file": ..., "content": ...}), each answered by the compiler, and then exactly
# one final answer ({"ok": ...} or {"error": ...} or {"unset": ...}). Requests nest: while answering
# a question the compiler may send a request (a typedef constraint calling a Python plugin), served
# before the reply comes. The compiler's side of every line is a serde type in
# compiler/src/python/protocol.rs (requests by their "op"): a line it cannot read as one fails the
# compile, so the two change together.
# Values: JSON scalars and arrays; dicts as {"$d": [[key, value], ...]} (a JSON object would lose
# the insertion order a dict keeps in Inmanta); instances as {"$i": id, "$t": type};
# unknowns as {"$u": 1}; references as {"$r": id, "references": {id: {"model", "module", "class"}}}
# (the reference and every reference it takes, as inmanta-core serializes them).
#
# The parts, in the order `main` starts them: protocol (the JSON lines), deferral (the import
# hooks that make starting fast), core (inmanta-core, imported once the hooks are in place),
# state (what the parts share for the whole process), remote (entity types and instances),
# references, values (encode/decode), typechecks (plugin annotations), paired (model dataclasses),
# plugin, standins (Context, Compiler, Project), exporter, bridge (the requests) and serve (the
# loop). This package is named so that it can not clash with a package of the modules' code, and
# the compiler imports it without putting it on sys.path: the modules' code sees the same
# sys.path as when the bridge was one `python -c` script.
