"""Holding a lease while work runs (actors.lease_hold), against a real database on the mock
clock: renewed in its own task past its length, given back at the end, the work cancelled
when the lease goes to another process; and the leases of the three old tables carried
into the one table by migration 0031."""

from __future__ import annotations

import functools
from typing import Any
from datetime import UTC, datetime, timedelta

import pytest
import trio
import trio.testing
import trio_asyncio

from connectapi.actors.lease_hold import HeldElsewhere, LeaseHolder
from connectapi.engine import FakeClock
from connectapi.storage import leases
from connectapi.storage.database import Database, StorageUnavailable, open_database
from connectapi.storage.leases import LeaseKind
from connectapi.storage.migrations import migrate
from tests.api.harness import eventually
from tests.conftest import scratch_database

AT = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
ROUND = LeaseKind.ROUND
SECONDS = 30.0


async def until_of(db: Database, key: str = "job") -> datetime | None:
    value: datetime | None = await db.fetchval("SELECT until FROM leases WHERE kind = 'round' AND key = $1", key)
    return value


async def test_a_held_lease_is_renewed_past_its_length_and_given_back_at_the_end(
        mock_clock: trio.testing.MockClock, db: Database) -> None:
    clock = FakeClock(AT)
    async with LeaseHolder(db, clock, "a").hold(ROUND, "job", SECONDS) as held:
        taken_until = await until_of(db)
        for _ in range(4):  # 40 s of work on a 30 s lease: each third of it, a renewal
            before = await until_of(db)
            mock_clock.jump(SECONDS / 3)
            await eventually(functools.partial(_later, db, before), "the lease renewed")
        renewed_until = await until_of(db)
        assert taken_until is not None and renewed_until is not None
        assert renewed_until - taken_until == timedelta(seconds=40)
        other = await leases.take(db, ROUND, "job", "b", clock.shared_time(), SECONDS)  # 40 s on: still a's
        assert other.holder == "a" and other.remaining == pytest.approx(SECONDS)
    assert not held.lost and held.again  # b asked for a round more while a held it
    assert await leases.holders(db, ROUND) == {}  # given back
    assert (await leases.take(db, ROUND, "job", "b", clock.shared_time(), SECONDS)).held_by("b")


async def _later(db: Database, before: datetime | None) -> bool:
    now = await until_of(db)
    return now is not None and before is not None and now > before


async def test_work_whose_lease_went_to_another_process_is_cancelled(
        mock_clock: trio.testing.MockClock, db: Database) -> None:
    clock = FakeClock(AT)
    reached_the_end = False
    async with LeaseHolder(db, clock, "a").hold(ROUND, "job", SECONDS) as held:
        # a stalls past its lease (no renewal reached the record), and b takes the job over.
        await db.execute("UPDATE leases SET until = until - interval '1 hour' WHERE kind = 'round'")
        assert (await leases.take(db, ROUND, "job", "b", clock.shared_time(), SECONDS)).held_by("b")
        await trio.testing.wait_all_tasks_blocked()
        mock_clock.jump(SECONDS / 3)  # a's next renewal finds the lease gone
        await eventually(lambda: False, "the work cancelled")  # the work: never ends by itself
        reached_the_end = True
    assert held.lost and not reached_the_end
    # b's lease is b's: a's way out gave nothing back.
    assert (await leases.holders(db, ROUND))["job"][0] == "b"


