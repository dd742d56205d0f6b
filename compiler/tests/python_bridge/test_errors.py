import os
import tempfile
import unittest

from support import core

from inmanta_rs_bridge import errors
from inmanta_rs_bridge.errors import WaitingForCompiler, error_answer, import_failure, last_frame
from inmanta_rs_bridge.remote import encode

HERE = os.path.abspath(__file__)


def fail(exception):
    raise exception


def caught(function, *args):
    try:
        function(*args)
    except Exception as e:
        return e
    raise AssertionError("nothing raised")


class LastFrame(unittest.TestCase):
    def test_the_bridges_own_frames_are_skipped(self):
        e = caught(lambda: encode(object()))  # raised in the bridge, called from here
        self.assertRegex(last_frame(e), "^" + HERE + r":\d+ in <lambda>$")

    def test_code_compiled_from_a_string_is_skipped(self):
        e = caught(lambda: exec("raise ValueError('x')"))
        self.assertRegex(last_frame(e), "^" + HERE + r":\d+ in <lambda>$")

    def test_every_part_of_the_package_is_the_bridges(self):
        package = os.path.dirname(errors.__file__)
        for name in os.listdir(package):
            if name.endswith(".py"):
                self.assertTrue(errors.is_own_frame(os.path.join(package, name)), name)
        self.assertFalse(errors.is_own_frame(HERE))
        self.assertFalse(errors.is_own_frame(package + "-other/bridge.py"))

    def test_without_a_frame_of_its_own_the_innermost_is_given(self):
        e = caught(lambda: exec("raise ValueError('x')", {}))
        frames = e.__traceback__
        e.__traceback__ = frames.tb_next.tb_next  # only the frames of the exec'd string
        self.assertEqual(last_frame(e), "<string>:1")
        self.assertEqual(last_frame(ValueError()), "")


class ErrorAnswer(unittest.TestCase):
    def setUp(self):
        self.core = core()

    def test_an_exception_is_its_type_message_and_frame(self):
        e = caught(fail, ValueError("boom"))
        answer = error_answer(e)
        self.assertEqual(set(answer), {"error"})
        self.assertEqual(answer["error"]["type"], "ValueError")
        self.assertEqual(answer["error"]["message"], "boom")
        self.assertRegex(answer["error"]["frame"], "^" + HERE + r":\d+ in fail$")

    def test_the_causes_are_told_and_the_innermost_gives_the_frame(self):
        def chained():
            try:
                fail(KeyError("k"))
            except KeyError as inner:
                raise RuntimeError("outer") from inner

        answer = error_answer(caught(chained))["error"]
        self.assertEqual(answer["message"], "outer: caused by KeyError: 'k'")
        self.assertRegex(answer["frame"], r":\d+ in fail$")

    def test_a_plugin_exception_names_its_class(self):
        class Refused(self.core.inmanta.plugins.PluginException):
            pass

        answer = error_answer(caught(fail, Refused("no")))["error"]
        self.assertEqual(answer["type"], "PluginException")
        self.assertEqual(
            answer["class"], f"{__name__}.ErrorAnswer.test_a_plugin_exception_names_its_class.<locals>.Refused"
        )
        self.assertEqual(answer["message"], "no")

    def test_waiting_and_unknowns_are_no_errors(self):
        ast = self.core.inmanta.ast
        self.assertEqual(error_answer(WaitingForCompiler("p")), {"unset": True})
        self.assertEqual(error_answer(ast.UnsetException("not set", None, "n")), {"unset": True})
        self.assertEqual(error_answer(ast.UnknownException(self.core.inm_util.Unknown(source=None))), {"ok": {"$u": 1}})

    def test_a_module_that_does_not_import_is_located_at_its_failing_line(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "broken.py")
            with open(path, "w") as f:
                f.write("import os\n\nraise ValueError('bad module')\n")

            def load():
                with open(path) as source:
                    exec(compile(source.read(), path, "exec"), {})

            e = caught(load)
            answer = import_failure(e, "mod", "inmanta_plugins.mod.broken")["error"]
        self.assertEqual(answer["type"], "CompilerException")
        self.assertEqual(
            answer["message"],
            "Unable to load all plug-ins for module mod:\n\tValueError while loading plugin module inmanta_plugins.mod.broken: bad module",
        )
        self.assertEqual(answer["frame"], f"{path}:3 in <module>")
        # the file is found only where the import system knows it: here it does not
        self.assertEqual((answer["file"], answer["line"]), ("", 0))


if __name__ == "__main__":
    unittest.main()
