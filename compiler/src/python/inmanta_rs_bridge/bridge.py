"""The requests of the compiler: load the modules' code, call plugins, export resources."""

import contextlib
import importlib
import importlib.util
import io
import os
import pkgutil
import sys

from . import core
from .core import inmanta, proxy
from .errors import error_answer, import_failure
from .exporter import EXPORTER
from .plugin import Plugin, PluginTypeError, signature_refusal
from .protocol import ask
from .remote import decode, encode, instance
from .standins import BridgeContext, install_project_stand_in


class Bridge:
    def __init__(self):
        self.plugins = {}
        self.config = {}
        self.modules = []
        # resource id (no version) -> the Resource object its export made, for dependency managers
        self.exported = {}
        # the plugins the compiler runs itself, asked once
        self._native_plugins = None

    def native_plugins(self):
        if self._native_plugins is None:
            self._native_plugins = list(ask({"plugins": True}).get("ok", []))
        return self._native_plugins

    def load(self, request):
        if core.IMPORT_ERROR:
            return {"error": {"type": "ModuleLoadingException", "message": core.IMPORT_ERROR, "frame": ""}}
        self.config = request.get("config", {})
        import inmanta_plugins

        install_project_stand_in(self.config)

        for module in request["modules"]:
            name = module["name"]
            fq = f"inmanta_plugins.{name}"
            importing = fq  # the Python module being imported, named in a failure
            try:
                if module.get("v1"):
                    init = os.path.join(module["path"], "plugins", "__init__.py")
                    spec = importlib.util.spec_from_file_location(
                        fq, init, submodule_search_locations=[os.path.dirname(init)]
                    )
                    mod = importlib.util.module_from_spec(spec)
                    sys.modules[fq] = mod
                    setattr(inmanta_plugins, name, mod)
                    spec.loader.exec_module(mod)
                else:
                    mod = importlib.import_module(fq)
                # as Inmanta does: every Python file of the module, so all its plugins register
                for sub in pkgutil.walk_packages(mod.__path__, prefix=fq + "."):
                    importing = sub.name
                    importlib.import_module(sub.name)
                self.modules.append(name)
            except Exception as e:
                return import_failure(e, name, importing)
        wanted = set(self.modules)
        plugins = []
        for fq_name, cls in inmanta.plugins.PluginMeta.get_functions().items():
            if fq_name.split("::")[0] not in wanted:
                continue
            refusal = signature_refusal(fq_name, cls.__function__)
            if refusal is not None:
                # Inmanta's plugin loader refuses it, without a location
                kind, message = refusal
                return {"error": {"type": kind, "message": message, "frame": "", "unlocated": True}}
            plugin = Plugin(cls)
            self.plugins[fq_name] = plugin
            plugins.append(plugin.signature())
        resources = []
        for entity, cls in inmanta.resources.resource.get_resources():
            if entity.split("::")[0] not in wanted:
                continue
            _, options = inmanta.resources.resource.get_class(entity)
            resources.append(
                {"entity": entity, "agent": options["agent"], "id_attribute": options["name"], "fields": list(cls.fields)}
            )
        return {"ok": {"plugins": plugins, "resources": resources, "python": sys.version.split()[0]}}

    def call(self, request):
        """A plugin call; what the plugin prints is answered with it (as `printed`): Inmanta's
        plugins print to the compile's output, as std::print does."""
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            answer = self._call(request)
        if printed.getvalue():
            answer["printed"] = printed.getvalue()
        return answer

    def _call(self, request):
        plugin = self.plugins[request["plugin"]]
        raw_args = [decode(v) for v in request.get("args", [])]
        raw_kwargs = {k: decode(v) for k, v in request.get("kwargs", {}).items()}
        refusal = plugin.arity_refusal(raw_args, raw_kwargs)
        if refusal is not None:
            return {"error": {"type": "RuntimeException", "message": refusal, "frame": ""}}
        try:
            plugin.check_args(raw_args, raw_kwargs)
        except PluginTypeError as e:
            return {"error": {"type": "PluginTypeException", "message": str(e), "frame": ""}}
        names = plugin.params
        try:
            args = [plugin.argument(v, names[i] if i < len(names) else f"args[{i}]") for i, v in enumerate(raw_args)]
            kwargs = {k: plugin.argument(v, k) for k, v in raw_kwargs.items()}
        except PluginTypeError as e:
            return {"error": {"type": "PluginTypeException", "message": str(e), "frame": ""}}
        except Exception as e:
            return error_answer(e)
        if plugin.context_at >= 0:
            args.insert(plugin.context_at, BridgeContext(plugin.ns, self.config, self))
        try:
            result = plugin.function(*args, **kwargs)
            # a reference crosses as its model (see `encode`); inmanta-core's unwrap would want
            # the model type it gives references at its own plugin boundary
            if not isinstance(result, inmanta.references.Reference):
                result = proxy.DynamicProxy.unwrap(result)
            try:
                plugin.check_result(result)
            except PluginTypeError as e:
                return {"error": {"type": "PluginTypeException", "message": str(e), "frame": ""}}
            return {"ok": encode(result, "the return value")}
        except Exception as e:
            return error_answer(e)

    def export(self, request):
        entity = request["entity"]
        model = proxy.DynamicProxy(instance(request["instance"], request.get("type", entity)))
        try:
            resource = inmanta.resources.Resource.create_from_model(EXPORTER, entity, model)
        except inmanta.resources.IgnoreResourceException:
            return {"ok": {"ignored": True}}
        except Exception as e:
            return error_answer(e)
        try:
            attributes = {}
            for field in resource.__class__.fields:
                if field not in ("references", "mutators"):
                    attributes[field] = encode(getattr(resource, field), field)
            # inmanta-core's ReferenceModel / MutatorModel objects, as the resource serializes them
            for field in ("references", "mutators"):
                models = getattr(resource, field, []) or []
                attributes[field] = encode(
                    [m.model_dump(mode="json") if hasattr(m, "model_dump") else m for m in models], field
                )
        except Exception as e:
            return error_answer(e)
        rid = resource.id
        self.exported[rid.resource_str()] = resource
        # the parts of resource_str(), which the compiler puts together again
        parts = [rid.get_entity_type(), rid.get_agent_name(), rid.get_attribute(), rid.get_attribute_value()]
        return {"ok": {"id": [str(p) for p in parts], "attributes": attributes}}

    def resource_id(self, request):
        """inmanta-core's `to_id` of an instance (what std::create_fact_reference names)."""
        model = proxy.DynamicProxy(instance(request["instance"], request.get("type", request["entity"])))
        try:
            rid = inmanta.resources.to_id(model)
        except Exception as e:
            return error_answer(e)
        if rid is None:
            return {"ok": None}
        # without its version, as the compiler names resources
        return {"ok": inmanta.resources.Id.parse_id(rid).resource_str()}

    def dependencies(self, request):
        """Runs the modules' `@dependency_manager`s over the resources their `@resource` classes
        exported, as Inmanta's exporter does after the export, with the requires the compiler
        computed; answers the requires of every resource whose requires they changed."""
        export_module = sys.modules.get("inmanta.export")  # imported by every module that has one
        managers = list(getattr(getattr(export_module, "Exporter", None), "_Exporter__dep_manager", None) or [])
        if not managers or not self.exported:
            return {"ok": {}}
        Id = inmanta.resources.Id
        given = request.get("requires", {})
        resources = {}
        for rid, resource in self.exported.items():
            resource.requires = {Id.parse_id(r) for r in given.get(rid, [])}
            resources[resource.id] = resource
        for manager in managers:
            try:
                manager({}, resources)
            except inmanta.ast.UnknownException:
                pass  # as Inmanta: a manager that meets an unknown adds nothing
            except Exception as e:
                answer = error_answer(e)
                answer["error"]["message"] = (
                    f"dependency manager {manager.__module__}.{manager.__name__}: {answer['error']['message']}"
                )
                return answer
        changed = {}
        for rid, resource in self.exported.items():
            try:
                now = sorted({_requirement(r) for r in resource.requires})
            except TypeError as e:
                return {"error": {"type": "CompilerException", "message": str(e), "frame": ""}}
            if now != sorted(given.get(rid, [])):
                changed[rid] = now
        return {"ok": changed}


def _requirement(r):
    """A requirement a dependency manager added (a string, a Resource or an Id, as Inmanta takes
    them), as a resource id without version."""
    if isinstance(r, str):
        return inmanta.resources.Id.parse_id(r).resource_str()
    if isinstance(r, inmanta.resources.Resource):
        return r.id.resource_str()
    if isinstance(r, inmanta.resources.Id):
        return r.resource_str()
    raise TypeError(f"a dependency manager put {r!r} ({type(r).__name__}) into a requires set; only strings, resources and ids can be there")
