# The Python side of the compiler's plugin bridge (compiler/src/python/bridge.rs).
#
# Runs in the project's Python environment, next to the compiler, for one compile. It imports the
# `inmanta_plugins` packages of the modules the model loads, reports their plugins and `@resource`
# classes, and serves plugin calls and resource exports. Entity instances stay in the compiler:
# they reach plugins as inmanta-core's own DynamicProxy over a stand-in instance whose attribute
# reads are questions back to the compiler.
#
# Protocol: one JSON document per line on stdin/stdout. The compiler sends a request; this side
# answers with zero or more questions ({"get": ...}, {"type": ...}, {"conforms": ...}, {"call": ...},
# {"plugins": ...}), each answered by the compiler, and then exactly one final answer ({"ok": ...}
# or {"error": ...} or {"unset": ...}). Requests nest: while answering a question the compiler may
# send a request (a typedef constraint calling a Python plugin), served before the reply comes.
# Values: JSON scalars and arrays; dicts as {"$d": [[key, value], ...]} (a JSON object would lose
# the insertion order a dict keeps in Inmanta); instances as {"$i": id, "$t": type};
# unknowns as {"$u": 1}; references as {"$r": id, "references": {id: {"model", "module", "class"}}}
# (the reference and every reference it takes, as inmanta-core serializes them).

import contextlib
import dataclasses
import hashlib
import io
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import json
import os
import pkgutil
import sys
import traceback
import types
import typing

_proto_out = sys.stdout
# Plugins that print must not write into the protocol: what a plugin call prints is answered
# with it (Bridge.call), what else prints goes to stderr.
sys.stdout = sys.stderr
_proto_in = sys.stdin


def send(msg):
    _proto_out.write(json.dumps(msg, separators=(",", ":")) + "\n")
    _proto_out.flush()


def receive():
    line = _proto_in.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)


def ask(msg):
    """Asks the compiler a question and returns its reply. While answering, the compiler may
    call a plugin of this side (a typedef constraint, a Jinja filter): such a request is served
    here, nested, before the reply comes."""
    send(msg)
    while True:
        reply = receive()
        if "op" not in reply:
            return reply
        send(serve(reply))


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


if os.environ.get("INMANTA_BRIDGE_EAGER") != "1":
    sys.meta_path.insert(0, _DeferringFinder())
    sys.meta_path.insert(0, _StringAnnotationsFinder())
    sys.meta_path.insert(0, _LateModuleFinder())


try:
    import inmanta.ast
    import inmanta.execute.proxy as proxy
    import inmanta.execute.util as inm_util
    import inmanta.plugins
    import inmanta.references
    import inmanta.resources
except ImportError as e:  # answered to the first request
    _IMPORT_ERROR = f"inmanta-core is not installed in {sys.prefix} ({e}); the modules' Python code needs it"
else:
    _IMPORT_ERROR = None


class WaitingForCompiler(Exception):
    """An attribute a plugin read is not set yet: the compiler runs the call again later."""


def _attribute_stand_in(owner, name, shape):
    """An object that passes isinstance checks on inmanta-core's attribute classes, with its name
    and entity; a relation ([low, high, other entity, other end] from the compiler) answers
    is_optional() and is_multi() and has its `end` (the reverse relation, None when one-way), as
    inmanta-core's does."""
    import inmanta.ast.attribute as attribute

    if isinstance(shape, list):
        stand_in = _relation_class()(owner, name, shape)
    else:
        stand_in = attribute.Attribute.__new__(attribute.Attribute)
        stand_in._Attribute__name = name
        stand_in._Attribute__entity = owner
    return stand_in


_relation_stand_in = None


def _relation_class():
    """inmanta-core's RelationAttribute, its `end` looked up on the other entity when read."""
    global _relation_stand_in
    if _relation_stand_in is None:
        import inmanta.ast.attribute as attribute

        class RemoteRelation(attribute.RelationAttribute):
            def __init__(self, owner, name, shape):
                # inmanta-core's constructor registers the attribute on a real entity: not here
                self._Attribute__name = name
                self._Attribute__entity = owner
                self.low, self.high = shape[0], shape[1]
                self._other = shape[2:4]

            @property
            def end(self):
                other_entity, other_name = (self._other + [None, None])[:2]
                if other_entity is None or other_name is None:
                    return None
                return remote_type(other_entity).get_attribute(other_name)

            def __str__(self):
                return f"{self.get_entity().get_full_name()}.{self.name}"

        _relation_stand_in = RemoteRelation
    return _relation_stand_in


class _RemoteTypeMethods:
    """Stands in for inmanta-core's Entity type: names, parents, attributes and indices, from the
    compiler. An instance is an inmanta.ast.entity.Entity (remote_type), for modules that check."""

    def __init__(self, name):
        self._remote_name = name
        self._info = None
        self._stand_ins = {}

    def _get_info(self):
        if self._info is None:
            self._info = ask({"type": self._remote_name})
        return self._info

    def get_name(self):
        return self._remote_name.rsplit("::", 1)[-1]

    name = property(get_name)

    def get_full_name(self):
        return self._remote_name

    def type_string(self):
        return self._remote_name

    def get_all_parent_names(self):
        return list(self._get_info().get("parents", []))

    @property
    def parent_entities(self):
        return [remote_type(name) for name in self._get_info().get("bases", [])]

    @property
    def attributes(self):
        return {name: self.get_attribute(name) for name in self._get_info().get("own", [])}

    def get_all_attribute_names(self):
        return list(self._get_info().get("attributes", {}))

    def get_attribute(self, name):
        attributes = self._get_info().get("attributes", {})
        if name not in attributes:
            return None
        if name not in self._stand_ins:
            self._stand_ins[name] = _attribute_stand_in(self, name, attributes[name])
        return self._stand_ins[name]

    def get_indices(self):
        return [list(index) for index in self._get_info().get("indices", [])]

    def __str__(self):
        return self._remote_name

    def __repr__(self):
        return self._remote_name

    def __hash__(self):
        return hash(self._remote_name)

    def __eq__(self, other):
        return isinstance(other, _RemoteTypeMethods) and other._remote_name == self._remote_name


