"""Plugin annotations: whether a value fits one (`conforms`, `checker`) and how messages name it."""

import dataclasses

from .core import inm_util, inmanta
from .protocol import ask
from .references import contains_reference, is_reference_annotation, reference_fits, supports_references
from .remote import NotTransferable, RemoteInstance, encode, remote_type
from .state import dataclass_entity, typedefs


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


def _conforms_to_model_type(value, name):
    """A "ns::name" annotation names an entity or a typedef of the model; the compiler checks a
    typedef (its base type and constraint), as Inmanta resolves the name in the model."""
    if typedefs.get(name) is not False and _entity_of(value) is None:
        try:
            encoded = encode(value)
        except NotTransferable:
            return False
        answer = ask({"conforms": [name, encoded]})["ok"]
        typedefs[name] = answer is not None
        if answer is not None:
            return answer
    return _is_entity(value, name)


def _entity_of(value):
    """The entity of a value that is (or becomes) an instance: an instance, or an object of a
    paired dataclass that a plugin returns (the compiler makes its instance)."""
    if isinstance(value, RemoteInstance):
        return value.type
    entity = dataclass_entity.get(type(value))
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
        if is_reference_annotation(annotation):
            return reference_fits(value, annotation)
        if typing.get_origin(annotation) in (typing.Union, pytypes.UnionType):
            return any(conforms(value, a) for a in typing.get_args(annotation))
        if typing.get_origin(annotation) is typing.Annotated:
            return conforms(value, typing.get_args(annotation)[0])
        return False
    if is_reference_annotation(annotation):
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
        return isinstance(value, annotation) and (ignore_references or not contains_reference(value))
    if origin in (list, typing.Sequence) or annotation is typing.Sequence:
        return isinstance(value, list) and (not args or all(conforms(x, args[0], ignore_references, ns) for x in value))
    if origin in (dict, typing.Mapping):
        return isinstance(value, dict) and (len(args) < 2 or all(conforms(x, args[1], ignore_references, ns) for x in value.values()))
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        entity = dataclass_entity.get(annotation)
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
    if isinstance(annotation, type) and annotation in dataclass_entity:
        return dataclass_entity[annotation]
    return str(annotation).replace("typing.", "")


def reference_refusal(value, annotation, plugin, name):
    """Inmanta's message when an argument holds a reference its annotation does not declare, or
    None when the reference is declared (or there is none)."""
    if not contains_reference(value):
        return None
    if isinstance(value, inmanta.references.Reference):
        if supports_references(annotation):
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
