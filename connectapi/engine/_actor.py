"""The actor contract and the loop that runs one incarnation of an actor."""

from __future__ import annotations

import logging
from typing import Any, ClassVar, Generic, TypeVar

import outcome
import trio

from ._errors import ActorCrashed
from ._mailbox import Envelope

M = TypeVar("M")
log = logging.getLogger("connectapi.engine")


class Actor(Generic[M]):
    """One sequential owner of some state. Subclasses implement `handle`.

    Exceptions of the types in `replied_errors` are answers (a refusal the asker must
    see, keeping its type); any other exception is a crash: the asker gets ActorCrashed
    and the supervisor restarts the actor with fresh state.
    """

    replied_errors: ClassVar[tuple[type[Exception], ...]] = ()

    async def on_start(self) -> None:
        """Load what the actor needs before its first message."""

    async def handle(self, message: M) -> Any:
        raise NotImplementedError

    def may_stop_when_idle(self) -> bool:
        """Asked when no message came for the idle time; False keeps the actor alive."""
        return True


# Messages served per wake-up before the actor yields: draining what is queued without a
# scheduler round per message keeps a busy actor from becoming a convoy, and the bound
# keeps it from starving everything else.
DRAIN_BATCH = 64


async def run_incarnation(
    actor: Actor[M],
    receive: trio.MemoryReceiveChannel[Envelope[M]],
    idle_after: float | None,
) -> bool:
    """Serve messages until the mailbox ends (returns False) or the actor idles out (True).

    The caller has already awaited `actor.on_start()`.
    """
    while True:
        envelope: Envelope[M] | None = None
        if idle_after is None:
            try:
                envelope = await receive.receive()
            except trio.EndOfChannel:
                return False
        else:
            with trio.move_on_after(idle_after):
                try:
                    envelope = await receive.receive()
                except trio.EndOfChannel:
                    return False
        if envelope is None:
            if actor.may_stop_when_idle():
                return True
            continue
        await _deliver(actor, envelope)
        for _ in range(DRAIN_BATCH - 1):
            try:
                envelope = receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                break
            await _deliver(actor, envelope)


async def _deliver(actor: Actor[M], envelope: Envelope[M]) -> None:
    try:
        result = await actor.handle(envelope.message)
    except actor.replied_errors as refusal:
        _reply(envelope, outcome.Error(refusal))
    except Exception as crash:
        wrapped = ActorCrashed(f"{type(actor).__name__} crashed on {type(envelope.message).__name__}")
        wrapped.__cause__ = crash
        _reply(envelope, outcome.Error(wrapped))
        raise
    else:
        _reply(envelope, outcome.Value(result))


def _reply(envelope: Envelope[Any], result: outcome.Outcome[Any]) -> None:
    if envelope.reply is not None:
        envelope.reply.put(result)  # a no-op when the asker has given up
