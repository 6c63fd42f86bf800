"""The scenarios of the several-hosts tests, as functions that return what they measured:
tests/hosts/test_many_machines.py asserts on their figures, `python -m bench.hosts` reports
them. Each runs a write load through the balancer from the client host, keeps a ledger of
every answer, and does one thing to the hosts meanwhile."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx
import trio

from . import mixed_load
from .mixed_load import BookingLedger, OtaSales
from .topology import CM_KEY, TOKEN, Topology

API = "/api/v1/connect-api/v1"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
PROPERTIES = 12
BOOKING_PROPERTIES = 2  # the first ones also take bookings from a booking engine; the others, the OTA's
NIGHTS = 10
FIRST = date.today() + timedelta(days=5)
LIFTED = ",".join(f"{name}=1000000" for name in ("ip", "global", "requests", "property", "writes",
                                                  "property-writes")) + ",cells=100000000"


@dataclass
class Mapped:
    id: int
    key: str
    room: int
    plan: int
    cm_property: str
    cm_room: str
    cm_plan: str


@dataclass
class Ledger:
    """Each write the load made: (property, night) -> [(value, status or None, when)]."""

    writes: dict[tuple[int, date], list[tuple[int, int | None, float]]] = field(default_factory=dict)
    errors: list[float] = field(default_factory=list)  # when an answer was not 2xx (or none came)
    statuses: dict[str, int] = field(default_factory=dict)

    def note(self, cell: tuple[int, date], value: int, status: int | None) -> None:
        at = time.monotonic()
        self.writes.setdefault(cell, []).append((value, status, at))
        self.statuses[str(status)] = self.statuses.get(str(status), 0) + 1
        if status is None or status >= 300:
            self.errors.append(at)

    def note_read(self, status: int | None) -> None:
        self.statuses[f"read {status}"] = self.statuses.get(f"read {status}", 0) + 1
        if status is None or status >= 300:
            self.errors.append(time.monotonic())

    def allowed(self, cell: tuple[int, date]) -> set[int]:
        """What the record may hold for the cell: the last value answered 202, or any value
        sent after it whose answer never came or was a 5xx (it may have been applied)."""
        tries = self.writes.get(cell, [])
        acked = [n for n, (_, status, _) in enumerate(tries) if status == 202]
        if not acked:
            return {v for v, status, _ in tries if status is None or status >= 500} | {-1}
        last = acked[-1]
        return {tries[last][0]} | {v for v, status, _ in tries[last + 1:] if status is None or status >= 500}



def make_properties(topo: Topology, count: int = PROPERTIES) -> list[Mapped]:
    made = []
    example = json.loads((Path(__file__).parents[2] / "docs" / "examples" / "property.json").read_text())
    with topo.inside("client"), httpx.Client(base_url=topo.url, headers=ADMIN, timeout=30) as http, \
            httpx.Client(base_url=topo.cm_url, headers={"user-api-key": CM_KEY}, timeout=30) as cm:
        for n in range(count):
            prop = http.post("/api/v1/admin/properties", json={**example, "name": f"Casa {n}"}).json()["data"]
            room = prop["roomTypes"][0]["id"]
            cm_prop = cm.post("/api/v1/properties", json={"property": {"title": f"Casa {n}", "currency": "EUR"}}
                              ).json()["data"]["id"]
            cm_room = cm.post("/api/v1/room_types", json={"room_type": {
                "property_id": cm_prop, "title": "Double", "count_of_rooms": 8}}).json()["data"]["id"]
            cm_plan = cm.post("/api/v1/rate_plans", json={"rate_plan": {
                "property_id": cm_prop, "room_type_id": cm_room, "title": "Flexible"}}).json()["data"]["id"]
            mapped = http.put(f"/api/v1/admin/properties/{prop['id']}/channel-mapping", json={
                "cmPropertyId": cm_prop, "roomTypes": {str(room): cm_room},
                "ratePlans": {str(prop["ratePlans"][0]["id"]): cm_plan}})
            assert mapped.status_code == 200, mapped.text
            key = http.post(f"/api/v1/admin/properties/{prop['id']}/keys", json={
                "label": "load", "scopes": ["ari:read", "ari:write", "bookings:read", "bookings:write"]}
                ).json()["data"]["key"]
            hook = http.post(f"/api/v1/admin/properties/{prop['id']}/webhooks",
                             json={"url": f"{topo.hook_url}/hooks/{prop['id']}"})
            assert hook.status_code == 201, hook.text
            made.append(Mapped(prop["id"], key, room, prop["ratePlans"][0]["id"], cm_prop, cm_room, cm_plan))
        for prop in made[:BOOKING_PROPERTIES]:  # rooms to sell on the booking engine's nights
            since = FIRST + timedelta(days=mixed_load.BOOKING_NIGHTS_FROM)
            until = since + timedelta(days=mixed_load.BOOKING_NIGHTS - 1)
            opened = http.put(f"{API}/availability", headers={"Authorization": f"Bearer {prop.key}"}, json={
                "updates": [{"roomTypeId": prop.room, "dateFrom": since.isoformat(), "dateTo": until.isoformat(),
                             "available": 8}]})
            assert opened.status_code == 202, opened.text
    return made


# Each property is written at most this often: under the channel manager's ten calls a
# minute, so that a property's push waits for its lease, never for that budget.
WRITE_EVERY = 7.0


async def _answered(ledger: Ledger, call: Any) -> int | None:
    try:
        got = await call
    except httpx.HTTPError:
        return None
    if got.status_code == 503:  # ours says when to come back; the balancer's own page does not
        assert got.headers.get("retry-after") or "<html>" in got.text, got.text
    return int(got.status_code)


async def write_load(topo: Topology, props: list[Mapped], ledger: Ledger, seconds: float,
                     value_base: int) -> None:
    """A steady load through the balancer: each property's availability written every
    WRITE_EVERY seconds (one night at a time, each cell's writes one after the other: the
    ledger knows what the record must hold), and reads of it in between, as fast as
    answers come (their errors are counted too)."""
    deadline = trio.current_time() + seconds
    due = {p.id: trio.current_time() + n * WRITE_EVERY / len(props) for n, p in enumerate(props)}
    written = {p.id: 0 for p in props}
    async with httpx.AsyncClient(base_url=topo.url, timeout=10) as http:
        while trio.current_time() < deadline:
            prop = min(props, key=lambda p: due[p.id])
            auth = {"Authorization": f"Bearer {prop.key}"}
            if due[prop.id] > trio.current_time():  # nothing to write yet: a read
                status = await _answered(ledger, http.get(f"{API}/availability", headers=auth))
                ledger.note_read(status)
                if status != 200:
                    await trio.sleep(0.2)
                continue
            n = written[prop.id]
            night = FIRST + timedelta(days=n % NIGHTS)
            value = value_base + n % 7
            body = {"updates": [{"roomTypeId": prop.room, "dateFrom": night.isoformat(), "dateTo": night.isoformat(),
                                 "available": value}]}
            status = await _answered(ledger, http.put(f"{API}/availability", json=body, headers=auth))
            ledger.note((prop.id, night), value, status)
            if status == 202:
                written[prop.id] += 1
                due[prop.id] += WRITE_EVERY
            else:
                await trio.sleep(0.2)  # tried again: the same cell, its next value


def record_of(topo: Topology, props: list[Mapped]) -> dict[tuple[int, date], int]:
    held = {}
    with topo.inside("client"), httpx.Client(base_url=topo.url, timeout=30) as http:
        for prop in props:
            last = FIRST + timedelta(days=NIGHTS - 1)
            got = http.get(f"{API}/availability?from={FIRST}&to={last}", headers={"Authorization": f"Bearer {prop.key}"})
            assert got.status_code == 200, got.text
            for night in got.json()["data"]["roomTypes"][0]["nights"]:
                held[(prop.id, date.fromisoformat(night["date"]))] = night["available"]
    return held


def check_ledger(ledger: Ledger, record: dict[tuple[int, date], int]) -> int:
    checked = 0
    for cell in ledger.writes:
        allowed = ledger.allowed(cell)
        if -1 in allowed:
            continue  # never acknowledged: anything it held before, or a value sent
        assert record[cell] in allowed, (cell, record[cell], allowed, ledger.writes[cell][-5:])
        checked += 1
    return checked


def written_batches(topo: Topology, host: str) -> int:
    return int(topo.psql(host, "SELECT count(*) FROM write_batches", db="connectapi").strip())


def leases_by_host(topo: Topology) -> dict[int, str | None]:
    rows = topo.psql(topo.primary, "SELECT property_id, holder FROM push_leases", db="connectapi").split()
    return {int(p): topo.holder_host(h) for p, h in (row.split("|", 1) for row in rows)}


def pushed_at(topo: Topology) -> dict[int, float]:
    """When each property was last pushed, by the database's clock (epoch seconds)."""
    rows = topo.psql(topo.primary, "SELECT id, extract(epoch FROM cm_last_push_at) FROM properties "
                     "WHERE cm_last_push_at IS NOT NULL", db="connectapi").split()
    return {int(p): float(at) for p, at in (row.split("|") for row in rows)}


