#!/usr/bin/env python3
"""Record the real Inmanta's answer for many `.cf` models, in one process per worker.

Run with the reference venv's Python (scripts/reference/record.sh does that):

    compile_cases.py record [--jobs N] [--timeout S] [--force] CASE...
    compile_cases.py show CASE            # print the answer without writing it
    compile_cases.py worker               # internal: one compile per JSON line on stdin

A CASE is a `.cf` file (compiled as the main.cf of a throwaway project whose module path is
`compiler/tests/modules`, or the `modules/` directory beside the case if there is one) or a project directory holding `project.yml` (copied as a whole).
A directory without `project.yml` stands for every `.cf` file and project directory in it. The answer for `X.cf` is
written to `X.inmanta.json` beside it; a project's answer to `main.inmanta.json` in it.

The recorded shape (format 1) is documented in docs/compiler-conformance.md.
"""

import argparse
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time

FORMAT = 1
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TEST_MODULES = os.path.join(REPO, "compiler", "tests", "modules")
# The environment seen by std::get_env, the same as compiler/tests/compiler/conformance.rs gives ours.
CASE_ENV = {"CONF_SET": "hello"}


# ---------------------------------------------------------------------------------------------
# Worker side: runs inside the reference venv, imports inmanta once, compiles case after case.
# ---------------------------------------------------------------------------------------------


def _location(exc, project_dir, modules=TEST_MODULES):
    loc = exc.get_location()
    if loc is None:
        return None
    file = loc.file
    if file and os.path.isabs(file):
        for base, prefix in ((project_dir, ""), (modules, "modules/"), (REPO, "repo/")):
            if file.startswith(base + os.sep):
                file = prefix + os.path.relpath(file, base)
                break
    elif file and file.startswith("./"):
        file = file[2:]
    if file and "/inmanta_plugins/" in file:  # a module installed in the venv (std, fs, exec)
        file = "inmanta_plugins/" + file.split("/inmanta_plugins/", 1)[1]
    out = {"file": file, "line": loc.lnr}
    if hasattr(loc, "start_char"):
        out.update(col=loc.start_char, end_line=loc.end_lnr, end_col=loc.end_char)
    return out


def _error(exc, project_dir, modules=TEST_MODULES):
    from inmanta.ast import CompilerException

    if isinstance(exc, CompilerException):
        exported = exc.export()
        out = {"type": exported.type, "message": exc.get_message(), "location": _location(exc, project_dir, modules)}
    else:
        out = {"type": f"{type(exc).__module__}.{type(exc).__qualname__}", "message": str(exc), "location": None}
    cause = exc.__cause__ or getattr(exc, "__cause__", None)
    if cause is not None and cause is not exc:
        out["cause"] = _error(cause, project_dir, modules)
    return out


def _errors(exc, project_dir, modules=TEST_MODULES):
    """An exception as the list of errors it reports: a MultiException's members, in its order."""
    from inmanta.ast import MultiException

    if isinstance(exc, MultiException):
        return [_error(e, project_dir, modules) for e in exc.get_causes()]
    return [_error(exc, project_dir, modules)]


def _value(v, depth=0):
    """A main.cf variable as JSON: instances as {"$instance": type}, unknowns as {"$unknown": true}."""
    from inmanta.execute.proxy import DynamicProxy
    from inmanta.execute.runtime import Instance
    from inmanta.execute.util import NoneValue, Unknown

    if depth > 20:
        return {"$deep": True}
    if isinstance(v, DynamicProxy):
        v = DynamicProxy.unwrap(v)
    if isinstance(v, Unknown):
        return {"$unknown": True}
    if isinstance(v, NoneValue) or v is None:
        return None
    if isinstance(v, Instance):
        return {"$instance": v.type.get_full_name()}
    if isinstance(v, bool | int | str):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else {"$float": repr(v)}
    if isinstance(v, list | tuple):
        return [_value(x, depth + 1) for x in v]
    if isinstance(v, dict):
        return {str(k): _value(x, depth + 1) for k, x in v.items()}
    return {"$python": type(v).__qualname__}


