"""Several hosts for real (issue 31): service hosts behind HAProxy, a PostgreSQL primary with
a synchronous replica, the channel manager and a webhook receiver on hosts of their own,
each a network namespace (tests/hosts/topology.py). One topology for the module; its
scenarios run in order, each leaving it serving. svc3's wall clock runs ten minutes ahead
through all of them (faketime): leases and claims are judged by the database's clock, so
nothing may change for it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import httpx
import pytest
import trio

from .topology import CM_KEY, TOKEN, Topology, missing

# Without root there are no namespaces to make: skip. As root (CI), a missing tool fails.
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the hosts are network namespaces: root is needed")

API = "/api/v1/connect-api/v1"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
PROPERTIES = 6
NIGHTS = 10
FIRST = date.today() + timedelta(days=5)
LIFTED = ",".join(f"{name}=1000000" for name in ("ip", "global", "requests", "property", "writes",
                                                  "property-writes")) + ",cells=100000000"


@dataclass
class Mapped:
    id: int
    key: str
    room: int
    cm_property: str
    cm_room: str


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

    def allowed(self, cell: tuple[int, date]) -> set[int]:
        """What the record may hold for the cell: the last value answered 202, or any value
        sent after it whose answer never came or was a 5xx (it may have been applied)."""
        tries = self.writes.get(cell, [])
        acked = [n for n, (_, status, _) in enumerate(tries) if status == 202]
        if not acked:
            return {v for v, status, _ in tries if status is None or status >= 500} | {-1}
        last = acked[-1]
        return {tries[last][0]} | {v for v, status, _ in tries[last + 1:] if status is None or status >= 500}

    def error_seconds(self) -> float:
        """How long clients saw errors: from the first error to the last one."""
        return self.errors[-1] - self.errors[0] if self.errors else 0.0


@pytest.fixture(scope="module")
def topo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topology]:
    if (why := missing()) is not None:
        pytest.fail(why)
    work = tmp_path_factory.mktemp("hosts")
    with Topology.built(work, service_hosts=3, skewed="svc3", extra_env={"CONNECTAPI_BUDGETS": LIFTED}) as built:
        yield built


@pytest.fixture(scope="module")
def props(topo: Topology) -> list[Mapped]:
    made = []
    example = json.loads((Path(__file__).parents[2] / "docs" / "examples" / "property.json").read_text())
    with topo.inside("client"), httpx.Client(base_url=topo.url, headers=ADMIN, timeout=30) as http, \
            httpx.Client(base_url=topo.cm_url, headers={"user-api-key": CM_KEY}, timeout=30) as cm:
        for n in range(PROPERTIES):
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
                "label": "load", "scopes": ["ari:read", "ari:write"]}).json()["data"]["key"]
            made.append(Mapped(prop["id"], key, room, cm_prop, cm_room))
    return made


async def write_load(topo: Topology, props: list[Mapped], ledger: Ledger, seconds: float,
                     value_base: int) -> None:
    """Availability writes through the balancer, one property after the other, one night
    each, as fast as answers come (each cell's writes one at a time: the ledger knows what
    the record must hold)."""
    deadline = trio.current_time() + seconds
    n = 0
    async with httpx.AsyncClient(base_url=topo.url, timeout=10) as http:
        while trio.current_time() < deadline:
            prop = props[n % len(props)]
            night = FIRST + timedelta(days=(n // len(props)) % NIGHTS)
            value = value_base + n % 7
            body = {"updates": [{"roomTypeId": prop.room, "dateFrom": night.isoformat(), "dateTo": night.isoformat(),
                                 "available": value}]}
            try:
                got = await http.put(f"{API}/availability", json=body, headers={"Authorization": f"Bearer {prop.key}"})
                status: int | None = got.status_code
                if status == 503:
                    assert got.headers.get("retry-after") or got.headers.get("server", "").startswith("haproxy") or \
                        "<html>" in got.text, got.text
            except httpx.HTTPError:
                status = None
            ledger.note((prop.id, night), value, status)
            n += 1
            if status != 202:
                await trio.sleep(0.2)


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


def test_failover_to_the_replica_loses_no_acknowledged_write(topo: Topology, props: list[Mapped]) -> None:
    ledger = Ledger()
    times: dict[str, float] = {}

    async def scenario() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(write_load, topo, props, ledger, 45.0, 100)
            await trio.sleep(5)
            times["killed"] = time.monotonic()
            await trio.to_thread.run_sync(topo.kill_primary)
            await trio.sleep(2)
            await trio.to_thread.run_sync(topo.promote)
            times["promoted"] = time.monotonic()

    with topo.inside("client"):
        trio.run(scenario)
    acked_after = [at for tries in ledger.writes.values() for _, status, at in tries
                   if status == 202 and at > times["promoted"]]
    assert acked_after, ledger.statuses
    back_in = min(acked_after) - times["promoted"]
    print(f"failover: writes accepted again {back_in:.1f} s after the promotion; errors seen for "
          f"{ledger.error_seconds():.1f} s; answers {ledger.statuses}")
    assert back_in < 30
    checked = check_ledger(ledger, record_of(topo, props))
    assert checked >= PROPERTIES * NIGHTS // 2

    # The old primary comes back as it was: a stale node, still read-write. Nothing may be
    # written to it.
    before = written_batches(topo, "db2")
    topo.restart_stale("db1")
    stale = written_batches(topo, "db1")
    # New connections from here on find db1 first in DATABASE_URL, read-write: a service
    # host restarted now makes every one of its connections anew.
    topo.restart_service("svc1")
    after = Ledger()
    with topo.inside("client"):
        trio.run(write_load, topo, props, after, 10.0, 200)
    assert after.statuses.get("202", 0) > 20, after.statuses
    assert written_batches(topo, "db1") == stale, "a write reached the stale primary"
    assert written_batches(topo, "db2") >= before + after.statuses["202"]
    check_ledger(after, record_of(topo, props))