def database_now(topo: Topology) -> float:
    return float(topo.psql(topo.primary, "SELECT extract(epoch FROM clock_timestamp())"))




@dataclass
class Measured:
    """What a scenario saw: the ledgers of the load, and its figures (seconds from the fault;
    `at_wall`, the fault by the wall clock)."""

    ledger: Ledger
    bookings: BookingLedger
    sales: OtaSales
    figures: dict[str, Any]

    def error_span(self) -> float:
        """From the first error the clients saw to the last."""
        errors = self.figures["errors_after"]
        return max(errors) - min(errors) if errors else 0.0

    def seconds_with_errors(self) -> int:
        """How many whole seconds (from the fault) saw at least one error."""
        return len({int(at) for at in self.figures["errors_after"]})


async def _pushed_again(topo: Topology, held: set[int], since_db: float, started: float, within: float) -> float:
    """Seconds from `started` until every property of `held` was pushed after `since_db`
    (the database's clock)."""
    deadline = trio.current_time() + within
    while True:
        pushed = await trio.to_thread.run_sync(pushed_at, topo)
        if all(pushed.get(p, 0) > since_db for p in held):
            return time.monotonic() - started
        if trio.current_time() > deadline:
            state = await trio.to_thread.run_sync(topo.psql, topo.primary, "SELECT id, cm_last_push_at, "
                                                  "cm_last_outcome, cm_last_error, cm_next_attempt_at, cm_failures "
                                                  "FROM properties ORDER BY id", "connectapi")
            leases = await trio.to_thread.run_sync(leases_by_host, topo)
            raise AssertionError(f"properties {sorted(held)} not pushed again within {within:.0f} s: leases "
                                 f"{leases}\n{state}")
        await trio.sleep(0.5)


