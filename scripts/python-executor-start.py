"""How long a new Python executor waits, without and with a warm spare (docs/performance.md).

Starts the agent's executor shim three times with the given interpreter and prints the time to its
ready line (importing inmanta-core: what a warm spare has done ahead of need) and the time of the
`load` request (importing the modules: what remains with a spare).

    python scripts/python-executor-start.py PYTHON CODE_DIR_OR_EMPTY MODULE[,MODULE...]
"""

import json
import pathlib
import subprocess
import sys
import time

SHIM = pathlib.Path(__file__).resolve().parent.parent / "agent" / "python" / "inmanta_executor.py"


def main() -> None:
    python, code, modules = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    for _ in range(3):
        started = time.monotonic()
        process = subprocess.Popen(
            [python, "-u", str(SHIM)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={"PYTHONDONTWRITEBYTECODE": "1"},
        )
        assert process.stdin is not None and process.stdout is not None
        process.stdout.readline()
        ready = time.monotonic()
        request = {"id": 1, "action": "load", "code": [code] if code else [], "load": modules, "environment": None}
        process.stdin.write(json.dumps(request) + "\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        loaded = time.monotonic()
        print(
            f"inmanta-core imported in {ready - started:.2f} s; {','.join(modules)} loaded in {loaded - ready:.3f} s"
            f"{'; failed: ' + ', '.join(answer['errors']) if answer.get('errors') else ''}"
        )
        process.kill()
        process.wait()


if __name__ == "__main__":
    main()
