"""A key directory listening, as the service runs it: its KeyListener actor under a supervisor."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from connectapi.actors.janitors import KeyListener
from connectapi.engine import open_supervisor
from connectapi.storage.key_directory import KeyDirectory


@asynccontextmanager
async def listening(directory: KeyDirectory) -> AsyncIterator[None]:
    async with open_supervisor(shutdown_grace=0) as supervisor:
        await supervisor.spawn("key-listener", lambda: KeyListener(directory), mailbox_size=1)
        with trio.fail_after(10):
            while not directory.listening:
                await trio.sleep(0.01)
        yield