async def _held_by(topo: Topology, host: str) -> set[int]:
    deadline = trio.current_time() + 15
    while True:
        held = {p for p, h in (await trio.to_thread.run_sync(leases_by_host, topo)).items() if h == host}
        if held:
            return held
        assert trio.current_time() < deadline, f"{host} never held a push lease"
        await trio.sleep(0.2)


def _measure(topo: Topology, props: list[Mapped], seconds: float, value_base: int, fault: Any,
             sales: OtaSales) -> Measured:
    """`fault(figures)` while the mixed load runs: ARI writes and reads, bookings on the
    first properties, OTA sales on the others."""
    ledger, bookings = Ledger(), BookingLedger()
    figures: dict[str, Any] = {}

    async def scenario() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(write_load, topo, props, ledger, seconds, value_base)
            for prop in props[:BOOKING_PROPERTIES]:
                nursery.start_soon(mixed_load.booking_load, topo, prop, bookings, seconds, FIRST)
            nursery.start_soon(mixed_load.ota_load, topo, props[BOOKING_PROPERTIES:], sales, seconds, FIRST)
            await fault(figures)
            figures["at_wall"] = time.time() - (time.monotonic() - figures["at"])

    with topo.inside("client"):
        trio.run(scenario)
    figures["errors_after"] = [round(at - figures["at"], 2) for at in ledger.errors]
    figures["statuses"] = dict(ledger.statuses)
    figures["bookings"] = dict(Counter(str(t.status) for t in bookings.tries))
    return Measured(ledger, bookings, sales, figures)


def partition(topo: Topology, props: list[Mapped], host: str, cut_seconds: float, sales: OtaSales) -> Measured:
    """`host` loses its network to both database hosts for `cut_seconds` while it pushes
    (each channel-manager call takes 300 ms: one is in flight), keeping its balancer."""

    async def fault(figures: dict[str, Any]) -> None:
        held = await _held_by(topo, host)
        figures["held"] = len(held)
        figures["at"] = time.monotonic()
        await trio.to_thread.run_sync(topo.cut_from_databases, host)
        since = await trio.to_thread.run_sync(database_now, topo)  # what the cut host cannot record any more
        figures["pushed_again_after"] = round(await _pushed_again(topo, held, since, figures["at"], 40), 1)
        await trio.sleep(max(0.0, figures["at"] + cut_seconds - time.monotonic()))
        await trio.to_thread.run_sync(topo.heal, host)

    return _measure(topo, props, 20.0 + cut_seconds, 300, fault, sales)


def host_loss(topo: Topology, props: list[Mapped], host: str, sales: OtaSales) -> Measured:
    """`host` powered off: every process of it killed at once."""

    async def fault(figures: dict[str, Any]) -> None:
        held = await _held_by(topo, host)
        figures["held"] = len(held)
        figures["at"] = time.monotonic()
        await trio.to_thread.run_sync(topo.kill_host, host)
        since = await trio.to_thread.run_sync(database_now, topo)  # pushes after it are another host's
        figures["pushed_again_after"] = round(await _pushed_again(topo, held, since, figures["at"], 40), 1)

    return _measure(topo, props, 45.0, 500, fault, sales)


def failover(topo: Topology, props: list[Mapped], sales: OtaSales) -> Measured:
    """The primary killed (SIGKILL), the replica promoted two seconds later."""

    async def fault(figures: dict[str, Any]) -> None:
        await trio.sleep(5)
        figures["at"] = time.monotonic()
        await trio.to_thread.run_sync(topo.kill_primary)
        await trio.sleep(2)
        await trio.to_thread.run_sync(topo.promote)
        figures["promoted_after"] = round(time.monotonic() - figures["at"], 1)

    measured = _measure(topo, props, 45.0, 100, fault, sales)
    at = measured.figures["at"] + measured.figures["promoted_after"]
    acked = [when for tries in measured.ledger.writes.values() for _, status, when in tries
             if status == 202 and when > at]
    measured.figures["accepted_again_after_promotion"] = round(min(acked) - at, 1) if acked else None
    return measured
