"""
Deploys a project with the real Inmanta 20.1 (a reference server started by
`scripts/inmanta-reference.sh server start`), for server/tests/server/references_vs_inmanta.rs: a new
project and environment, the facts given, the real `inmanta export` of PROJECT_DIR (modules from
the reference venv, v1 modules from the project's modulepath), then the server's own scheduler
and agents deploy it. Run with the reference venv's Python:

    python references_deploy.py URL PROJECT_DIR FACTS_JSON

FACTS_JSON is a list of {"resource_id", "name", "value"}. Waits until no resource is deploying or
waiting and prints one JSON object: {"environment": id, "resources": {resource id: {"status",
"messages": [the messages of its last deploy's log lines]}}}.
"""

import json
import os
import pathlib
import subprocess
import sys
import time
import urllib.parse

from rest import call  # scripts/reference/rest.py, beside this script

BIN = pathlib.Path(sys.executable).parent
# a state that is not final: the deploy is still going on
MOVING = {"deploying", "available", "unavailable"}


def settled(url: str, env: str, deadline: float) -> list[dict]:
    """The resources of the environment once every one has a final state."""
    while True:
        resources = call(url, "GET", "/api/v2/resource?limit=1000", env)["data"]
        moving = [r["resource_id"] for r in resources if r["status"] in MOVING]
        if resources and not moving:
            return resources
        if time.monotonic() > deadline:
            sys.exit(f"the reference server did not finish deploying: {moving}")
        time.sleep(0.5)


def messages(url: str, env: str, resource_id: str) -> list[str]:
    quoted = urllib.parse.quote(resource_id, safe="")
    logs = call(url, "GET", f"/api/v2/resource/{quoted}/logs?limit=100", env)["data"]
    return [line["msg"] for line in logs]


def main() -> None:
    url, project_dir, facts = sys.argv[1], pathlib.Path(sys.argv[2]), json.loads(sys.argv[3])
    port = url.rsplit(":", 1)[1]
    project = call(url, "PUT", "/api/v2/project", body={"name": "references"})["data"]
    env = call(url, "PUT", "/api/v2/environment", body={"project_id": project["id"], "name": "references"})["data"]["id"]
    for fact in facts:
        body = {"source": "fact", "value": fact["value"], "resource_id": fact["resource_id"]}
        call(url, "PUT", f"/api/v1/parameter/{urllib.parse.quote(fact['name'], safe='')}", env, body)
    proc = subprocess.run(
        [BIN / "inmanta", "export", "-e", env, "--server_address", "127.0.0.1", "--server_port", port],
        cwd=project_dir,
        env=dict(os.environ, XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp")),
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        sys.exit(f"inmanta export failed:\n{proc.stdout}\n{proc.stderr}")
    resources = settled(url, env, time.monotonic() + 300)
    out = {
        r["resource_id"]: {"status": r["status"], "messages": messages(url, env, r["resource_id"])} for r in resources
    }
    print(json.dumps({"environment": env, "resources": out}))


if __name__ == "__main__":
    main()
