"""The record's budget statement (migration 0016) against the in-memory ledger that states
the same rules in Python, and under concurrent callers."""

from __future__ import annotations

import random

import pytest
import trio

from connectapi.budgets.charges import Charge, Counted, Verdict
from tests.budget_ledger import BudgetLedger
from connectapi.budgets import record as budgets
from connectapi.storage.database import Database

START = 1_790_000_000.0


def close(x: float | None, y: float | None) -> bool:
    return x is None and y is None or (x is not None and y is not None and abs(x - y) < 1e-6)


def same(a: Counted, b: Counted) -> bool:
    return (a.verdict is b.verdict and a.state.used == b.state.used and a.state.limit == b.state.limit
            and close(a.state.reset_after, b.state.reset_after) and close(a.wait, b.wait))


def random_request(rng: random.Random) -> list[Charge]:
    """Two or three stages over a few small budgets, as the gates ask."""
    charges = [Charge("ip", rng.choice("ab"), 1, 5, 3.0, 1, 1),
               Charge("global", "", 1, 8, 3.0, 1 + rng.choice((0, 2)), 1, rng.choice((None, 1)))]
    if rng.random() < 0.5:
        charges.append(Charge("ip-auth", rng.choice("ab"), 2, 2, 3.0, rng.choice((1, None)), rng.choice((0, 1))))
    charges.append(Charge("requests", rng.choice("xy"), 3, 4, 2.0, 1, 1))
    if rng.random() < 0.5:
        amount = rng.randint(1, 7)
        charges.append(Charge("cells", "p", 3, 6, 2.5, amount, amount))
    return charges


async def test_the_statement_answers_as_the_ledger_does(db: Database) -> None:
    """Requests one at a time and several to a statement (as a process batches them): each
    answered as the ledger answers it alone, in order."""
    rng = random.Random(17)
    ledger, now = BudgetLedger(), START
    verdicts: set[Verdict] = set()
    for step in range(300):
        now += rng.choice((0.0, 0.05, 0.3, 0.7, 1.0, 2.5))
        requests = [random_request(rng) for _ in range(rng.choice((1, 1, 2, 5)))]
        expected = [ledger.charge(now, charges) for charges in requests]
        got = await budgets.charge_many(db, now, requests)
        for charges, one_expected, one_got in zip(requests, expected, got, strict=True):
            assert all(same(e, g) for e, g in zip(one_expected, one_got, strict=True)), (
                step, charges, one_expected, one_got)
            verdicts.update(c.verdict for c in one_got)
    assert verdicts == set(Verdict)  # every path was taken


async def test_a_refused_stage_counts_nothing_and_earlier_stages_stay_counted(db: Database) -> None:
    ip = Charge("ip", "a", 1, 10, 60.0, 1, 1)
    requests = Charge("requests", "k", 2, 1, 60.0, 1, 1)
    writes = Charge("writes", "k", 2, 0, 60.0, 1, 1)
    got = await budgets.charge(db, START, [ip, requests, writes])
    assert [c.verdict for c in got] == [Verdict.CHARGED, Verdict.UNCHECKED, Verdict.REFUSED]
    again = await budgets.charge(db, START + 1, [ip, requests])
    assert [c.state.used for c in again] == [2, 1]  # `requests` was not counted by the refused stage


async def test_concurrent_callers_never_take_more_than_the_budget(fresh_dsn: str) -> None:
    """Eight connections charging one window at once: exactly its limit is admitted."""
    from connectapi.storage.database import open_database

    limit, admitted = 25, []
    charge = [Charge("requests", "k", 1, limit, 60.0, 1, 1), Charge("global", "", 1, 1000, 60.0, 1, 1)]
    async with open_database(fresh_dsn, min_size=8, max_size=8, command_timeout=None) as db:
        async def caller() -> None:
            for _ in range(10):
                got = await budgets.charge(db, START, charge)
                admitted.append(got[0].verdict is Verdict.CHARGED)

        async with trio.open_nursery() as nursery:
            for _ in range(8):
                nursery.start_soon(caller)
        assert sum(admitted) == limit
        final = await budgets.charge(db, START, [Charge("requests", "k", 1, limit, 60.0, 0, 0)])
        assert final[0].state.used == limit


