import json
import os
import subprocess
import sys
import tempfile
import unittest

from support import PACKAGE_PARENT


def launcher(package_dir):
    """The `python -c` program compiler/src/python/bridge.rs starts the bridge with (its LAUNCHER)."""
    rust = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "python", "bridge.rs")
    with open(rust, encoding="utf-8") as f:
        text = f.read()
    program = text.split('const LAUNCHER: &str = r#"', 1)[1].split('"#;', 1)[0]
    return program.replace("{package}", "inmanta_rs_bridge").replace("{dir}", json.dumps(package_dir))


PLUGINS = """from inmanta.plugins import plugin


@plugin
def double(n: int) -> int:
    print("doubling", n)
    return 2 * n


@plugin
def broken(n: int) -> int:
    return n / 0
"""


class Bridge:
    """The bridge in its own process, as the compiler runs it, with one v1 module `demo`."""

    def __init__(self, test, plugins=PLUGINS):
        self.dir = tempfile.TemporaryDirectory()
        test.addCleanup(self.dir.cleanup)
        os.makedirs(os.path.join(self.dir.name, "demo", "plugins"))
        self.init = os.path.join(self.dir.name, "demo", "plugins", "__init__.py")
        with open(self.init, "w") as f:
            f.write(plugins)
        package = os.path.join(os.path.normpath(PACKAGE_PARENT), "inmanta_rs_bridge")
        self.process = subprocess.Popen(
            [sys.executable, "-c", launcher(package)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=self.dir.name,
        )
        test.addCleanup(self.stop)
        self.ready = self.read()

    def read(self):
        return json.loads(self.process.stdout.readline())

    def request(self, msg):
        self.process.stdin.write(json.dumps(msg) + "\n")
        self.process.stdin.flush()
        return self.read()

    def load(self):
        module = {"name": "demo", "path": os.path.join(self.dir.name, "demo"), "v1": True}
        return self.request({"op": "load", "modules": [module], "config": {"project_dir": self.dir.name}})

    def stop(self):
        if self.process.poll() is None:
            self.process.stdin.write('{"op": "exit"}\n')
            self.process.stdin.close()
            self.process.wait(timeout=60)
        self.process.stdout.close()


class Serve(unittest.TestCase):
    def test_it_says_it_is_ready_with_its_version(self):
        bridge = Bridge(self)
        self.assertEqual(bridge.ready, {"ready": sys.version.split()[0]})
        self.assertEqual(
            bridge.request({"op": "nonsense"}),
            {"error": {"type": "CompilerException", "message": "unknown request 'nonsense'", "frame": ""}},
        )

    def test_plugins_load_and_run(self):
        bridge = Bridge(self)
        loaded = bridge.load()["ok"]
        self.assertEqual([p["name"] for p in loaded["plugins"]], ["demo::double", "demo::broken"])
        self.assertEqual(loaded["plugins"][0]["args"], ["n"])
        self.assertEqual(
            bridge.request({"op": "call", "plugin": "demo::double", "args": [21]}),
            {"ok": 42, "printed": "doubling 21\n"},
        )
        refused = bridge.request({"op": "call", "plugin": "demo::double", "args": ["x"]})
        self.assertEqual(
            refused,
            {
                "error": {
                    "type": "PluginTypeException",
                    "message": "Value 'x' for argument n of plugin demo::double has incompatible type. Expected type: int",
                    "frame": "",
                }
            },
        )

    def test_a_failing_plugin_is_located_in_its_own_file(self):
        bridge = Bridge(self)
        bridge.load()
        error = bridge.request({"op": "call", "plugin": "demo::broken", "args": [1]})["error"]
        self.assertEqual((error["type"], error["message"]), ("ZeroDivisionError", "division by zero"))
        self.assertEqual(error["frame"], f"{bridge.init}:12 in broken")

    def test_a_module_that_does_not_import_is_located_at_its_line(self):
        bridge = Bridge(self, plugins="import os\n\nraise ValueError('bad module')\n")
        error = bridge.load()["error"]
        self.assertEqual(
            error,
            {
                "type": "CompilerException",
                "message": "Unable to load all plug-ins for module demo:\n\tValueError while loading plugin module inmanta_plugins.demo: bad module",
                "frame": f"{bridge.init}:3 in <module>",
                "file": bridge.init,
                "line": 3,
            },
        )

    def test_the_modules_code_sees_the_sys_path_of_python_c(self):
        bridge = Bridge(
            self,
            plugins=PLUGINS + "\nimport sys\nPATH = list(sys.path)\n\n@plugin\ndef path() -> list:\n    return PATH\n",
        )
        bridge.load()
        seen = bridge.request({"op": "call", "plugin": "demo::path", "args": []})["ok"]
        expected = subprocess.run(
            [sys.executable, "-c", "import sys, json; print(json.dumps(sys.path))"], capture_output=True, text=True
        )
        self.assertEqual(seen, json.loads(expected.stdout))
        self.assertFalse(any("inmanta_rs_bridge" in p for p in seen))


if __name__ == "__main__":
    unittest.main()
