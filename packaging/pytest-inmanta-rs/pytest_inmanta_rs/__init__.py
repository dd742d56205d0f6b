"""
pytest-inmanta's ``project`` fixture, compiling with our ``inmanta`` binary.

Installed beside pytest-inmanta, this plugin adds ``--inmanta-compiler {inmanta,rs}`` (or the
variable ``INMANTA_PYTEST_COMPILER``). With ``rs``, ``project.compile(model)`` still writes the
model and loads the module's Python code as pytest-inmanta does (so ``get_plugin_function``,
handlers, ``deploy_resource`` and ``dryrun_resource`` work as before), but the model is compiled
and exported by ``inmanta export -j`` of the Rust binary (``--inmanta-binary`` or
``INMANTA_RS_BINARY``, else ``inmanta`` on PATH), with the test venv's Python for the plugins.
The resources (``get_resource``, ``get_one_resource``, ``resources``), the files they refer to
(the blobs the handlers read), ``get_stdout`` and ``get_stderr`` come from that compile (each
resource's model type from the instance dump); ``add_fact`` facts reach std's ``getfact`` as they
do in Inmanta's compile (``INMANTA_COMPILER_FACTS``, read by the compiler's Python side); a model
error raises ``inmanta.ast.CompilerException`` with our compiler's message. ``get_instances``
answers from the compile's instance dump (``--json-instances``): read-only objects whose
attributes are the instance's values (lists, dicts, strings, numbers, ``None`` for null,
instances for relations). ``get_root_scope`` needs Inmanta's compiler objects, which our
compiler does not make: it raises, naming the option to switch back.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import typing
from textwrap import dedent

import pytest

COMPILER_OPTION = "--inmanta-compiler"
BINARY_OPTION = "--inmanta-binary"


def pytest_addoption(parser: "pytest.Parser") -> None:
    group = parser.getgroup("inmanta-rs", "pytest-inmanta with the Rust compiler")
    group.addoption(
        COMPILER_OPTION,
        dest="inmanta_compiler",
        choices=["inmanta", "rs"],
        default=None,
        help="Which compiler project.compile uses: inmanta (pytest-inmanta's own, in process) or rs (the Rust "
        "inmanta binary). Default: $INMANTA_PYTEST_COMPILER, else inmanta.",
    )
    group.addoption(
        BINARY_OPTION,
        dest="inmanta_binary",
        default=None,
        help="The Rust inmanta binary. Default: $INMANTA_RS_BINARY, else inmanta on PATH.",
    )


def _binary(config: "pytest.Config") -> str:
    chosen = config.getoption("inmanta_binary") or os.environ.get("INMANTA_RS_BINARY") or shutil.which("inmanta")
    if not chosen:
        raise pytest.UsageError("--inmanta-compiler rs: no inmanta binary: pass --inmanta-binary or set INMANTA_RS_BINARY")
    return chosen


def pytest_configure(config: "pytest.Config") -> None:
    choice = config.getoption("inmanta_compiler") or os.environ.get("INMANTA_PYTEST_COMPILER") or "inmanta"
    if choice != "rs":
        return
    from pytest_inmanta import plugin

    binary = _binary(config)
    plugin.Project.compile = _compile_with(binary)
    plugin.Project.get_instances = _get_instances
    plugin.Project.get_root_scope = _not_made("get_root_scope")


def _not_made(name: str) -> typing.Callable[..., typing.NoReturn]:
    def refuse(self: object, *args: object, **kwargs: object) -> typing.NoReturn:
        raise NotImplementedError(
            f"project.{name}() needs Inmanta's compiler objects; the Rust compiler exports resources only. Run this "
            f"test with {COMPILER_OPTION} inmanta."
        )

    return refuse


class _ModelOf:
    """What pytest-inmanta reads of a resource's model instance: its type, by name."""

    def __init__(self, type_name: str) -> None:
        self._type_name = type_name

    def _get_instance(self) -> "_ModelOf":
        return self

    def get_type(self) -> str:
        return self._type_name


class Instance:
    """An instance of the compiled model, read-only: ``instance.attribute``."""

    def __init__(self, dump: list, index: int) -> None:
        self._dump = dump
        self._index = index

    @property
    def _entity(self) -> str:
        return self._dump[self._index]["entity"]

    def _convert(self, value: object) -> object:
        if isinstance(value, dict) and set(value) == {"$instance"}:
            return Instance(self._dump, value["$instance"])
        if isinstance(value, list):
            return [self._convert(v) for v in value]
        if isinstance(value, dict):
            return {k: self._convert(v) for k, v in value.items()}
        return value

    def __getattr__(self, name: str) -> object:
        if name.startswith("_"):
            raise AttributeError(name)
        attributes = self._dump[self._index]["attributes"]
        if name not in attributes:
            raise AttributeError(f"{self._entity} has no value for {name}")
        return self._convert(attributes[name])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Instance) and other._dump is self._dump and other._index == self._index

    def __hash__(self) -> int:
        return hash(self._index)

    def __repr__(self) -> str:
        return f"{self._entity} {self._index}"