def _variables(scopes):
    config = scopes.get_child("__config__")
    out = {}
    if config is None or config.scope is None:
        return out
    for name, var in config.get_scope().slots.items():
        if name == "self":
            continue
        try:
            out[name] = _value(var.get_value())
        except Exception as e:  # an unset or optional variable
            out[name] = {"$error": type(e).__qualname__}
    return out


def _resources(resources, resource_state):
    from inmanta import protocol

    out = []
    for res in resources.values():
        data = json.loads(protocol.json_encode(res.serialize()))
        out.append(data)
    out.sort(key=lambda r: r["id"])
    return out, {str(k): str(v.value if hasattr(v, "value") else v) for k, v in resource_state.items()}


def compile_one(source_dir, main_text, modules=TEST_MODULES):
    """Compile one case in a fresh project (a `.cf` case with `modules` on its module path); the answer as a dict."""
    import contextlib
    import io

    from inmanta import compiler, module
    from inmanta.export import Exporter

    work = tempfile.mkdtemp(prefix="inmanta-case-")
    try:
        if source_dir is not None:
            project_dir = os.path.join(work, "project")
            shutil.copytree(source_dir, project_dir, ignore=shutil.ignore_patterns(".cfcache", "*.inmanta.json", "__pycache__"))
        else:
            project_dir = work
            with open(os.path.join(work, "project.yml"), "w") as f:
                json.dump({"name": "case", "modulepath": [modules]}, f)
            with open(os.path.join(work, "main.cf"), "w") as f:
                f.write(main_text)
        answer = {"format": FORMAT, "inmanta": _versions()}
        printed = io.StringIO()
        phase = "load"
        try:
            with contextlib.redirect_stdout(printed):
                project = module.Project(project_dir, attach_cf_cache=False)
                compiler.ProjectLoader.load(project)
                phase = "compile"
                types, scopes = compiler.do_compile()
                phase = "export"
                answer["variables"] = _variables(scopes)
                _, resources, state = Exporter(None).run(types, scopes, no_commit=True, include_status=True)
            answer["resources"], answer["resource_state"] = _resources(resources, state)
            answer["outcome"] = "ok"
        except Exception as e:  # noqa: BLE001 - every failure is an answer
            answer["outcome"] = "error"
            answer["phase"] = phase
            answer["multi"] = type(e).__name__ == "MultiException"
            answer["errors"] = _errors(e, project_dir, modules)
        answer["printed"] = printed.getvalue().splitlines()
        return answer
    finally:
        os.chdir("/")
        shutil.rmtree(work, ignore_errors=True)


def _versions():
    from importlib.metadata import version

    return {p: version(p) for p in ("inmanta-core", "inmanta-module-std", "inmanta-module-fs", "inmanta-module-exec")}


def worker():
    import logging

    logging.disable(logging.CRITICAL)
    os.environ.update(CASE_ENV)
    sys.setrecursionlimit(5000)
    out = sys.stdout
    sys.stdout = sys.stderr  # keep the protocol channel clean
    for line in sys.stdin:
        req = json.loads(line)
        try:
            answer = compile_one(req.get("dir"), req.get("text"), req.get("modules", TEST_MODULES))
        except BaseException as e:  # noqa: BLE001
            answer = {"format": FORMAT, "outcome": "crash", "errors": [{"type": type(e).__qualname__, "message": str(e)}]}
        out.write(json.dumps(answer) + "\n")
        out.flush()


# ---------------------------------------------------------------------------------------------
# Driver side: workers in subprocesses, a time limit per case, a crashed worker replaced.
# ---------------------------------------------------------------------------------------------


class Worker:
    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.case = None
        self.started = 0.0

    def send(self, case, req):
        self.case = case
        self.started = time.monotonic()
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()

    def kill(self):
        self.proc.kill()
        self.proc.wait()


def expand(paths):
    cases = []
    for p in paths:
        p = os.path.abspath(p)
        if os.path.isdir(p) and not os.path.exists(os.path.join(p, "project.yml")):
            # `.cf` cases and project cases (a directory with its own project.yml)
            cases += sorted(
                os.path.join(p, n)
                for n in os.listdir(p)
                if n.endswith(".cf") or os.path.isfile(os.path.join(p, n, "project.yml"))
            )
        else:
            cases.append(p)
    return cases


