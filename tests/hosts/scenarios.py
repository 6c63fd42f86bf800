"""The scenarios of the several-hosts tests, as functions that return what they measured:
tests/hosts/test_many_machines.py asserts on their figures, `python -m bench.hosts` reports
them. Each runs a write load through the balancer from the client host, keeps a ledger of
every answer, and does one thing to the hosts meanwhile."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import subprocess
import threading
import time
from collections import Counter
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx
import trio
import trio_asyncio

from connectapi.storage.database import Tx, open_database

from . import mixed_load
from .mixed_load import OtaSales, PressedLedger
from .topology import CALL_MS, CM_KEY, TOKEN, Topology

API = "/api/v1/connect-api/v1"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
PROPERTIES = 12
BOOKING_PROPERTIES = 2  # the first ones also take bookings from a booking engine; the others, the OTA's
NIGHTS = 10
FIRST = date.today() + timedelta(days=5)
# Every budget as the contract sets it: the load is paced under them (each integrator from
# an address of its own, as the `ip` budgets expect), and two clients press theirs to the
# edge, where an over-admission across hosts would show (mixed_load).
REQUESTS_BUDGET = 120  # the contract's `requests` budget per key and minute
BOOKINGS_BUDGET = 20  # and its `bookings` one


@dataclass
class Mapped:
    id: int
    key: str
    room: int
    plan: int
    cm_property: str
    cm_room: str
    cm_plan: str
    checker_key: str = ""  # the test's own, to read the record afterwards with a budget of its own


@dataclass
class Ledger:
    """Each write the load made: (property, night) -> [(value, status or None, when)]."""

    writes: dict[tuple[int, date], list[tuple[int, int | None, float]]] = field(default_factory=dict)
    errors: list[float] = field(default_factory=list)  # when an answer `failed` (or none came)
    statuses: dict[str, int] = field(default_factory=dict)
    failed_by: Counter[str] = field(default_factory=Counter)  # "status property N": whose failed

    def note(self, cell: tuple[int, date], value: int, status: int | None, by: str = "") -> None:
        """`by`: " balancer" when the balancer answered, not a service host."""
        at = time.monotonic()
        self.writes.setdefault(cell, []).append((value, status, at))
        self._count(f"{status}{by}", status, at, cell[0])

    def note_read(self, property_id: int, status: int | None, by: str = "") -> None:
        self._count(f"read {status}{by}", status, time.monotonic(), property_id)

    def _count(self, label: str, status: int | None, at: float, property_id: int) -> None:
        self.statuses[label] = self.statuses.get(label, 0) + 1
        if failed(status):
            self.errors.append(at)
            self.failed_by[f"{label} property {property_id}"] += 1

    def allowed(self, cell: tuple[int, date]) -> set[int]:
        """What the record may hold for the cell: the last value answered 202, or any value
        sent after it whose answer never came or was a 5xx (it may have been applied)."""
        tries = self.writes.get(cell, [])
        acked = [n for n, (_, status, _) in enumerate(tries) if status == 202]
        if not acked:
            return {v for v, status, _ in tries if status is None or status >= 500} | {-1}
        last = acked[-1]
        return {tries[last][0]} | {v for v, status, _ in tries[last + 1:] if status is None or status >= 500}


def failed(status: int | None) -> bool:
    """An error a client sees: no answer, or one it did not ask for. A 429 is a budget
    spent, answered as the contract says, not a failure of the service."""
    return status is None or (status >= 300 and status != 429)


def new_key(http: httpx.Client, property_id: int, label: str, scopes: list[str]) -> str:
    """A new key of the property's, through the admin API (`http` carries the operator's token)."""
    made = http.post(f"/api/v1/admin/properties/{property_id}/keys", json={"label": label, "scopes": scopes})
    assert made.status_code == 201, made.text
    return str(made.json()["data"]["key"])


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
            key = new_key(http, prop["id"], "load", ["ari:read", "ari:write", "bookings:read", "bookings:write"])
            hook = http.post(f"/api/v1/admin/properties/{prop['id']}/webhooks",
                             json={"url": f"{topo.hook_url}/hooks/{prop['id']}"})
            assert hook.status_code == 201, hook.text
            made.append(Mapped(prop["id"], key, room, prop["ratePlans"][0]["id"], cm_prop, cm_room, cm_plan,
                               new_key(http, prop["id"], "checker", ["ari:read", "bookings:read"])))
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


async def _answered(call: Any) -> tuple[int | None, float, str]:
    """The status of a call (None: no answer); how long to wait before the next try (a
    429's Retry-After, a moment after a failure, none after success); and who answered:
    " balancer" for the balancer's own page (no service host to send to), else ""."""
    try:
        got = await call
    except httpx.HTTPError:
        return None, 0.2, ""
    by = " balancer" if "<html>" in got.text else ""
    if got.status_code == 503 and not by:  # ours says when to come back
        assert got.headers.get("retry-after"), got.text
    if got.status_code == 429:
        return 429, float(got.headers["retry-after"]), by
    return int(got.status_code), 0.0 if got.status_code < 300 else 0.2, by


# Each integrator reads its property this often between its writes: with its writes and
# (on the booking properties) its bookings, under the key's `requests` budget.
READ_EVERY = 0.75


def from_address(topo: Topology, n: int, **kwargs: Any) -> httpx.AsyncClient:
    """A client of the balancer speaking from the client host's `n`th address."""
    return httpx.AsyncClient(base_url=topo.url, timeout=10,
                             transport=httpx.AsyncHTTPTransport(local_address=topo.client_address(n)), **kwargs)


async def write_load(topo: Topology, props: list[Mapped], ledger: Ledger, seconds: float,
                     value_base: int) -> None:
    """A steady load through the balancer, one integrator per property, each from an
    address of its own: its availability written every WRITE_EVERY seconds (one night at
    a time, each cell's writes one after the other: the ledger knows what the record must
    hold), and read every READ_EVERY seconds in between (errors of reads count too)."""
    async with trio.open_nursery() as nursery:
        for n, prop in enumerate(props):
            nursery.start_soon(_integrator, topo, n, prop, ledger, seconds, value_base,
                               n * WRITE_EVERY / len(props))


async def _integrator(topo: Topology, n: int, prop: Mapped, ledger: Ledger, seconds: float, value_base: int,
                      offset: float) -> None:
    deadline = trio.current_time() + seconds
    due = trio.current_time() + offset
    written = 0
    auth = {"Authorization": f"Bearer {prop.key}"}
    async with from_address(topo, n) as http:
        while trio.current_time() < deadline:
            if due > trio.current_time():  # nothing to write yet: a read
                status, wait, by = await _answered(http.get(f"{API}/availability", headers=auth))
                ledger.note_read(prop.id, status, by)
                await trio.sleep(max(READ_EVERY, wait))
                continue
            night = FIRST + timedelta(days=written % NIGHTS)
            value = value_base + written % 7
            body = {"updates": [{"roomTypeId": prop.room, "dateFrom": night.isoformat(), "dateTo": night.isoformat(),
                                 "available": value}]}
            status, wait, by = await _answered(http.put(f"{API}/availability", json=body, headers=auth))
            ledger.note((prop.id, night), value, status, by)
            if status == 202:
                written += 1
                due += WRITE_EVERY
            else:
                await trio.sleep(wait)  # tried again: the same cell, its next value


def record_of(topo: Topology, props: list[Mapped]) -> dict[tuple[int, date], int]:
    held = {}
    with topo.inside("client"), httpx.Client(base_url=topo.url, timeout=30) as http:
        for prop in props:
            last = FIRST + timedelta(days=NIGHTS - 1)
            got = http.get(f"{API}/availability?from={FIRST}&to={last}",
                           headers={"Authorization": f"Bearer {prop.checker_key}"})
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
    rows = topo.psql(topo.primary, "SELECT key, holder FROM leases WHERE kind = 'push' AND holder IS NOT NULL",
                     db="connectapi").split()
    return {int(p): topo.holder_host(h) for p, h in (row.split("|", 1) for row in rows)}


def pushed_at(topo: Topology) -> dict[int, float]:
    """When each property was last pushed, by the database's clock (epoch seconds)."""
    rows = topo.psql(topo.primary, "SELECT id, extract(epoch FROM cm_last_push_at) FROM properties "
                     "WHERE cm_last_push_at IS NOT NULL", db="connectapi").split()
    return {int(p): float(at) for p, at in (row.split("|") for row in rows)}


def database_now(topo: Topology) -> float:
    return float(topo.psql(topo.primary, "SELECT extract(epoch FROM clock_timestamp())"))




@dataclass
class Pressing:
    """A scenario's clients that press their budgets, each with a key of its own, new for
    the scenario (a budget window still full from the one before would hold it back): a
    booking engine per booking property, and a greedy reader of one property."""

    booking_keys: dict[int, str]
    reader: tuple[int, str]


_scenarios = itertools.count()


def pressing_keys(topo: Topology, props: list[Mapped]) -> Pressing:
    """New keys for the pressing clients. The greedy reader takes another property each
    scenario: the one before's reads still count in that property's budget for a minute."""
    read = props[-1 - next(_scenarios) % (len(props) - BOOKING_PROPERTIES)]
    with topo.inside("client"), httpx.Client(base_url=topo.url, headers=ADMIN, timeout=30) as http:
        return Pressing({p.id: new_key(http, p.id, "booking engine", ["bookings:read", "bookings:write"])
                         for p in props[:BOOKING_PROPERTIES]}, (read.id, new_key(http, read.id, "greedy reader",
                                                                                   ["ari:read"])))


@dataclass
class Measured:
    """What a scenario saw: the ledgers of the load, and its figures (seconds from the fault;
    `at_wall`, the fault by the wall clock)."""

    ledger: Ledger
    pressing: Pressing
    pressed: PressedLedger
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


# While the cut is arranged each call to the channel manager takes this long, so that one seen
# young (under YOUNG_CALL) is still under way once the cut is made (two `ip` commands and an
# `ss`), however loaded the machine: at the usual CALL_MS a call often ended first.
ARRANGING_CALL_MS = 3000
YOUNG_CALL = 1.0


async def _cut_mid_call(topo: Topology, props: list[Mapped], host: str, figures: dict[str, Any]) -> set[int]:
    """Cut `host` from the databases while it holds push leases and one of its calls to
    the channel manager is under way (`call_in_flight_at_cut` says whether it still was
    once the cut was made); answers the properties it held."""
    cm_of = {p.id: p.cm_property for p in props}
    await trio.to_thread.run_sync(topo.sandbox_call_time, ARRANGING_CALL_MS)
    try:
        await trio.sleep(2 * CALL_MS / 1000)  # the calls begun at the usual length have ended
        deadline = trio.current_time() + 30
        while True:
            held = await _held_by(topo, host)
            pushing = await trio.to_thread.run_sync(topo.sandbox_pushing)
            young = {p for p in held if pushing.get(cm_of.get(p, ""), YOUNG_CALL) < YOUNG_CALL}
            if young or trio.current_time() > deadline:
                figures["at"] = time.monotonic()
                await trio.to_thread.run_sync(topo.cut_from_databases, host)
                still = await trio.to_thread.run_sync(topo.sandbox_pushing)
                figures["call_in_flight_at_cut"] = any(cm_of[p] in still for p in young)
                return held
            await trio.sleep(0.02)
    finally:
        await trio.to_thread.run_sync(topo.sandbox_call_time, CALL_MS)


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
    """`fault(figures)` while the mixed load runs: the ARI integrators, a booking engine on
    each of the first properties and a greedy reader on the last (each from an address of
    its own), OTA sales on the others."""
    ledger, pressed, pressing = Ledger(), PressedLedger(), pressing_keys(topo, props)
    figures: dict[str, Any] = {}

    async def scenario() -> None:
        async with AsyncExitStack() as clients, trio.open_nursery() as nursery:  # clients outlive the tasks
            nursery.start_soon(write_load, topo, props, ledger, seconds, value_base)
            for n, prop in enumerate(props[:BOOKING_PROPERTIES]):
                http = await clients.enter_async_context(from_address(topo, len(props) + n))
                nursery.start_soon(mixed_load.booking_load, http, prop, pressing.booking_keys[prop.id], pressed,
                                   seconds, FIRST)
            http = await clients.enter_async_context(from_address(topo, len(props) + BOOKING_PROPERTIES))
            nursery.start_soon(mixed_load.greedy_reads, http, pressing.reader[1], pressed, seconds)
            nursery.start_soon(mixed_load.ota_load, topo, props[BOOKING_PROPERTIES:], sales, seconds, FIRST)
            await fault(figures)
            figures["at_wall"] = time.time() - (time.monotonic() - figures["at"])

    with topo.inside("client"):
        trio.run(scenario)
    figures["errors_after"] = [round(at - figures["at"], 2) for at in ledger.errors]
    figures["failed_by"] = dict(ledger.failed_by)
    figures["slow_at_balancer"] = topo.slow_requests(figures["at_wall"] - 5, 5000)
    figures["statuses"] = dict(ledger.statuses)
    for what, key in (("bookings", pressing.booking_keys[props[0].id]), ("greedy reads", pressing.reader[1])):
        figures[what] = dict(Counter(str(t.status) for t in pressed.tries if t.key == key))
    return Measured(ledger, pressing, pressed, sales, figures)


def partition(topo: Topology, props: list[Mapped], host: str, cut_seconds: float, sales: OtaSales) -> Measured:
    """`host` loses its network to both database hosts for `cut_seconds` while it pushes
    (each channel-manager call takes 300 ms: one is in flight), keeping its balancer."""

    async def fault(figures: dict[str, Any]) -> None:
        held = await _cut_mid_call(topo, props, host, figures)
        figures["held"] = len(held)
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


def in_record(topo: Topology, sql: str) -> str:
    """What the primary's service database answers to `sql` (psql's unaligned rows)."""
    return topo.psql(topo.primary, sql, "connectapi").strip()


def cut_mid_statement(topo: Topology, prop: Mapped, host: str, other: str) -> dict[str, Any]:
    """A transaction of the service's own pool on `host` takes the property's lock and is
    left where asyncpg leaves the server between preparing a statement (Parse, Describe,
    Flush: no Sync) and binding it, the server waiting "active" for the client; then `host`
    is cut from the databases. Answers how the session looked before the cut, how a write
    of the property on `other` went (its status, the seconds it took), and whether the
    session was gone from the server by then."""
    ready, release = threading.Event(), threading.Event()
    backend: list[int] = []
    started_at = ""

    async def hold(tx: Tx) -> None:
        backend.append(await tx.fetchval("SELECT pg_backend_pid()"))
        await tx.execute("SELECT 1 FROM properties WHERE id = $1 FOR NO KEY UPDATE", prop.id)
        await tx.prepare("SELECT $1::bigint + 1")  # new to the connection: no Sync after it
        ready.set()
        while not release.is_set():
            await asyncio.sleep(0.05)

    async def holding() -> None:
        async with trio_asyncio.open_loop(), open_database(topo.database_url, min_size=0, max_size=1) as db:
            with contextlib.suppress(Exception):  # cut under it
                await db.transaction(hold)

    def run() -> None:
        with topo.inside(host):
            trio.run(holding)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    night = (FIRST - timedelta(days=1)).isoformat()  # a night no other scenario writes
    body = {"updates": [{"roomTypeId": prop.room, "dateFrom": night, "dateTo": night, "available": 3}]}
    try:
        assert ready.wait(30), "the holding transaction never took the property's lock"
        started_at, _, seen = in_record(topo, "SELECT backend_start, state || ' ' || wait_event FROM pg_stat_activity "
                                        f"WHERE pid = {backend[0]} AND client_addr = '{topo.hosts[host].address}'"
                                        ).partition("|")
        session = f"FROM pg_stat_activity WHERE pid = {backend[0]} AND backend_start = '{started_at}'"
        topo.cut_from_databases(host)
        started = time.monotonic()
        with topo.inside("client"), httpx.Client(base_url=topo.url_of(other), timeout=30) as http:
            got = http.put(f"{API}/availability", json=body, headers={"Authorization": f"Bearer {prop.key}"})
        waited = time.monotonic() - started
        gone = in_record(topo, f"SELECT count(*) {session}") == "0"
        left = _sessions_left(topo, host, started + 10)
    finally:
        release.set()
        topo.heal(host)
        if backend and started_at:  # should the server still keep it, its lock would stop every test after
            with contextlib.suppress(subprocess.CalledProcessError):
                in_record(topo, f"SELECT pg_terminate_backend(pid) {session}")
        thread.join(30)
    assert not thread.is_alive(), "the holding transaction's thread never ended"
    return {"before_cut": seen, "status": got.status_code, "waited": round(waited, 1), "session_gone": gone,
            "sessions_left": left}


def _sessions_left(topo: Topology, host: str, until: float) -> str:
    """The server's sessions of `host` (cut off) still there at `until` (monotonic), each
    as its state, wait event and last statement; "" once none is left."""
    while True:
        left = in_record(topo, "SELECT string_agg(state || ' ' || coalesce(wait_event, '') || ' ' || left(query, 40), "
                         f"'; ') FROM pg_stat_activity WHERE client_addr = '{topo.hosts[host].address}'")
        if not left or time.monotonic() > until:
            return left
        time.sleep(0.5)
