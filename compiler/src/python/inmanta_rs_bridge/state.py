"""What the parts share for the life of the process, in one place. Every name here is bound once
and only ever changed in place, so `from .state import x` in a part is this very object."""

# entity name -> the one stand-in of its type (remote.remote_type)
entity_types = {}
# instance id -> its one stand-in (remote.instance)
instances = {}

# Strings of a str subclass that plugins returned, by text. Inmanta's model holds the very object
# a plugin returned, so a plugin that gets the value back gets its class too; the compiler holds
# the text, and the text brings the object back here (an equal text from elsewhere as well: the
# model can not tell them apart, nor can a plugin but by the class).
string_likes = {}

# reference id -> the Python object rebuilt from its model: the same reference is the same object
reference_objects = {}

# model type name -> whether it is a typedef (else an entity), as asked once
typedefs = {}

# The model dataclasses paired with their Python classes (paired.pair_dataclasses), both ways: what
# inmanta-core keeps as `_paired_inmanta_entity` on the class and `_paired_dataclass` on the entity.
dataclass_entity = {}  # Python class -> entity name
entity_dataclass = {}  # entity name -> Python class
# instance id -> the object made for it: the same instance, the same object
dataclass_objects = {}
