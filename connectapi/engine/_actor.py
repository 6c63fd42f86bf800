"""The actor contract and the loop that runs one incarnation of an actor."""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable, Hashable
from contextlib import nullcontext
from typing import Any, ClassVar, ContextManager, Generic, TypeVar

import outcome
import trio
from opentelemetry.trace import SpanContext

from ..tracing import spans
from ._errors import ActorCrashed, ActorUnavailable
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

    def on_serving(self, nursery: trio.Nursery, nudge: Callable[[], None]) -> None:
        """Called as an incarnation begins to serve, before its first message. For work the
        actor starts and does not wait for (a call to the outside that must not hold up the
        mailbox): started in `nursery`, it belongs to the incarnation (a crash there is the
        actor's; when the mailbox ends it is waited for, as lanes are). `nudge()` makes the
        actor's loop ask `wake_in` again at once, when such work has changed the answer."""

    def may_stop_when_idle(self) -> bool:
        """Asked when no message came for the idle time; False keeps the actor alive."""
        return True

    def wake_in(self) -> float | None:
        """Seconds until `on_timer` is due if no message comes first; None: no timer.
        Asked again after every message and every timer."""
        return None

    async def on_timer(self) -> None:
        """Called when the time `wake_in` gave has passed without a message."""

    def batch_key(self, message: M) -> Hashable | None:
        """Messages already queued together with the same key (not None) go to
        `handle_batch` in one call, in order; None: one `handle` call per message."""
        return None

    def batch_takes(self, batch: list[M], message: M) -> bool:
        """Whether `message`, of the batch's key, joins `batch` (else it starts the next):
        for an actor whose batch is bounded by more than its count."""
        return True

    async def handle_batch(self, messages: list[M], asked: list[SpanContext | None]) -> list[outcome.Outcome[Any]]:
        """One outcome per message (a Value, or an Error of a replied error type). Raising a
        replied error answers it to every message of the batch; raising anything else is a
        crash of every message in the batch. Served in one span linked to the askers';
        `asked` is each message's asker's span (None: tracing off, or the asker in none),
        for a handler that traces each message under its own asker."""
        raise NotImplementedError

    def lane_of(self, message: M) -> Hashable | None:
        """A lane (not None) serves its messages in order, concurrently with other lanes and
        with the mailbox: for an actor whose work waits on the outside (a remote call, a
        pacing window) and must not hold every other caller behind it. A crash in any lane
        is a crash of the actor. None: served in turn, as usual."""
        return None


# Messages served per wake-up before the actor yields: draining what is queued without a
# scheduler round per message keeps a busy actor from becoming a convoy, and the bound
# keeps it from starving everything else.
DRAIN_BATCH = 64
# Messages handed to lanes and not yet answered, at most; past it the mailbox is not read
# (backpressure, as a full mailbox gives).
LANE_CAPACITY = 4096


async def run_incarnation(
    actor: Actor[M],
    receive: trio.MemoryReceiveChannel[Envelope[M]],
    idle_after: float | None,
) -> bool:
    """Serve messages until the mailbox ends (returns False) or the actor idles out (True).

    The caller has already awaited `actor.on_start()`. Lanes still at work when the
    mailbox ends are waited for.
    """
    async with trio.open_nursery() as nursery:
        nudge = _Nudge()
        actor.on_serving(nursery, nudge)
        return await _serve(actor, receive, idle_after, _Lanes(actor, nursery), nudge)


class _Nudge:
    """Cuts short the loop's wait for a message or a timer, so that it asks `wake_in` again."""

    __slots__ = ("waiting", "nudged")

    def __init__(self) -> None:
        self.waiting: trio.CancelScope | None = None
        self.nudged = False

    def __call__(self) -> None:
        # Outside the wait there is nothing to cut: the loop asks `wake_in` before waiting.
        if self.waiting is not None:
            self.nudged = True
            self.waiting.cancel()


