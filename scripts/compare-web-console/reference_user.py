"""Adds a local admin user to the database of the reference Inmanta server, as Inmanta's own
`inmanta-initial-user-setup` does (without its prompts): run in the reference venv.

    reference_user.py SERVER_CFG USERNAME PASSWORD
"""

import asyncio
import sys

import nacl.pwhash
from inmanta import config, data
from inmanta.data.model import AuthMethod
from inmanta.user_setup import connect_to_db


async def add(username: str, password: str) -> None:
    await connect_to_db()
    try:
        user = data.User(
            username=username,
            password_hash=nacl.pwhash.str(password.encode()).decode(),
            auth_method=AuthMethod.database,
            is_admin=True,
        )
        await user.insert()
    finally:
        await data.stop_engine()


def main() -> None:
    cfg, username, password = sys.argv[1:4]
    config.Config.load_config(cfg)
    asyncio.run(add(username, password))


if __name__ == "__main__":
    main()
