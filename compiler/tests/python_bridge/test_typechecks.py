import dataclasses
import sys
import types
import typing
import unittest

from support import CompilerEnd, clear_state, core

from inmanta_rs_bridge import paired, remote, typechecks
from inmanta_rs_bridge.typechecks import checker, conforms, model_type_name, type_text


class Conforms(unittest.TestCase):
    def setUp(self):
        self.core = core()
        clear_state()

    def test_dsl_type_names(self):
        self.assertTrue(conforms("a", "string"))
        self.assertFalse(conforms(1, "string"))
        self.assertTrue(conforms(1, "int"))
        self.assertFalse(conforms(True, "int"))  # a bool is no int in the model
        self.assertTrue(conforms(1, "number"))
        self.assertFalse(conforms(1, "float"))
        self.assertTrue(conforms([1, 2], "int[]"))
        self.assertFalse(conforms([1, "2"], "int[]"))
        self.assertTrue(conforms(None, "string?"))
        self.assertTrue(conforms(self.core.inm_util.NoneValue(), "null"))
        self.assertTrue(conforms({"a": 1}, "any"))

    def test_python_annotations(self):
        self.assertTrue(conforms(3, typing.Optional[int]))
        self.assertTrue(conforms(None, int | None))
        self.assertFalse(conforms("3", int | None))
        self.assertTrue(conforms([1, 2], list[int]))
        self.assertFalse(conforms([1, "x"], list[int]))
        self.assertTrue(conforms({"a": 1}, dict[str, int]))
        self.assertFalse(conforms({"a": "b"}, dict[str, int]))
        self.assertTrue(conforms(object(), typing.Any))
        self.assertFalse(conforms(1, None))

    def test_an_unknown_fits_every_annotation(self):
        unknown = self.core.inm_util.Unknown(source=None)
        for annotation in (int, "string", list[str], "mod::Host"):
            self.assertTrue(conforms(unknown, annotation), annotation)

    def test_an_entity_name_takes_its_instances_and_those_of_its_children(self):
        with CompilerEnd({"parents": ["mod::Base", "std::Entity"]}) as end:
            host = remote.instance(1, "mod::Host")
            self.assertTrue(conforms(host, "mod::Base"))
        # an instance is checked against its type's parents, asked once
        self.assertEqual(end.sent, [{"type": "mod::Host"}])
        with CompilerEnd() as end:
            self.assertFalse(conforms(host, "mod::Other"))
            self.assertTrue(conforms(host, "std::Entity"))
        self.assertEqual(end.sent, [])

    def test_a_typedef_is_checked_by_the_compiler(self):
        with CompilerEnd({"ok": True}, {"ok": False}) as end:
            self.assertTrue(conforms("10.0.0.1", "ip::ip"))
            self.assertFalse(conforms("x", typing.Annotated[str, self.core.inmanta.plugins.ModelType["ip::ip"]]))
        self.assertEqual(end.sent, [{"conforms": ["ip::ip", "10.0.0.1"]}, {"conforms": ["ip::ip", "x"]}])

    def test_model_type_names_resolve_in_the_plugins_namespace(self):
        self.assertEqual(model_type_name("Host", "mod"), "mod::Host")
        self.assertEqual(model_type_name("Host[]?", "mod"), "mod::Host[]?")
        self.assertEqual(model_type_name("string", "mod"), "string")
        self.assertEqual(model_type_name("other::Host", "mod"), "other::Host")
        self.assertEqual(model_type_name("Host", None), "Host")


class Checker(unittest.TestCase):
    def setUp(self):
        self.core = core()

    def test_plain_types_are_checked_without_the_walk(self):
        check = checker(int, "mod")
        self.assertTrue(check(3))
        self.assertTrue(check(self.core.inm_util.Unknown(source=None)))
        self.assertFalse(check("3"))
        self.assertFalse(check(True))
        self.assertTrue(checker("string", "mod")("x"))
        self.assertTrue(checker(typing.Any, "mod")([object()]))

    def test_other_annotations_are_conforms(self):
        check = checker(list[str], "mod")
        self.assertTrue(check(["a"]))
        self.assertFalse(check([1]))

    def test_messages_name_types_as_the_model_does(self):
        self.assertEqual(type_text(str), "string")
        self.assertEqual(type_text(int), "int")
        self.assertEqual(type_text("mod::Host[]"), "mod::Host[]")
        self.assertEqual(
            type_text(typing.Annotated[typing.Any, self.core.inmanta.plugins.ModelType["mod::Host"]]), "mod::Host"
        )
        self.assertEqual(type_text(typing.Optional[int]), "Optional[int]")


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int


