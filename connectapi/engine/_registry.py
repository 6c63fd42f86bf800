"""One actor per key (a property id), spawned on first use and stopped when idle."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

import trio

from ._actor import Actor
from ._errors import ActorUnavailable
from ._mailbox import Mailbox
from ._supervisor import Supervisor

K = TypeVar("K", bound=Hashable)
M = TypeVar("M")


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
    ) -> None:
        self._supervisor = supervisor
        self._factory = factory
        self._name = name
        self._idle_after = idle_after
        self._ask_timeout = ask_timeout
        self._mailbox_size = mailbox_size
        self._live: dict[K, Mailbox[M]] = {}
        self._spawning: dict[K, trio.Event] = {}

    def __contains__(self, key: K) -> bool:
        return key in self._live

    def __len__(self) -> int:
        return len(self._live)

    async def mailbox(self, key: K) -> Mailbox[M]:
        while True:
            live = self._live.get(key)
            if live is not None and not live.closed:
                return live
            pending = self._spawning.get(key)
            if pending is not None:
                await pending.wait()
                continue
            done = trio.Event()
            self._spawning[key] = done
            try:
                mailbox = await self._supervisor.spawn(
                    f"{self._name}[{key}]",
                    lambda: self._factory(key),
                    mailbox_size=self._mailbox_size,
                    idle_after=self._idle_after,
                    on_exit=lambda mb: self._forget(key, mb),
                )
                self._live[key] = mailbox
                return mailbox
            finally:
                del self._spawning[key]
                done.set()

    def _forget(self, key: K, mailbox: Mailbox[M]) -> None:
        if self._live.get(key) is mailbox:
            del self._live[key]

    async def ask(self, key: K, message: M, timeout: float | None = None) -> Any:
        """Ask the key's actor, spawning it if needed. An actor that idled out between the
        lookup and the send is spawned again once; one that gave up stays unavailable."""
        for attempt in range(2):
            mailbox = await self.mailbox(key)
            try:
                return await mailbox.ask(message, self._ask_timeout if timeout is None else timeout)
            except ActorUnavailable:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def try_tell(self, key: K, message: M) -> bool:
        """Tell without waiting for room: False when the actor's mailbox is full (for
        messages such as a wake-up, where one already queued is as good as two)."""
        mailbox = await self.mailbox(key)
        return mailbox.try_tell(message)

    async def tell(self, key: K, message: M) -> None:
        mailbox = await self.mailbox(key)
        await mailbox.tell(message)
