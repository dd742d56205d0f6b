"""Values across the protocol, `decode` what the compiler sends and `encode` what goes back, and
the stand-ins of entity types and instances, which stay in the compiler: their reads are questions."""

import dataclasses

from .core import inm_util, inmanta, proxy
from .protocol import ask
from .references import reference_entries, reference_object
from .state import dataclass_entity, entity_types, instances, string_likes


def _attribute_stand_in(owner, name, shape):
    """An object that passes isinstance checks on inmanta-core's attribute classes, with its name
    and entity; a relation ([low, high, other entity, other end] from the compiler) answers
    is_optional() and is_multi() and has its `end` (the reverse relation, None when one-way), as
    inmanta-core's does."""
    import inmanta.ast.attribute as attribute

    if isinstance(shape, list):
        stand_in = _relation_class()(owner, name, shape)
    else:
        stand_in = attribute.Attribute.__new__(attribute.Attribute)
        stand_in._Attribute__name = name
        stand_in._Attribute__entity = owner
    return stand_in


_relation_stand_in = None


def _relation_class():
    """inmanta-core's RelationAttribute, its `end` looked up on the other entity when read."""
    global _relation_stand_in
    if _relation_stand_in is None:
        import inmanta.ast.attribute as attribute

        class RemoteRelation(attribute.RelationAttribute):
            def __init__(self, owner, name, shape):
                # inmanta-core's constructor registers the attribute on a real entity: not here
                self._Attribute__name = name
                self._Attribute__entity = owner
                self.low, self.high = shape[0], shape[1]
                self._other = shape[2:4]

            @property
            def end(self):
                other_entity, other_name = (self._other + [None, None])[:2]
                if other_entity is None or other_name is None:
                    return None
                return remote_type(other_entity).get_attribute(other_name)

            def __str__(self):
                return f"{self.get_entity().get_full_name()}.{self.name}"

        _relation_stand_in = RemoteRelation
    return _relation_stand_in


class _RemoteTypeMethods:
    """Stands in for inmanta-core's Entity type: names, parents, attributes and indices, from the
    compiler. An instance is an inmanta.ast.entity.Entity (remote_type), for modules that check."""

    def __init__(self, name):
        self._remote_name = name
        self._info = None
        self._stand_ins = {}

    def _get_info(self):
        if self._info is None:
            self._info = ask({"type": self._remote_name})
        return self._info

    def get_name(self):
        return self._remote_name.rsplit("::", 1)[-1]

    name = property(get_name)

    def get_full_name(self):
        return self._remote_name

    def type_string(self):
        return self._remote_name

    def get_all_parent_names(self):
        return list(self._get_info().get("parents", []))

    @property
    def parent_entities(self):
        return [remote_type(name) for name in self._get_info().get("bases", [])]

    @property
    def attributes(self):
        return {name: self.get_attribute(name) for name in self._get_info().get("own", [])}

    def get_all_attribute_names(self):
        return list(self._get_info().get("attributes", {}))

    def get_attribute(self, name):
        attributes = self._get_info().get("attributes", {})
        if name not in attributes:
            return None
        if name not in self._stand_ins:
            self._stand_ins[name] = _attribute_stand_in(self, name, attributes[name])
        return self._stand_ins[name]

    def get_indices(self):
        return [list(index) for index in self._get_info().get("indices", [])]

    def __str__(self):
        return self._remote_name

    def __repr__(self):
        return self._remote_name

    def __hash__(self):
        return hash(self._remote_name)

    def __eq__(self, other):
        return isinstance(other, _RemoteTypeMethods) and other._remote_name == self._remote_name


_remote_type_class = None


def remote_type(name):
    """The one stand-in of entity `name`."""
    global _remote_type_class
    t = entity_types.get(name)
    if t is None:
        if _remote_type_class is None:
            import inmanta.ast.entity

            _remote_type_class = type("RemoteType", (_RemoteTypeMethods, inmanta.ast.entity.Entity), {})
        t = entity_types[name] = _remote_type_class(name)
    return t


class RemoteInstance:
    """Stands in for inmanta-core's runtime Instance: attribute reads go to the compiler."""

    __slots__ = ("id", "type", "known")

    def __init__(self, inst_id, type_name):
        self.id = inst_id
        self.type = remote_type(type_name)
        # attribute values read or sent already: set once, they never change
        self.known = {}

    def get_type(self):
        return self.type

    def get_attribute(self, name):
        return RemoteAttribute(self, name)

    def __hash__(self):
        return hash(self.id)

    def __eq__(self, other):
        return isinstance(other, RemoteInstance) and other.id == self.id

    def __lt__(self, other):
        return self.id < other.id

    def __repr__(self):
        return f"{self.type.get_full_name()} {self.id}"

    __str__ = __repr__


