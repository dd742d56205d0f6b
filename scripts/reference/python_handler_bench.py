"""
The python_handlers bench (server/benches/python_handlers.rs) against the real Inmanta: N
`kvfile::Line` resources of examples/python-handler-module (a CRUDHandler) for one agent, spread
over 10 files, exported by the real `inmanta export` to the reference server (inmanta-core 20.1,
its own agent executor) and timed from the version's creation (put_version, the server's clock)
to all resources deployed. Round 0 creates every line (the executor starts), every further round
changes every value (warm executor, every line updated).

    eval "$(scripts/inmanta-reference.sh server start)"
    nice -n 10 scripts/inmanta-reference.sh python scripts/reference/python_handler_bench.py \
        "$INMANTA_REFERENCE_URL" [ROUNDS] [LINES]
    scripts/inmanta-reference.sh server stop "$INMANTA_REFERENCE_STATE"

The module is built as a v2 module wheel (`inmanta module build`, with a MANIFEST.in that packs the
model and setup.cfg) and pip-installed (--no-deps) into the reference venv for the compiler; it is
uninstalled again at the end. The export ships its code to the server like any v2 module.
"""

import datetime
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

from rest import call  # scripts/reference/rest.py, beside this script

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(sys.executable).parent


def build_module(work: pathlib.Path) -> None:
    src = work / "kvfile"
    shutil.copytree(ROOT / "examples/python-handler-module", src)
    (src / "MANIFEST.in").write_text(
        "include inmanta_plugins/kvfile/setup.cfg\nrecursive-include inmanta_plugins/kvfile/model *.cf\n"
    )
    subprocess.run([BIN / "inmanta", "module", "build"], cwd=src, check=True, capture_output=True)
    wheel = next((src / "dist").glob("*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", wheel], check=True)


def write_project(project: pathlib.Path, managed: pathlib.Path, lines: int, round_: int) -> None:
    (project / "project.yml").write_text(
        "name: pybench\nmodulepath: libs\ndownloadpath: libs\nrepo: []\ninstall_mode: release\n"
        "pip:\n  use_system_config: true\n"
    )
    (project / "requirements.txt").write_text("inmanta-module-std\ninmanta-module-kvfile\n")
    (project / "libs").mkdir(exist_ok=True)
    model = ["import kvfile", 'host = std::Host(name="agent0", os=std::linux)']
    for i in range(lines):
        model.append(f'kvfile::Line(host=host, path="{managed}/agent0-{i % 10}.conf", key="k{i}", value="v{round_}")')
    (project / "main.cf").write_text("\n".join(model) + "\n")


def written(managed: pathlib.Path, suffix: str) -> int:
    count = 0
    for f in managed.glob("*.conf"):
        count += sum(1 for line in f.read_text().splitlines() if line.endswith(suffix))
    return count


def load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def main() -> None:
    url = sys.argv[1].rstrip("/")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    lines = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    host, port = url.split("//")[1].split(":")
    work = pathlib.Path(tempfile.mkdtemp(prefix="pybench."))
    managed = work / "managed"
    managed.mkdir()
    project = work / "project"
    project.mkdir()
    build_module(work)
    try:
        proj = call(url, "PUT", "/api/v2/project", body={"name": f"pybench-{os.getpid()}"})["data"]["id"]
        env = call(url, "PUT", "/api/v2/environment", body={"project_id": proj, "name": "python"})["data"]["id"]
        for round_ in range(rounds):
            write_project(project, managed, lines, round_)
            before = call(url, "GET", "/api/v1/version", env)["versions"]
            known = {v["version"] for v in before}
            load_before = load()
            exporter = subprocess.Popen(
                [BIN / "inmanta", "-vv", "export", "-e", env, "--server_address", host, "--server_port", port],
                cwd=project,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env={**os.environ, "HOME": str(work)},
            )
            deadline = time.time() + 900
            suffix = f"=v{round_}"
            while True:
                if exporter.poll() not in (None, 0):
                    sys.exit("export failed:\n" + exporter.stdout.read().decode()[-4000:])
                if written(managed, suffix) == lines:
                    summary = call(url, "GET", "/api/v2/resource?limit=1&deploy_summary=true", env)
                    by_state = summary["metadata"]["deploy_summary"]["by_state"]
                    if by_state.get("failed"):
                        sys.exit(f"failed: {by_state}")
                    if by_state.get("deployed") == lines:
                        done = time.time()
                        break
                if time.time() > deadline:
                    sys.exit(f"not deployed in time: {written(managed, suffix)} of {lines}")
                time.sleep(0.01)
            exporter.wait()
            versions = call(url, "GET", "/api/v1/version", env)["versions"]
            new = [v for v in versions if v["version"] not in known]
            assert len(new) == 1, new
            created = datetime.datetime.fromisoformat(new[0]["date"])
            if created.tzinfo is None:
                created = created.replace(tzinfo=datetime.timezone.utc)
            what = "first version (executor starts, lines created)" if round_ == 0 else "next version (lines updated)"
            print(
                f"{lines} kvfile::Line, round {round_}, {what}: put_version to all deployed "
                f"{done - created.timestamp():.2f} s (version {new[0]['version']}, load {load_before} -> {load()})",
                flush=True,
            )
    finally:
        subprocess.run([sys.executable, "-m", "pip", "uninstall", "-q", "-y", "inmanta-module-kvfile"], check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
