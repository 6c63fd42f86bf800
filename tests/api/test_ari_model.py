"""Property-based: after any sequence of writes, the record equals a plain in-memory model."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import pytest
import trio
import trio.testing
import trio_asyncio
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import mock_clock_database, template_copy

from .conftest import open_harness
from .harness import API, Harness

TODAY = date(2026, 11, 22)
SPAN = 21  # nights the writes touch: TODAY .. TODAY + 20
CODES = ("mo", "tu", "we", "th", "fr", "sa", "su")
FIELDS = ("stopSell", "closedToArrival", "closedToDeparture", "minStayArrival", "minStayThrough", "maxStay")
MIN_RATE = 40  # plan 0's policy (CASA_AZUL); plan 1 has none


ranges = st.tuples(st.integers(0, SPAN - 1), st.integers(0, 6)).map(lambda t: (t[0], min(SPAN - 1, t[0] + t[1])))
masks = st.none() | st.sets(st.sampled_from(CODES), min_size=1).map(sorted)
restriction_values = st.fixed_dictionaries({}, optional={
    "stopSell": st.booleans(), "closedToArrival": st.booleans(), "closedToDeparture": st.booleans(),
    "minStayArrival": st.none() | st.integers(1, 3), "minStayThrough": st.none() | st.integers(1, 3),
    "maxStay": st.none() | st.integers(1, 3),
}).filter(bool)

availability_write = st.tuples(st.just("availability"), st.lists(
    st.tuples(st.integers(0, 1), ranges, st.just(None), st.integers(0, 3)), min_size=1, max_size=4))
rates_write = st.tuples(st.just("rates"), st.lists(
    st.tuples(st.integers(0, 1), ranges, masks, st.integers(38, 42)), min_size=1, max_size=4))
restrictions_write = st.tuples(st.just("restrictions"), st.lists(
    st.tuples(st.integers(0, 1), ranges, masks, restriction_values), min_size=1, max_size=4))
writes = st.lists(availability_write | rates_write | restrictions_write, min_size=1, max_size=5)


def nights_of(span: tuple[int, int], days: list[str] | None) -> list[date]:
    allowed = set(range(7)) if days is None else {CODES.index(d) for d in days}
    return [TODAY + timedelta(days=i) for i in range(span[0], span[1] + 1)
            if (TODAY + timedelta(days=i)).weekday() in allowed]


def empty_mask(span: tuple[int, int], days: list[str] | None) -> bool:
    return not nights_of(span, days)


class Model:
    def __init__(self, rooms: list[int], room_counts: list[int], plans: list[int]) -> None:
        self.rooms, self.plans = rooms, plans
        self.availability = {(r, TODAY + timedelta(days=i)): n for r, n in zip(rooms, room_counts) for i in range(SPAN)}
        self.rates: dict[tuple[int, date], int] = {}
        self.restrictions: dict[tuple[int, date], dict[str, Any]] = {}

    def apply(self, resource: str, entries: list[Any]) -> tuple[int, int] | None:
        """(accepted, noop), or None when the model says every entry is refused."""
        if resource == "rates":
            entries = [e for e in entries if not (e[0] == 0 and e[3] < MIN_RATE)]
            if not entries:
                return None
        target: dict[tuple[int, date], Any] = {}
        for index, span, days, value in entries:
            entity = (self.rooms if resource == "availability" else self.plans)[index]
            for night in nights_of(span, days):
                if resource == "restrictions":
                    target.setdefault((entity, night), {}).update(value)
                else:
                    target[(entity, night)] = value * 100 if resource == "rates" else value
        stores: dict[str, dict[tuple[int, date], Any]] = {
            "availability": self.availability, "rates": self.rates, "restrictions": self.restrictions}
        store = stores[resource]
        accepted = 0
        before: Any
        for cell, value in target.items():
            if resource == "restrictions":
                value = {**{f: None for f in FIELDS}, **store.get(cell, {}), **value}
                before = {**{f: None for f in FIELDS}, **store.get(cell, {})}
            else:
                before = store.get(cell)
            if value != before:
                store[cell] = value
                accepted += 1
        return accepted, len(target) - accepted


def body(model: Model, resource: str, entries: list[Any]) -> dict[str, Any]:
    updates = []
    for index, (first, last), days, value in entries:
        entry: dict[str, Any] = {"dateFrom": str(TODAY + timedelta(days=first)),
                                 "dateTo": str(TODAY + timedelta(days=last))}
        if resource == "availability":
            entry |= {"roomTypeId": model.rooms[index], "available": value}
        else:
            entry["ratePlanId"] = model.plans[index]
            if days is not None:
                entry["days"] = days
            entry |= {"rate": value, "currency": "EUR"} if resource == "rates" else value
        updates.append(entry)
    return {"updates": updates}


@pytest.mark.slow  # 25 examples, each a property written through the app: about 15 s
@settings(max_examples=25, deadline=None)
@given(sequence=writes)
def test_record_equals_the_model(pg_template: str, sequence: list[tuple[str, list[Any]]]) -> None:
    """Each example in its own run, on a mock clock, over its own database."""

    async def example() -> None:
        async with trio_asyncio.open_loop(), template_copy(pg_template) as dsn:
            async with mock_clock_database(dsn) as db, open_harness(db) as api:
                await check_against_model(api, sequence)

    trio.run(example, clock=trio.testing.MockClock())


async def check_against_model(api: Harness, sequence: list[tuple[str, list[Any]]]) -> None:
    prop, key = await api.keyed_property()
    model = Model([r["id"] for r in prop["roomTypes"]], [r["rooms"] for r in prop["roomTypes"]],
                  [p["id"] for p in prop["ratePlans"]])
    for resource, entries in sequence:
        answer = await api.call("PUT", f"{API}/{resource}", key=key, body=body(model, resource, entries))
        if any(empty_mask(span, days) for _, span, days, _ in entries):
            assert answer.code == "RANGE_INVALID"
            continue
        expected = model.apply(resource, entries)
        if expected is None:
            assert answer.code == "NOTHING_ACCEPTED"
            continue
        assert answer.status == 202, answer.body
        assert (answer.data["acceptedCells"], answer.data["noopCells"]) == expected

    last = str(TODAY + timedelta(days=SPAN - 1))
    window = f"?from={TODAY}&to={last}"
    got = (await api.call("GET", f"{API}/availability{window}", key=key)).data
    assert {(g["roomTypeId"], date.fromisoformat(n["date"])): n["available"]
            for g in got["roomTypes"] for n in g["nights"]} == model.availability
    got = (await api.call("GET", f"{API}/rates{window}", key=key)).data
    assert {(g["ratePlanId"], date.fromisoformat(n["date"])): n["rateMinor"]
            for g in got["ratePlans"] for n in g["nights"]} == model.rates
    got = (await api.call("GET", f"{API}/restrictions{window}", key=key)).data
    held = {(g["ratePlanId"], date.fromisoformat(n["date"])): {f: n[f] for f in FIELDS}
            for g in got["ratePlans"] for n in g["nights"]}
    blank = {f: None for f in FIELDS}
    assert {cell: v for cell, v in held.items() if v != blank} == {
        cell: v for cell, v in model.restrictions.items() if v != blank}
