#!/usr/bin/env python3
"""Write the real Inmanta's answer into `.cf` cases as the directives tests/conformance.rs reads.

Run with the reference venv's Python (scripts/reference/random_check.sh does that):

    annotate_cases.py [--show] CASE.cf...

Each case is compiled and exported in one process (inmanta imported once) as the main.cf of a
throwaway project whose module path is a copy of compiler/tests/modules (a `module.yml` is added
to the copy where a test module has none, as the real Inmanta needs one), with CONF_SET=hello in
the environment like the conformance test. The previous directives of the case are replaced by:

- `#> ok`, `#> value NAME = JSON` for every root variable whose value is JSON (not instances,
  not unknowns), `#> printed LINE` for what std::print printed, `#> resources N` and
  `#> resource RID FIELD = JSON` for every exported field that differs from the base defaults
  (`requires` sorted), `#> undefined RID` for resources in the undefined state;
- or, when Inmanta rejects the model, `#! Kind` at the end of each line an error points at (with
  `:COL` for a parse error) and `#> error-kind Kind` for errors without a line in main.cf.

`--show` prints Inmanta's answer as JSON lines and writes nothing.
"""

import contextlib
import io
import json
import logging
import os
import re
import shutil
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TEST_MODULES = os.path.join(REPO, "compiler", "tests", "modules")
BASE_FIELDS = {
    "send_event": True,
    "receive_events": True,
    "report_only": False,
    "references": [],
    "mutators": [],
    "purged": False,
    "purge_on_delete": False,
    "managed": True,
}


def module_path_copy():
    """compiler/tests/modules with a module.yml in every module, in a temporary directory."""
    dest = tempfile.mkdtemp(prefix="inmanta-modules-")
    modules = os.path.join(dest, "modules")
    shutil.copytree(TEST_MODULES, modules)
    for name in os.listdir(modules):
        meta = os.path.join(modules, name, "module.yml")
        if os.path.isdir(os.path.join(modules, name)) and not os.path.exists(meta):
            with open(meta, "w") as f:
                f.write(f"name: {name}\nversion: 1.0.0\nlicense: Apache 2.0\n")
    return modules


class Skip(Exception):
    pass


def to_json(value):
    from inmanta.execute.runtime import Instance
    from inmanta.execute.util import NoneValue, Unknown

    if isinstance(value, (Unknown, Instance)):
        raise Skip()
    if value is None or isinstance(value, NoneValue):
        return None
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    raise Skip()


def errors_of(exc):
    from inmanta.ast import MultiException

    out = []
    for e in exc.get_causes() if isinstance(exc, MultiException) else [exc]:
        loc = e.get_location()
        out.append(
            {
                "type": type(e).__name__,
                "file": os.path.basename(loc.file) if loc else None,
                "line": loc.lnr if loc else None,
                "col": getattr(loc, "start_char", None),
                "message": str(e.get_message()),
            }
        )
    return out


def compile_case(path, modules):
    from inmanta import compiler, export, module
    from inmanta.ast import CompilerException
    from inmanta.export import DependencyCycleException
    from inmanta.protocol.common import json_encode

    project = tempfile.mkdtemp(prefix="case-")
    shutil.copy(path, os.path.join(project, "main.cf"))
    with open(os.path.join(project, "project.yml"), "w") as f:
        f.write(f"name: case\nmodulepath: {modules}\ndownloadpath: libs\n")
    answer = {"case": os.path.basename(path)}
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
            p = module.Project(project)
            module.Project.set(p, clean=False)
            p.load()
            types, scopes = compiler.do_compile()
            variables = {}
            for name, var in scopes.get_child("__config__").get_scope().slots.items():
                try:
                    if var.hasValue:
                        variables[name] = to_json(var.value)
                except Skip:
                    pass
            _, resources, states = export.Exporter().run(types, scopes, no_commit=True, include_status=True)
        answer["ok"] = True
        answer["variables"] = variables
        answer["resources"] = {str(r.id.resource_str()): json.loads(json_encode(r.serialize())) for r in resources.values()}
        answer["states"] = {str(k): getattr(v, "value", str(v)) for k, v in states.items()}
    except CompilerException as e:
        answer.update(ok=False, errors=errors_of(e))
    except DependencyCycleException as e:
        answer.update(ok=False, errors=[{"type": "DependencyCycleException", "file": None, "line": None, "message": str(e)}])
    except Exception as e:  # a crash of the reference itself: recorded, never silently ignored
        answer.update(ok=False, errors=[{"type": type(e).__name__, "file": None, "line": None, "message": str(e)}])
    answer["printed"] = [line for line in printed.getvalue().splitlines() if line.strip()]
    shutil.rmtree(project, ignore_errors=True)
    return answer


def annotate(path, answer):
    source = open(path).read().splitlines()
    old_header = sum(1 for line in source if line.startswith("#> "))
    body = [re.sub(r"\s*#! .*$", "", line) for line in source if not line.startswith("#> ")]
    head = []
    if answer["ok"]:
        head.append("#> ok")
        head += [f"#> value {k} = {json.dumps(v, ensure_ascii=False)}" for k, v in answer["variables"].items()]
        head += [f"#> printed {line}" for line in answer["printed"]]
        if answer["resources"] or any(w in "\n".join(body) for w in ("Resource", "fs::", "exec::")):
            head.append(f"#> resources {len(answer['resources'])}")
        for rid, fields in sorted(answer["resources"].items()):
            for field, value in fields.items():
                if field in ("id", "version") or BASE_FIELDS.get(field, object()) == value:
                    continue
                if field == "requires":
                    value = sorted(r.rsplit(",v=", 1)[0] for r in value)
                head.append(f"#> resource {rid} {field} = {json.dumps(value, ensure_ascii=False)}")
            if answer["states"].get(rid) == "undefined":
                head.append(f"#> undefined {rid}")
        lines = head + body
    else:
        marks = {}
        for e in answer["errors"]:
            if e.get("file") == "main.cf" and e.get("line"):
                marks.setdefault(e["line"] - old_header, []).append(e)
            else:
                head.append(f"#> error-kind {e['type']}")
        out = []
        for n, line in enumerate(body, start=1):
            found = marks.pop(n, [])
            if found:
                e = found[0]
                col = f":{e['col']}" if e["type"] == "ParserException" and e.get("col") else ""
                line = f"{line}  #! {e['type']}{col}"
            out.append(line)
        # an error past the last line (a parse error at the end of the file)
        head += [f"#> error-kind {e['type']}" for found in marks.values() for e in found]
        lines = head + out
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    args = sys.argv[1:]
    show = bool(args) and args[0] == "--show"
    if show:
        args = args[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    logging.disable(logging.CRITICAL)
    os.environ["CONF_SET"] = "hello"
    modules = module_path_copy()
    for path in [os.path.abspath(a) for a in args]:
        answer = compile_case(path, modules)
        print(json.dumps(answer, default=str), flush=True)
        if not show:
            annotate(path, answer)
    shutil.rmtree(os.path.dirname(modules), ignore_errors=True)


if __name__ == "__main__":
    main()