async def _serve(actor: Actor[M], receive: trio.MemoryReceiveChannel[Envelope[M]], idle_after: float | None,
                 lanes: _Lanes[M], nudge: _Nudge) -> bool:
    idle_at = None if idle_after is None else trio.current_time() + idle_after
    while True:
        timer = actor.wake_in()
        now = trio.current_time()
        timer_at = None if timer is None else now + max(0.0, timer)
        until = min((t for t in (timer_at, idle_at) if t is not None), default=None)
        envelope: Envelope[M] | None = None
        try:
            # What is queued goes before a timer that is due; the checkpoint is the yield a
            # blocking receive would have made.
            envelope = receive.receive_nowait()
            try:
                await trio.lowlevel.checkpoint()
            except trio.Cancelled:
                _reply(envelope, _never_served(actor))
                raise
        except trio.WouldBlock:
            nudge.nudged = False
            with trio.CancelScope(deadline=until if until is not None else math.inf) as nudge.waiting:
                try:
                    envelope = await receive.receive()
                except trio.EndOfChannel:
                    return False
                finally:
                    nudge.waiting = None
        except trio.EndOfChannel:
            return False
        if envelope is None and nudge.nudged:
            continue
        if envelope is None:
            now = trio.current_time()
            if timer_at is not None and now >= timer_at:
                await actor.on_timer()
                if idle_after is not None:
                    idle_at = trio.current_time() + idle_after
                continue
            if actor.may_stop_when_idle() and lanes.idle:
                return True
            idle_at = None if idle_after is None else now + idle_after
            continue
        await _serve_queued(actor, envelope, receive, lanes)
        if idle_after is not None:
            idle_at = trio.current_time() + idle_after


async def _serve_queued(actor: Actor[M], first: Envelope[M], receive: trio.MemoryReceiveChannel[Envelope[M]],
                        lanes: _Lanes[M]) -> None:
    """Serve `first` and what is already queued behind it, up to DRAIN_BATCH messages.

    Consecutive messages with one batch key go to `handle_batch` together. Finding where a
    run ends means taking the next message out of the mailbox; if the run then crashes,
    that message is answered with the crash too, since the next incarnation cannot get it
    back. (Without batch keys nothing is taken ahead, and queued messages survive a crash.)
    """
    pending: Envelope[M] | None = first
    served = 0
    while pending is not None:
        lane = actor.lane_of(pending.message)
        if lane is not None:
            await lanes.hand(lane, pending)
            pending = None
            served += 1
        else:
            run, pending = [pending], None
            try:
                pending = _gather(actor, run, receive, DRAIN_BATCH - served)
            except BaseException:  # the actor's batch_key or batch_takes failed: a crash
                for envelope in run:
                    _reply(envelope, _never_served(actor))
                raise
            try:
                if len(run) == 1:
                    await _deliver(actor, run[0])
                else:
                    await _deliver_batch(actor, run)
            except BaseException:
                if pending is not None:
                    _reply(pending, _never_served(actor))
                raise
            served += len(run)
        if pending is None and served < DRAIN_BATCH:
            try:
                pending = receive.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                pending = None


def _gather(actor: Actor[M], run: list[Envelope[M]], receive: trio.MemoryReceiveChannel[Envelope[M]],
            room: int) -> Envelope[M] | None:
    """Take the messages queued behind `run[0]` that join its batch into `run` (at most
    `room` in all); answers the first taken that does not join, or None."""
    key = actor.batch_key(run[0].message)
    while key is not None and len(run) < room:
        try:
            following = receive.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel):
            return None
        try:
            joins = actor.batch_key(following.message) == key and \
                actor.batch_takes([e.message for e in run], following.message)
        except BaseException:
            _reply(following, _never_served(actor))
            raise
        if not joins:
            return following
        run.append(following)
    return None