_remote_type_class = None


def remote_type(name):
    """The one stand-in of entity `name`."""
    global _remote_type_class
    t = _types.get(name)
    if t is None:
        if _remote_type_class is None:
            import inmanta.ast.entity

            _remote_type_class = type("RemoteType", (_RemoteTypeMethods, inmanta.ast.entity.Entity), {})
        t = _types[name] = _remote_type_class(name)
    return t


_types = {}
_instances = {}


class RemoteInstance:
    """Stands in for inmanta-core's runtime Instance: attribute reads go to the compiler."""

    __slots__ = ("id", "type", "known")

    def __init__(self, inst_id, type_name):
        self.id = inst_id
        self.type = remote_type(type_name)
        # attribute values read or sent already: set once, they never change
        self.known = {}

    def get_type(self):
        return self.type

    def get_attribute(self, name):
        return RemoteAttribute(self, name)

    def __hash__(self):
        return hash(self.id)

    def __eq__(self, other):
        return isinstance(other, RemoteInstance) and other.id == self.id

    def __lt__(self, other):
        return self.id < other.id

    def __repr__(self):
        return f"{self.type.get_full_name()} {self.id}"

    __str__ = __repr__


class RemoteAttribute:
    __slots__ = ("instance", "name")

    def __init__(self, instance, name):
        self.instance = instance
        self.name = name

    def get_value(self):
        known = self.instance.known
        if self.name in known:
            return known[self.name]
        answer = ask({"get": [self.instance.id, self.name]})
        if "v" in answer:
            value = known[self.name] = decode(answer["v"])
            return value
        if "unset" in answer:
            raise inmanta.ast.UnsetException(
                f"attribute {self.name} of {self.instance} is not set yet", self.instance, self.name
            )
        if "none" in answer:
            raise inmanta.ast.OptionalValueException(self.instance, self.name)
        if "unknown" in answer:
            return inm_util.Unknown(source=self.instance)
        if "notfound" in answer:
            raise inmanta.ast.NotFoundException(None, self.name, answer["notfound"])
        raise inmanta.ast.RuntimeException(None, answer.get("error", "attribute read failed"))


def instance(inst_id, type_name):
    i = _instances.get(inst_id)
    if i is None:
        i = _instances[inst_id] = RemoteInstance(inst_id, type_name)
    return i


def decode(v):
    if isinstance(v, list):
        return [decode(x) for x in v]
    if isinstance(v, dict):
        if "$d" in v:
            return {k: decode(x) for k, x in v["$d"]}
        if "$i" in v:
            i = instance(v["$i"], v.get("$t", ""))
            for name, value in v.get("$a", {}).items():
                if name not in i.known:
                    i.known[name] = decode(value)
            return i
        if "$u" in v:
            return inm_util.Unknown(source=None)
        if "$r" in v:
            return _reference_object(v["$r"], v.get("references", {}))
    if isinstance(v, str):
        if v.startswith(FileMarker.PREFIX):
            return FileMarker(v[len(FileMarker.PREFIX) :])
        if _string_likes:
            return _string_likes.get(v, v)
    return v


# Strings of a str subclass that plugins returned, by text. Inmanta's model holds the very object
# a plugin returned, so a plugin that gets the value back gets its class too; the compiler holds
# the text, and the text brings the object back here (an equal text from elsewhere as well: the
# model can not tell them apart, nor can a plugin but by the class).
_string_likes = {}


# reference id -> the Python object rebuilt from its model: the same reference is the same object
_references = {}


def _reference_object(ref_id, entries):
    """The reference `ref_id` as the Python object of its class (what an Inmanta plugin receives),
    built from its serialized model the way inmanta-core deserializes one on the agent: the class
    registered for its type, called with its arguments (a reference argument built first)."""
    known = _references.get(ref_id)
    if known is not None:
        return known
    entry = entries.get(ref_id)
    if entry is None:
        raise inmanta.ast.RuntimeException(None, f"reference {ref_id} reached Python without its model")
    model = entry["model"]
    try:
        cls = inmanta.references.reference.get_class(model["type"])
    except Exception:
        # a reference the compiler made itself (std's): its class registers when its module imports
        importlib.import_module(entry.get("module") or "inmanta_plugins.std")
        cls = inmanta.references.reference.get_class(model["type"])
    # inmanta-core's own argument models give the values (a json argument with references in it
    # included); a reference argument asks the stand-in resource, which builds that reference
    parsed = inmanta.references.ReferenceModel.model_validate(model)
    source = _ReferenceSource(entries)
    kwargs = {}
    for arg in parsed.args:
        try:
            kwargs[arg.name] = arg.get_arg_value(source, None)
        except AttributeError:
            raise inmanta.ast.RuntimeException(
                None, f"reference {model['type']} has a {arg.type} argument ({arg.name}), which a plugin can not receive here"
            )
    obj = _references[ref_id] = cls(**kwargs)
    return obj


