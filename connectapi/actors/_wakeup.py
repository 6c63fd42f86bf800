"""A nudge for a background loop: any number of callers may give it; the loop waits for one
(or for its sweep interval), then starts over."""

from __future__ import annotations

import trio


class WakeUp:
    def __init__(self) -> None:
        self._event = trio.Event()

    def set(self) -> None:
        self._event.set()

    async def wait(self, timeout: float) -> None:
        """Until a nudge given since the last wait, or `timeout` seconds."""
        with trio.move_on_after(timeout):
            await self._event.wait()
        self._event = trio.Event()