class _Lanes(Generic[M]):
    """The lanes of one incarnation: a queue and a task per busy lane, in its nursery."""

    def __init__(self, actor: Actor[M], nursery: trio.Nursery) -> None:
        self._actor = actor
        self._nursery = nursery
        self._queues: dict[Hashable, deque[Envelope[M]]] = {}
        self._capacity = trio.Semaphore(LANE_CAPACITY)

    @property
    def idle(self) -> bool:
        return not self._queues

    async def hand(self, lane: Hashable, envelope: Envelope[M]) -> None:
        try:
            await self._capacity.acquire()
        except BaseException:  # cancelled (a lane crashed, or the grace ran out): answer it first
            _reply(envelope, _never_served(self._actor))
            raise
        queue = self._queues.get(lane)
        if queue is not None:
            queue.append(envelope)
            return
        self._queues[lane] = deque([envelope])
        self._nursery.start_soon(self._serve_lane, lane)

    async def _serve_lane(self, lane: Hashable) -> None:
        queue = self._queues[lane]
        try:
            while queue:
                await _deliver(self._actor, queue[0])
                queue.popleft()
                self._capacity.release()
        finally:
            # A crash here or in another lane (or the end of the grace) leaves these unserved.
            for envelope in queue:
                _reply(envelope, _never_served(self._actor))
            del self._queues[lane]


def _served_span(actor: Actor[Any], message: object, envelopes: list[Envelope[Any]]) -> ContextManager[Any]:
    """The span an actor serves asks in: under the asker's (one ask), linked to the askers'
    (a batch serves several); none when no asker was in a span (tracing off: no cost)."""
    asked = [e.trace for e in envelopes if e.trace is not None]
    if not asked:
        return nullcontext()
    name = f"{type(actor).__name__} {type(message).__name__}"
    if len(envelopes) == 1:
        return spans.span(name, parent=asked[0])
    return spans.span(name, links=asked, attributes={"connectapi.batched": len(envelopes)})


async def _deliver_batch(actor: Actor[M], envelopes: list[Envelope[M]]) -> None:
    try:
        with _served_span(actor, envelopes[0].message, envelopes):
            results = await actor.handle_batch([e.message for e in envelopes], [e.trace for e in envelopes])
        if len(results) != len(envelopes):
            raise RuntimeError(f"handle_batch answered {len(results)} outcomes for {len(envelopes)} messages")
    except actor.replied_errors as refusal:  # the batch's answer to each, as `handle`'s would be
        for envelope in envelopes:
            _reply(envelope, outcome.Error(refusal))
        return
    except BaseException as crash:
        for envelope in envelopes:
            wrapped = ActorCrashed(f"{type(actor).__name__} crashed on a batch of {type(envelope.message).__name__}")
            wrapped.__cause__ = crash
            _reply(envelope, outcome.Error(wrapped))
        raise
    for envelope, result in zip(envelopes, results):
        _reply(envelope, result)


async def _deliver(actor: Actor[M], envelope: Envelope[M]) -> None:
    try:
        if envelope.trace is None:
            result = await actor.handle(envelope.message)
        else:
            with _served_span(actor, envelope.message, [envelope]):
                result = await actor.handle(envelope.message)
    except actor.replied_errors as refusal:
        _reply(envelope, outcome.Error(refusal))
    except Exception as crash:
        wrapped = ActorCrashed(f"{type(actor).__name__} crashed on {type(envelope.message).__name__}")
        wrapped.__cause__ = crash
        _reply(envelope, outcome.Error(wrapped))
        raise
    except BaseException:
        # Cancelled mid-message (another lane crashed, or the shutdown grace ran out): the
        # asker hears it now rather than at its timeout. Never swallowed.
        _reply(envelope, outcome.Error(ActorCrashed(f"{type(actor).__name__} stopped while serving it")))
        raise
    else:
        _reply(envelope, outcome.Value(result))


def _never_served(actor: Actor[Any]) -> outcome.Outcome[Any]:
    """For a message the actor took but never handled: safe to send again (ActorUnavailable,
    where a crash while handling it answers ActorCrashed: its fate is unknown)."""
    return outcome.Error(ActorUnavailable(f"{type(actor).__name__} stopped before serving it"))


def _reply(envelope: Envelope[Any], result: outcome.Outcome[Any]) -> None:
    if envelope.reply is not None:
        envelope.reply.put(result)  # a no-op when the asker has given up, or was answered