class _ReferenceSource:
    """What an argument model asks for a reference it names: its object, built from its model."""

    def __init__(self, entries):
        self.entries = entries

    def get_reference_value(self, ref_id, logger):
        return _reference_object(str(ref_id), self.entries)


def _contains_reference(value):
    if isinstance(value, inmanta.references.Reference):
        return True
    if isinstance(value, dict):
        return any(_contains_reference(x) for x in value.values())
    if isinstance(value, (list, tuple)):
        return any(_contains_reference(x) for x in value)
    return False


def _is_reference_annotation(annotation):
    import typing

    target = typing.get_origin(annotation) or annotation
    return isinstance(target, type) and issubclass(target, inmanta.references.Reference)


def _supports_references(annotation):
    """Inmanta's `supports_references()` of the type an annotation names: a `Reference[...]`, or a
    union (`T | Reference[T]`, optional) with one among its members. `object`, `Any` and the DSL
    type names do not: references are only taken where a plugin says so."""
    import types as pytypes
    import typing

    if _is_reference_annotation(annotation):
        return True
    if typing.get_origin(annotation) in (typing.Union, pytypes.UnionType):
        return any(_supports_references(a) for a in typing.get_args(annotation))
    return False


def _reference_fits(ref, annotation):
    """Whether a reference fits `Reference[T]`: what it resolves to is T (or a subclass of T)."""
    import typing

    args = typing.get_args(annotation)
    wanted = args[0] if args else object
    if wanted is object or wanted is typing.Any:
        return True
    resolves = type(ref).get_reference_type()
    if resolves is None:
        return False
    if isinstance(wanted, str):
        wanted = {"str": str, "string": str, "int": int, "float": float, "bool": bool}.get(wanted, wanted)
    return resolves is wanted or (isinstance(resolves, type) and isinstance(wanted, type) and issubclass(resolves, wanted))


def reference_refusal(value, annotation, plugin, name):
    """Inmanta's message when an argument holds a reference its annotation does not declare, or
    None when the reference is declared (or there is none)."""
    if not _contains_reference(value):
        return None
    if isinstance(value, inmanta.references.Reference):
        if _supports_references(annotation):
            return None
        verb = "is"
    else:
        if conforms(value, annotation):
            return None
        if not conforms(value, annotation, ignore_references=True):
            return None  # wrong for another reason: the type mismatch says it
        verb = "contains"
    return (
        f"Value {value!r} for argument {name} of plugin {plugin} {verb} a reference."
        " To allow references, use `| Reference[...]` in your type annotation."
    )


class FileMarker(str):
    """std's and fs' marker of a string that names a file (`std::file`): their resource code
    reads the file when it sees this class name."""

    PREFIX = "imp-module-source:file://"

    def __new__(cls, filename):
        obj = str.__new__(cls, cls.PREFIX + filename)
        obj.filename = filename
        return obj


class NotTransferable(Exception):
    pass


def _reference_entries(ref, out):
    """A reference and every reference it takes, by id: the model inmanta-core serializes (its
    own id), and the class, for messages and the attribute type checks."""
    model = ref.serialize()
    key = str(model.id)
    if key in out:
        return
    resolves = type(ref).get_reference_type()
    out[key] = {
        "model": model.model_dump(mode="json"),
        "module": type(ref).__module__,
        "class": type(ref).__name__,
        "resolves": getattr(resolves, "__name__", None),
    }
    pending = list(ref.arguments.values())
    while pending:
        arg = pending.pop()
        if isinstance(arg, inmanta.references.Reference):
            _reference_entries(arg, out)
        elif isinstance(arg, dict):
            pending.extend(arg.values())
        elif isinstance(arg, (list, tuple)):
            pending.extend(arg)


def encode(v, path="value"):
    if v is None or isinstance(v, inm_util.NoneValue):
        return None
    if isinstance(v, (bool, int, float, str)):
        if type(v) is not str and isinstance(v, str) and not isinstance(v, FileMarker):
            _string_likes[str(v)] = v
        return v
    if isinstance(v, inmanta.references.Reference):
        references = {}
        _reference_entries(v, references)
        return {"$r": str(v.serialize().id), "references": references}
    if isinstance(v, inm_util.Unknown):
        return {"$u": 1}
    if isinstance(v, (inmanta.references.ReferenceModel, inmanta.references.MutatorModel)):
        # a Python resource's `references` and `mutators`, as inmanta-core serializes them
        return v.model_dump(mode="json")
    if isinstance(v, RemoteInstance):
        return {"$i": v.id}
    entity = _dataclass_entity.get(type(v))
    if entity is not None:
        # inmanta-core's Entity.from_python: a new instance of the entity with the object's fields
        fields = [[f.name, encode(getattr(v, f.name), f"{path}.{f.name}")] for f in dataclasses.fields(v)]
        return {"$dc": entity, "$a": fields}
    if isinstance(v, proxy.DynamicProxy):
        inner = v._get_instance()
        if isinstance(inner, RemoteInstance):
            return {"$i": inner.id}
        if isinstance(v, proxy.DictProxy):
            return {"$d": [[str(k), encode(x, f"{path}[{k!r}]")] for k, x in v.items()]}
        if isinstance(v, proxy.SequenceProxy):
            return [encode(x, f"{path}[{i}]") for i, x in enumerate(v)]
        return encode(inner, path)
    if isinstance(v, dict):
        out = []
        for k, x in v.items():
            if not isinstance(k, str):
                raise NotTransferable(f"dict keys should be strings, got {k!r} at {path}")
            out.append([k, encode(x, f"{path}[{k!r}]")])
        return {"$d": out}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [encode(x, f"{path}[{i}]") for i, x in enumerate(v)]
    raise NotTransferable(f"{path} is a {type(v).__name__} ({v!r}), which the model can not hold")


