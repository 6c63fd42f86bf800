"""The actor runtime: ask/tell, crash and restart, isolation, idle stop, ordered shutdown."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import outcome
import pytest
import trio
import trio.testing

import connectapi.engine as engine
from connectapi.engine import (
    Actor,
    ActorCrashed,
    ActorUnavailable,
    Ask,
    AskTimeout,
    Registry,
    RestartPolicy,
    open_supervisor,
)

PACKAGE = Path(engine.__file__).parents[1]
ENGINE = PACKAGE / "engine"


@dataclass(frozen=True)
class Add(Ask[int]):
    amount: int


@dataclass(frozen=True)
class Boom(Ask[int]):
    pass


@dataclass(frozen=True)
class Refuse(Ask[int]):
    pass


@dataclass(frozen=True)
class Hang(Ask[int]):
    pass


Msg = Add | Boom | Refuse | Hang


class Refused(Exception):
    pass


class Counter(Actor[Msg]):
    replied_errors = (Refused,)
    starts = 0

    def __init__(self) -> None:
        self.total = 0

    async def on_start(self) -> None:
        Counter.starts += 1

    async def handle(self, message: Msg) -> int:
        match message:
            case Add(amount):
                self.total += amount
                return self.total
            case Boom():
                raise RuntimeError("boom")
            case Refuse():
                raise Refused("no")
            case Hang():
                await trio.sleep_forever()
        raise AssertionError(message)


def _engine_imports(path: Path) -> list[tuple[str, list[str]]]:
    """What a module of the package imports from the engine: (module, names) per import."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(part for part in (base, node.module) if part)
            found.append((module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
    return [(module, names) for module, names in found
            if module == "connectapi.engine" or module.startswith("connectapi.engine.")]


def test_the_engine_exports_what_the_package_uses_and_keeps_the_rest_private() -> None:
    # __all__ is the module's public face: no private name in it, nothing public left out of it,
    # each name defined in one of the engine's private modules (not re-exported from elsewhere).
    public = {name for name in vars(engine) if not name.startswith("_")}
    assert sorted(engine.__all__) == sorted(public) and len(set(engine.__all__)) == len(engine.__all__)
    for name in engine.__all__:
        assert getattr(engine, name).__module__.startswith("connectapi.engine._"), name
    # The rest of the package imports the engine through that face alone: from connectapi.engine,
    # never from its private modules, and only names __all__ lists.
    used: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if ENGINE in path.parents:
            continue
        for module, names in _engine_imports(path):
            where = f"{path.relative_to(PACKAGE.parent)} imports {module}"
            assert module == "connectapi.engine", where
            assert set(names) <= set(engine.__all__), f"{where}: {sorted(set(names) - set(engine.__all__))}"
            used.update(names)
    assert used, "no module imports the engine: the walk found nothing"


async def test_ask_replies_and_refusals_keep_their_type() -> None:
    async with open_supervisor() as sup:
        box = await sup.spawn("c", Counter)
        assert await box.ask(Add(2), timeout=1) == 2
        assert await box.ask(Add(3), timeout=1) == 5
        with pytest.raises(Refused):
            await box.ask(Refuse(), timeout=1)
        # a refusal is an answer, not a crash: the state survives
        assert await box.ask(Add(0), timeout=1) == 5
        assert sup.crash_count == 0


async def test_crash_restarts_with_fresh_state_and_keeps_queued_messages(autojump_clock: object) -> None:
    Counter.starts = 0
    async with open_supervisor(RestartPolicy(initial_backoff=1.0)) as sup:
        box = await sup.spawn("c", Counter)
        await box.ask(Add(7), timeout=1)
        with pytest.raises(ActorCrashed) as info:
            await box.ask(Boom(), timeout=5)
        assert isinstance(info.value.__cause__, RuntimeError)
        # queued while the actor is down for its backoff; served by the new incarnation
        before = trio.current_time()
        assert await box.ask(Add(1), timeout=5) == 1
        assert trio.current_time() - before == pytest.approx(1.0)
        assert Counter.starts == 2
        assert sup.crash_count == 1


async def test_crash_in_one_actor_never_touches_another(autojump_clock: object) -> None:
    async with open_supervisor() as sup:
        a = await sup.spawn("a", Counter)
        b = await sup.spawn("b", Counter)
        await b.ask(Add(40), timeout=1)
        with pytest.raises(ActorCrashed):
            await a.ask(Boom(), timeout=1)
        assert await b.ask(Add(2), timeout=1) == 42


async def test_gives_up_after_crash_budget(autojump_clock: object) -> None:
    policy = RestartPolicy(initial_backoff=0.5, max_crashes=2, crash_window=60)
    async with open_supervisor(policy) as sup:
        box = await sup.spawn("c", Counter)
        for _ in range(3):
            with pytest.raises(ActorCrashed):
                await box.ask(Boom(), timeout=10)
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(ActorUnavailable):
            await box.ask(Add(1), timeout=1)
        assert sup.running == 0


async def test_backoff_doubles() -> None:
    policy = RestartPolicy(initial_backoff=0.1, max_backoff=1.0)
    assert [policy.backoff(n) for n in (1, 2, 3, 4, 5, 6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


async def test_ask_timeout(autojump_clock: object) -> None:
    async with open_supervisor(shutdown_grace=0) as sup:
        box = await sup.spawn("c", Counter)
        with pytest.raises(AskTimeout):
            await box.ask(Hang(), timeout=3)


async def test_an_ask_from_a_caller_already_cancelled_or_out_of_time_queues_nothing(
        autojump_clock: object) -> None:
    async with open_supervisor(shutdown_grace=0) as sup:
        box = await sup.spawn("c", Counter)
        with trio.CancelScope() as gone:
            gone.cancel()  # the client went away before the route asked
            await box.ask(Add(5), timeout=3)
        with pytest.raises(AskTimeout):
            await box.ask(Add(7), timeout=0)
        await trio.testing.wait_all_tasks_blocked()
        assert gone.cancelled_caught
        assert await box.ask(Add(0), timeout=3) == 0  # neither was carried out


async def test_bounded_mailbox_applies_backpressure() -> None:
    async with open_supervisor(shutdown_grace=0) as sup:
        box = await sup.spawn("c", Counter, mailbox_size=1)
        await box.tell(Hang())  # taken by the actor, which then blocks
        await trio.testing.wait_all_tasks_blocked()
        await box.tell(Add(1))  # fills the one slot
        with trio.move_on_after(0.05) as scope:
            await box.tell(Add(1))
        assert scope.cancelled_caught


async def advance(clock: trio.testing.MockClock, seconds: float) -> None:
    """Move the mock clock and let every task that was waiting for it run."""
    clock.jump(seconds)
    await trio.testing.wait_all_tasks_blocked()


async def test_registry_spawns_once_and_stops_idle_actor(autojump_clock: trio.testing.MockClock) -> None:
    Counter.starts = 0
    async with open_supervisor() as sup:
        reg: Registry[int, Msg] = Registry(sup, lambda key: Counter(), name="p", idle_after=120, ask_timeout=5)
        async with trio.open_nursery() as n:
            for _ in range(5):
                n.start_soon(reg.ask, 1, Add(1))
        assert Counter.starts == 1
        assert await reg.ask(1, Add(0)) == 5
        assert 1 in reg
        await advance(autojump_clock, 119)
        assert 1 in reg
        await advance(autojump_clock, 2)
        assert 1 not in reg and sup.running == 0
        # the next use spawns a fresh one
        assert await reg.ask(1, Add(3)) == 3
        assert Counter.starts == 2


class Sticky(Counter):
    def may_stop_when_idle(self) -> bool:
        return self.total == 0


async def test_actor_can_refuse_idle_stop(autojump_clock: trio.testing.MockClock) -> None:
    async with open_supervisor() as sup:
        reg: Registry[int, Msg] = Registry(sup, lambda key: Sticky(), name="p", idle_after=10, ask_timeout=5)
        await reg.ask(1, Add(1))
        await advance(autojump_clock, 100)
        assert 1 in reg


async def test_shutdown_drains_queues_then_cancels_in_order(autojump_clock: object) -> None:
    order: list[str] = []

    class Recorder(Actor[str]):
        def __init__(self, name: str) -> None:
            self.name = name

        async def handle(self, message: str) -> None:
            await trio.sleep(1)
            order.append(f"{self.name}:{message}")

    async with open_supervisor() as root:
        outer = await root.spawn("root-actor", lambda: Recorder("root"))
        async with open_supervisor() as services:
            inner = await services.spawn("service", lambda: Recorder("svc"))
            await inner.tell("a")
            await inner.tell("b")
            await outer.tell("x")
        # the inner block only ends once its actors finished their queues
        assert order.index("svc:a") < order.index("svc:b")
        assert services.running == 0
    assert "root:x" in order
    assert root.running == 0


async def test_shutdown_grace_cancels_a_stuck_actor(autojump_clock: object) -> None:
    start = trio.current_time()
    async with open_supervisor(shutdown_grace=2) as sup:
        box = await sup.spawn("c", Counter)
        await box.tell(Hang())
    assert trio.current_time() - start == pytest.approx(2)


@dataclass(frozen=True)
class Num(Ask[int]):
    n: int


class Batcher(Actor[Num]):
    """Batches even numbers, at most four a batch, serves odd ones one by one; 1 waits for
    the gate (so the others queue up behind it); a batch holding 100 crashes, one holding 200
    is refused whole; 0 is refused."""

    replied_errors = (Refused,)

    def __init__(self, calls: list[list[int]], gate: dict[str, trio.Event]) -> None:
        self.calls = calls
        self.gate = gate

    def batch_key(self, message: Num) -> str | None:
        return "even" if message.n % 2 == 0 else None

    def batch_takes(self, batch: list[Num], message: Num) -> bool:
        if message.n == 300:
            raise RuntimeError("a bug in batch_takes")
        return len(batch) < 4

    async def handle(self, message: Num) -> int:
        self.calls.append([message.n])
        if message.n == 1:
            await self.gate["open"].wait()
        return message.n

    async def handle_batch(self, messages: list[Num], asked: list[Any]) -> list[outcome.Outcome[Any]]:
        numbers = [m.n for m in messages]
        assert asked == [None] * len(messages)  # tracing off: no asker's span
        self.calls.append(numbers)
        if 100 in numbers:
            raise RuntimeError("boom")
        if 200 in numbers:
            raise Refused()
        return [outcome.Value(n * 10) if n else outcome.Error(Refused()) for n in numbers]


async def test_queued_messages_with_one_batch_key_are_served_together(autojump_clock: object) -> None:
    calls: list[list[int]] = []
    gate = {"open": trio.Event()}
    answers: dict[int, Any] = {}
    async with open_supervisor() as sup:
        box = await sup.spawn("b", lambda: Batcher(calls, gate))

        async def ask(n: int) -> None:
            try:
                answers[n] = await box.ask(Num(n), timeout=5)
            except (Refused, ActorCrashed, ActorUnavailable) as exc:
                answers[n] = type(exc).__name__

        async def queue_behind_the_gate(numbers: tuple[int, ...]) -> None:
            async with trio.open_nursery() as nursery:
                for n in (1, *numbers):
                    nursery.start_soon(ask, n)
                    await trio.testing.wait_all_tasks_blocked()  # each one queued before the next
                gate["open"].set()

        await queue_behind_the_gate((2, 4, 0, 3, 6, 8, 5))
        assert calls == [[1], [2, 4, 0], [3], [6, 8], [5]]
        assert answers == {1: 1, 2: 20, 4: 40, 0: "Refused", 3: 3, 6: 60, 8: 80, 5: 5}

        calls.clear()
        answers.clear()
        gate["open"] = trio.Event()
        await queue_behind_the_gate((10, 100, 7))
        # the crashing batch answers each of its messages with the crash, and the one taken out
        # after it as never served (so that an asker may safely send it again)
        assert calls == [[1], [10, 100]]
        assert answers == {1: 1, 10: "ActorCrashed", 100: "ActorCrashed", 7: "ActorUnavailable"}
        assert await box.ask(Num(12), timeout=5) == 12  # restarted; a lone even number is one handle call
        assert calls[-1] == [12]

        # A batch is as long as the actor takes (four); one refused whole answers each of its
        # messages with the refusal, is no crash, and the next batch is served.
        calls.clear()
        answers.clear()
        gate["open"] = trio.Event()
        await queue_behind_the_gate((2, 4, 6, 8, 10, 200, 14))
        assert calls == [[1], [2, 4, 6, 8], [10, 200, 14]]
        assert answers == {1: 1, 2: 20, 4: 40, 6: 60, 8: 80, 10: "Refused", 200: "Refused", 14: "Refused"}
        assert await box.ask(Num(16), timeout=5) == 16

        # A bug in deciding a batch is a crash; every message taken for it is answered as
        # never served (safe to send again), none left waiting; one still queued survives
        # and is served by the next incarnation.
        calls.clear()
        answers.clear()
        gate["open"] = trio.Event()
        await queue_behind_the_gate((2, 4, 300, 6))
        assert calls == [[1], [6]]
        assert answers == {1: 1, 2: "ActorUnavailable", 4: "ActorUnavailable", 300: "ActorUnavailable", 6: 6}


class Background(Actor[Any]):
    """Starts work it does not wait for; when that work ends, its timer is due at once."""

    def __init__(self, release: trio.Event) -> None:
        self.release = release
        self.done = False
        self.timers = 0

    def on_serving(self, nursery: trio.Nursery, nudge: Any) -> None:
        async def work() -> None:
            await self.release.wait()
            self.done = True
            nudge()

        nursery.start_soon(work)

    def wake_in(self) -> float | None:
        return 0.0 if self.done and not self.timers else 3600.0

    async def on_timer(self) -> None:
        self.timers += 1

    async def handle(self, message: Any) -> Any:
        return message


async def test_background_work_nudges_the_loop_without_a_message(mock_clock: trio.testing.MockClock) -> None:
    release = trio.Event()
    actor = Background(release)
    async with open_supervisor(shutdown_grace=0.0) as sup:
        await sup.spawn("background", lambda: actor, idle_after=60.0)
        await trio.testing.wait_all_tasks_blocked()
        assert actor.timers == 0
        release.set()  # the clock stands still: only the nudge can bring the timer
        await trio.testing.wait_all_tasks_blocked()
        assert actor.timers == 1
        assert sup.running == 1  # a nudge is not an idle stop
        sup.close_all()
