"""The runtime's supervision: a spent crash budget leaves the actor down (reported, never
restarted behind the supervisor's back), revival, lanes, timers and actors of rounds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
import trio
import trio.testing

from connectapi.engine import (
    Actor,
    ActorCrashed,
    ActorUnavailable,
    Ask,
    NextRound,
    Registry,
    RestartPolicy,
    RoundsActor,
    Wake,
    open_supervisor,
)
from connectapi.metrics import ACTOR_DOWN, REGISTRY


@dataclass(frozen=True)
class Work(Ask[str]):
    what: str


class Fragile(Actor[Work]):
    """Crashes on "boom"; counts its incarnations."""

    incarnations = 0

    def __init__(self) -> None:
        Fragile.incarnations += 1

    async def handle(self, message: Work) -> str:
        if message.what == "boom":
            raise RuntimeError("the disk is full")
        return f"done {message.what}"


POLICY = RestartPolicy(initial_backoff=1.0, max_crashes=2, crash_window=60)


def down_gauge(name: str) -> float | None:
    return REGISTRY.get_sample_value("connectapi_actor_down", {"actor": name})


async def crash_until_down(ask: Any, times: int = 3) -> None:
    for _ in range(times):
        with pytest.raises(ActorCrashed):
            await ask(Work("boom"))


async def test_a_spent_crash_budget_is_reported_with_its_reason(autojump_clock: object) -> None:
    async with open_supervisor(POLICY) as sup:
        box = await sup.spawn("mailer", Fragile, degraded="e-mails wait")
        await crash_until_down(lambda m: box.ask(m, timeout=30))
        await trio.testing.wait_all_tasks_blocked()
        down = sup.down["mailer"]
        assert (down.kind, down.crashes, down.degraded) == ("mailer", 3, "e-mails wait")
        assert down.reason == "RuntimeError: the disk is full"
        assert down_gauge("mailer") == 1
        with pytest.raises(ActorUnavailable):
            await box.ask(Work("x"), timeout=1)
    assert down_gauge("mailer") is None  # the service that held it is gone


async def test_a_down_actor_of_a_registry_is_not_spawned_again(autojump_clock: object) -> None:
    Fragile.incarnations = 0
    async with open_supervisor(POLICY) as sup:
        writers: Registry[int, Work] = Registry(sup, lambda key: Fragile(), name="writer", idle_after=300,
                                                ask_timeout=30)
        await crash_until_down(lambda m: writers.ask(7, m))
        await trio.testing.wait_all_tasks_blocked()
        assert "writer[7]" in sup.down and Fragile.incarnations == 3
        for _ in range(3):
            with pytest.raises(ActorUnavailable):
                await writers.ask(7, Work("x"))
            assert not await writers.try_tell(7, Work("x"))
        assert Fragile.incarnations == 3  # no fresh copy behind the supervisor's back
        assert 7 not in writers
        # the property next door is not touched
        assert await writers.ask(8, Work("x")) == "done x"


async def test_revival_restarts_on_the_mailbox_its_users_hold(autojump_clock: object) -> None:
    async with open_supervisor(POLICY) as sup:
        box = await sup.spawn("mailer", Fragile)
        writers: Registry[int, Work] = Registry(sup, lambda key: Fragile(), name="writer", idle_after=300,
                                                ask_timeout=30)
        await crash_until_down(lambda m: box.ask(m, timeout=30))
        await crash_until_down(lambda m: writers.ask(3, m))
        await trio.testing.wait_all_tasks_blocked()
        assert set(sup.down) == {"mailer", "writer[3]"}
        assert await sup.revive("mailer") and await sup.revive("writer[3]")
        assert not await sup.revive("nobody")
        assert sup.down == {} and down_gauge("mailer") is None
        assert await box.ask(Work("again"), timeout=1) == "done again"
        assert await writers.ask(3, Work("again")) == "done again"


@dataclass(frozen=True)
class Call(Ask[str]):
    lane: str
    seconds: float


class Remote(Actor[Call | Work]):
    """Calls that wait on the outside, in lanes; Work is served in turn."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def lane_of(self, message: Call | Work) -> str | None:
        return message.lane if isinstance(message, Call) else None

    async def handle(self, message: Call | Work) -> str:
        if isinstance(message, Work):
            if message.what == "boom":
                raise RuntimeError("bug")
            return message.what
        if message.seconds < 0:
            raise RuntimeError("lane crash")
        await trio.sleep(message.seconds)
        self.log.append(f"{message.lane}:{message.seconds}")
        return message.lane


