"""Plugins that take references where Inmanta 20.1 lets them (a `Reference[...]` annotation, alone
or in a union, `allow_reference_values` on an attribute read) and plugins that do not, for the
reference conformance cases of compiler/tests/python/plugin-references."""

from inmanta.plugins import allow_reference_values, plugin
from inmanta.references import Reference, is_reference_of


@plugin
def describe(value: str | Reference[str]) -> str:
    """What the plugin received: the value itself, or the reference's class and what it resolves to."""
    if isinstance(value, Reference):
        return f"reference {type(value).__name__} of {type(value).get_reference_type().__name__}"
    return f"value {value}"


@plugin
def is_str_reference(value: str | Reference[str]) -> bool:
    return is_reference_of(value, str)


@plugin
def passthrough(value: Reference[str]) -> Reference[str]:
    """Hands the reference back: the model exports it as the same reference."""
    return value


@plugin
def any_reference(value: Reference) -> str:
    return type(value).__name__


@plugin
def count_references(values: list[str | Reference[str]]) -> int:
    return sum(1 for v in values if isinstance(v, Reference))


@plugin
def attribute_allowed(resource: "std::testing::NullResource") -> str:
    value = allow_reference_values(resource).value
    return type(value).__name__


@plugin
def attribute_plain(resource: "std::testing::NullResource") -> str:
    return str(resource.value)


@plugin
def plain(value: str) -> str:
    return value


@plugin
def anything(value: object) -> str:
    return "anything"


@plugin
def strings(values: list[str]) -> int:
    return len(values)


@plugin
def int_reference(value: Reference[int]) -> str:
    return "int"
