"""x-idempotency-key on the ARI writes, and which refusals have charged cells."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
import trio
import trio.testing
import trio_asyncio

from .harness import API, Answer, Harness, after_janitor_rounds, eventually


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_BUDGETS": "cells=10"}


async def setup(api: Harness) -> tuple[dict[str, Any], str, int]:
    prop, key = await api.keyed_property()
    return prop, key, prop["roomTypes"][0]["id"]


def nights(room: int, count: int, available: int = 3) -> dict[str, Any]:
    """`count` nights from 10 December: still ahead after the tests' week-long jumps."""
    return {"updates": [{"roomTypeId": room, "dateFrom": "2026-12-10", "dateTo": f"2026-12-{9 + count:02d}",
                         "available": available}]}


async def put(api: Harness, key: str, body: Any, idem: str | None = None) -> Answer:
    headers = {"x-idempotency-key": idem} if idem else {}
    return await api.call("PUT", f"{API}/availability", key=key, body=body, headers=headers)


async def test_replay_returns_the_stored_answer_and_writes_nothing(api: Harness) -> None:
    _, key, room = await setup(api)
    first = await put(api, key, nights(room, 2), "order-000001")
    assert first.status == 202 and "X-Idempotent-Replay" not in first.headers
    again = await put(api, key, nights(room, 2), "order-000001")
    assert again.status == 202 and again.headers["X-Idempotent-Replay"] == "true"
    assert again.body == first.body
    assert await api.ctx.db.fetchval("SELECT count(*) FROM write_batches") == 1
    # key order and spacing do not make a different body
    reordered = {"updates": [dict(reversed(list(nights(room, 2)["updates"][0].items())))]}
    assert (await put(api, key, reordered, "order-000001")).headers["X-Idempotent-Replay"] == "true"


async def test_same_key_other_body_is_409(api: Harness) -> None:
    _, key, room = await setup(api)
    await put(api, key, nights(room, 2), "order-000002")
    answer = await put(api, key, nights(room, 2, available=4), "order-000002")
    assert (answer.status, answer.code) == (409, "IDEMPOTENCY_KEY_REUSED")


async def test_keys_are_scoped_to_property_and_route(api: Harness) -> None:
    prop, key, room = await setup(api)
    other, other_key = await api.keyed_property(name="Other")
    assert (await put(api, key, nights(room, 1), "shared-key-01")).status == 202
    body = nights(other["roomTypes"][0]["id"], 1)
    assert "X-Idempotent-Replay" not in (await put(api, other_key, body, "shared-key-01")).headers
    rates = {"updates": [{"ratePlanId": prop["ratePlans"][0]["id"], "dateFrom": "2026-11-23",
                          "dateTo": "2026-11-23", "rate": 100, "currency": "EUR"}]}
    answer = await api.call("PUT", f"{API}/rates", key=key, body=rates, headers={"x-idempotency-key": "shared-key-01"})
    assert answer.status == 202 and "X-Idempotent-Replay" not in answer.headers


@pytest.mark.parametrize("bad", ["short", "x" * 65, "has space!!", "ключ-ключ-ключ"])
async def test_invalid_key_is_400(api: Harness, bad: str) -> None:
    _, key, room = await setup(api)
    answer = await api.call("PUT", f"{API}/availability", key=key, body=nights(room, 1),
                            headers={"x-idempotency-key": bad})
    assert (answer.status, answer.code) == (400, "IDEMPOTENCY_KEY_INVALID")


async def test_stored_refusals_replay_but_malformed_bodies_are_not_stored(api: Harness) -> None:
    _, key, room = await setup(api)
    unknown = {"updates": [{"roomTypeId": 424242, "dateFrom": "2026-11-23", "dateTo": "2026-11-23", "available": 1}]}
    first = await put(api, key, unknown, "refused-key-1")
    assert first.code == "UNKNOWN_ROOM_TYPE"
    again = await put(api, key, unknown, "refused-key-1")
    assert again.code == "UNKNOWN_ROOM_TYPE" and again.headers["X-Idempotent-Replay"] == "true"
    malformed = {"updates": [{"roomTypeId": room, "available": 1}]}
    assert (await put(api, key, malformed, "refused-key-2")).code == "VALIDATION"
    assert await api.ctx.db.fetchval("SELECT count(*) FROM idempotency_keys WHERE key = 'refused-key-2'") == 0



