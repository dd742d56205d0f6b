"""Plugins that show the order of a dict's keys: in Inmanta a dict keeps its insertion order."""

import json

from inmanta.plugins import plugin


@plugin
def keys_text(d: "dict") -> "string":
    return ",".join(d.keys())


def plain(value):
    """The model's dicts and lists reach a plugin as proxies; json.dumps wants the plain ones."""
    if hasattr(value, "items"):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        return value
    return [plain(v) for v in value]


@plugin
def as_json(d: "dict") -> "string":
    return json.dumps(plain(d))


@plugin
def made_dict() -> "dict":
    return {"zulu": 1, "alpha": {"yankee": 2, "bravo": 3}, "mike": [{"x": 1, "a": 2}]}
