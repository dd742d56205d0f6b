"""
The Python side of the kvconf module: plugins the model calls and how a ConfigFile is exported.
"""

import inmanta.resources
from inmanta.execute.util import Unknown
from inmanta.plugins import ModelType, plugin

import typing


@plugin
def lines(file: typing.Annotated[typing.Any, ModelType["kvconf::ConfigFile"]]) -> list[str]:
    """The lines of a file, sorted by key: takes an entity, returns a list."""
    return [f"{entry.key}={entry.value}" for entry in sorted(file.entries, key=lambda e: e.key)]


@plugin(allow_unknown=True)
def or_default(value: object, default: str) -> str:
    """The value, or the default while the value is not known yet (it receives the unknown)."""
    if isinstance(value, Unknown):
        return default
    return value


@plugin
def count_keys(files: list[typing.Annotated[typing.Any, ModelType["kvconf::ConfigFile"]]]) -> int:
    """How many keys the given files hold together."""
    return sum(len(f.entries) for f in files)


@plugin
def fail(message: str) -> str:
    """Raises, for the error reporting of the compiler."""
    raise ValueError(message)


@inmanta.resources.resource("kvconf::ConfigFile", agent="host.name", id_attribute="path")
class ConfigFile(inmanta.resources.PurgeableResource):
    """A file of key=value lines: the resource carries the rendered content."""

    fields = ("path", "content", "keys")

    @staticmethod
    def get_content(exporter, file) -> str:
        header = [f"# {file.header}"] if file.header else []
        return "\n".join(header + lines(file)) + "\n"

    @staticmethod
    def get_keys(exporter, file) -> int:
        return len(file.entries)
