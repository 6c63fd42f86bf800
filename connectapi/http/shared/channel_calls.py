"""Calls to the channel-manager actor that wait (bounded) for its budget: the admin routes'
that call it now, and the held grid's read (the console's does not wait)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

import trio

from ..context import context

# An admin call waits at most this long for the channel manager's budget (its windows are
# a minute) before it answers what the actor said.
MAX_WAIT = 90.0


class Deferrable(Protocol):
    @property
    def retry_at(self) -> float | None: ...

    @property
    def deferred(self) -> bool: ...


D = TypeVar("D", bound=Deferrable)


async def when_allowed(call: Callable[[], Awaitable[D]], wait: float = MAX_WAIT) -> D:
    """`call` the channel-manager actor again while it answers "not yet, at T" (T at most
    `wait` seconds away)."""
    give_up = context().clock.monotonic() + wait
    while True:
        answer = await call()
        if not answer.deferred or answer.retry_at is None or answer.retry_at > give_up:
            return answer
        await trio.sleep(max(0.0, answer.retry_at - context().clock.monotonic()))
