"""One-for-one supervision: each actor restarts alone, with backoff and a crash budget.

A crash is caught inside that actor's own task, so it never reaches the nursery and
never touches a sibling. Cancellation is not a crash and always propagates.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import trio

from ..metrics import ACTOR_RESTARTS
from ._actor import Actor, run_incarnation
from ._mailbox import Mailbox

M = TypeVar("M")
log = logging.getLogger("connectapi.engine")


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    """Restart after `initial_backoff`, doubling up to `max_backoff`; give up after
    `max_crashes` crashes within `crash_window` seconds."""

    initial_backoff: float = 0.1
    max_backoff: float = 30.0
    max_crashes: int = 5
    crash_window: float = 60.0

    def backoff(self, recent_crashes: int) -> float:
        return float(min(self.max_backoff, self.initial_backoff * 2 ** max(0, recent_crashes - 1)))


class Supervisor:
    """Owns a nursery of actors. Open with `open_supervisor()`."""

    def __init__(self, nursery: trio.Nursery, policy: RestartPolicy) -> None:
        self._nursery = nursery
        self._policy = policy
        self._mailboxes: set[Mailbox[Any]] = set()
        self.crash_count = 0  # for tests and metrics: every crash, whatever the actor

    async def spawn(
        self,
        name: str,
        factory: Callable[[], Actor[M]],
        *,
        mailbox_size: int = 64,
        idle_after: float | None = None,
        on_exit: Callable[[Mailbox[M]], None] | None = None,
    ) -> Mailbox[M]:
        """Start an actor and return its mailbox once its first `on_start` has finished.

        If that first start fails, the failure is raised here and nothing is left running.
        """
        mailbox: Mailbox[M] = Mailbox(name, mailbox_size)
        self._mailboxes.add(mailbox)
        try:
            await self._nursery.start(self._supervise, name, factory, mailbox, idle_after, on_exit)
        except BaseException:
            self._mailboxes.discard(mailbox)
            raise
        return mailbox

    async def _supervise(
        self,
        name: str,
        factory: Callable[[], Actor[M]],
        mailbox: Mailbox[M],
        idle_after: float | None,
        on_exit: Callable[[Mailbox[M]], None] | None,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        crashes: deque[float] = deque()
        started = False
        try:
            while True:
                actor = factory()
                try:
                    await actor.on_start()
                    if not started:
                        started = True
                        task_status.started()
                    await run_incarnation(actor, mailbox.receive, idle_after)
                    return
                except Exception:
                    if not started:
                        raise  # the spawner sees the failure of the first start
                    self.crash_count += 1
                    now = trio.current_time()
                    crashes.append(now)
                    while crashes and crashes[0] <= now - self._policy.crash_window:
                        crashes.popleft()
                    if len(crashes) > self._policy.max_crashes:
                        log.error("actor %s crashed %d times in %ss; giving up", name, len(crashes),
                                  self._policy.crash_window, exc_info=True)
                        return
                    delay = self._policy.backoff(len(crashes))
                    log.warning("actor %s crashed; restarting in %.2fs", name, delay, exc_info=True)
                    ACTOR_RESTARTS.labels(name.split("[")[0]).inc()  # the kind, not one per property
                    await trio.sleep(delay)
        finally:
            mailbox.close()
            mailbox.receive.close()
            self._mailboxes.discard(mailbox)
            if on_exit is not None:
                on_exit(mailbox)

    def close_all(self) -> None:
        """Stop taking messages everywhere; actors finish their queues and end."""
        for mailbox in list(self._mailboxes):
            mailbox.close()

    @property
    def running(self) -> int:
        return len(self._mailboxes)


@asynccontextmanager
async def open_supervisor(
    policy: RestartPolicy | None = None, *, shutdown_grace: float = 5.0
) -> AsyncIterator[Supervisor]:
    """Actors live inside this block. On exit they get `shutdown_grace` seconds to drain
    their mailboxes, then whatever is left is cancelled."""
    async with trio.open_nursery() as nursery:
        supervisor = Supervisor(nursery, policy or RestartPolicy())
        try:
            yield supervisor
        finally:
            supervisor.close_all()
            nursery.cancel_scope.deadline = min(
                nursery.cancel_scope.deadline, trio.current_time() + shutdown_grace
            )