def last_frame(exc):
    frames = traceback.extract_tb(exc.__traceback__)
    # the innermost frame that is not this bridge
    for f in reversed(frames):
        if os.path.basename(f.filename) != "bridge.py" and "<string>" not in f.filename:
            return f"{f.filename}:{f.lineno} in {f.name}"
    return frames[-1].filename + ":" + str(frames[-1].lineno) if frames else ""


def error_answer(exc):
    if isinstance(exc, WaitingForCompiler):
        return {"unset": True}
    if isinstance(exc, (inmanta.ast.UnsetException, inmanta.ast.MultiUnsetException)):
        return {"unset": True}
    if isinstance(exc, inmanta.ast.UnknownException):
        return {"ok": {"$u": 1}}
    kind = type(exc).__name__
    python_class = None
    if isinstance(exc, inmanta.plugins.PluginException):
        kind = "PluginException"
        # Inmanta reports an explicit plugin exception as the class the plugin raised
        python_class = f"{type(exc).__module__}.{type(exc).__qualname__}"
    message = describe(exc)
    # the frame that raised first: the innermost cause
    innermost = exc
    cause = exc.__cause__
    while cause is not None and cause is not innermost:
        message += f": caused by {type(cause).__name__}: {describe(cause)}"
        innermost = cause
        cause = cause.__cause__
    error = {"type": kind, "message": message, "frame": last_frame(innermost)}
    if python_class is not None:
        error["class"] = python_class
    return {"error": error}


def import_failure(exc, module, fq_import):
    """A module's Python code that does not import, reported as Inmanta reports it: a
    CompilerException located at the line of the failing file that raised."""
    spec = sys.modules.get(fq_import)
    path = getattr(spec, "__file__", None) or ""
    if not path:
        found = importlib.util.find_spec(fq_import) if "." not in fq_import or fq_import.rsplit(".", 1)[0] in sys.modules else None
        path = getattr(found, "origin", None) or ""
    line = None
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename == path:
            line = frame.lineno
            break
    kind = type(exc).__qualname__ if type(exc).__module__ in (None, "builtins") else f"{type(exc).__module__}.{type(exc).__qualname__}"
    message = f"Unable to load all plug-ins for module {module}:\n\t{kind} while loading plugin module {fq_import}: {exc}"
    return {"error": {"type": "CompilerException", "message": message, "frame": last_frame(exc), "file": path, "line": line or 0}}


def describe(exc):
    return getattr(exc, "msg", None) or str(exc) or type(exc).__name__


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

    def get_compiler(self):
        return CompilerStandIn(self._bridge)

    def get_queue_scheduler(self):
        self._unsupported("get_queue_scheduler")


class CompilerStandIn:
    """What plugins use of inmanta-core's Compiler: every plugin of the model, those of the
    modules' Python code and those the compiler runs itself (std's, called back through it)."""

    def __init__(self, bridge):
        self._bridge = bridge

    def get_plugins(self):
        plugins = {name: PluginStandIn(p) for name, p in self._bridge.plugins.items()}
        for name in self._bridge.native_plugins():
            plugins[name] = NativePluginStandIn(name)
        return plugins


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


_DSL_TYPES = {
    "string": (str,),
    "int": (int,),
    # Inmanta's float takes a float only (Float.validate), its number an int too
    "float": (float,),
    "number": (float, int),
    "bool": (bool,),
    "list": (list,),
    "dict": (dict,),
}


_typedefs = {}  # model type name -> whether it is a typedef (else an entity), as asked once


def _conforms_to_model_type(value, name):
    """A "ns::name" annotation names an entity or a typedef of the model; the compiler checks a
    typedef (its base type and constraint), as Inmanta resolves the name in the model."""
    if _typedefs.get(name) is not False and _entity_of(value) is None:
        try:
            encoded = encode(value)
        except NotTransferable:
            return False
        answer = ask({"conforms": [name, encoded]})["ok"]
        _typedefs[name] = answer is not None
        if answer is not None:
            return answer
    return _is_entity(value, name)


def _entity_of(value):
    """The entity of a value that is (or becomes) an instance: an instance, or an object of a
    paired dataclass that a plugin returns (the compiler makes its instance)."""
    if isinstance(value, RemoteInstance):
        return value.type
    entity = _dataclass_entity.get(type(value))
    return remote_type(entity) if entity is not None else None


def _is_entity(value, name):
    entity = _entity_of(value)
    if entity is None:
        return False
    if name == "std::Entity":
        return True
    return entity.get_full_name() == name or name in entity.get_all_parent_names()


def model_type_name(name, ns):
    """A `ModelType[...]` name as Inmanta resolves it in the plugin's namespace: a bare name that
    is no DSL type is one of that namespace (`Name[]`, `Name?` too)."""
    base = name.strip()
    suffix = ""
    while base.endswith("?") or base.endswith("[]"):
        cut = 1 if base.endswith("?") else 2
        base, suffix = base[:-cut], base[-cut:] + suffix
    if ns is None or "::" in base or base in _DSL_TYPES or base in ("any", "expression", "null"):
        return base + suffix
    return f"{ns}::{base}{suffix}"


