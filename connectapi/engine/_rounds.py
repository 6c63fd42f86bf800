"""Actors whose work comes in rounds, woken by a signal or a timer.

The webhook sender, the outbox, the booking intake, the reconciler, the push sweep and
the janitors all have this shape: their work waits in the record, a round takes what is
due, a wake-up says something new may be there, and a timer is the safety net for a
wake-up that never came. One helper, so that each of them is only its round.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import trio

from ._actor import Actor
from ._messages import Wake

M = TypeVar("M")
log = logging.getLogger("connectapi.engine")


@dataclass(frozen=True, slots=True)
class NextRound:
    """What a round leaves: `more` waiting (the next round starts at once), and how soon
    the next one is due at the latest (None: after the actor's interval)."""

    more: bool = False
    due_in: float | None = None


class RoundsActor(Actor[M]):
    """A round at start, on every `Wake`, at least every `interval` seconds, and at once
    again while a round says more is waiting. `M` is every message the actor takes: `Wake`
    alone for most (`RoundsActor[Wake]`), `Wake` or its own asks for the others.

    A failure of the outside named in `waits_out` (the record unreachable, say) is not a
    crash: the actor logs it once, waits (1 s, doubling up to `outage_wait_max`) and tries
    again, so it resumes within seconds of the outside coming back. Those also named in
    `waits_out_briefly` (a refusal for now: a deadlock, a lock timeout) are waited out
    `brief_rounds` rounds in a row at most, each logged: one that never clears is a bug,
    and a crash lets the supervisor count it and show it. Anything else is a crash, for
    the supervisor's restart policy. Other messages go to `handle_message`.
    """

    interval: float = 60.0
    waits_out: ClassVar[tuple[type[Exception], ...]] = ()
    waits_out_briefly: ClassVar[tuple[type[Exception], ...]] = ()
    brief_rounds: ClassVar[int] = 10
    outage_wait_max: float = 5.0
    name = "rounds"

    _due_at: float = -math.inf  # the first round runs at start
    _outage_wait: float = 0.0
    _brief_in_a_row: int = 0

    async def round(self) -> NextRound:
        raise NotImplementedError

    async def handle_message(self, message: M) -> Any:
        raise TypeError(f"{type(self).__name__} takes no {type(message).__name__}")

    async def handle(self, message: M) -> Any:
        if isinstance(message, Wake):
            await self.run_round()
            return None
        return await self.handle_message(message)

    def wake_in(self) -> float:
        return max(0.0, self._due_at - trio.current_time())

    async def on_timer(self) -> None:
        await self.run_round()

    async def run_round(self) -> None:
        try:
            done = await self.round()
        except Exception as outage:  # noqa: BLE001 - sorted below: an outside failure, or a crash
            if not _only(outage, self.waits_out):
                raise
            if self.waits_out_briefly and _only(outage, self.waits_out_briefly):
                self._brief_in_a_row += 1
                if self._brief_in_a_row > self.brief_rounds:
                    raise
                log.warning("%s: refused for now (%d in a row), trying again: %s", self.name, self._brief_in_a_row,
                            outage)
            else:
                self._brief_in_a_row = 0
                if not self._outage_wait:
                    log.warning("%s: waiting for the outside to come back: %s", self.name, outage)
            self._outage_wait = min(self.outage_wait_max, max(1.0, self._outage_wait * 2))
            self._due_at = trio.current_time() + self._outage_wait
            return
        if self._outage_wait:
            log.info("%s: working again", self.name)
            self._outage_wait = 0.0
        self._brief_in_a_row = 0
        # A `due_in` already past means at once: work fell due while the round ran. (A round
        # must not answer a past `due_in` for work it cannot take: it would spin.)
        due_in = 0.0 if done.more else min(self.interval, self.interval if done.due_in is None else done.due_in)
        self._due_at = trio.current_time() + max(0.0, due_in)


def _only(exc: BaseException, kinds: tuple[type[Exception], ...]) -> bool:
    """Whether `exc` is of `kinds`, or a group (a round's nursery) of nothing else."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_only(inner, kinds) for inner in exc.exceptions)
    return isinstance(exc, kinds)
