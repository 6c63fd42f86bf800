"""Retention (issue 18) on the mock clock: what is past its retention is pruned by the
janitor in bounded batches while requests go on; what is within it, what is still needed
(a pending batch or delivery, an unsent e-mail, an unapplied OTA revision) and the booking
ledger stay; an old batch answers 404 and "recover since" reaches back as far as events
are kept."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
import trio

from connectapi.actors.janitors import RetentionJanitor
from connectapi.domain.retention import Retention
from connectapi.domain.webhook_events import PropertyFacts, ping
from connectapi.engine import NextRound
from connectapi.storage import notifications, retention, webhooks
from connectapi.storage.database import Database

from .conftest import START
from .harness import API, Answer, Harness, after_janitor_rounds, eventually, held_elsewhere

DAY = 24 * 3600
SCOPES = ["ari:read", "ari:write", "bookings:read", "bookings:write"]
LEDGER = ("bookings", "booking_rooms", "folio_lines", "inventory_events", "guests", "activity_log", "domain_events",
          "ota_bookings")
ROOMY = "requests=100000,property=100000,writes=100000,property-writes=100000,cells=1000000,global=1000000,ip=1000000"


@pytest.fixture
def env() -> dict[str, str]:
    # E-mails go to an SMTP server that is not there: each stays unsent until marked sent
    # here (as the outbox does on success).
    return {"CONNECTAPI_SMTP_URL": "smtp://127.0.0.1:9", "CONNECTAPI_BUDGETS": ROOMY}


async def put_availability(api: Harness, key: str, room: int, first: str, last: str, count: int) -> str:
    answer = await api.call("PUT", f"{API}/availability", key=key,
                            body={"updates": [{"roomTypeId": room, "dateFrom": first, "dateTo": last,
                                               "available": count}]})
    assert answer.status == 202, answer.body
    return str(answer.data["batchId"])


async def batch(api: Harness, key: str, batch_id: str) -> Answer:
    return await api.call("GET", f"{API}/batches/{batch_id}", key=key)


async def book(api: Harness, key: str, prop: dict[str, Any], reference: str) -> None:
    answer = await api.call("POST", f"{API}/bookings", key=key, body={
        "externalReference": reference, "checkIn": "2027-03-01", "checkOut": "2027-03-03", "currency": "EUR",
        "guest": {"name": "Ana Silva", "phone": "+351 912 345 678", "email": "ana@example.com"},
        "rooms": [{"roomTypeId": prop["roomTypes"][0]["id"], "ratePlanId": prop["ratePlans"][0]["id"], "adults": 2,
                   "nightlyRate": "120.50"}]})
    assert answer.status == 201, answer.body


async def ledger(db: Database) -> dict[str, int]:
    return {t: int(await db.fetchval(f"SELECT count(*) FROM {t}")) for t in LEDGER}


async def an_event(api: Harness, prop: dict[str, Any], endpoint_id: int, delivered: bool) -> str:
    """A ping to the endpoint, recorded as the sender records it: delivered at once, or
    still pending (the endpoint is paused)."""
    now = api.ctx.clock.now()
    event = ping(PropertyFacts(prop["id"], prop["name"], prop["currency"], prop["timezone"]), now, "test")
    await webhooks.record_event_now(api.ctx.db, prop["id"], event, [endpoint_id], now, api.ctx.clock.shared_time())
    if delivered:
        delivery = await api.ctx.db.fetchval("SELECT id FROM webhook_deliveries WHERE event_id = $1", event.id)
        await webhooks.delivered(api.ctx.db, delivery, endpoint_id, 200, 12, now)
    return event.id


async def emails_of(db: Database, booking_reference: str) -> list[int]:
    rows = await db.fetch("""SELECT n.id FROM notifications n JOIN bookings b ON b.id = n.booking_id
                             WHERE b.external_reference = $1 ORDER BY n.id""", booking_reference)
    return [r["id"] for r in rows]


async def present(db: Database, table: str, column: str, values: list[Any]) -> set[Any]:
    rows = await db.fetch(f"SELECT {column} FROM {table} WHERE {column} = ANY($1)", values)
    return {r[0] for r in rows}


async def test_what_is_past_its_retention_goes_and_what_is_needed_stays(api: Harness) -> None:
    prop, key = await api.keyed_property(SCOPES)
    room = prop["roomTypes"][0]["id"]
    db = api.ctx.db
    endpoint = await webhooks.create_endpoint(db, prop["id"], "https://hooks.example/pms", None, "whsec_x",
                                              api.ctx.clock.now())
    await webhooks.pause(db, endpoint.id, api.ctx.clock.now())  # nothing is sent: the test records outcomes
    allowlisted = await api.create_key(prop["id"], ["ari:read"], allowlist=["203.0.113.5"])

    # Day 0: old rows. Pushes are held in these tests, so a batch's cells stay dirty.
    old_done = await put_availability(api, key, room, "2027-02-10", "2027-02-11", 3)
    old_pending = await put_availability(api, key, room, "2027-02-20", "2027-02-21", 4)
    await put_availability(api, key, room, "2027-02-10", "2027-02-11", 5)  # old_done's cells are this one's now
    old_delivered = await an_event(api, prop, endpoint.id, delivered=True)
    old_pending_event = await an_event(api, prop, endpoint.id, delivered=False)
    await book(api, key, prop, "WEB-OLD-SENT")
    await book(api, key, prop, "WEB-OLD-UNSENT")
    old_sent = await emails_of(db, "WEB-OLD-SENT")
    for note in old_sent:
        await notifications.mark_sent(db, note, api.ctx.clock.now())
    old_unsent = await emails_of(db, "WEB-OLD-UNSENT")
    assert old_sent and old_unsent
    assert (await api.call("GET", f"{API}/property", key=allowlisted["key"], address="198.51.100.1")).status == 403

    # Day 20: rows that will still be within their retention on day 31.
    api.advance(20 * DAY)
    recent_done = await put_availability(api, key, room, "2027-02-10", "2027-02-11", 6)
    await put_availability(api, key, room, "2027-02-10", "2027-02-11", 7)
    recent_delivered = await an_event(api, prop, endpoint.id, delivered=True)
    await book(api, key, prop, "WEB-RECENT")
    recent_sent = await emails_of(db, "WEB-RECENT")
    for note in recent_sent:
        await notifications.mark_sent(db, note, api.ctx.clock.now())
    assert (await api.call("GET", f"{API}/property", key=allowlisted["key"], address="198.51.100.2")).status == 403
    kept_ledger = await ledger(db)
    assert kept_ledger["bookings"] == 3 and kept_ledger["inventory_events"] and kept_ledger["domain_events"]

    assert (await batch(api, key, old_done)).data["status"] == "completed"
    api.advance(11 * DAY)  # day 31: the old rows are past 30 days, the recent ones 11 days old

    async def pruned() -> bool:
        return not await present(db, "write_batches", "id", [uuid.UUID(old_done)])

    await after_janitor_rounds(api, pruned, "the old batch pruned")

    async def everything_old_pruned() -> bool:
        return (not await present(db, "webhook_events", "id", [old_delivered])
                and not await present(db, "notifications", "id", old_sent)
                and await db.fetchval("SELECT count(*) FROM allowlist_refusals") == 1)

    await after_janitor_rounds(api, everything_old_pruned, "every old row that is done with pruned")
    # An old batch answers as one that never was; a pending one, however old, is kept.
    gone = await batch(api, key, old_done)
    assert (gone.status, gone.code) == (404, "BATCH_NOT_FOUND")
    unknown = await batch(api, key, str(uuid.uuid4()))
    assert (unknown.status, unknown.code) == (404, "BATCH_NOT_FOUND")
    assert (await batch(api, key, old_pending)).data["status"] == "pending"
    assert (await batch(api, key, recent_done)).data["status"] == "completed"
    # A pending delivery and its event stay; a recent delivery and its event stay.
    assert await present(db, "webhook_events", "id", [old_pending_event, recent_delivered]) == {
        old_pending_event, recent_delivered}
    assert await db.fetchval("SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'") == 1
    assert await db.fetchval("SELECT count(*) FROM webhook_deliveries WHERE event_id = $1", old_delivered) == 0
    # Unsent and recent e-mails stay; so does the whole booking ledger.
    assert await present(db, "notifications", "id", old_unsent + recent_sent) == set(old_unsent + recent_sent)
    assert await ledger(db) == kept_ledger
    shown = await api.admin("GET", f"/properties/{prop['id']}/allowlist-refusals")
    assert [r["address"] for r in shown.data] == ["198.51.100.2"]

    # Recover reaches back as far as events are kept, and says how far: the old pending
    # event is still in the record, but older than that, so it is not queued again.
    recovered = await api.admin("POST", f"/webhooks/{endpoint.id}/recover", {"since": START.isoformat()})
    kept_since = api.ctx.clock.now() - timedelta(days=30)
    assert recovered.status == 202, recovered.body
    assert datetime.fromisoformat(recovered.data["keptSince"]) == kept_since
    assert recovered.data["events"] == 1  # the recent ping only
    queued_again = await db.fetch("SELECT event_id FROM webhook_deliveries WHERE status = 'pending' ORDER BY id")
    assert [r["event_id"] for r in queued_again] == [old_pending_event, recent_delivered]
    within = await api.admin("POST", f"/webhooks/{endpoint.id}/recover",
                             {"since": (api.ctx.clock.now() - timedelta(days=1)).isoformat()})
    assert (within.status, within.data["events"]) == (202, 0)


# The service's own janitor keeps everything for a century where a test runs its own.
CENTURY = {f"CONNECTAPI_RETAIN_{kind}_DAYS": "36500"
           for kind in ("BATCHES", "DELIVERIES", "EMAILS", "REFUSALS", "OTA_REVISIONS")}


class SmallBatches(RetentionJanitor):
    BATCH = 100
    MOST_BATCHES = 3


async def a_round(janitor: RetentionJanitor) -> NextRound:
    """One round of the janitor, bounded in real time: a round that waited for a row a
    request holds would fail the test, not hang it (the mock clock stands still)."""
    done: list[NextRound] = []

    async def run() -> None:
        done.append(await janitor.round())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        await eventually(lambda: done, "a round that waits for no one", seconds=20)
    return done[0]


@pytest.mark.parametrize("env", [{"CONNECTAPI_BUDGETS": ROOMY, **CENTURY}])
async def test_a_backlog_goes_in_bounded_rounds_while_writes_go_on(api: Harness, db_dsn: str) -> None:
    prop, key = await api.keyed_property(SCOPES)
    room = prop["roomTypes"][0]["id"]
    db = api.ctx.db
    old = [uuid.uuid4() for _ in range(1234)]
    await db.execute(
        """INSERT INTO write_batches (id, property_id, resource, created_at, requested_cells, accepted_cells,
                                      noop_cells)
           SELECT id, $2, 'availability', $3, 1, 0, 1 FROM unnest($1::uuid[]) AS id""",
        old, prop["id"], api.ctx.clock.now())
    api.advance(31 * DAY)
    janitor = SmallBatches(db, api.ctx.clock, Retention(), every=3600)
    written: list[str] = []
    rounds: list[tuple[int, bool]] = []
    stop_writing = trio.Event()

    async def write_on() -> None:
        night = 0
        while not stop_writing.is_set():
            day = 10 + night % 15
            written.append(await put_availability(api, key, room, f"2027-01-{day:02d}", f"2027-01-{day:02d}", 2))
            night += 1
            await trio.sleep(0)

    async def left() -> int:
        return int(await db.fetchval("SELECT count(*) FROM write_batches WHERE id = ANY($1)", old))

    async with held_elsewhere(db_dsn, ("SELECT 1 FROM write_batches WHERE id = $1 FOR UPDATE", (old[0],))) as held, \
            trio.open_nursery() as nursery:
        nursery.start_soon(write_on)
        await eventually(lambda: len(written) >= 3, "writes under way")
        while True:
            before = await left()
            done = await a_round(janitor)
            rounds.append((before - await left(), done.more))
            if not done.more:
                break
        await eventually(lambda: len(written) >= 10, "writes going on through the rounds")
        assert await left() == 1  # the row another transaction holds was skipped, not waited for
        await held.rollback()
        assert not (await a_round(janitor)).more
        stop_writing.set()
    # 100 rows a statement, 3 statements a round; a round that met its bound says there is more.
    assert rounds == [(300, True), (300, True), (300, True), (300, True), (33, False)]
    assert await left() == 0
    # The writes made meanwhile are young: untouched, each still answered.
    assert await db.fetchval("SELECT count(*) FROM write_batches WHERE id = ANY($1::uuid[])",
                             [uuid.UUID(w) for w in written]) == len(written)
    assert (await batch(api, key, written[-1])).status == 200



async def test_ota_revisions_go_once_applied_and_acknowledged(db: Database) -> None:
    now = START + timedelta(days=200)
    property_id = await db.fetchval("INSERT INTO properties (name, timezone, currency, channel_manager, pms) "
                                    "VALUES ('Casa Azul', 'Europe/Lisbon', 'EUR', true, true) RETURNING id")
    old, recent = now - timedelta(days=91), now - timedelta(days=89)
    cases = {  # id: (state, settled_at, acked_at)
        "applied-old": ("applied", old, old), "stale-old": ("stale", old, old),
        "applied-unacked": ("applied", old, None), "unmapped-old": ("unmapped", old, old),
        "refused-old": ("refused", old, old), "received-old": ("received", None, None),
        "applied-recent": ("applied", recent, recent),
    }
    for n, (revision, (state, settled, acked)) in enumerate(cases.items()):
        await db.execute(
            """INSERT INTO ota_revisions (id, system_id, property_id, cm_booking_id, revised_at, payload, state,
                                          received_at, settled_at, acked_at)
               VALUES ($1, $2, $3, 'cm-1', $4, $5, $6, $4, $7, $8)""",
            revision, f"sys-{n}", property_id, old, json.dumps({}), state, settled, acked)
    horizons = Retention().horizons(now)
    assert await retention.prune(db, "ota_revisions", horizons.ota_revisions) == 2
    kept = {r["id"] for r in await db.fetch("SELECT id FROM ota_revisions")}
    assert kept == {"applied-unacked", "unmapped-old", "refused-old", "received-old", "applied-recent"}


def test_every_retained_table_is_pruned_by_its_time_column() -> None:
    assert [(r.table, r.time_column) for r in retention.RETAINED] == [
        ("write_batches", "created_at"), ("webhook_deliveries", "delivered_at"), ("webhook_events", "occurred_at"),
        ("notifications", "sent_at"), ("allowlist_refusals", "at"), ("ota_revisions", "settled_at")]
    # a delivery goes before its event, which goes only once no delivery of it is left
    tables = [r.table for r in retention.RETAINED]
    assert tables.index("webhook_deliveries") < tables.index("webhook_events")


async def test_redeliver_of_an_event_pruned_meanwhile_is_not_found(api: Harness, db_dsn: str) -> None:
    """The janitor deletes an event while a redeliver of it is on its way: the redeliver
    waits for the delete and answers 404, never a foreign-key error (500)."""
    prop = await api.create_property()
    endpoint = (await api.admin("POST", f"/properties/{prop['id']}/webhooks",
                                {"url": "https://hooks.example.net/in"})).data
    await webhooks.pause(api.ctx.db, endpoint["id"], api.ctx.clock.now())
    event_id = endpoint["pingEventId"]
    pruning = held_elsewhere(db_dsn, ("DELETE FROM webhook_deliveries WHERE event_id = $1", (event_id,)),
                             ("DELETE FROM webhook_events WHERE id = $1", (event_id,)))
    answers: list[Answer] = []

    async def redeliver() -> None:
        answers.append(await api.admin("POST", f"/webhooks/{endpoint['id']}/redeliver", {"eventId": event_id}))

    async with pruning as pruner, trio.open_nursery() as nursery:
        nursery.start_soon(redeliver)

        async def waits_for_the_delete() -> bool:
            return bool(await api.ctx.db.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE "
                "'%INSERT INTO webhook_deliveries%'"))
        await eventually(waits_for_the_delete, "the redeliver waits for the pruning transaction")
        await pruner.commit()
    assert [(a.status, a.code) for a in answers] == [(404, "EVENT_NOT_FOUND")]
