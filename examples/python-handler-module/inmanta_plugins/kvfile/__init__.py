"""
key=value lines in a file: an @resource and a CRUDHandler, written against inmanta-core's handler API.

The handler reads the file, reports the line's current value (or that it is missing), and creates,
updates or removes only its own line, so several resources can share one file.

`kvfile::Discovery` is a discovery resource: its DiscoveryHandler reports every key=value line of
the `*.conf` files of a directory as a discovered `kvfile::Line`, for the operator to adopt.
"""

import os
import tempfile

import pydantic

import inmanta.agent.handler
import inmanta.resources
from inmanta.agent.handler import CRUDHandler, DiscoveryHandler, HandlerContext, ResourcePurged, provider


@inmanta.resources.resource("kvfile::Line", agent="host.name", id_attribute="key")
class Line(inmanta.resources.PurgeableResource):
    """One `key=value` line of a file."""

    fields = ("path", "key", "value")

    path: str
    key: str
    value: str


def _read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def _write_lines(path: str, lines: list[str]) -> None:
    """Replaces the file atomically, so a reader never sees half of it."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=directory, prefix=".kvfile.")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    os.replace(temp, path)


def _split(line: str) -> tuple[str, str] | None:
    if "=" not in line or line.lstrip().startswith("#"):
        return None
    key, value = line.split("=", 1)
    return key.strip(), value.strip()


@provider("kvfile::Line", name="kvfile")
class LineHandler(CRUDHandler[Line]):
    def read_resource(self, ctx: HandlerContext, resource: Line) -> None:
        for line in _read_lines(resource.path):
            pair = _split(line)
            if pair is not None and pair[0] == resource.key:
                resource.value = pair[1]
                return
        raise ResourcePurged()

    def create_resource(self, ctx: HandlerContext, resource: Line) -> None:
        lines = _read_lines(resource.path)
        lines.append(f"{resource.key}={resource.value}")
        _write_lines(resource.path, lines)
        ctx.info("added %(key)s to %(path)s", key=resource.key, path=resource.path)
        ctx.set_created()

    def update_resource(self, ctx: HandlerContext, changes: dict, resource: Line) -> None:
        lines = [
            f"{resource.key}={resource.value}" if (_split(line) or ("", ""))[0] == resource.key else line
            for line in _read_lines(resource.path)
        ]
        _write_lines(resource.path, lines)
        ctx.info("set %(key)s in %(path)s", key=resource.key, path=resource.path, changes=changes)
        ctx.set_updated()

    def delete_resource(self, ctx: HandlerContext, resource: Line) -> None:
        lines = [line for line in _read_lines(resource.path) if (_split(line) or ("", ""))[0] != resource.key]
        _write_lines(resource.path, lines)
        ctx.info("removed %(key)s from %(path)s", key=resource.key, path=resource.path)
        ctx.set_purged()

    def facts(self, ctx: HandlerContext, resource: Line) -> dict[str, str]:
        keys = [pair[0] for pair in map(_split, _read_lines(resource.path)) if pair is not None]
        return {"keys_in_file": str(len(keys))}


@inmanta.resources.resource("kvfile::Discovery", agent="host.name", id_attribute="directory")
class Discovery(inmanta.resources.DiscoveryResource):
    """Discovers the key=value lines of the `*.conf` files in `directory`."""

    fields = ("directory",)

    directory: str


class DiscoveredLine(pydantic.BaseModel):
    """What is known of a discovered line: enough to write it as a `kvfile::Line`."""

    path: str
    key: str
    value: str


@provider("kvfile::Discovery", name="kvfile-discovery")
class LineDiscovery(DiscoveryHandler[Discovery, DiscoveredLine]):
    def discover_resources(self, ctx: HandlerContext, discovery_resource: Discovery) -> dict[str, DiscoveredLine]:
        found: dict[str, DiscoveredLine] = {}
        directory = discovery_resource.directory
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            if not name.endswith(".conf") or not os.path.isfile(path):
                continue
            for pair in map(_split, _read_lines(path)):
                if pair is None:
                    continue
                rid = inmanta.resources.Id("kvfile::Line", discovery_resource.id.agent_name, "key", pair[0])
                found[rid.resource_str()] = DiscoveredLine(path=path, key=pair[0], value=pair[1])
        ctx.info("found %(count)s lines in %(directory)s", count=len(found), directory=directory)
        return found
