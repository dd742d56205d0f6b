"""References (inmanta.references): rebuilt from their models when they come in, serialized with
every reference they take when they go out."""

import importlib

from .core import inmanta
from .state import reference_objects


def reference_object(ref_id, entries):
    """The reference `ref_id` as the Python object of its class (what an Inmanta plugin receives),
    built from its serialized model the way inmanta-core deserializes one on the agent: the class
    registered for its type, called with its arguments (a reference argument built first)."""
    known = reference_objects.get(ref_id)
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
    obj = reference_objects[ref_id] = cls(**kwargs)
    return obj


class _ReferenceSource:
    """What an argument model asks for a reference it names: its object, built from its model."""

    def __init__(self, entries):
        self.entries = entries

    def get_reference_value(self, ref_id, logger):
        return reference_object(str(ref_id), self.entries)


def contains_reference(value):
    if isinstance(value, inmanta.references.Reference):
        return True
    if isinstance(value, dict):
        return any(contains_reference(x) for x in value.values())
    if isinstance(value, (list, tuple)):
        return any(contains_reference(x) for x in value)
    return False


def is_reference_annotation(annotation):
    import typing

    target = typing.get_origin(annotation) or annotation
    return isinstance(target, type) and issubclass(target, inmanta.references.Reference)


def supports_references(annotation):
    """Inmanta's `supports_references()` of the type an annotation names: a `Reference[...]`, or a
    union (`T | Reference[T]`, optional) with one among its members. `object`, `Any` and the DSL
    type names do not: references are only taken where a plugin says so."""
    import types as pytypes
    import typing

    if is_reference_annotation(annotation):
        return True
    if typing.get_origin(annotation) in (typing.Union, pytypes.UnionType):
        return any(supports_references(a) for a in typing.get_args(annotation))
    return False


def reference_fits(ref, annotation):
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


def reference_entries(ref, out):
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
            reference_entries(arg, out)
        elif isinstance(arg, dict):
            pending.extend(arg.values())
        elif isinstance(arg, (list, tuple)):
            pending.extend(arg)
