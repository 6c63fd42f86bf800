"""The actor contract and the loop that runs one incarnation of an actor."""

from __future__ import annotations

import logging
from collections.abc import Hashable
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

    def batch_key(self, message: M) -> Hashable | None:
        """Messages already queued together with the same key (not None) go to
        `handle_batch` in one call, in order; None: one `handle` call per message."""
        return None

    async def handle_batch(self, messages: list[M]) -> list[outcome.Outcome[Any]]:
        """One outcome per message (a Value, or an Error of a replied error type). Raising
        anything else is a crash of every message in the batch."""
        raise NotImplementedError


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
        await _serve_queued(actor, envelope, receive)


async def _serve_queued(actor: Actor[M], first: Envelope[M], receive: trio.MemoryReceiveChannel[Envelope[M]]) -> None:
    """Serve `first` and what is already queued behind it, up to DRAIN_BATCH messages.

    Consecutive messages with one batch key go to `handle_batch` together. Finding where a
    run ends means taking the next message out of the mailbox; if the run then crashes,
    that message is answered with the crash too, since the next incarnation cannot get it
    back. (Without batch keys nothing is taken ahead, and queued messages survive a crash.)
    """
    pending: Envelope[M] | None = first
    served = 0
    while pending is not None:
        run, pending = [pending], None
        key = actor.batch_key(run[0].message)
        while key is not None and served + len(run) < DRAIN_BATCH:
            try:
                following = receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                break
            if actor.batch_key(following.message) == key:
                run.append(following)
            else:
                pending = following
                break
        try:
            if len(run) == 1:
                await _deliver(actor, run[0])
            else:
                await _deliver_batch(actor, run)
        except Exception:
            if pending is not None:
                _reply(pending, outcome.Error(ActorCrashed(f"{type(actor).__name__} crashed before serving it")))
            raise
        served += len(run)
        if pending is None and served < DRAIN_BATCH:
            try:
                pending = receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                pending = None


async def _deliver_batch(actor: Actor[M], envelopes: list[Envelope[M]]) -> None:
    try:
        results = await actor.handle_batch([e.message for e in envelopes])
        if len(results) != len(envelopes):
            raise RuntimeError(f"handle_batch answered {len(results)} outcomes for {len(envelopes)} messages")
    except Exception as crash:
        for envelope in envelopes:
            wrapped = ActorCrashed(f"{type(actor).__name__} crashed on a batch of {type(envelope.message).__name__}")
            wrapped.__cause__ = crash
            _reply(envelope, outcome.Error(wrapped))
        raise
    for envelope, result in zip(envelopes, results):
        _reply(envelope, result)


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
