"""
A pytest plugin for running modules' own test suites where no one is logged in (CI, a service):
``os.getlogin()`` then raises ``OSError`` (no controlling terminal, no login uid), and the tests
of inmanta-module-files call it for the owner of the files they deploy. It answers the user the
process runs as instead, which is what it answers at a terminal. Loaded with ``-p``, for both
compilers alike; it changes nothing where a login session exists.
"""

import getpass
import os

_getlogin = os.getlogin


def _login_or_user() -> str:
    try:
        return _getlogin()
    except OSError:
        return getpass.getuser()


os.getlogin = _login_or_user