async def test_lanes_serve_in_order_each_and_never_hold_each_other(autojump_clock: object) -> None:
    log: list[str] = []
    async with open_supervisor() as sup:
        box = await sup.spawn("remote", lambda: Remote(log))
        answers: dict[str, Any] = {}

        async def ask(name: str, message: Call | Work) -> None:
            answers[name] = await box.ask(message, timeout=100)

        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "slow-1", Call("slow", 10))
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(ask, "slow-2", Call("slow", 1))
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(ask, "fast", Call("fast", 2))
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(ask, "inline", Work("now"))
        assert answers == {"slow-1": "slow", "slow-2": "slow", "fast": "fast", "inline": "now"}
        # the slow lane in order (10 then 1), the fast lane beside it, nothing waited on another
        assert log == ["fast:2", "slow:10", "slow:1"]
        assert trio.current_time() - start == pytest.approx(11)


async def test_a_crash_in_a_lane_answers_every_waiting_call_and_restarts(autojump_clock: object) -> None:
    log: list[str] = []
    async with open_supervisor(RestartPolicy(initial_backoff=1.0)) as sup:
        box = await sup.spawn("remote", lambda: Remote(log))
        answers: dict[str, Any] = {}

        async def ask(name: str, message: Call) -> None:
            try:
                answers[name] = await box.ask(message, timeout=100)
            except ActorCrashed:
                answers[name] = "crashed"
            except ActorUnavailable:
                answers[name] = "never served"

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "long", Call("a", 50))
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(ask, "queued", Call("a", 1))
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(ask, "crash", Call("b", -1))
        # cut off while served (its fate unknown), never served, and the crash itself
        assert answers == {"long": "crashed", "queued": "never served", "crash": "crashed"}
        await trio.testing.wait_all_tasks_blocked()
        assert sup.crash_count == 1
        assert await box.ask(Call("a", 1), timeout=100) == "a"


class Ticker(Actor[Work]):
    def __init__(self, ticks: list[float]) -> None:
        self.ticks = ticks
        self.next = trio.current_time() + 5

    def wake_in(self) -> float:
        return max(0.0, self.next - trio.current_time())

    async def on_timer(self) -> None:
        self.ticks.append(trio.current_time())
        self.next = trio.current_time() + 5

    async def handle(self, message: Work) -> str:
        return message.what


async def test_timers_fire_between_messages(autojump_clock: object) -> None:
    ticks: list[float] = []
    start = trio.current_time()
    async with open_supervisor(shutdown_grace=0) as sup:
        box = await sup.spawn("ticker", lambda: Ticker(ticks))
        await trio.sleep(12)
        assert await box.ask(Work("hello"), timeout=1) == "hello"
        await trio.sleep(4)
    assert [round(t - start) for t in ticks] == [5, 10, 15]


class Counting(RoundsActor[Wake]):
    name = "counting"
    interval = 30.0
    waits_out: ClassVar[tuple[type[Exception], ...]] = (ConnectionError,)

    def __init__(self, script: list[Any]) -> None:
        self.script = script
        self.rounds: list[float] = []

    async def round(self) -> NextRound:
        self.rounds.append(trio.current_time())
        step = self.script.pop(0) if self.script else NextRound()
        if isinstance(step, Exception):
            raise step
        assert isinstance(step, NextRound)
        return step


async def test_rounds_at_start_on_wake_on_timer_and_at_once_while_more_waits(autojump_clock: object) -> None:
    actor = Counting([NextRound(), NextRound(more=True), NextRound(due_in=3), NextRound()])
    start = trio.current_time()
    async with open_supervisor(shutdown_grace=0) as sup:
        box = await sup.spawn("counting", lambda: actor, mailbox_size=1)
        await trio.sleep(1)
        box.try_tell(Wake())  # round 2 says more: round 3 at once, which asks for 3 s
        await trio.sleep(10)  # round 4 at 4 s; then the 30 s interval
        await trio.sleep(30)
    assert [round(t - start) for t in actor.rounds] == [0, 1, 1, 4, 34]


async def test_an_outside_failure_is_waited_out_not_a_crash(autojump_clock: object) -> None:
    actor = Counting([ConnectionError("record away")] * 4)
    start = trio.current_time()
    async with open_supervisor(RestartPolicy(max_crashes=0), shutdown_grace=0) as sup:
        await sup.spawn("counting", lambda: actor, mailbox_size=1)
        await trio.sleep(20)
        assert sup.crash_count == 0 and sup.down == {}
    # 1 s, then doubling to the 5 s ceiling, then the interval once it answers again
    assert [round(t - start) for t in actor.rounds] == [0, 1, 3, 7, 12]


class Briefly(Counting):
    waits_out = (ConnectionError, TimeoutError)
    waits_out_briefly = (TimeoutError,)


