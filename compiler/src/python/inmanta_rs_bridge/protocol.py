"""The line-framed JSON protocol with the compiler: one document per line each way."""

import json
import os
import sys


class Channel:
    """The compiler's end: `reader` gives its lines, `writer` takes ours. `serve` answers a
    request the compiler sends while we wait for the reply to a question (see `ask`)."""

    def __init__(self, reader, writer, serve=None):
        self.reader = reader
        self.writer = writer
        self.serve = serve

    def send(self, msg):
        try:
            self.writer.write(json.dumps(msg, separators=(",", ":")) + "\n")
            self.writer.flush()
        except BrokenPipeError:
            # the compiler is gone (a language server that stopped): nothing to answer
            os._exit(0)

    def receive(self):
        line = self.reader.readline()
        if not line:
            sys.exit(0)
        return json.loads(line)

    def ask(self, msg):
        """Asks the compiler a question and returns its reply. While answering, the compiler may
        call a plugin of this side (a typedef constraint, a Jinja filter): such a request is served
        here, nested, before the reply comes."""
        self.send(msg)
        while True:
            reply = self.receive()
            if "op" not in reply:
                return reply
            self.send(self.serve(reply))


# The one channel of the process; every part talks to the compiler through it.
_channel = None


def connect(channel):
    """Makes `channel` the one `send`, `receive` and `ask` use."""
    global _channel
    _channel = channel
    return channel


def open_stdio():
    """The channel over this process's stdin and stdout. Plugins that print must not write into
    the protocol: what a plugin call prints is answered with it (Bridge.call), what else prints
    goes to stderr."""
    channel = connect(Channel(sys.stdin, sys.stdout))
    sys.stdout = sys.stderr
    return channel


def send(msg):
    _channel.send(msg)


def receive():
    return _channel.receive()


def ask(msg):
    return _channel.ask(msg)
