#!/usr/bin/env python3
"""Extract the compiler snippets of inmanta-core's own test suite as conformance cases.

    inmanta_suite_extract.py SOURCE OUT

SOURCE is an inmanta-core source tree (its `tests/` directory is read, nothing is imported).
Every `setup_for_snippet` / `setup_for_error` / `setup_for_error_re` call of
`tests/compiler/test_*.py` and `tests/test_compilation.py` whose snippet is a string the
source spells out (a literal, `textwrap.dedent` of one, or a local variable assigned one) becomes
`OUT/snippets/<file>__<test>__<n>.cf`; `OUT/snippets/SOURCES.tsv` names each case's source
test, line, the call and the snippet's sha1. Snippets built at run time (f-strings, `%`,
parametrized tests) are counted and left out. The modules of `tests/data/modules` that the
snippets import are copied to `OUT/snippets/modules/` (the snippets' module path), and the `tests/data` projects that
`tests/test_compilation.py` compiles to `OUT/projects/`. The answers are recorded afterwards
with scripts/reference/record.sh (docs/compiler-conformance.md, "Inmanta's own test suite").
"""

import ast
import hashlib
import os
import re
import shutil
import sys
import textwrap

CALLS = ("setup_for_snippet", "setup_for_error", "setup_for_error_re")
# tests/data projects of tests/test_compilation.py that compile without a server
# (test_compilation.py's setup_project_for): (directory, main file)
PROJECTS = (
    ("compile_test_1", "main.cf"),
    ("compile_test_2", "main.cf"),
    ("compile_test_index", "main.cf"),
    ("compile_test_index_collission", "main.cf"),
    ("compile_test_double_assign", "main.cf"),
    ("compile_138", "main.cf"),
    ("compile_plugin_typing", "main.cf"),
    ("compile_plugin_typing", "invalid.cf"),
)


def evaluate(node, env):
    """The string (or other value) an expression of the test spells out with `env` bound (the test's
    parameters and the local variables assigned before), or None when it needs anything else (a
    fixture's attribute, a file): only literals, f-strings, `%`, `+`, conditionals, `textwrap.dedent`
    and methods of strings are evaluated."""
    allowed = (
        ast.Expression, ast.Constant, ast.JoinedStr, ast.FormattedValue, ast.Name, ast.Load, ast.BinOp,
        ast.Mod, ast.Add, ast.Tuple, ast.List, ast.IfExp, ast.Call, ast.Attribute, ast.keyword,
        ast.Compare, ast.Eq, ast.NotEq, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not,
    )
    tree = ast.Expression(body=node)
    for sub in ast.walk(tree):
        if not isinstance(sub, allowed):
            return None
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name not in ("dedent", "strip", "lstrip", "rstrip", "lower", "upper", "join", "format", "str", "replace"):
                return None
        if isinstance(sub, ast.Attribute) and sub.attr.startswith("_"):
            return None
    try:
        value = eval(compile(tree, "<snippet>", "eval"), {"__builtins__": {"str": str}, "textwrap": textwrap}, dict(env))
    except Exception:
        return None
    return value


def function_snippets(func, params):
    """(call name, lineno, snippet or None) for each snippet call in a test function, in order,
    with the test's parameters `params` bound."""
    env = dict(params)
    found = []
    # statements in source order; a name is only known if assigned a string before the call
    nodes = sorted(ast.walk(func), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = evaluate(node.value, env)
            if isinstance(value, str):
                env[node.targets[0].id] = value
            else:
                env.pop(node.targets[0].id, None)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CALLS:
            arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "snippet"), None)
            snippet = None if arg is None else evaluate(arg, env)
            found.append((node.func.attr, node.lineno, snippet if isinstance(snippet, str) else None))
    return found


def parametrizations(func):
    """The test's parameter sets (`@pytest.mark.parametrize` with literal values, each decorator a
    factor), each as (id, {name: value}); one empty set for a test without parameters, none when a
    parameter's values are not literals."""
    sets = [("", {})]
    for deco in func.decorator_list:
        if not (isinstance(deco, ast.Call) and getattr(deco.func, "attr", None) == "parametrize"):
            continue
        try:
            names = ast.literal_eval(deco.args[0])
            values = ast.literal_eval(deco.args[1])
        except (ValueError, IndexError, SyntaxError):
            return []
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        rows = [v if len(names) > 1 else (v,) for v in values]
        sets = [
            (f"{sid}-{'-'.join(map(repr, row))}".lstrip("-"), {**bound, **dict(zip(names, row))})
            for sid, bound in sets
            for row in rows
        ]
    return sets