def truth_path(case):
    if os.path.isdir(case):
        return os.path.join(case, "main.inmanta.json")
    return case[: -len(".cf")] + ".inmanta.json"


def request(case):
    if os.path.isdir(case):
        return {"dir": case}
    with open(case, encoding="utf-8") as f:
        return {"text": f.read(), "modules": case_modules(case)}


def case_modules(case):
    """The module directory of a `.cf` case: a `modules/` directory beside it (the snippets of
    Inmanta's own test suite import its test modules), else compiler/tests/modules."""
    beside = os.path.join(os.path.dirname(case), "modules")
    return beside if os.path.isdir(beside) else TEST_MODULES


def run_all(cases, jobs, timeout, on_answer):
    pending = list(cases)
    workers = [Worker() for _ in range(min(jobs, len(cases)))]
    idle = list(workers)
    busy = {}
    while pending or busy:
        while idle and pending:
            w = idle.pop()
            case = pending.pop(0)
            w.send(case, request(case))
            busy[w.proc.stdout.fileno()] = w
        ready, _, _ = select.select(list(busy), [], [], 1.0)
        for fd in ready:
            w = busy.pop(fd)
            line = w.proc.stdout.readline()
            if line:
                on_answer(w.case, json.loads(line))
                idle.append(w)
            else:  # the worker died (e.g. a stack overflow in C code)
                on_answer(w.case, {"format": FORMAT, "outcome": "crash", "errors": []})
                w.kill()
                idle.append(Worker())
        now = time.monotonic()
        for fd, w in list(busy.items()):
            if now - w.started > timeout:
                del busy[fd]
                on_answer(w.case, {"format": FORMAT, "outcome": "timeout", "timeout_seconds": timeout})
                w.kill()
                idle.append(Worker())
    for w in idle:
        w.proc.stdin.close()
        w.proc.wait()


def record(args):
    cases = expand(args.cases)
    if not args.force:
        cases = [c for c in cases if not _up_to_date(c)]
    done = 0
    start = time.monotonic()

    def on_answer(case, answer):
        nonlocal done
        done += 1
        answer["source_sha1"] = _source_sha1(case)
        with open(truth_path(case), "w", encoding="utf-8") as f:
            json.dump(answer, f, indent=1, sort_keys=True, ensure_ascii=False)
            f.write("\n")
        kinds = ",".join(e.get("type", "?").rsplit(".", 1)[-1] for e in answer.get("errors", []))
        print(f"[{done}/{len(cases)}] {os.path.relpath(case, REPO)}: {answer['outcome']} {kinds}", flush=True)

    run_all(cases, args.jobs, args.timeout, on_answer)
    print(f"recorded {done} cases in {time.monotonic() - start:.0f} s")


def _source_sha1(case):
    """Hash of what was compiled, so `record` can skip cases whose answer is current."""
    import hashlib

    h = hashlib.sha1()
    if os.path.isdir(case):
        for root, dirs, files in sorted(os.walk(case)):
            dirs.sort()
            for n in sorted(files):
                if n.endswith(".inmanta.json"):
                    continue
                p = os.path.join(root, n)
                h.update(os.path.relpath(p, case).encode() + b"\0")
                with open(p, "rb") as f:
                    h.update(f.read())
    else:
        with open(case, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def _up_to_date(case):
    try:
        with open(truth_path(case), encoding="utf-8") as f:
            return json.load(f).get("source_sha1") == _source_sha1(case)
    except (OSError, ValueError):
        return False


def show(args):
    def on_answer(case, answer):
        print(json.dumps(answer, indent=1, sort_keys=True))

    run_all(expand(args.cases), 1, args.timeout, on_answer)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("record", "show"):
        p = sub.add_parser(name)
        p.add_argument("cases", nargs="+")
        p.add_argument("--timeout", type=float, default=60.0, help="seconds per case (default 60)")
        if name == "record":
            p.add_argument("--jobs", type=int, default=2)
            p.add_argument("--force", action="store_true", help="record cases whose answer is current too")
    sub.add_parser("worker")
    args = parser.parse_args()
    if args.cmd == "worker":
        worker()
    elif args.cmd == "record":
        record(args)
    else:
        show(args)


if __name__ == "__main__":
    main()
