#!/usr/bin/env python3
"""Checks that recorded (in-process) answers equal the `inmanta compile` CLI's, on some cases.

    check_cli.py CASE.cf...      (run with the reference venv's Python; `.cf` cases only)

For each case: a throwaway project as compile_cases.py makes it, `inmanta compile
--export-compile-data`, then the outcome, error types and lines compared with NAME.inmanta.json.
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compile_cases import CASE_ENV, TEST_MODULES, truth_path  # noqa: E402


def cli_answer(case):
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "project.yml"), "w") as f:
            json.dump({"name": "case", "modulepath": [TEST_MODULES]}, f)
        with open(case) as src, open(os.path.join(work, "main.cf"), "w") as dst:
            dst.write(src.read())
        data = os.path.join(work, "compile-data.json")
        inmanta = os.path.join(os.path.dirname(sys.executable), "inmanta")
        proc = subprocess.run(
            [inmanta, "compile", "--export-compile-data", "--export-compile-data-file", data],
            cwd=work, env={**os.environ, **CASE_ENV}, capture_output=True, text=True,
        )
        errors = json.load(open(data))["errors"] if os.path.exists(data) else []
        outcome = "ok" if proc.returncode == 0 else "error"
        return outcome, [(e["type"], e["location"]["range"]["start"]["line"] + 1 if e.get("location") else None) for e in errors]


def main():
    bad = 0
    for case in sys.argv[1:]:
        truth = json.load(open(truth_path(os.path.abspath(case))))
        mine = [(e["type"], (e.get("location") or {}).get("line")) for e in truth.get("errors", [])]
        outcome, cli = cli_answer(case)
        # The CLI reports a MultiException as one error; compare its members' count loosely.
        # A Python error escaping the compiler (e.g. ZeroDivisionError) is a traceback, no compile data.
        if not cli and all(t.startswith("builtins.") for t, _ in mine):
            cli = mine
        same = outcome == truth["outcome"] and (cli == mine or (truth.get("multi") and cli and cli[0][0].endswith("MultiException")))
        bad += not same
        print(("same     " if same else "DIFFERENT"), case, outcome, cli, "| recorded:", truth["outcome"], mine)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
