"""Model dataclasses and their Python classes: the pairing, and arguments converted to objects."""

import dataclasses
import importlib
import inspect
import types
import typing

from .core import inm_util, inmanta, proxy
from .remote import RemoteInstance, to_plugin
from .state import dataclass_entity, dataclass_objects, entity_dataclass
from .typechecks import conforms, model_type_name


# Dataclasses at the plugin boundary. An argument whose annotation names a paired dataclass
# entity (alone, in a list, dict, optional or union) gets its instances as objects of the Python
# class, made from their attributes once all are set (inmanta-core's Entity.to_python); any other
# argument gets instances as DynamicProxy. The way back is `encode`: a dataclass object a plugin
# returns becomes a new instance of its entity, whatever the return annotation says.

# `type X = ...` aliases (Python 3.12 and later)
_TYPE_ALIAS = getattr(typing, "TypeAliasType", ())


def converts_to_dataclass(annotation, ns):
    """Inmanta's `has_custom_to_python()` of the type an annotation names (`ns`: the plugin's
    namespace, where `ModelType` names resolve)."""
    import collections.abc
    import types as pytypes

    if not entity_dataclass:
        return False
    if isinstance(annotation, _TYPE_ALIAS):
        return converts_to_dataclass(annotation.__value__, ns)
    if isinstance(annotation, str):
        text = annotation.strip()
        while text.endswith("?") or text.endswith("[]"):
            text = text[:-1] if text.endswith("?") else text[:-2]
        return model_type_name(text, ns) in entity_dataclass
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        for meta in reversed(args[1:]):
            if isinstance(meta, inmanta.plugins.ModelType):
                named = model_type_name(meta.model_type, ns)
                # `Annotated[DynamicProxy, ModelType[...]]` of an entity asks for the proxy
                if args[0] is proxy.DynamicProxy and named in entity_dataclass:
                    return False
                return converts_to_dataclass(named, ns)
        return converts_to_dataclass(args[0], ns)
    if origin in (typing.Union, pytypes.UnionType):
        return any(converts_to_dataclass(a, ns) for a in args)
    if origin in (list, collections.abc.Sequence) and args:
        return converts_to_dataclass(args[0], ns)
    if origin in (dict, collections.abc.Mapping) and len(args) == 2:
        return converts_to_dataclass(args[1], ns)
    return isinstance(annotation, type) and annotation in dataclass_entity


def to_python_domain(value, annotation, ns, path):
    """An argument as the plugin gets it: Inmanta's `to_python()` where the annotation converts
    (converts_to_dataclass), a DynamicProxy (or plain value) elsewhere."""
    import collections.abc
    import types as pytypes

    if value is None or isinstance(value, inm_util.NoneValue):
        return None
    if isinstance(value, inm_util.Unknown) or not converts_to_dataclass(annotation, ns):
        return to_plugin(value, path)
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
        return to_plugin(value, path)
    if origin in (list, collections.abc.Sequence):
        return [to_python_domain(x, args[0], ns, f"{path}[{i}]") for i, x in enumerate(value)]
    if origin in (dict, collections.abc.Mapping):
        return {k: to_python_domain(x, args[1], ns, f"{path}[{k!r}]") for k, x in value.items()}
    return _dataclass_object(value, path)


def _dataclass_object(inst, path):
    """The object of its paired Python class for an instance of a dataclass entity (of its own
    entity: a child's instance passed for its parent is its child's class)."""
    cls = entity_dataclass.get(inst.type.get_full_name()) if isinstance(inst, RemoteInstance) else None
    if cls is None:
        return to_plugin(inst, path)
    made = dataclass_objects.get(inst.id)
    if made is None:
        values = {f.name: _field_value(inst.get_attribute(f.name).get_value(), f.name) for f in dataclasses.fields(cls)}
        made = dataclass_objects[inst.id] = cls(**values)
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
        dataclass_entity[found] = full
        entity_dataclass[full] = found
        verdicts.append({"status": "paired"})
    return verdicts
