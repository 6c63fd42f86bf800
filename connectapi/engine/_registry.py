"""One actor per key (a property id), spawned on first use and stopped when idle.

An actor its supervisor gave up on stays down: asking it answers ActorUnavailable until
it is revived (`Supervisor.revive`), never a fresh copy behind the supervisor's back.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import trio

from ._actor import Actor
from ._errors import ActorUnavailable
from ._mailbox import Mailbox
from ._messages import Ask
from ._supervisor import Down, RestartPolicy, Supervisor

K = TypeVar("K", bound=Hashable)
M = TypeVar("M")
R = TypeVar("R")


class Registry(Generic[K, M]):
    def __init__(
        self,
        supervisor: Supervisor,
        factory: Callable[[K], Actor[M]],
        *,
        name: str,
        idle_after: float,
        ask_timeout: float,
        mailbox_size: int = 256,
        policy: RestartPolicy | None = None,
        degraded: str = "the property's work waits",
    ) -> None:
        self._supervisor = supervisor
        self._factory = factory
        self._name = name
        self._idle_after = idle_after
        self._ask_timeout = ask_timeout
        self._mailbox_size = mailbox_size
        self._policy = policy
        self._degraded = degraded
        self._live: dict[K, Mailbox[M]] = {}
        self._spawning: dict[K, trio.Event] = {}

    @property
    def name(self) -> str:
        return self._name

    def __contains__(self, key: K) -> bool:
        mailbox = self._live.get(key)
        return mailbox is not None and not mailbox.closed

    def __len__(self) -> int:
        return sum(1 for mailbox in self._live.values() if not mailbox.closed)

    def actor_name(self, key: K) -> str:
        return f"{self._name}[{key}]"

    async def mailbox(self, key: K) -> Mailbox[M]:
        while True:
            live = self._live.get(key)
            if live is not None:
                if not live.closed:
                    return live
                if live.name in self._supervisor.down:
                    raise ActorUnavailable(f"{live.name} is down")
            pending = self._spawning.get(key)
            if pending is not None:
                await pending.wait()
                continue
            done = trio.Event()
            self._spawning[key] = done
            try:
                mailbox = await self._supervisor.spawn(
                    self.actor_name(key),
                    lambda: self._factory(key),
                    mailbox_size=self._mailbox_size,
                    idle_after=self._idle_after,
                    on_exit=lambda mb, down: self._exited(key, mb, down),
                    policy=self._policy,
                    degraded=self._degraded,
                )
                self._live[key] = mailbox
                return mailbox
            finally:
                del self._spawning[key]
                done.set()

    def _exited(self, key: K, mailbox: Mailbox[Any], down: Down | None) -> None:
        # A down actor's mailbox is kept: it says the actor is down, and is reopened on revival.
        if down is None and self._live.get(key) is mailbox:
            del self._live[key]

    async def ask(self, key: K, message: Ask[R], timeout: float | None = None) -> R:
        """Ask the key's actor, spawning it if needed. An actor that idled out between the
        lookup and the send is spawned again once; one that is down stays unavailable."""
        for attempt in range(2):
            mailbox = await self.mailbox(key)
            try:
                return await mailbox.ask(message, self._ask_timeout if timeout is None else timeout)
            except ActorUnavailable:
                if attempt or mailbox.name in self._supervisor.down:
                    raise
        raise AssertionError("unreachable")

    async def try_tell(self, key: K, message: M) -> bool:
        """Tell without waiting for room: False when the actor's mailbox is full (for
        messages such as a wake-up, where one already queued is as good as two) or the
        actor is down."""
        try:
            mailbox = await self.mailbox(key)
        except ActorUnavailable:
            return False
        return mailbox.try_tell(message)

    async def tell(self, key: K, message: M) -> None:
        mailbox = await self.mailbox(key)
        await mailbox.tell(message)