class RemoteAttribute:
    __slots__ = ("instance", "name")

    def __init__(self, instance, name):
        self.instance = instance
        self.name = name

    def get_value(self):
        known = self.instance.known
        if self.name in known:
            return known[self.name]
        answer = ask({"get": [self.instance.id, self.name]})
        if "v" in answer:
            value = known[self.name] = decode(answer["v"])
            return value
        if "unset" in answer:
            raise inmanta.ast.UnsetException(
                f"attribute {self.name} of {self.instance} is not set yet", self.instance, self.name
            )
        if "none" in answer:
            raise inmanta.ast.OptionalValueException(self.instance, self.name)
        if "unknown" in answer:
            return inm_util.Unknown(source=self.instance)
        if "notfound" in answer:
            raise inmanta.ast.NotFoundException(None, self.name, answer["notfound"])
        raise inmanta.ast.RuntimeException(None, answer.get("error", "attribute read failed"))


def instance(inst_id, type_name):
    i = instances.get(inst_id)
    if i is None:
        i = instances[inst_id] = RemoteInstance(inst_id, type_name)
    return i


def decode(v):
    if isinstance(v, list):
        return [decode(x) for x in v]
    if isinstance(v, dict):
        if "$d" in v:
            return {k: decode(x) for k, x in v["$d"]}
        if "$i" in v:
            i = instance(v["$i"], v.get("$t", ""))
            for name, value in v.get("$a", {}).items():
                if name not in i.known:
                    i.known[name] = decode(value)
            return i
        if "$u" in v:
            return inm_util.Unknown(source=None)
        if "$r" in v:
            return reference_object(v["$r"], v.get("references", {}))
    if isinstance(v, str):
        if v.startswith(FileMarker.PREFIX):
            return FileMarker(v[len(FileMarker.PREFIX) :])
        if string_likes:
            return string_likes.get(v, v)
    return v


class FileMarker(str):
    """std's and fs' marker of a string that names a file (`std::file`): their resource code
    reads the file when it sees this class name."""

    PREFIX = "imp-module-source:file://"

    def __new__(cls, filename):
        obj = str.__new__(cls, cls.PREFIX + filename)
        obj.filename = filename
        return obj


class NotTransferable(Exception):
    pass


def encode(v, path="value"):
    if v is None or isinstance(v, inm_util.NoneValue):
        return None
    if isinstance(v, (bool, int, float, str)):
        if type(v) is not str and isinstance(v, str) and not isinstance(v, FileMarker):
            string_likes[str(v)] = v
        return v
    if isinstance(v, inmanta.references.Reference):
        references = {}
        reference_entries(v, references)
        return {"$r": str(v.serialize().id), "references": references}
    if isinstance(v, inm_util.Unknown):
        return {"$u": 1}
    if isinstance(v, (inmanta.references.ReferenceModel, inmanta.references.MutatorModel)):
        # a Python resource's `references` and `mutators`, as inmanta-core serializes them
        return v.model_dump(mode="json")
    if isinstance(v, RemoteInstance):
        return {"$i": v.id}
    entity = dataclass_entity.get(type(v))
    if entity is not None:
        # inmanta-core's Entity.from_python: a new instance of the entity with the object's fields
        fields = [[f.name, encode(getattr(v, f.name), f"{path}.{f.name}")] for f in dataclasses.fields(v)]
        return {"$dc": entity, "$a": fields}
    if isinstance(v, proxy.DynamicProxy):
        inner = v._get_instance()
        if isinstance(inner, RemoteInstance):
            return {"$i": inner.id}
        if isinstance(v, proxy.DictProxy):
            return {"$d": [[str(k), encode(x, f"{path}[{k!r}]")] for k, x in v.items()]}
        if isinstance(v, proxy.SequenceProxy):
            return [encode(x, f"{path}[{i}]") for i, x in enumerate(v)]
        return encode(inner, path)
    if isinstance(v, dict):
        out = []
        for k, x in v.items():
            if not isinstance(k, str):
                raise NotTransferable(f"dict keys should be strings, got {k!r} at {path}")
            out.append([k, encode(x, f"{path}[{k!r}]")])
        return {"$d": out}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [encode(x, f"{path}[{i}]") for i, x in enumerate(v)]
    raise NotTransferable(f"{path} is a {type(v).__name__} ({v!r}), which the model can not hold")


# values a plugin receives as they are (DynamicProxy.return_value passes them through too)
_PLAIN = frozenset((str, int, float, bool))


def to_plugin(value, name):
    """An argument as a plugin gets it when it is no dataclass object: as it is, or a DynamicProxy."""
    if type(value) in _PLAIN or isinstance(value, inm_util.Unknown):
        return value
    # the argument's name is the path Inmanta's messages give (`resource.value`)
    return proxy.DynamicProxy.return_value(value, context=proxy.ProxyContext(path=name))
