"""Puts the same content into a server (ours or Inmanta 20.1) for the web-console comparison.

Run in the reference venv (inmanta-core 20.1, whose exporter exports the model):
    seed.py --url http://127.0.0.1:PORT [--token TOKEN] --out seed.json

Content: project `compare`, environment `web`; version 1 and version 2 exported and released by
Inmanta's own exporter (`inmanta export -d`): `ok` deploys, `broken` fails (`fail=true`),
`after` requires `broken` and is skipped; a fact on `ok`, a parameter, a failed server compile
(a repository that does not exist), a discovered resource. Writes the ids it made to --out.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
INMANTA = os.path.join(os.path.dirname(sys.executable), "inmanta")

MODEL = """import std::testing

ok = std::testing::NullResource(name="ok", value="{value}")
broken = std::testing::NullResource(name="broken", value="{value}", fail=true)
after = std::testing::NullResource(name="after", value="{value}", requires=broken)
"""


class Server:
    def __init__(self, url: str, token: str | None) -> None:
        self.url = url.rstrip("/")
        self.token = token

    def call(self, method: str, path: str, env: str | None = None, body: object = None, token: str | None = None) -> dict:
        headers = {"Content-Type": "application/json"}
        if env:
            headers["X-Inmanta-tid"] = env
        if token or self.token:
            headers["Authorization"] = f"Bearer {token or self.token}"
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read() or b"null") or {}
        except urllib.error.HTTPError as e:
            sys.exit(f"{method} {path}: {e.code} {e.read().decode(errors='replace')}")


def export(server: Server, env: str, value: str, work: str) -> None:
    project = os.path.join(work, f"project-{value}")
    os.makedirs(project, exist_ok=True)
    with open(os.path.join(project, "main.cf"), "w") as f:
        f.write(MODEL.format(value=value))
    with open(os.path.join(project, "project.yml"), "w") as f:
        # std is a v2 module installed in the reference venv; Inmanta's agents pip-install the
        # handler code from the system's pip configuration (PIP_NO_INDEX: from that venv).
        f.write("name: compare\nmodulepath: []\ndownloadpath: libs\npip:\n  use_system_config: true\n")
    with open(os.path.join(project, "requirements.txt"), "w") as f:
        f.write("inmanta-module-std\n")
    host, port = server.url.split("//", 1)[1].split(":")
    argv = [INMANTA, "export", "-d", "-e", env, "--server_address", host, "--server_port", port]
    process_env = dict(os.environ, XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp"))
    if server.token:
        process_env["INMANTA_COMPILER_REST_TRANSPORT_TOKEN"] = server.token
    done = subprocess.run(argv, cwd=project, env=process_env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"inmanta export failed:\n{done.stdout}\n{done.stderr}")


def wait(what: str, check, seconds: int = 180) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if check():
            return
        time.sleep(0.5)
    sys.exit(f"timed out waiting for {what}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    server = Server(args.url, args.token)
    project = server.call("PUT", "/api/v2/project", body={"name": "compare"})["data"]["id"]
    env = server.call("PUT", "/api/v2/environment", body={"name": "web", "project_id": project})["data"]["id"]
    work = tempfile.mkdtemp(prefix="compare-web-console-")

    def resources() -> list:
        return server.call("GET", "/api/v2/resource?limit=100", env=env).get("data", [])

    def settled() -> bool:
        states = {r["resource_id"]: r["status"] for r in resources()}
        return len(states) == 3 and all(s not in ("available", "deploying") for s in states.values())

    for value in ("one", "two"):
        export(server, env, value, work)
        wait(f"version {value} to deploy", settled)
    ok = "std::testing::NullResource[internal,name=ok]"
    server.call("PUT", "/api/v1/parameter/disk_size", env=env, body={"source": "fact", "value": "20", "resource_id": ok})
    server.call("PUT", "/api/v1/parameter/region", env=env, body={"source": "user", "value": "eu-west"})
    server.call(
        "POST",
        "/api/v2/environment_settings/autostart_agent_deploy_interval",
        env=env,
        body={"value": "600"},
    )
    server.call(
        "POST",
        f"/api/v2/environment/{env}",
        body={"name": "web", "repository": "file:///nonexistent/compare-repo", "branch": "main"},
    )
    server.call("POST", f"/api/v1/notify/{env}", body={"update": True})

    def compile_done() -> bool:
        reports = server.call("GET", "/api/v2/compilereport?limit=5", env=env).get("data", [])
        return bool(reports) and all(r.get("completed") for r in reports)

    wait("the server compile to fail", compile_done)
    agent_token = None
    if server.token:
        agent_token = server.call("POST", "/api/v2/environment_auth", env=env, body={"client_types": ["agent"]})["data"]
    discovered = "std::testing::NullResource[internal,name=found]"
    server.call(
        "POST",
        "/api/v2/discovered/" + urllib.request.quote(discovered, safe=""),
        env=env,
        body={"discovery_resource_id": ok, "values": {"name": "found", "value": "seen"}},
        token=agent_token,
    )
    versions = sorted(v["version"] for v in server.call("GET", "/api/v1/version", env=env)["versions"])
    with open(args.out, "w") as f:
        json.dump(
            {
                "project": project,
                "environment": env,
                "versions": versions,
                "resources": {r["resource_id"]: r["status"] for r in resources()},
                "discovered": discovered,
                "compile": server.call("GET", "/api/v2/compilereport?limit=1", env=env)["data"][0]["id"],
            },
            f,
            indent=1,
        )


if __name__ == "__main__":
    main()
