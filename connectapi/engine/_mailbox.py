"""Bounded mailboxes with tell (no reply) and ask (a reply within a deadline)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import outcome
import trio
from opentelemetry.trace import SpanContext

from ..tracing import spans
from ._errors import ActorUnavailable, AskTimeout
from ._messages import Ask

M = TypeVar("M")
R = TypeVar("R")


class Reply:
    """A one-shot slot for the answer to an ask: lighter than a channel per ask."""

    __slots__ = ("_done", "_result", "abandoned")

    def __init__(self) -> None:
        self._done = trio.Event()
        self._result: outcome.Outcome[Any] | None = None
        self.abandoned = False  # the asker gave up (timeout or cancel); nobody will read

    def put(self, result: outcome.Outcome[Any]) -> None:
        if self._result is None and not self.abandoned:
            self._result = result
            self._done.set()

    async def get(self) -> Any:
        await self._done.wait()
        assert self._result is not None
        return self._result.unwrap()


@dataclass(frozen=True, slots=True)
class Envelope(Generic[M]):
    message: M
    reply: Reply | None
    # The asker's span, when tracing is on: the actor serves the ask in a span under it
    # (a span is started and ended in one task; the context does not cross on its own).
    trace: SpanContext | None = None


class Mailbox(Generic[M]):
    """The sending side of an actor: the only handle other code holds on it."""

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self._size = size
        self._send, self.receive = trio.open_memory_channel[Envelope[M]](size)
        self._closed = False

    def reopen(self) -> None:
        """A closed mailbox takes messages again (its actor is being revived); the handle
        others hold stays the same."""
        assert self._closed, "only a closed mailbox is reopened"
        self._send, self.receive = trio.open_memory_channel[Envelope[M]](self._size)
        self._closed = False

    async def tell(self, message: M) -> None:
        """Queue a message; waits while the mailbox is full (backpressure, not loss)."""
        try:
            await self._send.send(Envelope(message, None))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise ActorUnavailable(self.name) from None

    def try_tell(self, message: M) -> bool:
        """Queue a message if there is room now; False when the mailbox is full or closed."""
        try:
            self._send.send_nowait(Envelope(message, None))
        except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        return True

    async def ask(self, message: Ask[R], timeout: float) -> R:
        """Send and wait for the reply; the actor's refusal arrives as the exception it raised."""
        reply = Reply()
        try:
            with trio.fail_after(timeout):
                # An Ask of this actor's protocol (typing cannot say "an Ask and an M").
                envelope = Envelope(message, reply, spans.carried())
                # Queued without a turn of the scheduler when there is room (waiting for the
                # reply is one); an asker already cancelled or out of time queues nothing,
                # as `send` would have refused it.
                await trio.lowlevel.checkpoint_if_cancelled()
                try:
                    self._send.send_nowait(envelope)  # type: ignore[arg-type]
                except trio.WouldBlock:
                    await self._send.send(envelope)  # type: ignore[arg-type]
                answer: R = await reply.get()
                return answer
        except trio.TooSlowError:
            raise AskTimeout(f"{self.name} did not answer within {timeout}s") from None
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise ActorUnavailable(self.name) from None
        finally:
            reply.abandoned = True

    def close(self) -> None:
        """No new messages; the actor finishes what is queued, then stops."""
        self._closed = True
        self._send.close()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def queued(self) -> int:
        """Messages waiting to be served (not counting the one being served)."""
        return int(self._send.statistics().current_buffer_used)