def conforms(value, annotation, ignore_references=False, ns=None):
    """Whether a value fits a plugin annotation; True where the annotation is not understood. A
    reference fits only an annotation that declares it (`Reference[T]`, in a union or not), unless
    `ignore_references` (then it fits anything: the check is of the rest of the value). `ns` is
    the plugin's namespace, in which the names of `ModelType` annotations resolve."""
    import types as pytypes
    import typing

    if value is None or isinstance(value, inm_util.NoneValue):
        value = None
    if isinstance(value, inmanta.references.Reference):
        if ignore_references:
            return True
        if _is_reference_annotation(annotation):
            return _reference_fits(value, annotation)
        if typing.get_origin(annotation) in (typing.Union, pytypes.UnionType):
            return any(conforms(value, a) for a in typing.get_args(annotation))
        if typing.get_origin(annotation) is typing.Annotated:
            return conforms(value, typing.get_args(annotation)[0])
        return False
    if _is_reference_annotation(annotation):
        return isinstance(value, inm_util.Unknown)
    if isinstance(value, inm_util.Unknown) or annotation is typing.Any or annotation is object:
        return True
    if annotation is None or annotation is type(None):
        return value is None
    if isinstance(annotation, str):
        text = annotation.strip()
        if text.endswith("?"):
            return value is None or conforms(value, text[:-1], ignore_references, ns)
        if text in ("any", "expression"):
            return True
        if text in ("null", "None"):
            return value is None
        if text.endswith("[]"):
            return isinstance(value, list) and all(conforms(x, text[:-2], ignore_references, ns) for x in value)
        if text in _DSL_TYPES:
            if isinstance(value, bool) and text != "bool":
                return False
            return isinstance(value, _DSL_TYPES[text])
        if "::" in text:
            return _conforms_to_model_type(value, text)
        return True
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        for meta in args[1:]:
            if isinstance(meta, inmanta.plugins.ModelType):
                return conforms(value, model_type_name(meta.model_type, ns), ignore_references, ns)
        return conforms(value, args[0], ignore_references, ns)
    if origin in (typing.Union, pytypes.UnionType):
        return any(conforms(value, a, ignore_references, ns) for a in args)
    if annotation in (str, int, float, bool):
        if isinstance(value, bool) and annotation is not bool:
            return False
        return isinstance(value, annotation)
    if annotation in (list, dict):
        # elements of any type, which do not declare references
        return isinstance(value, annotation) and (ignore_references or not _contains_reference(value))
    if origin in (list, typing.Sequence) or annotation is typing.Sequence:
        return isinstance(value, list) and (not args or all(conforms(x, args[0], ignore_references, ns) for x in value))
    if origin in (dict, typing.Mapping):
        return isinstance(value, dict) and (len(args) < 2 or all(conforms(x, args[1], ignore_references, ns) for x in value.values()))
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        entity = _dataclass_entity.get(annotation)
        if entity is not None:
            return _is_entity(value, entity)
        # a dataclass comes from an instance of its entity, never from a plain value
        return value is not None and not isinstance(value, (str, int, float, bool, list, dict))
    return True


def checker(annotation, ns):
    """`conforms` for one annotation of a plugin of namespace `ns`, with the common plain types
    answered without the walk."""
    import typing

    Unknown = inm_util.Unknown
    if annotation in (int, "int"):
        return lambda v: (type(v) is int) or isinstance(v, Unknown) or conforms(v, annotation)
    if annotation in (str, "string"):
        return lambda v: (type(v) is str) or isinstance(v, Unknown) or conforms(v, annotation)
    if annotation is typing.Any or annotation is object or annotation in ("any", "expression"):
        # anything but a reference, which only a `Reference[...]` annotation takes
        return lambda v: not isinstance(v, inmanta.references.Reference)
    return lambda v: conforms(v, annotation, ns=ns)


def type_text(annotation):
    import typing

    if isinstance(annotation, str):
        return annotation
    if typing.get_origin(annotation) is typing.Annotated:
        for meta in typing.get_args(annotation)[1:]:
            if isinstance(meta, inmanta.plugins.ModelType):
                return meta.model_type
    if annotation in (str, int, float, bool, list, dict):
        return {"str": "string"}.get(annotation.__name__, annotation.__name__)
    if isinstance(annotation, type) and annotation in _dataclass_entity:
        return _dataclass_entity[annotation]
    return str(annotation).replace("typing.", "")


class PluginTypeError(Exception):
    pass


# Dataclasses at the plugin boundary. An argument whose annotation names a paired dataclass
# entity (alone, in a list, dict, optional or union) gets its instances as objects of the Python
# class, made from their attributes once all are set (inmanta-core's Entity.to_python); any other
# argument gets instances as DynamicProxy. The way back is `encode`: a dataclass object a plugin
# returns becomes a new instance of its entity, whatever the return annotation says.
_dataclass_objects = {}  # instance id -> the object made for it: the same instance, the same object
# `type X = ...` aliases (Python 3.12 and later)
_TYPE_ALIAS = getattr(typing, "TypeAliasType", ())


