"""The process's stop signals, received through trio; once its receiver closes (the stop
is under way), later ones are let go.

Without this, the first signal closed trio's receiver and the default action of the next
one (`make run` passing its own SIGTERM on beside the terminal's SIGINT, a SIGHUP as the
terminal closes) ended the process mid-stop: requests cut off, and the embedded
PostgreSQL left running. The stop under way ends the process; SIGKILL still ends it at
once.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, contextmanager
from types import FrameType

import trio


@contextmanager
def receiving(*signums: signal.Signals) -> Iterator[AsyncIterator[int]]:
    """trio's receiver of `signums` (in the main thread). Each is let go from when the
    receiver closes: trio puts back the handler it found, which is set here just before.
    The signals are blocked meanwhile, so none arrives between the two and is lost."""
    with ExitStack() as receiver:
        before = signal.pthread_sigmask(signal.SIG_BLOCK, signums)
        try:
            for signum in signums:
                signal.signal(signum, _already_stopping)
            signals = receiver.enter_context(trio.open_signal_receiver(*signums))
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
        yield signals


def _already_stopping(signum: int, frame: FrameType | None) -> None:
    # Nothing to do, and nothing safe to log from a signal handler: the stop goes on.
    pass
