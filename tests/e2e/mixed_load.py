"""A mixed load on a live service, kept as a ledger of what each request was answered, and
the checks that the record and the channel manager hold everything answered 2xx.

The property has three room types: A takes the ARI writes (availability, and rates on its
plan), B the API's bookings and cancellations, C the OTA's bookings. So each room type's
availability has one writer, and what it should hold can be worked out from the ledger.

A request that got no answer, or a 5xx, may or may not have been applied (the process or
the record died around its commit): the checks accept either for it, and only for it.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

import httpx
import trio

API = "/api/v1/connect-api/v1"
EVERY_SCOPE = ["ari:read", "ari:write", "bookings:read", "bookings:write"]
LIFTED = ",".join(f"{name}=1000000" for name in (
    "ip", "global", "requests", "property", "writes", "property-writes", "bookings", "property-bookings",
    "property-bookings-day")) + ",cells=100000000"
ROOMS = {"A": 10, "B": 6, "C": 6}
NIGHTS = 12  # the load's nights: from a week ahead
# An answer slower than this is a hang: the service promises a 503 within seconds instead.
SLOW_ANSWER = 8.0

PROPERTY: dict[str, Any] = {
    "name": "Casa Caos", "timezone": "Europe/Lisbon", "currency": "EUR",
    "products": {"channelManager": True, "pms": True}, "pmsEntitled": True, "status": "active",
    "roomTypes": [{"name": name, "maxAdults": 2, "rooms": rooms} for name, rooms in ROOMS.items()],
    "ratePlans": [{"roomType": i, "name": f"Plan {name}", "mealPlan": "RO"} for i, name in enumerate(ROOMS)],
}


def load_client() -> httpx.AsyncClient:
    """The load's HTTP client. It drops an idle connection after 2 s, before the service's 5 s
    keep-alive ends, as the client libraries do (decision 0117): a request sent on a connection
    at the instant the service closes it gets no answer, which would read here as the process
    having gone away (seen once in CI on a busy machine, where that instant is wider)."""
    return httpx.AsyncClient(timeout=30, limits=httpx.Limits(keepalive_expiry=2.0))


def first_night() -> date:
    return date.today() + timedelta(days=7)


def nights() -> list[date]:
    return [first_night() + timedelta(days=i) for i in range(NIGHTS)]


@dataclass
class Property:
    id: int
    key: str
    rooms: dict[str, int]  # "A" -> room type id
    plans: dict[str, int]  # "A" -> rate plan id


@dataclass
class Ledger:
    """Every request the load made, with what it was answered (None: no answer)."""

    cells: dict[tuple[str, date], list[tuple[int | None, int]]] = field(default_factory=dict)
    bookings: dict[str, tuple[int | None, int | None, date, date]] = field(default_factory=dict)
    cancels: dict[int, int | None] = field(default_factory=dict)
    statuses: Counter[int | None] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)  # why each request without an answer had none
    slowest: float = 0.0

    def noted(self, status: int | None, seconds: float) -> None:
        self.statuses[status] += 1
        self.slowest = max(self.slowest, seconds)

    def allowed(self, cell: tuple[str, date]) -> set[int] | None:
        """What the record may hold for a cell: the last value answered 2xx, or a value of a
        later request whose fate is unknown; None if no write of it was ever answered 2xx."""
        attempts = self.cells.get(cell, [])
        last_ok = max((i for i, (status, _) in enumerate(attempts) if status is not None and status < 300),
                      default=None)
        if last_ok is None:
            return None
        return {attempts[last_ok][1]} | {value for status, value in attempts[last_ok + 1:]
                                           if status is None or status >= 500}


async def make_property(admin: httpx.AsyncClient) -> Property:
    made = await admin.post("/properties", json=PROPERTY)
    assert made.status_code == 201, made.text
    prop = made.json()["data"]
    key = await admin.post(f"/properties/{prop['id']}/keys", json={"label": "load", "scopes": EVERY_SCOPE})
    assert key.status_code == 201, key.text
    rooms = {name: room["id"] for name, room in zip(ROOMS, prop["roomTypes"])}
    plans = {name: plan["id"] for name, plan in zip(ROOMS, prop["ratePlans"])}
    return Property(prop["id"], key.json()["data"]["key"], rooms, plans)


class MixedLoad:
    def __init__(self, base_url: str, prop: Property, seed: int) -> None:
        self.base_url = base_url
        self.prop = prop
        self.rng = random.Random(seed)
        self.ledger = Ledger()
        self._references = 0

    async def _call(self, http: httpx.AsyncClient, method: str, path: str, body: Any) -> tuple[int | None, Any]:
        started = time.monotonic()
        try:
            answer = await http.request(method, f"{self.base_url}{API}{path}", json=body,
                                        headers={"Authorization": f"Bearer {self.prop.key}"})
        except httpx.HTTPError as exc:
            self.ledger.errors.append(f"{method} {path} after {time.monotonic() - started:.3f} s: {exc!r}")
            self.ledger.noted(None, 0.0)  # no answer (the process is away): its fate is unknown
            await trio.sleep(0.2)
            return None, None
        self.ledger.noted(answer.status_code, time.monotonic() - started)
        if answer.status_code == 503:
            assert answer.headers.get("Retry-After"), answer.text
        return answer.status_code, answer.json()

    async def writes(self, http: httpx.AsyncClient, resource: str, until: float) -> None:
        """Availability or rates of room type A, one night at a time, absolute values."""
        while time.monotonic() < until:
            night = self.rng.choice(nights())
            if resource == "availability":
                value = self.rng.randint(0, ROOMS["A"])
                entry: dict[str, Any] = {"roomTypeId": self.prop.rooms["A"], "available": value}
            else:
                value = self.rng.randint(60, 300)
                entry = {"ratePlanId": self.prop.plans["A"], "rate": value, "currency": "EUR"}
            entry |= {"dateFrom": night.isoformat(), "dateTo": night.isoformat()}
            attempts = self.ledger.cells.setdefault((resource, night), [])
            attempts.append((None, value))
            status, _ = await self._call(http, "PUT", f"/{resource}", {"updates": [entry]})
            attempts[-1] = (status, value)
            await trio.sleep(self.rng.uniform(0.05, 0.2))

    async def bookings(self, http: httpx.AsyncClient, until: float) -> None:
        """Bookings of room type B for one or two nights, and now and then a cancellation."""
        while time.monotonic() < until:
            made = [booking for status, booking, _, _ in self.ledger.bookings.values()
                    if status == 201 and booking is not None and booking not in self.ledger.cancels]
            if made and self.rng.random() < 0.25:
                booking_id = self.rng.choice(made)
                self.ledger.cancels[booking_id] = None
                status, _ = await self._call(http, "POST", f"/bookings/{booking_id}/cancel", {"reason": "chaos"})
                self.ledger.cancels[booking_id] = status
            else:
                self._references += 1
                reference = f"CHAOS-{self._references:05d}"
                check_in = self.rng.choice(nights()[:-2])
                check_out = check_in + timedelta(days=self.rng.randint(1, 2))
                self.ledger.bookings[reference] = (None, None, check_in, check_out)
                status, body = await self._call(http, "POST", "/bookings", {
                    "externalReference": reference, "checkIn": check_in.isoformat(),
                    "checkOut": check_out.isoformat(), "currency": "EUR",
                    "guest": {"name": "Chaos Guest", "phone": f"+35191{self._references:07d}"},
                    "rooms": [{"roomTypeId": self.prop.rooms["B"], "ratePlanId": self.prop.plans["B"],
                               "adults": 1, "nightlyRate": "90.00"}]})
                made_id = int(body["data"]["bookingId"]) if status in (200, 201) else None
                self.ledger.bookings[reference] = (status, made_id, check_in, check_out)
            await trio.sleep(self.rng.uniform(0.1, 0.3))

    async def run(self, seconds: float, http: httpx.AsyncClient) -> None:
        until = time.monotonic() + seconds
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.writes, http, "availability", until)
            nursery.start_soon(self.writes, http, "rates", until)
            nursery.start_soon(self.bookings, http, until)
            nursery.start_soon(self.bookings, http, until)


async def eventually(check: Any, what: str, seconds: float = 120.0) -> Any:
    """Poll a live service (real time is what it takes)."""
    deadline = time.monotonic() + seconds
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = await check()
        except httpx.HTTPError as exc:
            last = exc
        else:
            if last:
                return last
        await trio.sleep(0.5)
    raise AssertionError(f"{what} never held (last: {last!r})")


async def in_sync(http: httpx.AsyncClient, base_url: str, prop: Property) -> bool:
    answer = await http.get(f"{base_url}{API}/sync", headers={"Authorization": f"Bearer {prop.key}"})
    sync = answer.json()["data"]
    return bool(answer.status_code == 200 and sync["inventory"]["dirtyCells"] == 0
                and sync["rates"]["dirtyCells"] == 0)


async def record_of(http: httpx.AsyncClient, base_url: str, prop: Property) -> dict[str, Any]:
    """The record's availability per room type and night, and room type A's rates, over the load's nights."""
    query = f"from={nights()[0]}&to={nights()[-1]}"
    headers = {"Authorization": f"Bearer {prop.key}"}
    availability = (await http.get(f"{base_url}{API}/availability?{query}", headers=headers)).json()["data"]
    rates = (await http.get(f"{base_url}{API}/rates?{query}", headers=headers)).json()["data"]
    by_room = {r["roomTypeId"]: {date.fromisoformat(n["date"]): n["available"] for n in r["nights"]}
               for r in availability["roomTypes"]}
    by_plan = {p["ratePlanId"]: {date.fromisoformat(n["date"]): n["rateMinor"] for n in p["nights"]}
               for p in rates["ratePlans"]}
    return {"availability": {name: by_room[room] for name, room in prop.rooms.items()},
            "rates": by_plan.get(prop.plans["A"], {})}


