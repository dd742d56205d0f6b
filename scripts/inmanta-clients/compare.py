"""Compare two harness runs step by step: the real Inmanta server's (the record) and ours.

Usage: compare.py RECORD.jsonl OURS.jsonl

Every step must be present in both, with the same exit code or HTTP status and the same
normalised output: the CLI's and the exporter's text exactly, the Python client's answers by
shape (the same keys, value types and list lengths; values differ by ids, dates and timings). The only tolerated differences are listed in DIFFERENCES, each with the
reason (docs/api.md, "Differences from Inmanta", says the same). Exit 1 on any other difference.
"""

import difflib
import json
import sys
from typing import Any

# step -> (fields allowed to differ, why). Keep this short: every entry is a place where a user
# of Inmanta's clients sees something else against our server.
DIFFERENCES: dict[str, tuple[set[str], str]] = {
    "environment setting list": (
        {"stdout"},
        "the Help column is in our own words (Inmanta's prose is not copied), and our extra setting "
        "realtime_repair has a row",
    ),
    "action-log show-messages": (
        {"stdout"},
        "the log lines are those of our handlers (Rust), not of Inmanta's Python handler of "
        "std::testing::NullResource",
    ),
}

# Keys only our server has (documented extensions); left out of our answers before comparing.
EXTENSIONS = {"realtime_repair"}

COMPARED = ("exit", "status", "stdout", "stderr", "result")


def load(path: str) -> dict[str, dict[str, Any]]:
    steps: dict[str, dict[str, Any]] = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                step = json.loads(line)
                steps[step["step"]] = step
    return steps


def shape(value: Any) -> Any:
    """Keys, value types and list lengths of a JSON value."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value]
    if value is None:
        return "null"
    return type(value).__name__


def without_extensions(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_extensions(v) for k, v in value.items() if k not in EXTENSIONS}
    if isinstance(value, list):
        return [without_extensions(v) for v in value]
    return value


def comparable(step: dict[str, Any], field: str) -> Any:
    value = without_extensions(step.get(field))
    if field == "result" and step.get("kind") == "client":
        return shape(value)
    return value


def render(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.splitlines()
    return json.dumps(value, indent=1, sort_keys=True).splitlines()


def main() -> int:
    record, ours = load(sys.argv[1]), load(sys.argv[2])
    failures = 0
    for name, want in record.items():
        got = ours.get(name)
        if got is None:
            print(f"MISSING  {name}: not run against our server")
            failures += 1
            continue
        allowed, _why = DIFFERENCES.get(name, (set(), ""))
        for field in COMPARED:
            if field in allowed or comparable(want, field) == comparable(got, field):
                continue
            failures += 1
            print(f"DIFFERS  {name}: {field}")
            diff = difflib.unified_diff(
                render(comparable(want, field)), render(comparable(got, field)), "inmanta", "ours", lineterm=""
            )
            for line in list(diff)[2:80]:
                print("    " + line)
    for name in ours.keys() - record.keys():
        print(f"EXTRA    {name}: not in the record (re-record with scripts/inmanta-clients/record.sh)")
        failures += 1
    same = len(record) - failures
    print(f"{len(record)} steps recorded, {failures} differences" + ("" if failures else f", {same} identical"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