async def test_in_flight_while_the_first_is_still_running(api: Harness, db_dsn: str) -> None:
    """A twin of a write this process runs hears IDEMPOTENCY_IN_FLIGHT at once, though the
    key is claimed in the write's own statement (decision 0132); another body, reused."""
    prop, key, room = await setup(api)
    # Injected slowness: another connection holds the property's row lock the write needs.
    blocker = await trio_asyncio.aio_as_trio(asyncpg.connect)(db_dsn)
    hold = blocker.transaction()
    await trio_asyncio.aio_as_trio(hold.start)()
    await trio_asyncio.aio_as_trio(blocker.execute)("SELECT 1 FROM properties WHERE id = $1 FOR NO KEY UPDATE",
                                                    await api.record_of(prop))
    answers: dict[str, Answer] = {}

    async def first() -> None:
        answers["first"] = await put(api, key, nights(room, 2), "slow-request-1")

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(first)

            async def waiting_on_the_lock() -> bool:
                return bool(await api.ctx.db.fetchval(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"))

            await eventually(waiting_on_the_lock)
            second = await put(api, key, nights(room, 2), "slow-request-1")
            assert (second.status, second.code) == (409, "IDEMPOTENCY_IN_FLIGHT")
            other = await put(api, key, nights(room, 3), "slow-request-1")
            assert (other.status, other.code) == (409, "IDEMPOTENCY_KEY_REUSED")
            await trio_asyncio.aio_as_trio(hold.rollback)()
    finally:
        await trio_asyncio.aio_as_trio(blocker.close)()
    assert answers["first"].status == 202
    third = await put(api, key, nights(room, 2), "slow-request-1")
    assert third.headers["X-Idempotent-Replay"] == "true" and third.body == answers["first"].body


async def test_keys_expire_after_seven_days(api: Harness) -> None:
    _, key, room = await setup(api)
    await put(api, key, nights(room, 1), "weekly-key-01")
    api.advance(7 * 24 * 3600 - 1)
    assert (await put(api, key, nights(room, 1, 5), "weekly-key-01")).code == "IDEMPOTENCY_KEY_REUSED"
    api.advance(1)
    fresh = await put(api, key, nights(room, 1, 5), "weekly-key-01")
    assert fresh.status == 202 and "X-Idempotent-Replay" not in fresh.headers


async def test_janitor_purges_old_keys(api: Harness) -> None:
    _, key, room = await setup(api)
    await put(api, key, nights(room, 1), "purge-me-0001")
    api.advance(8 * 24 * 3600)
    await put(api, key, nights(room, 1, 4), "keep-me-00001")
    api.advance(3600)  # the janitor's round

    async def purged() -> bool:
        return not await api.ctx.db.fetchval("SELECT count(*) FROM idempotency_keys WHERE key = 'purge-me-0001'")

    await after_janitor_rounds(api, purged)
    assert await api.ctx.db.fetchval("SELECT count(*) FROM idempotency_keys WHERE key = 'keep-me-00001'") == 1


async def test_which_refusals_charge_cells(api: Harness) -> None:
    """Shape, limits, ranges and horizon come before the charge; ids, currency and policy after."""
    prop, key, room = await setup(api)
    plan = prop["ratePlans"][0]["id"]
    # refused before the charge: none of these uses the 10-cell budget
    for body in (
        {"updates": [{"roomTypeId": room, "dateFrom": "2026-11-23", "dateTo": "2026-12-02", "available": "1"}]},
        {"updates": [{"roomTypeId": room, "dateFrom": "2026-11-20", "dateTo": "2026-11-29", "available": 1}]},
        {"updates": [{"roomTypeId": room, "dateFrom": "2027-11-20", "dateTo": "2027-11-29", "available": 1}]},
        {"updates": [{"roomTypeId": room, "dateFrom": "2026-11-23", "dateTo": "2027-11-22", "available": 1}] * 14},
    ):
        assert (await put(api, key, body)).status == 400
    full = await put(api, key, nights(room, 10))
    assert full.status == 202
    limited = await put(api, key, nights(room, 1))
    assert (limited.status, limited.data["scope"]) == (429, "cells")
    api.advance(60)
    # refused after the charge: the unknown id used the budget
    unknown = {"updates": [{"roomTypeId": 424242, "dateFrom": "2026-11-23", "dateTo": "2026-12-02", "available": 1}]}
    assert (await put(api, key, unknown)).code == "UNKNOWN_ROOM_TYPE"
    assert (await put(api, key, nights(room, 1))).data["scope"] == "cells"
    api.advance(60)
    policy = {"updates": [{"ratePlanId": plan, "dateFrom": "2026-11-23", "dateTo": "2026-12-02", "rate": 1,
                           "currency": "EUR"}]}
    assert (await api.call("PUT", f"{API}/rates", key=key, body=policy)).code == "NOTHING_ACCEPTED"
    assert (await put(api, key, nights(room, 1))).data["scope"] == "cells"
    api.advance(60)
    # a replay is a write like any other: charged before anything is read
    await put(api, key, nights(room, 5, 2), "charge-both-1")
    assert (await put(api, key, nights(room, 5, 2), "charge-both-1")).headers["X-Idempotent-Replay"] == "true"
    assert (await put(api, key, nights(room, 1))).data["scope"] == "cells"
    # and a write refused by the cells budget leaves its key unused for the retry
    api.advance(60)
    await put(api, key, nights(room, 5, 6))
    assert (await put(api, key, nights(room, 6, 7), "retry-later-1")).data["scope"] == "cells"
    api.advance(60)
    retried = await put(api, key, nights(room, 6, 7), "retry-later-1")
    assert retried.status == 202 and "X-Idempotent-Replay" not in retried.headers


async def test_a_write_the_record_refuses_frees_its_key_for_the_retry(api: Harness) -> None:
    """The one release rule of the write routes: rolled back means the key is free again
    (the ARI route used to keep it when the record refused the transaction)."""
    _, key, room = await setup(api)
    db = api.ctx.db
    # A fault injected in the record itself: the batch row's insert fails, after the cells.
    await db.execute("""CREATE FUNCTION fail_batches() RETURNS trigger LANGUAGE plpgsql AS
                        $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$""")
    await db.execute("CREATE TRIGGER fail_batches BEFORE INSERT ON write_batches "
                     "FOR EACH ROW EXECUTE FUNCTION fail_batches()")
    failed = await put(api, key, nights(room, 2), "record-refuses-1")
    assert (failed.status, failed.code) == (500, "INTERNAL")
    assert await db.fetchval("SELECT count(*) FROM idempotency_keys WHERE key = 'record-refuses-1'") == 0
    await db.execute("DROP TRIGGER fail_batches ON write_batches")
    api.advance(60)  # the cells budget of this module is 10 a minute
    retried = await put(api, key, nights(room, 2), "record-refuses-1")
    assert retried.status == 202 and "X-Idempotent-Replay" not in retried.headers
    replayed = await put(api, key, nights(room, 2), "record-refuses-1")
    assert replayed.headers["X-Idempotent-Replay"] == "true" and replayed.body == retried.body


async def test_a_catalog_changed_after_the_writer_read_it_is_the_one_a_write_is_checked_against(api: Harness) -> None:
    """The property's writer keeps the catalog it checks writes against (decision 0132): a
    room type or rate plan added since, by the admin API, is known to the next write (for a
    test key too: its twin shares the live property's catalog)."""
    prop, key, room = await setup(api)
    plan = prop["ratePlans"][0]["id"]

    async def rates(rate_plan: int, rate: int) -> Answer:
        body = {"updates": [{"ratePlanId": rate_plan, "dateFrom": "2026-12-10", "dateTo": "2026-12-10", "rate": rate,
                             "currency": "EUR"}]}
        return await api.call("PUT", f"{API}/rates", key=key, body=body)

    assert (await rates(plan, 120)).status == 202  # the writer has read the catalog now
    new_room = await api.admin("POST", f"/properties/{prop['id']}/room-types", {"name": "Twin", "maxAdults": 2,
                                                                                "rooms": 3})
    new_plan = await api.admin("POST", f"/properties/{prop['id']}/rate-plans",
                               {"roomTypeId": new_room.data["id"], "name": "Twin RO", "mealPlan": "RO", "maxRate": 100})
    assert new_plan.status == 201
    api.advance(60)  # the cells budget of this module is 10 a minute
    above = await rates(new_plan.data["id"], 150)  # known, and held to its policy
    assert (above.status, above.code) == (422, "NOTHING_ACCEPTED"), above.body
    api.advance(60)
    assert (await rates(new_plan.data["id"], 90)).status == 202
    api.advance(60)
    assert (await put(api, key, nights(new_room.data["id"], 1))).status == 202
