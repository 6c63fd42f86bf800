"""The stop signals' receiver: what it hands trio while open, and that a signal after it
closes (the stop under way) is let go instead of ending the process by its default."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest
import trio

from connectapi import stop_signals

STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@pytest.fixture
def handlers_kept() -> Iterator[None]:
    before = {signum: signal.getsignal(signum) for signum in STOPS}
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def test_the_first_signal_is_received_and_later_ones_are_let_go(handlers_kept: None) -> None:
    got: list[int] = []

    async def main() -> None:
        with stop_signals.receiving(*STOPS) as signals:
            os.kill(os.getpid(), signal.SIGTERM)
            async for signum in signals:
                got.append(signum)
                break
        for signum in STOPS:  # by default SIGTERM and SIGHUP end the process, SIGINT raises
            os.kill(os.getpid(), signum)
        await trio.lowlevel.checkpoint()  # a signal's Python handler runs at the next bytecode

    trio.run(main)
    for signum in STOPS:  # after trio.run too: the embedded record is stopped after it
        os.kill(os.getpid(), signum)
    assert got == [signal.SIGTERM]
    assert all(signal.getsignal(signum) is signal.getsignal(signal.SIGTERM) for signum in STOPS)
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) & set(STOPS) == set(), "nothing left blocked"
