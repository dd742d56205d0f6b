"""Import deferral: what makes the modules' Python code start fast (installed by `main` before
inmanta-core is imported)."""

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import types


# Starting fast. `import inmanta.plugins` (which every module's Python code does) runs the
# `__init__` of inmanta.protocol, and handler code pulls in inmanta.agent and inmanta.data too:
# the REST API definitions, the database layer and SQLAlchemy, about a second of CPU a compile
# never needs. These packages are deferred: importing one, or a submodule of it, does not run
# its `__init__`; the first read of a name the `__init__` defines does (a name it re-exports
# from a submodule imports just that submodule). A plugin that really uses them gets them whole.
_DEFERRED_PACKAGES = ("inmanta.protocol", "inmanta.agent", "inmanta.data", "inmanta.server")


class _DeferredPackage(types.ModuleType):
    def __getattr__(self, name):
        state = self.__dict__
        loader = state.get("_bridge_loader")
        # dunder probes (`__wrapped__`, ...) must not load the package; `from p import *` must
        if loader is None or (name.startswith("__") and name != "__all__"):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        base = state["__path__"][0]
        if os.path.exists(os.path.join(base, name + ".py")) or os.path.exists(os.path.join(base, name, "__init__.py")):
            return importlib.import_module(f"{self.__name__}.{name}")
        source = _reexports(state).get(name)
        if source is not None:
            return getattr(importlib.import_module(source), name)
        del state["_bridge_loader"]
        loader.exec_module(self)
        return getattr(self, name)


def _reexports(state):
    """`from <package>.<sub> import a, b` lines of a deferred package's `__init__`: name -> sub."""
    found = state.get("_bridge_reexports")
    if found is None:
        import re

        found = {}
        package = state["__name__"]
        try:
            with open(state["__file__"], encoding="utf-8") as f:
                text = f.read()
        except OSError:
            text = ""
        for m in re.finditer(r"^from (" + re.escape(package) + r"\.[\w.]+) import ([\w, ]+)$", text, re.M):
            for name in m.group(2).split(","):
                name = name.strip().split(" as ")[0].strip()
                if name:
                    found[name] = m.group(1)
        state["_bridge_reexports"] = found
    return found


class _DeferringLoader(importlib.abc.Loader):
    def __init__(self, real):
        self.real = real

    def create_module(self, spec):
        return _DeferredPackage(spec.name)

    def exec_module(self, module):
        module.__dict__["_bridge_loader"] = self.real


class _DeferringFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in _DEFERRED_PACKAGES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return None
        spec.loader = _DeferringLoader(spec.loader)
        return spec


# Two more cuts, for modules whose Python uses inmanta-core's handler and export machinery (std,
# mitogen, apt, yum, podman, files): together 1.6 s of CPU down to 0.7 s for the ten package
# modules the tests install.
#
# Annotations. Python 3.13 evaluates a function's annotations when it is defined, so
# `def logs(self) -> list[data.LogLine]` in inmanta.agent.handler runs the whole `__init__` of
# inmanta.data (SQLAlchemy, GraphQL) just to build an annotation. These modules are compiled
# as under `from __future__ import annotations`: annotations stay strings until someone asks.
_STRING_ANNOTATIONS = ("inmanta.agent.handler", "inmanta.export")


class _StringAnnotationsLoader(importlib.machinery.SourceFileLoader):
    def get_code(self, fullname):
        import __future__

        path = self.get_filename(fullname)
        # Compiled from source, never from (or into) __pycache__: the cached bytecode is the
        # normal one, which the agent's executor and inmanta-core's own tools load.
        flags = __future__.annotations.compiler_flag
        return compile(self.get_data(path), path, "exec", flags=flags, dont_inherit=True)


class _StringAnnotationsFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in _STRING_ANNOTATIONS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = _StringAnnotationsLoader(spec.loader.name, spec.loader.path)
        return spec


# Modules imported for names used only at run time: inmanta.env imports the server's
# bootloader (and with it the server's extensions and the data layer) for one call in one
# function; std imports inmanta.protocol.endpoints (the REST client and with it the server's
# auth providers) for a client that only plugins calling the API create. Such a module is a
# stand-in until a name read from it is used: called, subclassed, checked with isinstance or
# read further; then the real module is imported and the name is the real one from then on.
_LATE_MODULES = ("inmanta.server.bootloader", "inmanta.protocol.endpoints")


class _LateName:
    __slots__ = ("_module", "_name", "_real")

    def __init__(self, module, name):
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_real", None)

    def _resolve(self):
        real = object.__getattribute__(self, "_real")
        if real is None:
            module = object.__getattribute__(self, "_module")
            if isinstance(sys.modules.get(module), _LateModule):
                del sys.modules[module]
            _LateModuleFinder.importing.add(module)
            try:
                real = getattr(importlib.import_module(module), object.__getattribute__(self, "_name"))
            finally:
                _LateModuleFinder.importing.discard(module)
            object.__setattr__(self, "_real", real)
        return real

    def __getattr__(self, name):
        return getattr(self._resolve(), name)

    def __call__(self, *args, **kwargs):
        return self._resolve()(*args, **kwargs)

    def __instancecheck__(self, obj):
        return isinstance(obj, self._resolve())

    def __subclasscheck__(self, cls):
        return issubclass(cls, self._resolve())

    def __mro_entries__(self, bases):
        return (self._resolve(),)

    def __repr__(self):
        return repr(self._resolve())


class _LateModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        return _LateName(self.__name__, name)


class _LateModuleLoader(importlib.abc.Loader):
    def create_module(self, spec):
        return _LateModule(spec.name)

    def exec_module(self, module):
        pass


class _LateModuleFinder(importlib.abc.MetaPathFinder):
    importing = set()

    def find_spec(self, name, path, target=None):
        if name not in _LATE_MODULES or name in self.importing:
            return None
        return importlib.machinery.ModuleSpec(name, _LateModuleLoader())


def install():
    """Puts the finders in front of the import system, unless INMANTA_BRIDGE_EAGER=1 (then
    everything is imported as it is written, for comparison)."""
    if os.environ.get("INMANTA_BRIDGE_EAGER") != "1":
        sys.meta_path.insert(0, _DeferringFinder())
        sys.meta_path.insert(0, _StringAnnotationsFinder())
        sys.meta_path.insert(0, _LateModuleFinder())
