"""The bridge's start, in its order: the protocol takes stdout before anything can print into it,
the import hooks go in before inmanta-core (and the modules' code) is imported, then the loop."""


def main():
    from . import protocol

    channel = protocol.open_stdio()
    from . import deferral

    deferral.install()
    from . import serve

    channel.serve = serve.serve
    serve.main()
