"""A connection's keep-alive timer, run by one task for the connection's life.

hypercorn's own (`TrioSingleTask`) starts a new task for each idle spell and takes a lock
on each start and stop: per request a task spawned and ended, and five passes of the
scheduler, where the request itself takes about twenty. Here one task per connection waits
for the connection to fall idle and runs the timeout then; a request arriving cancels that
run, as hypercorn's `stop` cancels its task. What the timeout does is the connection's own
(`GuardedConnection._idle_timeout`), unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio
from hypercorn.trio.worker_context import TrioSingleTask
from hypercorn.typing import TaskGroup

IdleAction = Callable[[], Awaitable[None]]


class IdleTimer(TrioSingleTask):
    """hypercorn's `idle_task`, its `restart` and `stop` as its TCPServer calls them. Once
    the connection's reading has ended (`end`), the task is gone and a restart is
    hypercorn's own again: a task for that spell alone, so nothing outlives the
    connection waiting for an idle spell that will not come."""

    def __init__(self) -> None:
        super().__init__()
        self._idle = False
        self._wake = trio.Event()
        self._running: trio.CancelScope | None = None
        self._action: IdleAction | None = None
        self._ended = False

    async def restart(self, task_group: TaskGroup, action: IdleAction) -> None:
        """The connection is idle from now: the timeout runs from the start."""
        if self._ended:
            await super().restart(task_group, action)
            return
        self._cancel_run()
        self._idle = True
        if self._action is None:
            self._action = action
            task_group.spawn(self._serve)
        self._wake.set()

    async def stop(self) -> None:
        """The connection is busy (a request arrived) or over: no timeout runs."""
        self._idle = False
        self._cancel_run()
        if self._ended:
            await super().stop()

    def end(self) -> None:
        """The connection's reading has ended: the task stops once any run it has under way
        is done (a run closing the connection finishes its close)."""
        self._ended = True
        self._idle = False
        self._cancel_run()
        self._wake.set()

    def _cancel_run(self) -> None:
        if self._running is not None:
            self._running.cancel()

    async def _serve(self) -> None:
        assert self._action is not None
        while not self._ended:
            await self._wake.wait()
            self._wake = trio.Event()
            if not self._idle or self._ended:
                continue
            with trio.CancelScope() as self._running:
                await self._action()
            self._running = None