def tests_of(tree):
    """Top-level test functions and test methods of classes."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node.name, node
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield f"{node.name}.{sub.name}", sub


def main():
    source, out = sys.argv[1], sys.argv[2]
    files = sorted(
        os.path.join(source, "tests", "compiler", n)
        for n in os.listdir(os.path.join(source, "tests", "compiler"))
        if n.startswith("test_") and n.endswith(".py")
    )
    files.append(os.path.join(source, "tests", "test_compilation.py"))
    snippets_dir = os.path.join(out, "snippets")
    shutil.rmtree(snippets_dir, ignore_errors=True)
    os.makedirs(snippets_dir)
    index = []
    dynamic = 0
    imported = set()
    for path in files:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        stem = os.path.basename(path)[: -len(".py")].removeprefix("test_")
        for test, func in tests_of(tree):
            sets = parametrizations(func)
            # per call: its snippet under each parameter set
            per_set = [function_snippets(func, bound) for _, bound in sets] or [function_snippets(func, {})]
            for n, (call, line, _) in enumerate(per_set[0]):
                snippets = [calls[n][2] for calls in per_set]
                if any(s is None for s in snippets) or not sets:
                    dynamic += 1
                    continue
                # a snippet the parameters do not change is one case; else one case per parameter set
                varied = len(set(snippets)) > 1
                for k, snippet in enumerate(snippets if varied else snippets[:1]):
                    name = f"{stem}__{test.replace('.', '_')}__{n}" + (f"_{k}" if varied else "")
                    with open(os.path.join(snippets_dir, name + ".cf"), "w", encoding="utf-8") as f:
                        f.write(snippet)
                    sha1 = hashlib.sha1(snippet.encode()).hexdigest()
                    rel = os.path.relpath(path, source)
                    test_id = f"{test}[{sets[k][0]}]" if varied else test
                    index.append(f"{name}\t{rel}::{test_id}\t{line}\t{call}\t{sha1}")
                    imported |= set(re.findall(r"^\s*import\s+([A-Za-z_][A-Za-z0-9_]*)", snippet, re.M))
    with open(os.path.join(snippets_dir, "SOURCES.tsv"), "w", encoding="utf-8") as f:
        f.write("# case\tsource test\tline\tcall\tsha1 of the snippet\n")
        f.write("\n".join(index) + "\n")

    modules_src = os.path.join(source, "tests", "data", "modules")
    modules_dir = os.path.join(snippets_dir, "modules")  # the module path of every snippet
    os.makedirs(modules_dir)
    copied = []
    queue = sorted(imported)
    while queue:
        name = queue.pop()
        src = os.path.join(modules_src, name)
        if name in copied or not os.path.isfile(os.path.join(src, "module.yml")):
            continue
        shutil.copytree(src, os.path.join(modules_dir, name), ignore=shutil.ignore_patterns("__pycache__", ".cfcache"))
        copied.append(name)
        # a module's own imports
        for root, _, names in os.walk(os.path.join(src, "model")):
            for n in names:
                if n.endswith(".cf"):
                    with open(os.path.join(root, n), encoding="utf-8") as f:
                        queue += re.findall(r"^\s*import\s+([A-Za-z_][A-Za-z0-9_]*)", f.read(), re.M)

    projects_dir = os.path.join(out, "projects")
    shutil.rmtree(projects_dir, ignore_errors=True)
    os.makedirs(projects_dir)
    for name, main in PROJECTS:
        case = name if main == "main.cf" else f"{name}_{main[: -len('.cf')]}"
        shutil.copytree(
            os.path.join(source, "tests", "data", name),
            os.path.join(projects_dir, case),
            ignore=shutil.ignore_patterns("__pycache__", ".cfcache", ".env"),
        )
        if main != "main.cf":  # a project case compiles main.cf
            os.replace(os.path.join(projects_dir, case, main), os.path.join(projects_dir, case, "main.cf"))
    print(f"{len(index)} snippets, {dynamic} built at run time (left out); modules {sorted(copied)}; {len(PROJECTS)} projects")


if __name__ == "__main__":
    main()