async def test_a_failure_waited_out_briefly_is_a_crash_once_it_never_clears(autojump_clock: object) -> None:
    """A refusal for now is tried again, each logged, Briefly.brief_rounds rounds in a row; an
    outage between, or a round that works, starts the count again."""
    busy = TimeoutError("deadlock")
    cleared = Briefly([busy] * Briefly.brief_rounds + [NextRound()] + [busy] * (Briefly.brief_rounds - 1) + [ConnectionError("away")]
                      + [busy] * Briefly.brief_rounds)
    async with open_supervisor(RestartPolicy(max_crashes=0), shutdown_grace=0) as sup:
        await sup.spawn("briefly", lambda: cleared, mailbox_size=1)
        await trio.sleep(200)
        assert sup.crash_count == 0 and sup.down == {}
    assert cleared.script == []  # every step was taken, none a crash

    never = Briefly([busy] * (Briefly.brief_rounds + 1))
    async with open_supervisor(RestartPolicy(max_crashes=0), shutdown_grace=0) as sup:
        await sup.spawn("briefly", lambda: never, mailbox_size=1, degraded="nothing is counted")
        await trio.sleep(200)
        assert sup.down["briefly"].reason == "TimeoutError: deadlock"
    assert len(never.rounds) == Briefly.brief_rounds + 1


async def test_a_round_that_raises_anything_else_is_a_crash_then_down(autojump_clock: object) -> None:
    actor_rounds: list[float] = []

    def fresh() -> Counting:
        actor = Counting([RuntimeError("bug")])
        actor.rounds = actor_rounds
        return actor

    async with open_supervisor(RestartPolicy(initial_backoff=1.0, max_crashes=2)) as sup:
        await sup.spawn("counting", fresh, mailbox_size=1, degraded="nothing is counted")
        await trio.sleep(10)
        assert sup.down["counting"].reason == "RuntimeError: bug"
    assert len(actor_rounds) == 3  # the first incarnation and two restarts


async def test_a_stopping_rounds_actor_does_not_wait_for_its_timer(autojump_clock: object) -> None:
    actor = Counting([NextRound(due_in=1000)])
    start = trio.current_time()
    async with open_supervisor(shutdown_grace=60) as sup:
        await sup.spawn("counting", lambda: actor, mailbox_size=1)
        await trio.sleep(1)
    assert trio.current_time() - start == pytest.approx(1)


def test_down_gauge_is_in_the_registry() -> None:
    assert ACTOR_DOWN._name == "connectapi_actor_down"  # noqa: SLF001 - the name the docs give


class SlowFragile(Actor[Work]):
    async def handle(self, message: Work) -> str:
        await trio.sleep(1)
        if message.what == "boom":
            raise RuntimeError("the disk is full")
        return message.what


async def test_messages_queued_behind_the_last_crash_are_refused_at_once(autojump_clock: object) -> None:
    async with open_supervisor(RestartPolicy(max_crashes=0)) as sup:
        box = await sup.spawn("mailer", SlowFragile)
        answers: dict[str, Any] = {}

        async def ask(what: str) -> None:
            try:
                answers[what] = await box.ask(Work(what), timeout=600)
            except (ActorCrashed, ActorUnavailable) as exc:
                answers[what] = (type(exc).__name__, trio.current_time())

        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "boom")
            await trio.testing.wait_all_tasks_blocked()
            for what in ("a", "b", "c"):
                nursery.start_soon(ask, what)
                await trio.testing.wait_all_tasks_blocked()
        assert answers["boom"] == ("ActorCrashed", start + 1)
        # not left to wait out their 600 s: told the actor is down when it went down
        assert [answers[w] for w in "abc"] == [("ActorUnavailable", start + 1)] * 3


async def test_an_outside_failure_from_a_rounds_nursery_is_waited_out_too(autojump_clock: object) -> None:
    """A round that works in a nursery gets its failures as a group (the webhook sender's
    deliveries): a group of outside failures only is an outage, anything more a crash."""
    actor = Counting([ExceptionGroup("deliveries", [ConnectionError("record away")] * 2)])
    async with open_supervisor(RestartPolicy(max_crashes=0), shutdown_grace=0) as sup:
        await sup.spawn("counting", lambda: actor, mailbox_size=1)
        await trio.sleep(3)
        assert sup.crash_count == 0 and len(actor.rounds) == 2
        mixed = Counting([ExceptionGroup("deliveries", [ConnectionError("away"), RuntimeError("bug")])])
        await sup.spawn("mixed", lambda: mixed, mailbox_size=1)
        await trio.sleep(1)
        assert "mixed" in sup.down  # max_crashes=0: the first crash puts it down
