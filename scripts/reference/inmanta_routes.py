"""Prints every route of the installed inmanta-core's API (protocol/methods.py and methods_v2.py)
as tab-separated lines: HTTP method, path, the method's name, the client types that may call it
(empty: internal to Inmanta's own processes). Run with the reference venv's Python:

    ~/.cache/inmanta/reference/venv/bin/python scripts/reference/inmanta_routes.py \
        > service/tests/fixtures/inmanta-20.1-routes.tsv

service/src/rest/inmanta_routes.rs compares the result with our router and docs/api.md.
"""

import inmanta.protocol.methods  # noqa: F401 (registers the v1 methods)
import inmanta.protocol.methods_v2  # noqa: F401 (registers the v2 methods)
from inmanta.protocol.common import MethodProperties


def client_types(properties: MethodProperties) -> str:
    return ",".join(sorted(str(getattr(c, "value", c)) for c in properties.client_types))


rows = set()
for name, registrations in MethodProperties.methods.items():
    for properties in registrations:
        path = f"/api/v{properties.api_version}{properties.path}"
        rows.add((path, properties.operation, name, client_types(properties)))

print("# method\tpath\tinmanta method\tclient types (empty: internal)")
for path, operation, name, clients in sorted(rows):
    print(f"{operation}\t{path}\t{name}\t{clients}")
