"""A plugin of the modules' Python code, as the bridge calls it: its signature and checks."""

import inspect

from .core import inmanta
from .errors import describe
from .paired import to_python_domain
from .remote import to_plugin
from .typechecks import checker, model_type_names, reference_refusal, type_text


class PluginTypeError(Exception):
    pass


def signature_refusal(fq_name, function):
    """What Inmanta's plugin loader refuses in a plugin's signature, as (exception type, message):
    an argument without annotation (checked in its order), a bare `typing.Union`."""
    import typing

    spec = inspect.getfullargspec(function)
    named = [spec.varargs, spec.varkw, *spec.args, *spec.kwonlyargs]
    bare = next((a for a in named if a is not None and a not in spec.annotations), None)
    if bare is not None:
        return "RuntimeException", f"All arguments of plugin {fq_name!r} should be annotated: {bare!r} has no annotation"
    for annotation in spec.annotations.values():
        if annotation is typing.Union:
            return "InvalidTypeAnnotation", f"Union type must be subscripted, got {annotation}"
    return None


class Plugin:
    __slots__ = ("name", "function", "context_at", "allow_unknown", "ns", "annotations", "params", "checks")

    def __init__(self, cls):
        self.name = cls.__fq_plugin_name__
        self.function = cls.__function__
        self.ns = self.name.rsplit("::", 1)[0]
        self.allow_unknown = bool(cls.opts.get("allow_unknown"))
        self.context_at = -1
        spec = inspect.getfullargspec(self.function)
        for position, arg in enumerate(spec.args):
            if spec.annotations.get(arg) is inmanta.plugins.Context:
                self.context_at = position
        self.annotations = spec.annotations
        # one checker per annotation, made once: a call then costs a function call per argument
        self.checks = {name: checker(annotation, self.ns) for name, annotation in spec.annotations.items()}
        self.params = [a for i, a in enumerate(spec.args) if i != self.context_at]

    def arity_refusal(self, args, kwargs):
        """Inmanta's check of the number and names of the arguments, before the call (its
        RuntimeException, worded as Python's TypeError): None when they fit."""
        spec = inspect.getfullargspec(self.function)
        name = self.name
        if spec.varargs is None and len(args) > len(self.params):
            return f"{name}() takes {len(self.params)} positional arguments but {len(args)} were given"
        defaults = dict(zip(spec.args[len(spec.args) - len(spec.defaults or ()) :], spec.defaults or ()))
        defaults.update(spec.kwonlydefaults or {})
        missing = [a for i, a in enumerate(self.params) if i >= len(args) and a not in kwargs and a not in defaults]
        kind = "positional"
        if not missing:
            missing = [a for a in spec.kwonlyargs if a not in kwargs and a not in defaults]
            kind = "keyword-only"
        if len(missing) == 1:
            return f"{name}() missing 1 required {kind} argument: '{missing[0]}'"
        if missing:
            listed = ", ".join(repr(a) for a in missing[:-1]) + f" and {missing[-1]!r}"
            return f"{name}() missing {len(missing)} required {kind} arguments: {listed}"
        if spec.varkw is None:
            for key in kwargs:
                if key not in self.params and key not in spec.kwonlyargs:
                    return f"{name}() got an unexpected keyword argument: '{key}'"
        return None

    def check_args(self, args, kwargs):
        """Inmanta's check of the arguments against the annotations (what it understands of them)."""
        checks = self.checks
        named = list(zip(self.params, args)) + list(kwargs.items()) if kwargs else zip(self.params, args)
        for name, value in named:
            check = checks.get(name)
            if check is not None and not check(value):
                refusal = reference_refusal(value, self.annotations[name], self.name, name)
                raise PluginTypeError(
                    refusal
                    or f"Value {value!r} for argument {name} of plugin {self.name} has incompatible type."
                    f" Expected type: {type_text(self.annotations[name])}"
                )

    def argument(self, value, name):
        """An argument as the plugin gets it (to_python_domain); a dataclass instance that has no
        Python object (an unknown in a field) is Inmanta's PluginTypeException."""
        annotation = self.annotations.get(name)
        if annotation is None:
            return to_plugin(value, name)
        try:
            return to_python_domain(value, annotation, self.ns, name)
        except inmanta.ast.TypingException as e:
            raise PluginTypeError(
                f"Value {value!r} for argument {name} of plugin {self.name} has incompatible type."
                f" Expected type: {type_text(annotation)}: caused by {describe(e)}"
            )

    def check_result(self, value):
        check = self.checks.get("return")
        if check is not None and not check(value):
            raise PluginTypeError(
                f"Return value {value} of plugin {self.name} has incompatible type."
                f" Expected type: {type_text(self.annotations['return'])}"
            )

    def signature(self):
        spec = inspect.getfullargspec(self.function)
        try:
            file = inspect.getsourcefile(self.function) or ""
            line = inspect.getsourcelines(self.function)[1] + 1  # Inmanta's plugin location
        except (OSError, TypeError):
            file, line = "", 1
        return {
            "file": file,
            "line": line,
            "model_types": sorted(model_type_names(spec.annotations.values())),
            "name": self.name,
            "args": [a for i, a in enumerate(spec.args) if i != self.context_at],
            "kwonly": list(spec.kwonlyargs),
            "varargs": spec.varargs is not None,
            "varkw": spec.varkw is not None,
            "allow_unknown": self.allow_unknown,
        }
