import io
import json
import os
import subprocess
import sys
import unittest

from support import PACKAGE_PARENT, CompilerEnd

from inmanta_rs_bridge import protocol


class Framing(unittest.TestCase):
    def test_a_message_is_one_compact_json_line(self):
        end = CompilerEnd()
        end.channel.send({"ok": {"a": [1, "x y"]}})
        end.channel.send({"unset": True})
        self.assertEqual(end.writer.getvalue(), '{"ok":{"a":[1,"x y"]}}\n{"unset":true}\n')

    def test_each_line_received_is_one_message(self):
        end = CompilerEnd({"op": "call"}, {"v": 2})
        self.assertEqual(end.channel.receive(), {"op": "call"})
        self.assertEqual(end.channel.receive(), {"v": 2})

    def test_the_end_of_input_ends_the_process_quietly(self):
        with self.assertRaises(SystemExit) as stop:
            CompilerEnd().channel.receive()
        self.assertEqual(stop.exception.code, 0)

    def test_a_line_that_is_no_json_is_an_error(self):
        end = CompilerEnd()
        end.reader = io.StringIO("not json\n")
        end.channel.reader = end.reader
        with self.assertRaises(json.JSONDecodeError):
            end.channel.receive()


class Questions(unittest.TestCase):
    def test_a_question_gets_the_next_reply(self):
        with CompilerEnd({"v": 7}) as end:
            self.assertEqual(protocol.ask({"get": [1, "n"]}), {"v": 7})
        self.assertEqual(end.sent, [{"get": [1, "n"]}])

    def test_a_request_sent_instead_of_the_reply_is_served_first(self):
        served = []

        def serve(request):
            served.append(request)
            return {"ok": request["args"][0] * 2}

        with CompilerEnd({"op": "call", "args": [4]}, {"ok": True}, serve=serve) as end:
            self.assertEqual(protocol.ask({"conforms": ["m::t", 1]}), {"ok": True})
        self.assertEqual(served, [{"op": "call", "args": [4]}])
        self.assertEqual(end.sent, [{"conforms": ["m::t", 1]}, {"ok": 8}])

    def test_the_module_functions_use_the_connected_channel(self):
        with CompilerEnd({"op": "exit"}) as end:
            protocol.send({"ready": "3"})
            self.assertEqual(protocol.receive(), {"op": "exit"})
        self.assertEqual(end.sent, [{"ready": "3"}])


class Stdio(unittest.TestCase):
    def test_what_prints_goes_to_stderr_and_the_protocol_to_stdout(self):
        program = (
            "import sys; sys.path.insert(0, sys.argv[1])\n"
            "from inmanta_rs_bridge import protocol\n"
            "protocol.open_stdio()\n"
            "print('printed')\n"
            "protocol.send({'echo': protocol.receive()})\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", program, os.path.normpath(PACKAGE_PARENT)],
            input='{"x":1}\n',
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, '{"echo":{"x":1}}\n')
        self.assertIn("printed", done.stderr)


if __name__ == "__main__":
    unittest.main()