async def test_prune_forgets_only_subjects_whose_window_is_empty(db: Database) -> None:
    await budgets.charge(db, START, [Charge("ip", "a", 1, 10, 60.0, 1, 1)])
    await budgets.charge(db, START + 30, [Charge("ip", "b", 1, 10, 60.0, 1, 1)])
    assert await budgets.prune(db, START + 59.9) == 0
    assert await budgets.prune(db, START + 60) == 1
    assert await budgets.subjects(db) == 1
    assert await budgets.prune(db, START + 90) == 1
    assert await budgets.subjects(db) == 0


async def test_a_process_sends_concurrent_asks_together_and_each_is_counted_once(fresh_dsn: str) -> None:
    from connectapi.budgets.batcher import RecordCounter
    from connectapi.storage.database import open_database

    limit = 25
    charge = [Charge("requests", "k", 1, limit, 60.0, 1, 1)]
    async with open_database(fresh_dsn, min_size=2, max_size=2, command_timeout=None) as db:
        counter = RecordCounter(db)
        verdicts: list[Verdict] = []

        async def ask() -> None:
            verdicts.append((await counter.charge(START, charge))[0].verdict)

        async with trio.open_nursery() as nursery:
            for _ in range(60):
                nursery.start_soon(ask)
        assert verdicts.count(Verdict.CHARGED) == limit and verdicts.count(Verdict.REFUSED) == 60 - limit
        assert counter.statements < 10  # together, not one statement each
        # Both requests cancelled: the first one's statement was out (and is finished, shielded,
        # since others' asks may ride on it); the second's ask, not sent yet, is withdrawn.
        other = [Charge("requests", "w", 1, 100, 60.0, 1, 1)]

        async def ask_other() -> None:
            await counter.charge(START, other)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask_other)
            nursery.start_soon(ask_other)
            await trio.sleep(0)
            nursery.cancel_scope.cancel()
        final = await budgets.charge(db, START, [Charge("requests", "w", 1, 100, 60.0, 0, 0)])
        assert final[0].state.used == 1


async def test_when_the_record_cannot_be_reached_every_waiting_ask_hears_it_at_once() -> None:
    """Asks queued behind a statement that finds the record away are answered with it, not
    each after its own timeouts (the record here: a port nobody listens on)."""
    import socket

    import trio_asyncio

    from connectapi.budgets.batcher import RecordCounter
    from connectapi.storage.database import StorageUnavailable, open_database

    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    async with trio_asyncio.open_loop(), open_database(f"postgresql://nobody@127.0.0.1:{port}/none", min_size=0,
                                                       max_size=2, command_timeout=None) as db:
        counter = RecordCounter(db)
        heard: list[str] = []

        async def ask() -> None:
            try:
                await counter.charge(START, [Charge("requests", "k", 1, 10, 60.0, 1, 1)])
            except StorageUnavailable:
                heard.append("unavailable")

        async with trio.open_nursery() as nursery:
            for _ in range(200):
                nursery.start_soon(ask)
        assert heard == ["unavailable"] * 200
        assert counter.statements <= 2  # one attempt, and the asks behind it heard its answer


def test_a_subject_twice_in_one_stage_is_refused_before_any_statement() -> None:
    with pytest.raises(ValueError):
        budgets.check_stages([Charge("requests", "k", 1, 1, 60.0, 1, 1), Charge("requests", "k", 1, 1, 60.0, 1, 1)])
    budgets.check_stages([Charge("requests", "k", 1, 1, 60.0, 1, 1), Charge("requests", "k", 2, 1, 60.0, 1, 0)])