def converts_to_dataclass(annotation, ns):
    """Inmanta's `has_custom_to_python()` of the type an annotation names (`ns`: the plugin's
    namespace, where `ModelType` names resolve)."""
    import collections.abc
    import types as pytypes

    if not _entity_dataclass:
        return False
    if isinstance(annotation, _TYPE_ALIAS):
        return converts_to_dataclass(annotation.__value__, ns)
    if isinstance(annotation, str):
        text = annotation.strip()
        while text.endswith("?") or text.endswith("[]"):
            text = text[:-1] if text.endswith("?") else text[:-2]
        return model_type_name(text, ns) in _entity_dataclass
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        for meta in reversed(args[1:]):
            if isinstance(meta, inmanta.plugins.ModelType):
                named = model_type_name(meta.model_type, ns)
                # `Annotated[DynamicProxy, ModelType[...]]` of an entity asks for the proxy
                if args[0] is proxy.DynamicProxy and named in _entity_dataclass:
                    return False
                return converts_to_dataclass(named, ns)
        return converts_to_dataclass(args[0], ns)
    if origin in (typing.Union, pytypes.UnionType):
        return any(converts_to_dataclass(a, ns) for a in args)
    if origin in (list, collections.abc.Sequence) and args:
        return converts_to_dataclass(args[0], ns)
    if origin in (dict, collections.abc.Mapping) and len(args) == 2:
        return converts_to_dataclass(args[1], ns)
    return isinstance(annotation, type) and annotation in _dataclass_entity


def to_python_domain(value, annotation, ns, path):
    """An argument as the plugin gets it: Inmanta's `to_python()` where the annotation converts
    (converts_to_dataclass), a DynamicProxy (or plain value) elsewhere."""
    import collections.abc
    import types as pytypes

    if value is None or isinstance(value, inm_util.NoneValue):
        return None
    if isinstance(value, inm_util.Unknown) or not converts_to_dataclass(annotation, ns):
        return Bridge.to_plugin(value, path)
    if isinstance(annotation, _TYPE_ALIAS):
        return to_python_domain(value, annotation.__value__, ns, path)
    if isinstance(annotation, str):
        text = annotation.strip()
        if text.endswith("?"):
            return to_python_domain(value, text[:-1], ns, path)
        if text.endswith("[]"):
            return [to_python_domain(x, text[:-2], ns, f"{path}[{i}]") for i, x in enumerate(value)]
        return _dataclass_object(value, path)
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        for meta in reversed(args[1:]):
            if isinstance(meta, inmanta.plugins.ModelType):
                return to_python_domain(value, model_type_name(meta.model_type, ns), ns, path)
        return to_python_domain(value, args[0], ns, path)
    if origin in (typing.Union, pytypes.UnionType):
        # the first member the value fits decides, as in Inmanta's Union.to_python
        for member in args:
            if conforms(value, member, ns=ns):
                return to_python_domain(value, member, ns, path)
        return Bridge.to_plugin(value, path)
    if origin in (list, collections.abc.Sequence):
        return [to_python_domain(x, args[0], ns, f"{path}[{i}]") for i, x in enumerate(value)]
    if origin in (dict, collections.abc.Mapping):
        return {k: to_python_domain(x, args[1], ns, f"{path}[{k!r}]") for k, x in value.items()}
    return _dataclass_object(value, path)


def _dataclass_object(inst, path):
    """The object of its paired Python class for an instance of a dataclass entity (of its own
    entity: a child's instance passed for its parent is its child's class)."""
    cls = _entity_dataclass.get(inst.type.get_full_name()) if isinstance(inst, RemoteInstance) else None
    if cls is None:
        return Bridge.to_plugin(inst, path)
    made = _dataclass_objects.get(inst.id)
    if made is None:
        values = {f.name: _field_value(inst.get_attribute(f.name).get_value(), f.name) for f in dataclasses.fields(cls)}
        made = _dataclass_objects[inst.id] = cls(**values)
    return made


def _field_value(value, field):
    """A dataclass field's value in the Python domain, which has no unknowns (Entity.to_python)."""
    if isinstance(value, inm_util.Unknown):
        raise inmanta.ast.TypingException(
            None,
            f"Encountered unknown in field {field!r}."
            " Unknowns are not currently supported in dataclass instances in the Python domain.",
        )
    if isinstance(value, inm_util.NoneValue):
        return None
    if isinstance(value, list):
        return [_field_value(x, field) for x in value]
    if isinstance(value, dict):
        return {k: _field_value(x, field) for k, x in value.items()}
    return value


def model_type_names(annotations):
    """The model types (`ns::Name`) that DSL-string annotations name."""
    names = set()
    for annotation in annotations:
        if not isinstance(annotation, str):
            continue
        text = annotation.strip()
        while text.endswith("?") or text.endswith("[]"):
            text = text[:-1] if text.endswith("?") else text[:-2]
        if "::" in text:
            names.add(text)
    return names


def signature_refusal(fq_name, function):
    """What Inmanta's plugin loader refuses in a plugin's signature, as (exception type, message):
    an argument without annotation (checked in its order), a bare `typing.Union`."""
    import typing

    spec = inspect.getfullargspec(function)
    named = [spec.varargs, spec.varkw, *spec.args, *spec.kwonlyargs]
    bare = next((a for a in named if a is not None and a not in spec.annotations), None)
    if bare is not None:
        return "RuntimeException", f"All arguments of plugin {fq_name!r} should be annotated: {bare!r} has no annotation"
    for annotation in spec.annotations.values():
        if annotation is typing.Union:
            return "InvalidTypeAnnotation", f"Union type must be subscripted, got {annotation}"
    return None


