"""What plugins reach of inmanta-core's compile: its Context, Compiler, plugins, Module and Project."""

import importlib.abc
import importlib.util
import os
import sys

from .core import inmanta, proxy
from .errors import WaitingForCompiler
from .protocol import ask
from .remote import NotTransferable, decode, encode, remote_type


class BridgeContext:
    """What plugins that take a `Context` use; the compiler's own parts are not reachable."""

    def __init__(self, plugin_ns, config, bridge):
        self._ns = plugin_ns
        self._config = config
        self._bridge = bridge
        # read by plugins that hand them on (e.g. to call other plugins); the compiler's own
        # resolver and queue stay in the compiler
        self.resolver = None
        self.queue = None

    def get_environment_id(self):
        return self._config.get("environment")

    def get_data_dir(self):
        path = os.path.join(self._config.get("project_dir", "."), "data", self._ns)
        os.makedirs(path, exist_ok=True)
        return path

    def get_type(self, name):
        return remote_type(str(name))

    def get_resolver(self):
        return None

    def _unsupported(self, what):
        raise inmanta.ast.RuntimeException(None, f"Context.{what} is not available to plugins in this compiler")

    def get_client(self):
        self._unsupported("get_client")

    def get_sync_client(self):
        self._unsupported("get_sync_client")

    def run_sync(self, function, timeout=5):
        self._unsupported("run_sync")

    @property
    def compiler(self):
        # read as an attribute too: std's getfact looks for pytest-inmanta's facts in its `refs`
        return self.get_compiler()

    def get_compiler(self):
        return CompilerStandIn(self._bridge)

    def get_queue_scheduler(self):
        self._unsupported("get_queue_scheduler")


class CompilerStandIn:
    """What plugins use of inmanta-core's Compiler: every plugin of the model, those of the
    modules' Python code and those the compiler runs itself (std's, called back through it)."""

    def __init__(self, bridge):
        self._bridge = bridge
        # what inmanta-core's do_compile(refs=...) was given: pytest-inmanta's `facts`
        # (project.add_fact), handed to our compile in the file FACTS_VARIABLE names
        self.refs = compile_refs()

    def get_plugins(self):
        plugins = {name: PluginStandIn(p) for name, p in self._bridge.plugins.items()}
        for name in self._bridge.native_plugins():
            plugins[name] = NativePluginStandIn(name)
        return plugins


# A JSON file of facts by resource id, then name: what pytest-inmanta's compile passes to
# inmanta-core's compiler as refs={"facts": ...} (packaging/pytest-inmanta-rs sets it).
FACTS_VARIABLE = "INMANTA_COMPILER_FACTS"

_refs = None


def compile_refs():
    global _refs
    if _refs is None:
        _refs = {}
        path = os.environ.get(FACTS_VARIABLE)
        if path:
            import json

            with open(path, encoding="utf-8") as fh:
                _refs["facts"] = json.load(fh)
    return _refs


class NativePluginStandIn:
    """A plugin the compiler runs itself, called from Python as inmanta-core's Plugin object is."""

    def __init__(self, name):
        self._name = name
        # where a plugin takes its Context (modules' Jinja filters read it): never, for these
        self._context = -1

    def __call__(self, *args, **kwargs):
        try:
            encoded = [encode(a, f"argument {i}") for i, a in enumerate(args)]
            encoded_kw = {k: encode(v, f"argument {k}") for k, v in kwargs.items()}
        except NotTransferable as e:
            raise inmanta.ast.RuntimeException(None, f"plugin {self._name}: {e}")
        answer = ask({"call": [self._name, encoded, encoded_kw]})
        if "ok" in answer:
            return decode(answer["ok"])
        if "unset" in answer:
            raise WaitingForCompiler(self._name)
        error = answer.get("error", {})
        message = error.get("message", f"plugin {self._name} failed")
        if error.get("type") == "ExplicitPluginException":
            raise inmanta.plugins.PluginException(message)
        raise inmanta.ast.RuntimeException(None, message)

    def call_in_context(self, processed_args, resolver, queue, location):
        return self(*processed_args.args, **processed_args.kwargs)


class PluginStandIn:
    """A plugin as inmanta-core's Plugin object is called by other plugins (e.g. Jinja filters)."""

    def __init__(self, plugin):
        self._plugin = plugin
        self._context = plugin.context_at

    def call_in_context(self, processed_args, resolver, queue, location):
        value = self._plugin.function(*processed_args.args, **processed_args.kwargs)
        return proxy.DynamicProxy.unwrap(value)

    def __call__(self, *args, **kwargs):
        return proxy.DynamicProxy.unwrap(self._plugin.function(*args, **kwargs))


class ModuleStandIn:
    """What plugins read of inmanta-core's Module: its name and directory."""

    def __init__(self, name, path):
        self.name = name
        self._path = path
        self.path = path


class ProjectStandIn:
    """What plugins read of inmanta-core's Project (`Project.get()`): its directory and modules."""

    def __init__(self, project_dir, modules):
        self.project_path = project_dir
        self._path = project_dir
        self.modules = modules


def install_project_stand_in(config):
    """Makes `Project.get()` answer; inmanta.module imports most of inmanta-core (its package
    manager and server parts), so the stand-in is put in place when a plugin first imports it."""

    def install(module):
        modules = {}
        for name, path in config.get("module_paths", {}).items():
            if not path:  # a module built into the compiler: its installed package, if any
                spec = importlib.util.find_spec(f"inmanta_plugins.{name}")
                if spec is None or not spec.submodule_search_locations:
                    continue
                path = list(spec.submodule_search_locations)[0]
            modules[name] = ModuleStandIn(name, path)
        module.Project._project = ProjectStandIn(config.get("project_dir", "."), modules)

    if "inmanta.module" in sys.modules:
        install(sys.modules["inmanta.module"])
    else:
        sys.meta_path.insert(0, _AfterImport("inmanta.module", install))


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs a function on a module right after it is first imported."""

    def __init__(self, name, then):
        self.name = name
        self.then = then

    def find_spec(self, name, path, target=None):
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        real, then = spec.loader, self.then

        class Loader(importlib.abc.Loader):
            def create_module(self, spec):
                return real.create_module(spec)

            def exec_module(self, module):
                real.exec_module(module)
                then(module)

        spec.loader = Loader()
        return spec
