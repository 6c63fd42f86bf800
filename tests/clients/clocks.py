"""Clocks for the client under test: they keep the waits the client asked for and move
their own time instead of sleeping it. Real time passes on them too: a request the
service holds (GET /batches/{id}?wait=N) takes its real seconds."""

from __future__ import annotations

import time

import trio


class FakeClock:
    """For `Client`. `pause`: a real pause per wait, a few milliseconds, for a test that
    waits for the service to do something (a batch to be pushed) between polls."""

    def __init__(self, pause: float = 0.0) -> None:
        self.now = 1000.0  # moved by each wait
        self.started = time.monotonic()
        self.waits: list[float] = []
        self.pause = pause

    def monotonic(self) -> float:
        return self.now + time.monotonic() - self.started

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds
        if self.pause:
            time.sleep(self.pause)


class FakeAsyncClock:
    """For `AsyncClient`: the same, awaited (the loop keeps running others meanwhile)."""

    def __init__(self, pause: float = 0.0) -> None:
        self.now = 1000.0  # moved by each wait
        self.started = time.monotonic()
        self.waits: list[float] = []
        self.pause = pause

    def monotonic(self) -> float:
        return self.now + time.monotonic() - self.started

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds
        await trio.sleep(self.pause)