class Plugin:
    __slots__ = ("name", "function", "context_at", "allow_unknown", "ns", "annotations", "params", "checks")

    def __init__(self, cls):
        self.name = cls.__fq_plugin_name__
        self.function = cls.__function__
        self.ns = self.name.rsplit("::", 1)[0]
        self.allow_unknown = bool(cls.opts.get("allow_unknown"))
        self.context_at = -1
        spec = inspect.getfullargspec(self.function)
        for position, arg in enumerate(spec.args):
            if spec.annotations.get(arg) is inmanta.plugins.Context:
                self.context_at = position
        self.annotations = spec.annotations
        # one checker per annotation, made once: a call then costs a function call per argument
        self.checks = {name: checker(annotation, self.ns) for name, annotation in spec.annotations.items()}
        self.params = [a for i, a in enumerate(spec.args) if i != self.context_at]

    def arity_refusal(self, args, kwargs):
        """Inmanta's check of the number and names of the arguments, before the call (its
        RuntimeException, worded as Python's TypeError): None when they fit."""
        spec = inspect.getfullargspec(self.function)
        name = self.name
        if spec.varargs is None and len(args) > len(self.params):
            return f"{name}() takes {len(self.params)} positional arguments but {len(args)} were given"
        defaults = dict(zip(spec.args[len(spec.args) - len(spec.defaults or ()) :], spec.defaults or ()))
        defaults.update(spec.kwonlydefaults or {})
        missing = [a for i, a in enumerate(self.params) if i >= len(args) and a not in kwargs and a not in defaults]
        kind = "positional"
        if not missing:
            missing = [a for a in spec.kwonlyargs if a not in kwargs and a not in defaults]
            kind = "keyword-only"
        if len(missing) == 1:
            return f"{name}() missing 1 required {kind} argument: '{missing[0]}'"
        if missing:
            listed = ", ".join(repr(a) for a in missing[:-1]) + f" and {missing[-1]!r}"
            return f"{name}() missing {len(missing)} required {kind} arguments: {listed}"
        if spec.varkw is None:
            for key in kwargs:
                if key not in self.params and key not in spec.kwonlyargs:
                    return f"{name}() got an unexpected keyword argument: '{key}'"
        return None

    def check_args(self, args, kwargs):
        """Inmanta's check of the arguments against the annotations (what it understands of them)."""
        checks = self.checks
        named = list(zip(self.params, args)) + list(kwargs.items()) if kwargs else zip(self.params, args)
        for name, value in named:
            check = checks.get(name)
            if check is not None and not check(value):
                refusal = reference_refusal(value, self.annotations[name], self.name, name)
                raise PluginTypeError(
                    refusal
                    or f"Value {value!r} for argument {name} of plugin {self.name} has incompatible type."
                    f" Expected type: {type_text(self.annotations[name])}"
                )

    def argument(self, value, name):
        """An argument as the plugin gets it (to_python_domain); a dataclass instance that has no
        Python object (an unknown in a field) is Inmanta's PluginTypeException."""
        annotation = self.annotations.get(name)
        if annotation is None:
            return Bridge.to_plugin(value, name)
        try:
            return to_python_domain(value, annotation, self.ns, name)
        except inmanta.ast.TypingException as e:
            raise PluginTypeError(
                f"Value {value!r} for argument {name} of plugin {self.name} has incompatible type."
                f" Expected type: {type_text(annotation)}: caused by {describe(e)}"
            )

    def check_result(self, value):
        check = self.checks.get("return")
        if check is not None and not check(value):
            raise PluginTypeError(
                f"Return value {value} of plugin {self.name} has incompatible type."
                f" Expected type: {type_text(self.annotations['return'])}"
            )

    def signature(self):
        spec = inspect.getfullargspec(self.function)
        try:
            file = inspect.getsourcefile(self.function) or ""
            line = inspect.getsourcelines(self.function)[1] + 1  # Inmanta's plugin location
        except (OSError, TypeError):
            file, line = "", 1
        return {
            "file": file,
            "line": line,
            "model_types": sorted(model_type_names(spec.annotations.values())),
            "name": self.name,
            "args": [a for i, a in enumerate(spec.args) if i != self.context_at],
            "kwonly": list(spec.kwonlyargs),
            "varargs": spec.varargs is not None,
            "varkw": spec.varkw is not None,
            "allow_unknown": self.allow_unknown,
        }


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
        if _IMPORT_ERROR:
            return {"error": {"type": "ModuleLoadingException", "message": _IMPORT_ERROR, "frame": ""}}
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

    @staticmethod
    def to_plugin(value, name):
        if type(value) in _PLAIN or isinstance(value, inm_util.Unknown):
            return value
        # the argument's name is the path Inmanta's messages give (`resource.value`)
        return proxy.DynamicProxy.return_value(value, context=proxy.ProxyContext(path=name))

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


# values a plugin receives as they are (DynamicProxy.return_value passes them through too)
_PLAIN = frozenset((str, int, float, bool))


class Exporter:
    """The part of inmanta-core's Exporter that resource mappers use: files go to the compiler."""

    def upload_file(self, content):
        data = content.encode() if isinstance(content, str) else bytes(content)
        digest = hashlib.sha1(data).hexdigest()
        ask({"file": digest, "content": data.decode("latin-1")})
        return digest


EXPORTER = Exporter()


_BRIDGE = Bridge()


