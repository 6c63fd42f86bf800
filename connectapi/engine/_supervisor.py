"""One-for-one supervision: each actor restarts alone, with backoff and a crash budget;
past its budget it is down, reported and left down until someone revives it.

A crash is caught inside that actor's own task, so it never reaches the nursery and
never touches a sibling. Cancellation is not a crash and always propagates.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import outcome
import trio

from ..metrics import ACTOR_DOWN, ACTOR_RESTARTS
from ..tracing import spans
from ._actor import Actor, run_incarnation
from ._errors import ActorUnavailable
from ._mailbox import Mailbox

M = TypeVar("M")
log = logging.getLogger("connectapi.engine")


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    """The strategy, named: one-for-one restart after `initial_backoff`, doubling up to
    `max_backoff`; more than `max_crashes` crashes within `crash_window` seconds and the
    actor is down (its mailbox refuses, `Supervisor.down` reports it)."""

    initial_backoff: float = 0.1
    max_backoff: float = 30.0
    max_crashes: int = 5
    crash_window: float = 60.0

    def backoff(self, recent_crashes: int) -> float:
        return float(min(self.max_backoff, self.initial_backoff * 2 ** max(0, recent_crashes - 1)))


@dataclass(frozen=True, slots=True)
class Down:
    """An actor whose crash budget is spent, and what that leaves of the service."""

    name: str
    kind: str  # the name without its key: `writer` for `writer[42]`
    reason: str  # the last crash, as `Type: message`
    crashes: int
    since: float  # Trio time
    degraded: str  # what the service does without it, in words for an operator


ExitHook = Callable[[Mailbox[Any], Down | None], None]


@dataclass(slots=True)
class _Spec(Generic[M]):
    """What it takes to run an actor again: kept so that a down actor can be revived."""

    name: str
    factory: Callable[[], Actor[M]]
    mailbox: Mailbox[M]
    idle_after: float | None
    on_exit: ExitHook | None
    policy: RestartPolicy
    degraded: str


def kind_of(name: str) -> str:
    return name.split("[", 1)[0]


class Supervisor:
    """Owns a nursery of actors. Open with `open_supervisor()`."""

    def __init__(self, nursery: trio.Nursery, policy: RestartPolicy) -> None:
        self._nursery = nursery
        self._policy = policy
        self._mailboxes: set[Mailbox[Any]] = set()
        self._down_specs: dict[str, _Spec[Any]] = {}
        self.down: dict[str, Down] = {}
        self.crash_count = 0  # for tests and metrics: every crash, whatever the actor

    async def spawn(
        self,
        name: str,
        factory: Callable[[], Actor[M]],
        *,
        mailbox_size: int = 64,
        idle_after: float | None = None,
        on_exit: ExitHook | None = None,
        policy: RestartPolicy | None = None,
        degraded: str = "its work waits",
    ) -> Mailbox[M]:
        """Start an actor and return its mailbox once its first `on_start` has finished.

        If that first start fails, the failure is raised here and nothing is left running.
        `degraded` says, for the operator, what the service does while the actor is down.
        """
        spec = _Spec(name, factory, Mailbox(name, mailbox_size), idle_after, on_exit, policy or self._policy,
                     degraded)
        await self._start(spec)
        return spec.mailbox

    async def _start(self, spec: _Spec[M]) -> None:
        self._mailboxes.add(spec.mailbox)
        try:
            await self._nursery.start(self._supervise, spec)
        except BaseException:
            self._mailboxes.discard(spec.mailbox)
            raise

    async def revive(self, name: str) -> bool:
        """Start a down actor again, with a fresh crash budget, on the mailbox its users
        already hold; False when no actor of that name is down here."""
        spec = self._down_specs.pop(name, None)
        if spec is None:
            return False
        del self.down[name]
        ACTOR_DOWN.remove(name)
        spec.mailbox.reopen()
        log.warning("actor %s revived", name)
        await self._start(spec)
        return True

    async def _supervise(self, spec: _Spec[M], task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        # The task copied its spawner's context, which may be a request's (a property's
        # writer is made by its first request): the actor's spans are not that request's.
        spans.outside_any()
        policy, name = spec.policy, spec.name
        crashes: deque[float] = deque()
        started = False
        gave_up: Down | None = None
        try:
            while True:
                actor = spec.factory()
                try:
                    await actor.on_start()
                    if not started:
                        started = True
                        task_status.started()
                    await run_incarnation(actor, spec.mailbox.receive, spec.idle_after)
                    return
                except Exception as crash:
                    if not started:
                        raise  # the spawner sees the failure of the first start
                    self.crash_count += 1
                    now = trio.current_time()
                    crashes.append(now)
                    while crashes and crashes[0] <= now - policy.crash_window:
                        crashes.popleft()
                    if len(crashes) > policy.max_crashes:
                        gave_up = Down(name, kind_of(name), _reason(crash), len(crashes), now, spec.degraded)
                        log.error("actor %s is down: it crashed %d times within %ss (last: %s); %s",
                                  name, len(crashes), policy.crash_window, gave_up.reason, spec.degraded,
                                  exc_info=True)
                        return
                    delay = policy.backoff(len(crashes))
                    log.warning("actor %s crashed; restarting in %.2fs", name, delay, exc_info=True)
                    ACTOR_RESTARTS.labels(kind_of(name)).inc()  # the kind, not one per property
                    await trio.sleep(delay)
        finally:
            spec.mailbox.close()
            _refuse_queued(spec.mailbox, f"{name} is down" if gave_up is not None else f"{name} stopped")
            spec.mailbox.receive.close()
            self._mailboxes.discard(spec.mailbox)
            if gave_up is not None:
                self.down[name] = gave_up
                self._down_specs[name] = spec
                ACTOR_DOWN.labels(name).set(1)
            if spec.on_exit is not None:
                spec.on_exit(spec.mailbox, gave_up)

    def close_all(self) -> None:
        """Stop taking messages everywhere; actors finish their queues and end."""
        for mailbox in list(self._mailboxes):
            mailbox.close()

    @property
    def running(self) -> int:
        return len(self._mailboxes)


def _refuse_queued(mailbox: Mailbox[Any], why: str) -> None:
    """Answer what is still queued (the askers would otherwise wait out their timeouts)."""
    while True:
        try:
            envelope = mailbox.receive.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
            return
        if envelope.reply is not None:
            envelope.reply.put(outcome.Error(ActorUnavailable(why)))


def _reason(crash: BaseException) -> str:
    # An exception group from an actor's lanes: the first real crash says more.
    while isinstance(crash, BaseExceptionGroup) and crash.exceptions:
        crash = crash.exceptions[0]
    return f"{type(crash).__name__}: {str(crash)[:200]}"


@asynccontextmanager
async def open_supervisor(
    policy: RestartPolicy | None = None, *, shutdown_grace: float = 5.0,
    shutdown_deadline: Callable[[], float] | None = None,
) -> AsyncIterator[Supervisor]:
    """Actors live inside this block. On exit they get `shutdown_grace` seconds to drain
    their mailboxes, then whatever is left is cancelled. `shutdown_deadline`, when given,
    answers the moment instead: nested levels sharing one deadline stop in order, each
    getting what the levels inside it left of the grace."""
    async with trio.open_nursery() as nursery:
        supervisor = Supervisor(nursery, policy or RestartPolicy())
        try:
            yield supervisor
        finally:
            supervisor.close_all()
            until = shutdown_deadline() if shutdown_deadline is not None else trio.current_time() + shutdown_grace
            nursery.cancel_scope.deadline = min(nursery.cancel_scope.deadline, until)
            for name in list(supervisor.down):
                ACTOR_DOWN.remove(name)
