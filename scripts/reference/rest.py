"""The REST call the reference scripts make of a server (ours or Inmanta's): JSON in and out,
the environment in the X-Inmanta-tid header; an HTTP error ends the script with its answer."""

import json
import sys
import urllib.error
import urllib.request


def call(url: str, method: str, path: str, env: str | None = None, body: object = None) -> dict:
    headers = {"Content-Type": "application/json"}
    if env:
        headers["X-Inmanta-tid"] = env
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req) as resp:
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as e:
        sys.exit(f"{method} {path}: {e.code} {e.read().decode(errors='replace')}")