def check_writes(ledger: Ledger, record: dict[str, Any]) -> int:
    """Every cell written 2xx holds its value (or a later one of unknown fate); answers how
    many cells were checked."""
    checked = 0
    for (resource, night), _ in ledger.cells.items():
        allowed = ledger.allowed((resource, night))
        if allowed is None:
            continue
        held = record["availability"]["A"][night] if resource == "availability" else record["rates"][night] // 100
        assert held in allowed, f"{resource} on {night}: the record holds {held}, answered 2xx: {allowed}"
        checked += 1
    return checked


async def check_bookings(http: httpx.AsyncClient, base_url: str, prop: Property, ledger: Ledger,
                         record: dict[str, Any]) -> Counter[date]:
    """Every booking answered 201 exists once, cancelled if its cancellation was answered 200;
    room type B holds its rooms less the live bookings that exist. Answers the live nights."""
    headers = {"Authorization": f"Bearer {prop.key}"}
    taken: Counter[date] = Counter()
    for reference, (status, _, check_in, check_out) in ledger.bookings.items():
        found = (await http.get(f"{base_url}{API}/bookings", headers=headers, params={
            "externalReference": reference, "since": "2000-01-01T00:00:00Z"})).json()["data"]["bookings"]
        assert len(found) <= 1, f"{reference} exists {len(found)} times"
        if status in (200, 201):
            assert found, f"{reference} was answered {status} and is not in the record"
        if not found:
            continue
        booking = found[0]
        if ledger.cancels.get(booking["bookingId"]) == 200:
            assert booking["status"] == "CANCELLED", reference
        if booking["status"] != "CANCELLED":
            night = check_in
            while night < check_out:
                taken[night] += 1
                night += timedelta(days=1)
    for night in nights():
        assert record["availability"]["B"][night] == ROOMS["B"] - taken[night], (
            f"room type B on {night}: {record['availability']['B'][night]} left, "
            f"{ROOMS['B']} less {taken[night]} live bookings")
    return taken
