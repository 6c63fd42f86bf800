"""The rest of the several-hosts tests' mixed load, beside scenarios.write_load's paced ARI
integrators: a booking engine and a greedy reader, each pressing a budget to its edge, and
OTA bookings sold at the channel manager, whose revisions come back as webhooks to the
receiver host. Each part keeps a ledger and has a check the tests run on it afterwards."""

from __future__ import annotations

import itertools
import secrets
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

import httpx
import trio

from .topology import CM_KEY, Topology

API = "/api/v1/connect-api/v1"
# The bookings' nights, and the OTA's, clear of the ARI load's first ten.
BOOKING_NIGHTS_FROM = 30
BOOKING_NIGHTS = 300
OTA_NIGHTS_FROM = BOOKING_NIGHTS_FROM + BOOKING_NIGHTS + 1
OTA_SELL_EVERY = 3.0
# The first copy of a webhook sent twice was sent by an attempt under way at the fault: its
# lease read (at most the command timeout, 10 s) and the attempt (at most 10 s) began
# before it. Only such a copy may come again, once its sending lease has run out.
AT_LEAST_ONCE_BEFORE, AT_LEAST_ONCE_AFTER = 11.0, 21.0


@dataclass
class Try:
    key: str
    sent: float  # time.monotonic() when sent, and when answered
    answered: float
    status: int | None
    ref: str | None = None  # a booking's externalReference, and the booking answered
    booking_id: int | None = None


@dataclass
class PressedLedger:
    """Every try of the clients that press their budgets."""

    tries: list[Try] = field(default_factory=list)

    def admitted(self, key: str, status: int) -> list[Try]:
        """The key's tries answered `status`: each charged its budget once, somewhere
        between its sending and its answer."""
        return [t for t in self.tries if t.key == key and t.status == status]


async def _spent(got: httpx.Response | None, deadline: float) -> None:
    """A pressing client's pause: the Retry-After of a 429, so that its next try lands at
    the window's edge, where an over-admission would show; never past its `deadline`."""
    wait = float(got.headers["retry-after"]) if got is not None and got.status_code == 429 else 0.5
    await trio.sleep_until(min(deadline, trio.current_time() + wait))


_bookings_made: defaultdict[int, itertools.count[int]] = defaultdict(itertools.count)
# Each pressing key is pressed by this many clients at once: the balancer spreads their
# tries over the hosts, so that hosts charge the key at the same moments.
PRESSING_AT_ONCE = 3


def booking_body(prop: Any, ref: str, n: int, first: date) -> dict[str, Any]:
    night = first + timedelta(days=BOOKING_NIGHTS_FROM + n % BOOKING_NIGHTS)
    return {"externalReference": ref, "checkIn": night.isoformat(), "checkOut": (night + timedelta(days=1)).isoformat(),
            "currency": "EUR", "guest": {"name": f"Guest {n}", "phone": f"+35191{prop.id:03d}{n % 10000:04d}"},
            "rooms": [{"roomTypeId": prop.room, "ratePlanId": prop.plan, "adults": 2, "nightlyRate": "100.00"}]}


async def booking_load(http: httpx.AsyncClient, prop: Any, key: str, ledger: PressedLedger, seconds: float,
                       first: date) -> None:
    """A booking engine (with `key`) that books as fast as its `bookings` budget lets it,
    PRESSING_AT_ONCE bookings at a time."""
    await _at_once(_booking_engine, http, prop, key, ledger, seconds, first)


async def _booking_engine(http: httpx.AsyncClient, prop: Any, key: str, ledger: PressedLedger, seconds: float,
                          first: date) -> None:
    """One booking after another. A booking without an answer, or with a 5xx, is sent
    again as it was (its externalReference makes a repeat a replay) until it gets one."""
    deadline = trio.current_time() + seconds
    run = secrets.token_hex(3)
    auth = {"Authorization": f"Bearer {key}"}
    while trio.current_time() < deadline:
        n = next(_bookings_made[prop.id])  # a night of its own: the booking engines never run out of rooms
        ref = f"be-{run}-{n}"
        body = booking_body(prop, ref, n, first)
        while trio.current_time() < deadline:
            sent = time.monotonic()
            try:
                got: httpx.Response | None = await http.post(f"{API}/bookings", json=body, headers=auth)
            except httpx.HTTPError:
                got = None
            status = None if got is None else got.status_code
            made = got.json()["data"]["bookingId"] if got is not None and status in (200, 201) else None
            ledger.tries.append(Try(key, sent, time.monotonic(), status, ref, made))
            if status in (200, 201):
                break
            if status is not None and status < 500 and status != 429:
                raise AssertionError(f"booking {ref}: {status} {got.text if got is not None else ''}")
            await _spent(got, deadline)


