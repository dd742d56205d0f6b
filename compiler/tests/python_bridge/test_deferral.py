import os
import subprocess
import sys
import unittest

from support import PACKAGE_PARENT

from inmanta_rs_bridge import deferral


def run(program, **env):
    """`program` in a new Python with the deferral installed (each test needs a fresh import system)."""
    prelude = (
        "import sys; sys.path.insert(0, sys.argv[1])\nfrom inmanta_rs_bridge import deferral\ndeferral.install()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", prelude + program, os.path.normpath(PACKAGE_PARENT)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )
    if done.returncode != 0:
        raise AssertionError(done.stderr)
    return done.stdout.split()


class Finders(unittest.TestCase):
    def test_other_modules_are_left_to_the_import_system(self):
        for finder in (deferral._DeferringFinder(), deferral._StringAnnotationsFinder(), deferral._LateModuleFinder()):
            self.assertIsNone(finder.find_spec("json", None))

    def test_a_deferred_package_does_not_run_its_init_until_a_name_is_read(self):
        out = run(
            "import inmanta.plugins, inmanta.protocol\n"
            "package = sys.modules['inmanta.protocol']\n"
            "print(type(package).__name__, '_bridge_loader' in vars(package))\n"
            "import inmanta.protocol.common\n"  # a submodule imports without the __init__
            "print('_bridge_loader' in vars(package))\n"
            "package.__all__ if hasattr(package, '__all__') else None\n"
            "print('_bridge_loader' in vars(package))\n"
        )
        self.assertEqual(out, ["_DeferredPackage", "True", "True", "False"])

    def test_handler_annotations_stay_strings(self):
        out = run(
            "import inmanta.agent.handler as handler\n"
            "print(type(handler.HandlerContext.logs.fget.__annotations__['return']).__name__)\n"
        )
        self.assertEqual(out, ["str"])

    def test_a_late_module_is_imported_when_a_name_of_it_is_used(self):
        out = run(
            "import inmanta.server.bootloader as boot\n"
            "print(type(boot).__name__, type(boot.InmantaBootloader).__name__)\n"
            "print(isinstance(object(), boot.InmantaBootloader), type(sys.modules['inmanta.server.bootloader']).__name__)\n"
        )
        self.assertEqual(out, ["_LateModule", "_LateName", "False", "module"])

    def test_eager_imports_everything_as_written(self):
        out = run(
            "import inmanta.protocol\nprint(type(sys.modules['inmanta.protocol']).__name__)\n", INMANTA_BRIDGE_EAGER="1"
        )
        self.assertEqual(out, ["module"])


if __name__ == "__main__":
    unittest.main()