def _get_instances(self: typing.Any, fortype: str = "std::Entity") -> list:
    dump = getattr(self, "_rs_instances", None)
    if dump is None:
        raise Exception("No compile has been done")
    return [
        Instance(dump, i) for i, instance in enumerate(dump) if instance["entity"] == fortype or fortype in instance["ancestors"]
    ]


def _model_type(resource: typing.Any, dump: list) -> str:
    """The entity of the model instance a resource was exported from (``Resource.is_type`` and
    so ``get_resource`` compare it, not the resource's own type, a supertype when the model
    extends a resource entity): the instance of that type whose identifying attribute has the
    resource id's value, or the only instance of that type."""
    import inmanta.resources

    entity_type = resource.id.entity_type
    candidates = [i for i in dump if i["entity"] == entity_type or entity_type in i["ancestors"]]
    try:
        _, options = inmanta.resources.resource.get_class(entity_type)
        id_attribute = options["name"]
    except Exception:
        id_attribute = None
    matching = [
        i for i in candidates if id_attribute and str(i["attributes"].get(id_attribute)) == resource.id.attribute_value
    ]
    if len(matching) == 1:
        return matching[0]["entity"]
    if len(candidates) == 1:
        return candidates[0]["entity"]
    return entity_type


def _compile_with(binary: str) -> typing.Callable[..., None]:
    def compile(
        self: typing.Any,
        main: str,
        export: bool = False,
        no_dedent: bool = True,
        export_env_var_settings: bool = False,
    ) -> None:
        import inmanta.resources
        from inmanta.ast import CompilerException

        model = dedent(main.strip("\n")) if not no_dedent else main
        # pytest-inmanta's own step: main.cf written, the modules' Python code loaded and their
        # resources and handlers registered (the handlers run from it).
        self._create_project_and_load(model)
        self._capsys.readouterr()

        python = os.path.join(self._env_path, "bin", "python")
        if not os.path.exists(python):
            python = sys.executable
        with tempfile.TemporaryDirectory() as work:
            out = os.path.join(work, "resources.json")
            files = os.path.join(work, "files")
            instances = os.path.join(work, "instances.json")
            env = {k: v for k, v in os.environ.items() if not k.startswith("INMANTA_CONFIG")}
            env["INMANTA_COMPILER_PYTHON"] = python
            # project.add_fact: what pytest-inmanta hands Inmanta's compiler as refs={"facts": ...}
            facts = os.path.join(work, "facts.json")
            with open(facts, "w", encoding="utf-8") as fh:
                json.dump(dict(self._facts), fh)
            env["INMANTA_COMPILER_FACTS"] = facts
            process = subprocess.run(
                [binary, "export", "-j", out, "--json-files", files, "--json-instances", instances],
                cwd=self._test_project_dir,
                env=env,
                capture_output=True,
                text=True,
            )
            sys.stdout.write(process.stdout)
            # Our own "Wrote N resources" line is not the model's output.
            sys.stderr.write("".join(l for l in process.stderr.splitlines(True) if not l.startswith("Wrote ")))
            if process.returncode != 0:
                raise CompilerException(process.stderr.strip())
            with open(out, encoding="utf-8") as fh:
                exported = json.load(fh)
            with open(instances, encoding="utf-8") as fh:
                self._rs_instances = json.load(fh)
            blobs = {}
            if os.path.isdir(files):
                for name in os.listdir(files):
                    with open(os.path.join(files, name), "rb") as fh:
                        blobs[name] = fh.read()

        for key, blob in blobs.items():
            self.add_blob(key, blob)
        resources = {}
        for wire in exported:
            resource = inmanta.resources.Resource.deserialize(wire)
            # pytest-inmanta finds a resource's type through its model instance.
            resource.model = _ModelOf(_model_type(resource, self._rs_instances))
            resources[resource.id] = resource
        self._root_scope = None
        self.types = None
        self.version = 0
        self.resources = resources
        self._exporter = None
        captured = self._capsys.readouterr()
        self._stdout = captured.out
        self._stderr = captured.err

    return compile
