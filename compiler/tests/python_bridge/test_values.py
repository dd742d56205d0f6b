import unittest

from support import CompilerEnd, clear_state, core

from inmanta_rs_bridge import remote
from inmanta_rs_bridge.remote import FileMarker, NotTransferable, RemoteInstance, decode, encode


class Decode(unittest.TestCase):
    def setUp(self):
        self.core = core()
        clear_state()

    def test_plain_values_stay_as_they_are(self):
        for value in (None, True, 3, 2.5, "text", [1, [2, "x"]]):
            self.assertEqual(decode(value), value)

    def test_a_dict_keeps_the_order_it_was_sent_in(self):
        value = decode({"$d": [["zulu", 1], ["alpha", {"$d": [["b", 2]]}], ["mike", 3]]})
        self.assertEqual(list(value), ["zulu", "alpha", "mike"])
        self.assertEqual(value["alpha"], {"b": 2})

    def test_an_unknown_is_inmanta_cores_unknown(self):
        self.assertIsInstance(decode({"$u": 1}), self.core.inm_util.Unknown)

    def test_a_file_marker_keeps_its_file_name(self):
        marker = decode("imp-module-source:file://mod/files/a.txt")
        self.assertIsInstance(marker, FileMarker)
        self.assertEqual(marker.filename, "mod/files/a.txt")
        self.assertEqual(marker, "imp-module-source:file://mod/files/a.txt")

    def test_an_instance_is_one_stand_in_with_the_attributes_sent_along(self):
        first = decode({"$i": 4, "$t": "mod::Host", "$a": {"name": "web"}})
        again = decode({"$i": 4, "$t": "mod::Host", "$a": {"name": "other"}})
        self.assertIsInstance(first, RemoteInstance)
        self.assertIs(first, again)
        self.assertEqual(first.known, {"name": "web"})  # set once, never changed
        self.assertEqual(first.get_type().get_full_name(), "mod::Host")
        self.assertEqual(str(first), "mod::Host 4")
        self.assertIsInstance(first.get_type(), self.core.inmanta.ast.entity.Entity)


class Encode(unittest.TestCase):
    def setUp(self):
        self.core = core()
        clear_state()

    def test_values_the_model_holds(self):
        self.assertIsNone(encode(None))
        self.assertIsNone(encode(self.core.inm_util.NoneValue()))
        self.assertEqual(encode((1, "a", [True])), [1, "a", [True]])
        self.assertEqual(encode({"b": 1, "a": {"c": None}}), {"$d": [["b", 1], ["a", {"$d": [["c", None]]}]]})
        self.assertEqual(encode(self.core.inm_util.Unknown(source=None)), {"$u": 1})
        self.assertEqual(encode(remote.instance(9, "mod::Host")), {"$i": 9})

    def test_a_proxy_crosses_as_what_it_wraps(self):
        proxy = self.core.proxy.DynamicProxy.return_value({"k": [1, 2]})
        self.assertEqual(encode(proxy), {"$d": [["k", [1, 2]]]})
        inst = self.core.proxy.DynamicProxy.return_value(remote.instance(3, "mod::Host"))
        self.assertEqual(encode(inst), {"$i": 3})

    def test_what_the_model_can_not_hold_is_refused_with_its_path(self):
        with self.assertRaises(NotTransferable) as refused:
            encode({"a": [1, object()]}, "the return value")
        self.assertRegex(
            str(refused.exception),
            r"^the return value\['a'\]\[1\] is a object \(<object object at .*>\), which the model can not hold$",
        )
        with self.assertRaises(NotTransferable) as refused:
            encode({1: "x"})
        self.assertEqual(str(refused.exception), "dict keys should be strings, got 1 at value")

    def test_a_string_of_a_str_subclass_comes_back_as_the_same_object(self):
        class Secret(str):
            pass

        secret = Secret("s3cr3t")
        self.assertEqual(encode(secret), "s3cr3t")
        self.assertIs(decode("s3cr3t"), secret)
        self.assertEqual(type(decode("other")), str)


class AttributeReads(unittest.TestCase):
    def setUp(self):
        self.core = core()
        clear_state()

    def read(self, reply, name="n"):
        with CompilerEnd(reply) as end:
            try:
                return remote.instance(1, "mod::Host").get_attribute(name).get_value()
            finally:
                self.assertEqual(end.sent, [{"get": [1, name]}])

    def test_a_value_is_asked_once(self):
        self.assertEqual(self.read({"v": {"$d": [["a", 1]]}}), {"a": 1})
        with CompilerEnd() as end:
            self.assertEqual(remote.instance(1, "mod::Host").get_attribute("n").get_value(), {"a": 1})
        self.assertEqual(end.sent, [])

    def test_what_the_compiler_can_not_give_is_inmanta_cores_exception(self):
        ast = self.core.inmanta.ast
        with self.assertRaises(ast.UnsetException):
            self.read({"unset": True})
        with self.assertRaises(ast.OptionalValueException):
            self.read({"none": True})
        with self.assertRaises(ast.NotFoundException):
            self.read({"notfound": "no attribute n"})
        self.assertIsInstance(self.read({"unknown": True}), self.core.inm_util.Unknown)

    def test_an_entity_type_asks_for_its_parents_and_attributes_once(self):
        info = {
            "parents": ["std::Entity"],
            "bases": [],
            "own": ["n"],
            "attributes": {"n": False, "peers": [0, None, "mod::Host", "peers"]},
            "indices": [["n"]],
        }
        with CompilerEnd(info) as end:
            host = remote.remote_type("mod::Host")
            self.assertEqual(host.get_all_parent_names(), ["std::Entity"])
            self.assertEqual(host.get_indices(), [["n"]])
            peers = host.get_attribute("peers")
            self.assertIsInstance(peers, self.core.inmanta.ast.attribute.RelationAttribute)
            self.assertEqual((peers.low, peers.high), (0, None))
            self.assertIs(peers.end, peers)
            self.assertIsNone(host.get_attribute("missing"))
        self.assertEqual(end.sent, [{"type": "mod::Host"}])


if __name__ == "__main__":
    unittest.main()
