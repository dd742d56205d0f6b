"""Compare two harness runs step by step: the real Inmanta server's (the record) and ours.

Usage: compare.py RECORD.jsonl OURS.jsonl

Every step must be present in both, with the same exit code or HTTP status and the same
normalised output: the CLI's and the exporter's text exactly, the Python client's answers by
shape (the same keys, value types and list lengths; values differ by ids, dates and timings), those
in BY_VALUE by value. The only tolerated differences are listed in DIFFERENCES, each with the
reason (docs/api.md, "Differences from Inmanta", says the same). Exit 1 on any other difference.
"""

import difflib
import json
import os
import sys
from typing import Any

WORDING = (
    "the server's message is in our own words, which say what to do (docs/api.md, \"Differences from "
    "Inmanta\"); the exit code and the message's place are the same"
)

# step -> (fields allowed to differ, why). Keep this short: every entry is a place where a user
# of Inmanta's clients sees something else against our server.
DIFFERENCES: dict[str, tuple[set[str], str]] = {
    "environment setting list": (
        {"stdout"},
        "the Help column is in our own words (Inmanta's prose is not copied), and our extra setting "
        "realtime_repair has a row",
    ),
    "version release again": ({"stderr"}, WORDING),
    "project delete with environments": ({"stderr"}, WORDING),
    "environment recompile": ({"stdout"}, WORDING + " (the warning of a skipped compile)"),
    "environment recompile --update": ({"stdout"}, WORDING + " (the warning of a skipped compile)"),
    "graphql console notifications": (
        {"result"},
        "our server notifies the failed deploy of fs::File (orchestrator behaviour, not GraphQL); Inmanta "
        "has no notification at this point, so one edge more",
    ),
    "graphql notifications all fields": ({"result"}, "the same notification as above"),
    **{
        f"client resource_logs timestamp {bound}": (
            {"result"},
            "the date filter is read alike (200, the same bound); the lines differ because Inmanta's resource "
            "logs also hold the log lines of the dry runs made just before (their `dryrun` actions), which ours "
            "do not record yet",
        )
        for bound in ["ge:2026-11-24 22:07:46", "ge:2000-01-01", "le:2999-W01-1T10:00", "lt:29991231T235959+0200"]
    },
    "client dryrun_filtered malformed": (
        {"result"},
        "the same 400; Inmanta adds pydantic's `error_details` beside the message, ours says in its own "
        "words which field of the filter is wrong",
    ),
}

# Steps whose table rows Inmanta orders by random ids (list_environments sorts by project id).
UNORDERED = {"environment list"}

# Steps that list a version's resources in the order the database stores them (Inmanta's query
# has no ORDER BY; ours sorts by id): compared as sets, within each agent and resource type for
# the CLI's report.
STORAGE_ORDER = {"version report", "version report -l", "client get_version", "client get_version include_logs"}

# Python client answers whose shape still differs from Inmanta's (keys we lack or add). Printed on
# every run, not failed on: they are open work, listed in docs/api.md. A step that starts to
# match must be taken out of this list (the run fails until it is).
SHAPE_GAPS: set[str] = set()

# Python client answers compared value for value (ids and dates are normalised in both), not
# only by shape: the states and diffs they hold are what the steps are about.
BY_VALUE = {
    "compliance report",
    "compliance report one",
    "compliance report none",
    "compliance report has_update",
    "compliance report after fix",
    "compliance resource_details non_compliant",
    "compliance resource_details compliant",
}

# Python client calls whose `links` are compared by value besides the answer's shape: the
# resource list's links carry Inmanta's `deploy_summary=True|False` (the recorded pages hold no
# ids or dates in their links).
LINKS_BY_VALUE = {"resource_list"}

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


def sorted_blocks(text: str) -> str:
    """The lines of each block (between the `---` rules of a report) in sorted order."""
    blocks: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.startswith("---") or line.startswith("==="):
            blocks.append([line])
            blocks.append([])
        else:
            blocks[-1].append(line)
    return "\n".join(line for block in blocks for line in sorted(block))


def comparable(step: dict[str, Any], field: str) -> Any:
    value = without_extensions(step.get(field))
    name = step["step"]
    if field == "result" and name in STORAGE_ORDER and isinstance(value, dict):
        value = dict(value, resources=sorted(value.get("resources", []), key=lambda r: r.get("resource_id", "")))
    if field == "result" and step.get("kind") == "client" and name not in BY_VALUE:
        if step.get("call") in LINKS_BY_VALUE and isinstance(value, dict):
            return {"shape": shape(value), "links": value.get("links")}
        return shape(value)
    if field == "stdout" and name in UNORDERED and isinstance(value, str):
        return "\n".join(sorted(value.splitlines()))
    if field == "stdout" and name in STORAGE_ORDER and isinstance(value, str):
        return sorted_blocks(value)
    return value


def render(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.splitlines()
    return json.dumps(value, indent=1, sort_keys=True).splitlines()


def print_diff(want: dict[str, Any], got: dict[str, Any], field: str) -> None:
    diff = difflib.unified_diff(
        render(comparable(want, field)), render(comparable(got, field)), "inmanta", "ours", lineterm=""
    )
    for line in list(diff)[2:80]:
        print("    " + line)


def main() -> int:
    record, ours = load(sys.argv[1]), load(sys.argv[2])
    failures = 0
    gaps = 0
    for name, want in record.items():
        got = ours.get(name)
        if got is None:
            print(f"MISSING  {name}: not run against our server")
            failures += 1
            continue
        allowed, _why = DIFFERENCES.get(name, (set(), ""))
        differs = [f for f in COMPARED if f not in allowed and comparable(want, f) != comparable(got, f)]
        if differs == ["result"] and name in SHAPE_GAPS:
            gaps += 1
            print(f"GAP      {name}: the answer's shape differs (open, see SHAPE_GAPS)")
            if os.environ.get("SHOW_GAPS"):
                print_diff(want, got, "result")
            continue
        if not differs and name in SHAPE_GAPS:
            failures += 1
            print(f"FIXED    {name}: matches now; take it out of SHAPE_GAPS")
            continue
        for field in differs:
            failures += 1
            print(f"DIFFERS  {name}: {field}")
            print_diff(want, got, field)
    for name in ours.keys() - record.keys():
        print(f"EXTRA    {name}: not in the record (re-record with scripts/inmanta-clients/record.sh)")
        failures += 1
    print(f"{len(record)} steps recorded: {failures} differences, {gaps} known shape gaps")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
