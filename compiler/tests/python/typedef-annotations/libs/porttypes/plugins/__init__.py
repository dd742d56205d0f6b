"""Plugins whose annotations name typedefs of the model."""

from inmanta.plugins import Context, plugin


@plugin
def next_port(port: "porttypes::port_t") -> "porttypes::port_t":
    return port + 1


@plugin
def label(text: "string") -> "porttypes::label_t":
    return text.lower()


@plugin
def is_even(n: "int") -> "bool":
    return n % 2 == 0


@plugin
def double(n: "int") -> "porttypes::even_t":
    return n * 2


@plugin
def shout(context: Context, text: "string") -> "string":
    # every plugin of the model, the compiler's own (std's) included, as Jinja filters use them
    return context.get_compiler().get_plugins()["std::upper"](text) + "!"
