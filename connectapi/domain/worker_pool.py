"""The decisions of `serve --workers N`'s supervisor, without processes: how many workers,
how soon a dead one is started again, and how its end reads in the log."""

from __future__ import annotations

import signal
from dataclasses import dataclass

# More worker processes than this on one machine is a typo, not a plan.
MAX_WORKERS = 256


def parse_worker_count(text: str, cores: int) -> int:
    """`--workers`: a whole number from 1, or `auto` for one per core the process may use."""
    if text == "auto":
        return max(1, min(cores, MAX_WORKERS))
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_WORKERS):
        raise ValueError(f"--workers takes a whole number from 1 to {MAX_WORKERS}, or auto; not {text[:20]!r}")
    return int(text)


@dataclass(frozen=True, slots=True)
class RestartBackoff:
    """A worker that died is started again after `initial` seconds; one that dies again
    before it has run `stable_after` seconds waits twice as long as the last time, up to
    `maximum`, so a crash loop costs a start every half minute, not a spinning core."""

    initial: float = 0.5
    maximum: float = 30.0
    stable_after: float = 30.0

    def next_delay(self, previous: float | None, uptime: float) -> float:
        """The wait before the next start, after the last one waited `previous` (None: none
        yet) and the worker then ran `uptime` seconds."""
        if previous is None or uptime >= self.stable_after:
            return self.initial
        return min(self.maximum, max(self.initial, previous * 2))


def describe_exit(returncode: int) -> str:
    """A process's end as an operator reads it: its exit code, or the signal that ended it."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"killed by {name}"