async def greedy_reads(http: httpx.AsyncClient, key: str, ledger: PressedLedger, seconds: float) -> None:
    """An integrator that reads as fast as its `requests` budget lets it, PRESSING_AT_ONCE
    reads at a time."""
    await _at_once(_greedy_reader, http, key, ledger, seconds)


async def _at_once(client: Callable[..., Awaitable[None]], *args: Any) -> None:
    """PRESSING_AT_ONCE of `client(*args)` side by side, until each is done."""
    async with trio.open_nursery() as nursery:
        for _ in range(PRESSING_AT_ONCE):
            nursery.start_soon(client, *args)


async def _greedy_reader(http: httpx.AsyncClient, key: str, ledger: PressedLedger, seconds: float) -> None:
    deadline = trio.current_time() + seconds
    while trio.current_time() < deadline:
        sent = time.monotonic()
        try:
            got: httpx.Response | None = await http.get(f"{API}/availability",
                                                        headers={"Authorization": f"Bearer {key}"})
        except httpx.HTTPError:
            got = None
        ledger.tries.append(Try(key, sent, time.monotonic(), None if got is None else got.status_code))
        if got is None or got.status_code != 200:
            await _spent(got, deadline)


def most_admitted_in_a_window(tries: list[Try], window: float) -> int:
    """The most tries certainly charged within one window: those sent at or after some
    try's sending and answered before a window later."""
    ordered = sorted(tries, key=lambda t: t.sent)
    return max((sum(1 for t in ordered[i:] if t.answered < start.sent + window)
                for i, start in enumerate(ordered)), default=0)


def check_budget(ledger: PressedLedger, key: str, status: int, limit: int, window: float = 60.0) -> int:
    """`limit` tries of `key` answered `status` in the fullest window: no more (the hosts
    admitted no more than the budget between them), and no fewer (the key was pressed to
    its edge) but for tries that got no answer or a 5xx (charged or not: unknown).
    Answers the most seen."""
    most = most_admitted_in_a_window(ledger.admitted(key, status), window)
    unknown = sum(1 for t in ledger.tries if t.key == key and (t.status is None or t.status >= 500))
    assert limit - unknown <= most <= limit, \
        f"{most} answers {status} to one key in one window (budget {limit}; {unknown} unanswered)"
    return most


def check_bookings(topo: Topology, props: list[Any], keys: dict[int, str], ledger: PressedLedger) -> int:
    """Every booking answered 2xx (to the booking engine with `keys[property]`) is in the
    record, as it was answered. Answers how many were checked."""
    checked = 0
    with topo.inside("client"), httpx.Client(base_url=topo.url, timeout=30) as http:
        for prop in props:
            made = {t.ref: t.booking_id for t in ledger.tries if t.key == keys[prop.id] and t.booking_id is not None}
            for ref, booking_id in made.items():  # with a key of its own: the load's spent its budget
                got = http.get(f"{API}/bookings/{booking_id}", headers={"Authorization": f"Bearer {prop.checker_key}"})
                assert got.status_code == 200, (ref, got.text)
                assert got.json()["data"]["externalReference"] == ref
                checked += 1
            answered = [t.booking_id for t in ledger.tries if t.key == keys[prop.id] and t.booking_id is not None]
            assert len(set(answered)) == len(made), "one externalReference answered with two bookings"
    return checked


# ---- OTA bookings, and the webhooks they bring ----------------------------------------------

@dataclass
class OtaSales:
    """What the OTA did: reservation code -> the property and the events it should bring."""

    kinds: dict[str, list[str]] = field(default_factory=dict)
    property_of: dict[str, int] = field(default_factory=dict)


async def ota_load(topo: Topology, props: list[Any], sales: OtaSales, seconds: float, first: date) -> None:
    """An OTA selling a one-night stay every OTA_SELL_EVERY seconds, round the properties;
    every third sale also changes the one two before it, every fifth cancels the one four
    before it. Straight to the channel manager's host, as the OTA would."""
    deadline = trio.current_time() + seconds
    sold: list[str] = []
    async with httpx.AsyncClient(base_url=topo.cm_url, headers={"user-api-key": CM_KEY}, timeout=10) as cm:
        n = len(sales.kinds)
        while trio.current_time() < deadline:
            prop = props[n % len(props)]
            arrival = first + timedelta(days=OTA_NIGHTS_FROM + n % 30)
            made = await cm.post("/_sandbox/ota-bookings", json={
                "property_id": prop.cm_property, "room_type_id": prop.cm_room, "rate_plan_id": prop.cm_plan,
                "arrival_date": arrival.isoformat(), "departure_date": (arrival + timedelta(days=1)).isoformat(),
                "customer": {"name": "Guest", "surname": str(n)}, "amount": "100.00"})
            assert made.status_code == 201, made.text
            code = made.json()["data"]["attributes"]["ota_reservation_code"]
            sales.kinds[code], sales.property_of[code] = ["created"], prop.id
            sold.append(code)
            for every, back, how in ((3, 2, "modify"), (5, 4, "cancel")):
                if len(sold) > back and len(sold) % every == 0 and sales.kinds[sold[-1 - back]][-1] != "cancelled":
                    earlier = sold[-1 - back]
                    changed = await cm.post(f"/_sandbox/ota-bookings/{earlier}/{how}",
                                            json={"amount": "120.00"} if how == "modify" else {})
                    assert changed.status_code == 201, changed.text
                    sales.kinds[earlier].append("modified" if how == "modify" else "cancelled")
            n += 1
            await trio.sleep(OTA_SELL_EVERY)