@dataclasses.dataclass
class Loose:
    x: int


ENTITY = {
    "entity": "geo::Point",
    "name": "Point",
    "location": "main.cf:1",
    "relations": [],
    "attributes": [{"name": "x", "type": "int"}, {"name": "y", "type": "int"}],
}


class Dataclasses(unittest.TestCase):
    def setUp(self):
        self.core = core()
        clear_state()
        module = types.ModuleType("bridge_test_geo")
        module.Point, module.Loose = Point, Loose
        sys.modules[module.__name__] = module
        self.addCleanup(sys.modules.pop, module.__name__)

    def pair(self, **changes):
        return paired.pair_dataclasses([{**ENTITY, "module": "bridge_test_geo", **changes}])

    def test_a_frozen_dataclass_of_the_same_fields_is_paired(self):
        self.assertEqual(self.pair(), [{"status": "paired"}])
        self.assertTrue(paired.converts_to_dataclass(Point, "geo"))
        self.assertTrue(paired.converts_to_dataclass(list[Point] | None, "geo"))
        self.assertTrue(paired.converts_to_dataclass("Point[]", "geo"))
        self.assertFalse(paired.converts_to_dataclass(int, "geo"))
        self.assertEqual(type_text(Point), "geo::Point")

    def test_a_name_without_python_object_is_not_paired(self):
        self.assertEqual(self.pair(name="Absent"), [{"status": "absent"}])
        self.assertFalse(paired.converts_to_dataclass("geo::Point", "geo"))

    def test_refusals_are_worded_as_inmantas(self):
        [loose] = self.pair(name="Loose", entity="geo::Loose")
        self.assertEqual(loose["type"], "DataClassMismatchException")
        self.assertEqual(
            loose["message"],
            "The python object bridge_test_geo.Loose associated to  geo::Loose defined at main.cf:1 is not frozen."
            " Dataclasses must have a python counterpart that is a frozen dataclass.",
        )
        [mismatch] = self.pair(attributes=[{"name": "x", "type": "string"}, {"name": "z", "type": "int"}])
        self.assertIn("3 errors:", mismatch["message"])
        self.assertIn(
            "-The attribute x does not have the same type as the associated field in the python domain.",
            mismatch["message"],
        )
        self.assertIn("-The attribute z has no counterpart in the python domain.", mismatch["message"])
        self.assertIn("-The field y doesn't exist in the inmanta domain.", mismatch["message"])

    def test_an_instance_becomes_one_object_of_its_class(self):
        self.pair()
        inst = remote.decode({"$i": 5, "$t": "geo::Point", "$a": {"x": 1, "y": 2}})
        made = paired.to_python_domain(inst, Point, "geo", "p")
        self.assertEqual(made, Point(1, 2))
        self.assertIs(paired.to_python_domain([inst], list[Point], "geo", "p")[0], made)
        # any other annotation gets the proxy
        self.assertIsInstance(paired.to_python_domain(inst, typing.Any, "geo", "p"), self.core.proxy.DynamicProxy)
        self.assertEqual(remote.encode(Point(3, 4)), {"$dc": "geo::Point", "$a": [["x", 3], ["y", 4]]})

    def test_an_unknown_field_has_no_python_object(self):
        self.pair()
        inst = remote.decode({"$i": 6, "$t": "geo::Point", "$a": {"x": {"$u": 1}, "y": 2}})
        with self.assertRaises(self.core.inmanta.ast.TypingException) as refused:
            paired.to_python_domain(inst, Point, "geo", "p")
        self.assertIn("Encountered unknown in field 'x'", str(refused.exception))

    def test_a_paired_dataclass_annotation_takes_instances_of_its_entity_only(self):
        self.pair()
        with CompilerEnd() as end:
            self.assertTrue(conforms(remote.instance(7, "geo::Point"), Point))
            self.assertFalse(conforms(1, Point))
        self.assertEqual(end.sent, [])
        self.assertEqual(typechecks.model_type_names(["geo::Point[]", int, "string"]), {"geo::Point"})


if __name__ == "__main__":
    unittest.main()
