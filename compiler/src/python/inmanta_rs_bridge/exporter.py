"""The Exporter that resource mappers get."""

import hashlib

from .protocol import ask


class Exporter:
    """The part of inmanta-core's Exporter that resource mappers use: files go to the compiler."""

    def upload_file(self, content):
        data = content.encode() if isinstance(content, str) else bytes(content)
        digest = hashlib.sha1(data).hexdigest()
        ask({"file": digest, "content": data.decode("latin-1")})
        return digest


EXPORTER = Exporter()