def _dsl_type_text(annotation):
    """A dataclass field's annotation as the DSL type Inmanta pairs it with an attribute: "mismatch"
    where it has none (a dict with non-string keys, a union), None where we do not judge it."""
    import collections.abc
    import typing

    if isinstance(annotation, str):
        return annotation.strip()
    plain = {str: "string", int: "int", float: "float", bool: "bool", dict: "dict", list: "list"}
    if annotation in plain:
        return plain[annotation]
    if annotation is typing.Any or annotation is object:
        return "any"
    if annotation in (collections.abc.Mapping, typing.Mapping):
        return "dict"
    if annotation in (collections.abc.Sequence, typing.Sequence):
        return "list"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1 or len(rest) == len(args):
            return "mismatch"
        inner = _dsl_type_text(rest[0])
        return inner if inner in (None, "mismatch") else inner + "?"
    if origin in (dict, collections.abc.Mapping):
        return "dict" if not args or args[0] is str else "mismatch"
    if origin in (list, collections.abc.Sequence):
        inner = _dsl_type_text(args[0]) if args else "any"
        return inner if inner in (None, "mismatch") else inner + "[]"
    return None


def _pairing_failures(entity, dataclass):
    """Why Inmanta refuses a dataclass's fields for the entity's attributes (its wording)."""
    import typing

    same = "All attributes of a dataclasses must be identical in both the python and inmanta domain."
    fields = {f.name for f in dataclasses.fields(dataclass)}
    hints = typing.get_type_hints(dataclass)
    failures = []
    for rel in entity["relations"]:
        failures.append(
            f"a relation called {rel['name']} is defined at {rel['location']}. Dataclasses are not allowed to have relations"
        )
    for attr in entity["attributes"]:
        name = attr["name"]
        if name not in fields:
            failures.append(f"The attribute {name} has no counterpart in the python domain. {same}")
            continue
        fields.discard(name)
        theirs = _dsl_type_text(hints.get(name))
        if attr["type"] is None or theirs is None:
            continue
        normal = lambda t: t.replace("any[]", "list")  # noqa: E731
        if theirs == "mismatch" or normal(theirs) != normal(attr["type"]):
            failures.append(
                f"The attribute {name} does not have the same type as the associated field in the python domain. {same}"
            )
    for name in [f.name for f in dataclasses.fields(dataclass) if f.name in fields]:
        failures.append(f"The field {name} doesn't exist in the inmanta domain. {same[:-1]}")
    return failures


# The model dataclasses paired with their Python classes (pair_dataclasses), both ways: what
# inmanta-core keeps as `_paired_inmanta_entity` on the class and `_paired_dataclass` on the entity.
_dataclass_entity = {}  # Python class -> entity name
_entity_dataclass = {}  # entity name -> Python class


def pair_dataclasses(entities):
    """Inmanta's pairing of model dataclasses with the Python classes of their modules, one verdict
    per entity up to the first refused: "absent" (no Python object of the name: not paired),
    "paired", or "refused" with Inmanta's exception."""
    verdicts = []
    for entity in entities:
        full, at, module_name = entity["entity"], entity["location"], entity["module"]
        try:
            found = getattr(importlib.import_module(module_name), entity["name"], None)
        except Exception as e:
            verdicts.append({"status": "refused", "type": type(e).__name__, "message": str(e)})
            break
        if found is None:
            verdicts.append({"status": "absent"})
            continue
        counterpart = "Dataclasses must have a python counterpart that is a frozen dataclass."
        problem = None
        if not dataclasses.is_dataclass(found):
            problem = f"is not a dataclass. {counterpart}"
        elif not found.__dataclass_params__.frozen:
            problem = f"is not frozen. {counterpart}"
        if problem is not None:
            message = f"The python object {module_name}.{found.__name__} associated to  {full} defined at {at} {problem}"
            verdicts.append({"status": "refused", "type": "DataClassMismatchException", "message": message})
            break
        failures = _pairing_failures(entity, found)
        if failures:
            _, line = inspect.getsourcelines(found)
            listed = "\n".join(" " * 4 + "-" + f for f in failures)
            message = (
                f"The dataclass {full} defined at {at} does not match the corresponding python dataclass at "
                f"{inspect.getfile(found)}:{line}. {len(failures)} errors:\n{listed}\n"
            )
            verdicts.append({"status": "refused", "type": "DataClassMismatchException", "message": message})
            break
        _dataclass_entity[found] = full
        _entity_dataclass[full] = found
        verdicts.append({"status": "paired"})
    return verdicts


def serve(request):
    """The answer to one request of the compiler."""
    op = request.get("op")
    try:
        if op == "load":
            return _BRIDGE.load(request)
        if op == "call":
            return _BRIDGE.call(request)
        if op == "export":
            return _BRIDGE.export(request)
        if op == "dependencies":
            return _BRIDGE.dependencies(request)
        if op == "resource_id":
            return _BRIDGE.resource_id(request)
        if op == "dataclasses":
            return {"ok": pair_dataclasses(request["entities"])}
        return {"error": {"type": "CompilerException", "message": f"unknown request {op!r}", "frame": ""}}
    except Exception as e:  # a bug of this bridge, reported rather than hanging the compiler
        return {"error": {"type": "CompilerException", "message": f"{type(e).__name__}: {e}", "frame": last_frame(e)}}


def main():
    send({"ready": sys.version.split()[0]})
    while True:
        request = receive()
        if request.get("op") == "exit":
            return
        send(serve(request))


main()
