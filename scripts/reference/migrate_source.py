"""
Fills a reference Inmanta server (scripts/inmanta-reference.sh server start) with what
`inmanta migrate` moves, for server/tests/server/migrate.rs: a project with two environments (repository,
branch, a setting, a parameter), a version of a small model exported by the real `inmanta export`
to each and released, and a user with a role. Run with the reference venv's Python:

    python migrate_source.py URL STATE_DIR WORK_DIR MANAGED_DIR

STATE_DIR is the reference server's directory (its server.cfg names its PostgreSQL); the model's
files go under MANAGED_DIR/<environment>/. Both environments are halted before their versions are
released, so the reference server's own agents never write those files: only the server the test
moves them to does. Prints one JSON object: {"project": id, "environments": {name: {"id", "version"}}}.
"""

import asyncio
import configparser
import json
import os
import pathlib
import subprocess
import sys
import uuid

from rest import call  # scripts/reference/rest.py, beside this script

BIN = pathlib.Path(sys.executable).parent


def write_project(project: pathlib.Path, managed: pathlib.Path, name: str) -> None:
    project.mkdir(parents=True)
    (project / "project.yml").write_text(
        "name: moved\nmodulepath: []\ndownloadpath: libs\npip:\n  use_system_config: true\n  pre: false\n"
    )
    (project / "requirements.txt").write_text("inmanta-module-std\ninmanta-module-fs\ninmanta-module-mitogen\n")
    (project / "main.cf").write_text(
        "import std\nimport std::testing\nimport fs\nimport mitogen\n\n"
        'host = std::Host(name="internal", os=std::linux, via=mitogen::Local())\n'
        f'fs::File(host=host, path="{managed}/{name}/motd", content="moved from Inmanta: {name}\\n",\n'
        "         owner=null, group=null, mode=null)\n"
        f'std::testing::NullResource(name="{name}-marker", value="{name}")\n'
    )


async def add_user(state: pathlib.Path, username: str, role: str, env: str) -> None:
    """Inmanta refuses to create users and roles while its authentication is off (as on the
    reference server): the rows go straight into its database, the user with a hash nobody can
    log in with."""
    import asyncpg

    cfg = configparser.ConfigParser()
    cfg.read(state / "server.cfg")
    db = cfg["database"]
    conn = await asyncpg.connect(host=db["host"], port=int(db["port"]), user=db["username"], database=db["name"])
    try:
        user_id, role_id = uuid.uuid4(), uuid.uuid4()
        await conn.execute(
            "INSERT INTO inmanta_user (id, username, password_hash, auth_method, is_admin) "
            "VALUES ($1, $2, 'not-a-hash', 'database', false)",
            user_id,
            username,
        )
        await conn.execute("INSERT INTO role (id, name) VALUES ($1, $2)", role_id, role)
        await conn.execute(
            "INSERT INTO role_assignment (user_id, environment, role_id) VALUES ($1, $2, $3)",
            user_id,
            uuid.UUID(env),
            role_id,
        )
    finally:
        await conn.close()


def main() -> None:
    url, state, work, managed = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]), pathlib.Path(sys.argv[4])
    port = url.rsplit(":", 1)[1]
    project = call(url, "PUT", "/api/v2/project", body={"name": "moved"})["data"]
    out = {"project": project["id"], "environments": {}}
    for name, branch in (("prod", "main"), ("test", "develop")):
        env = call(
            url,
            "PUT",
            "/api/v2/environment",
            body={
                "project_id": project["id"],
                "name": name,
                "repository": f"https://git.example.com/infra/{name}.git",
                "branch": branch,
                "description": f"the {name} environment",
            },
        )["data"]
        env_id = env["id"]
        call(url, "POST", "/api/v2/environment_settings/auto_deploy", env_id, {"value": False})
        call(url, "POST", "/api/v2/environment_settings/available_versions_to_keep", env_id, {"value": 7})
        call(url, "PUT", f"/api/v1/parameter/{name}_region", env_id, {"source": "user", "value": f"eu-{name}"})
        call(url, "POST", "/api/v2/actions/environment/halt", env_id)
        write_project(work / name, managed, name)
        proc = subprocess.run(
            [BIN / "inmanta", "export", "-e", env_id, "--server_address", "127.0.0.1", "--server_port", port],
            cwd=work / name,
            env=dict(os.environ, XDG_RUNTIME_DIR=os.environ.get("XDG_RUNTIME_DIR", "/tmp")),
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            sys.exit(f"inmanta export of {name} failed:\n{proc.stdout}\n{proc.stderr}")
        versions = call(url, "GET", "/api/v2/desiredstate", env_id)["data"]
        version = max(v["version"] for v in versions)
        call(url, "POST", f"/api/v1/version/{version}", env_id, {"push": False})
        out["environments"][name] = {"id": env_id, "version": version}
    asyncio.run(add_user(state, "alice", "operator", out["environments"]["prod"]["id"]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