def record_away_for(renewals: int, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """The first `renewals` renewals find the record away; the list of them, as they come."""
    renew, failures = leases.renew, list[tuple[Any, ...]]()

    async def away(*args: Any) -> list[str]:
        if len(failures) < renewals:
            failures.append(args)
            raise StorageUnavailable("the record is away")
        return await renew(*args)

    monkeypatch.setattr(leases, "renew", away)
    return failures


async def test_a_renewal_the_record_cannot_answer_is_tried_again_until_the_lease_would_run_out(
        mock_clock: trio.testing.MockClock, db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    failures = record_away_for(2, monkeypatch)
    clock = FakeClock(AT)
    async with LeaseHolder(db, clock, "a").hold(ROUND, "job", SECONDS) as held:
        await trio.testing.wait_all_tasks_blocked()  # the renewal is waiting for its turn
        mock_clock.jump(SECONDS / 3)  # fails: 20 s of lease left, tried again
        await eventually(lambda: len(failures) == 1, "a renewal tried")
        await trio.testing.wait_all_tasks_blocked()
        held_on = await until_of(db)
        mock_clock.jump(SECONDS / 3)  # fails again: the next try would come as it runs out
        await eventually(lambda: False, "the work cancelled")
    assert held.lost and isinstance(held.error, StorageUnavailable) and len(failures) == 2
    assert await until_of(db) == held_on  # left to run out: a holder that cannot tell does not go on
    assert (await leases.holders(db, ROUND))["job"][0] == "a"


async def test_one_renewal_the_record_cannot_answer_does_not_stop_the_work(
        mock_clock: trio.testing.MockClock, db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    failures = record_away_for(1, monkeypatch)
    clock = FakeClock(AT)
    async with LeaseHolder(db, clock, "a").hold(ROUND, "job", SECONDS) as held:
        await trio.testing.wait_all_tasks_blocked()
        mock_clock.jump(SECONDS / 3)  # the first renewal fails: 20 s of lease left
        await eventually(lambda: len(failures) == 1, "a renewal tried")
        for _ in range(2):  # the next ones renew it: 40 s of work on a 30 s lease
            await trio.testing.wait_all_tasks_blocked()
            before = await until_of(db)
            mock_clock.jump(SECONDS / 3)
            await eventually(functools.partial(_later, db, before), "the lease renewed")
    assert not held.lost and held.error is None
    assert await leases.holders(db, ROUND) == {}  # given back at the end


async def test_a_lease_held_elsewhere_says_for_how_long_and_asks_for_a_round_more(
        mock_clock: trio.testing.MockClock, db: Database) -> None:
    clock = FakeClock(AT)
    assert (await leases.take(db, ROUND, "job", "b", clock.shared_time(), SECONDS)).held_by("b")
    mock_clock.jump(10)
    ran = False
    with pytest.raises(HeldElsewhere) as elsewhere:
        async with LeaseHolder(db, clock, "a").hold(ROUND, "job", SECONDS):
            ran = True
    assert not ran and elsewhere.value.remaining == pytest.approx(SECONDS - 10)
    assert await leases.give_back(db, ROUND, "job", "b") is True


async def test_the_works_own_failure_comes_out_as_it_was_raised_and_the_lease_is_given_back(
        mock_clock: trio.testing.MockClock, db: Database) -> None:
    with pytest.raises(KeyError):
        async with LeaseHolder(db, FakeClock(AT), "a").hold(ROUND, "job", SECONDS):
            raise KeyError("the work's own")
    assert await leases.holders(db, ROUND) == {}


async def test_migration_31_carries_the_leases_held_in_the_three_old_tables(pg_server: str) -> None:
    async with trio_asyncio.open_loop(), scratch_database(pg_server) as dsn, \
            open_database(dsn, min_size=1, max_size=2) as db:
        await migrate(db, through=30)
        prop = await db.fetchval("INSERT INTO properties (name, timezone, currency, channel_manager, pms) "
                                 "VALUES ('Casa Azul', 'Europe/Lisbon', 'EUR', true, true) RETURNING id")
        endpoint = await db.fetchval(
            "INSERT INTO webhook_endpoints (property_id, url, status, secret, created_at) "
            "VALUES ($1, 'https://hooks.example/c', 'active', 'whsec_x', now()) RETURNING id", prop)
        await db.execute("INSERT INTO push_leases VALUES ($1, 'host:1:old', $2)", prop, AT.timestamp() + 20)
        await db.execute("INSERT INTO round_leases VALUES ('booking-intake', 'host:2:old', $1, true)", AT)
        await db.execute("INSERT INTO round_leases VALUES ('given-back', NULL, NULL, false)")
        await db.execute("UPDATE webhook_endpoints SET sending_by = 'host:3:old', sending_until = $1", AT)
        assert await migrate(db, through=31) == [31]
        rows = await db.fetch("SELECT kind, key, holder, until, again FROM leases ORDER BY kind, key")
        assert [tuple(r) for r in rows] == [
            ("push", str(prop), "host:1:old", datetime.fromtimestamp(AT.timestamp() + 20, UTC), False),
            ("round", "booking-intake", "host:2:old", AT, True),
            ("round", "given-back", None, None, False),
            ("sending", str(endpoint), "host:3:old", AT, False),
        ]
        # A process of the new version respects the old one's lease until it runs out.
        held = await leases.take(db, LeaseKind.PUSH, str(prop), "host:4:new", AT.timestamp() + 5, 20)
        assert held.holder == "host:1:old" and held.remaining == pytest.approx(15)
        gone = await db.fetchval("SELECT count(*) FROM information_schema.tables "
                                 "WHERE table_name IN ('push_leases', 'round_leases')")
        assert gone == 0
