from inmanta.plugins import plugin


@plugin
def double(value: "int") -> "int":
    """Twice the value, for the model and for get_plugin_function."""
    return 2 * value
