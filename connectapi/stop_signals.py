"""A process that has begun to stop lets later SIGINTs and SIGTERMs go.

Without this, the first signal closes trio's receiver and the default action of the next
one (a double Ctrl-C, or `make run` passing its own SIGTERM on beside the terminal's)
ended the process mid-stop: requests cut off, and the embedded PostgreSQL left running.
The stop under way ends the process; SIGKILL still ends it at once.
"""

from __future__ import annotations

import signal
from types import FrameType

STOPS = (signal.SIGINT, signal.SIGTERM)


def let_later_stops_go() -> None:
    """Called just before trio's signal receiver is opened (in the main thread): the
    receiver takes these signals while it is open, and puts this back when it closes."""
    for signum in STOPS:
        signal.signal(signum, _already_stopping)


def _already_stopping(signum: int, frame: FrameType | None) -> None:
    # Nothing to do, and nothing safe to log from a signal handler: the stop goes on.
    pass
