"""Bounded mailboxes with tell (no reply) and ask (a reply within a deadline)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import outcome
import trio

from ._errors import ActorUnavailable, AskTimeout

M = TypeVar("M")


@dataclass(frozen=True, slots=True)
class Envelope(Generic[M]):
    message: M
    reply: trio.MemorySendChannel[outcome.Outcome[Any]] | None


class Mailbox(Generic[M]):
    """The sending side of an actor: the only handle other code holds on it."""

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        send, receive = trio.open_memory_channel[Envelope[M]](size)
        self._send = send
        self.receive = receive
        self._closed = False

    async def tell(self, message: M) -> None:
        """Queue a message; waits while the mailbox is full (backpressure, not loss)."""
        try:
            await self._send.send(Envelope(message, None))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise ActorUnavailable(self.name) from None

    async def ask(self, message: M, timeout: float) -> Any:
        """Send and wait for the reply; the actor's refusal arrives as the exception it raised."""
        reply_send, reply_receive = trio.open_memory_channel[outcome.Outcome[Any]](1)
        with reply_receive:
            try:
                with trio.fail_after(timeout):
                    await self._send.send(Envelope(message, reply_send))
                    result = await reply_receive.receive()
            except trio.TooSlowError:
                raise AskTimeout(f"{self.name} did not answer within {timeout}s") from None
            except (trio.BrokenResourceError, trio.ClosedResourceError, trio.EndOfChannel):
                raise ActorUnavailable(self.name) from None
        return result.unwrap()

    def close(self) -> None:
        """No new messages; the actor finishes what is queued, then stops."""
        self._closed = True
        self._send.close()

    @property
    def closed(self) -> bool:
        return self._closed
