"""A request that waits for something in the record (a batch pushed, an OTA revision
settled, a test event recorded): it looks, and until what it looks for is there, waits for
this process to say it happened (Wakeups.next_time) or LOOK_AGAIN to pass (another process
may have done it), up to its deadline or the service's stop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import trio

from ..context import context

T = TypeVar("T")


async def look_until(what: str, property_id: int, seconds: float, look_again: float,
                     look: Callable[[], Awaitable[T]], done: Callable[[T], bool]) -> T:
    """`look()` until `done` of what it found, `seconds` have passed, or the service stops;
    answers the last look. `what`: the Wakeups kind ("push", "revision") that may make it so."""
    ctx = context()
    deadline = trio.current_time() + seconds
    while True:
        happened = ctx.properties.wakeups.next_time(what, property_id)  # before the look: one after it is seen
        found = await look()
        if done(found) or trio.current_time() >= deadline or ctx.stopping.is_set():
            return found
        with trio.move_on_at(min(deadline, trio.current_time() + look_again)):
            await happened.wait()
