"""Plugins whose annotations name typedefs of the model."""

from inmanta.plugins import plugin


@plugin
def next_port(port: "porttypes::port_t") -> "porttypes::port_t":
    return port + 1


@plugin
def label(text: "string") -> "porttypes::label_t":
    return text.lower()