def hook_path(prop: Any) -> str:
    return f"/hooks/{prop.id}"


def told(deliveries: list[dict[str, Any]]) -> dict[str, list[str]]:
    """reservation code -> the booking events its endpoint was sent, each once, in order."""
    seen: set[tuple[str, str]] = set()
    events: dict[str, list[str]] = defaultdict(list)
    for got in deliveries:
        if got["code"] is None or (got["path"], got["id"]) in seen:
            continue
        seen.add((got["path"], got["id"]))
        events[got["code"]].append(got["type"].removeprefix("channel.booking."))
    return events


def where_stopped(topo: Topology, property_ids: list[int]) -> str:
    """For a failure's message: where the record has each property's latest revisions,
    deliveries and endpoint leases, and who holds the intake's round."""
    ids = ",".join(str(i) for i in property_ids)
    queries = {
        "revisions (property, seq, state, acked, attempts, note)":
            f"SELECT property_id, seq, state, acked_at IS NOT NULL, attempts, note FROM ota_revisions "
            f"WHERE property_id IN ({ids}) ORDER BY seq DESC LIMIT 12",
        "deliveries (property, id, type, status, attempts, due in, made ago, first tried ago, error)":
            f"SELECT e.property_id, d.id, ev.type, d.status, d.attempts, d.next_attempt_at - clock_timestamp(), "
            f"clock_timestamp() - d.created_at, clock_timestamp() - d.first_attempt_at, d.last_error FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id "
            f"JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE e.property_id IN ({ids}) ORDER BY d.id DESC LIMIT 12",
        "endpoints (property, id, status, sending holder, left)":
            f"SELECT e.property_id, e.id, e.status, l.holder, l.until - clock_timestamp() FROM webhook_endpoints e "
            f"LEFT JOIN leases l ON l.kind = 'sending' AND l.key = e.id::text WHERE e.property_id IN ({ids})",
        "round leases": "SELECT key, holder, until - clock_timestamp(), again FROM leases WHERE kind = 'round'",
    }
    return "\n".join(f"{name}:\n{topo.psql(topo.primary, sql, db='connectapi')}" for name, sql in queries.items())


def check_webhooks(topo: Topology, sales: OtaSales, faults_at: list[float], within: float = 90.0) -> dict[str, int]:
    """Every revision the OTA made reached its property's endpoint, in order, each event
    once, but for a copy an attempt under way at a fault (wall-clock `faults_at`) had sent
    before its sender lost the record. Waits for them (`within` seconds) first; answers
    the counts seen."""
    deadline = time.monotonic() + within
    while True:
        deliveries = topo.deliveries()
        events = told(deliveries)
        if all(events.get(code) == kinds for code, kinds in sales.kinds.items()) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    wrong = {code: (kinds, events.get(code)) for code, kinds in sales.kinds.items() if events.get(code) != kinds}
    assert not wrong, (f"{len(wrong)} of {len(sales.kinds)} OTA bookings not told as they happened: {wrong}\n"
                       + where_stopped(topo, sorted({sales.property_of[code] for code in wrong})))
    for got in deliveries:
        if got["code"] is not None:
            assert got["path"] == f"/hooks/{sales.property_of[got['code']]}", got  # its own property's endpoint
    times = Counter((got["path"], got["id"]) for got in deliveries)
    first_at: dict[tuple[str, str], float] = {}
    for got in deliveries:
        first_at.setdefault((got["path"], got["id"]), got["at"])
    again = [key for key, count in times.items() if count > 1]
    for key in again:
        assert any(fault - AT_LEAST_ONCE_BEFORE <= first_at[key] <= fault + AT_LEAST_ONCE_AFTER
                   for fault in faults_at), f"{key} delivered {times[key]} times, first away from any fault"
    return {"events": len(times), "sent_again": len(again),
            "revisions": sum(len(kinds) for kinds in sales.kinds.values())}
