"""Driving the real app (Quart's test client) over a real database, with a fake clock."""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import trio.testing
import trio_asyncio
from quart.typing import TestClientProtocol
from quart.wrappers import Response

from connectapi.http.context import FrontContext
from connectapi.service import Handles

API = "/api/v1/connect-api/v1"
ADMIN = "/api/v1/admin"
ADMIN_TOKEN = "test-operator-token"

CASA_AZUL: dict[str, Any] = {
    "name": "Casa Azul",
    "timezone": "Europe/Lisbon",
    "currency": "EUR",
    "products": {"channelManager": True, "pms": True},
    "pmsEntitled": True,
    "status": "active",
    "ownerEmail": "owner@casa-azul.example",
    "roomTypes": [
        {"name": "Double", "maxAdults": 2, "maxOccupancy": 3, "rooms": 8},
        {"name": "Suite", "maxAdults": 4, "rooms": 2},
    ],
    "ratePlans": [
        {"roomType": 0, "name": "Flexible", "mealPlan": "CP", "minRate": 40, "maxRate": 900},
        {"roomType": 1, "name": "Suite BB", "mealPlan": "BB"},
    ],
}


async def eventually(check: Callable[[], Any], what: str | Callable[[], str] = "the condition",
                     seconds: float = 15.0) -> None:
    """Until `check()` (plain or async) holds. The mock clock stands still but PostgreSQL and
    the sandbox still answer in real time, so the bound is real time: a ceiling for a failing
    test, not a window waited out. `wait_all_tasks_blocked` alone is not enough: a task
    waiting on a socket counts as blocked. `what` may be a function, to say at the end
    what the last look saw."""
    give_up = time.monotonic() + seconds
    while True:
        held = check()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return
        if time.monotonic() > give_up:
            raise AssertionError(f"{what() if callable(what) else what} never held")
        await trio.sleep(0)


async def after_janitor_rounds(api: "Harness", check: Callable[[], Any], what: str = "the janitor's work",
                               every: float = 3600.0) -> None:
    """`eventually(check)`, moving the clock by the janitor's interval (`every`) on every
    twentieth look: a janitor round still at the record (real time) when the clock jumped
    has its next one an interval after it ends."""
    looks = 0

    async def looked() -> Any:
        nonlocal looks
        looks += 1
        if looks % 20 == 0:
            api.advance(every)
        held = check()
        return await held if inspect.isawaitable(held) else held

    await eventually(looked, what)


@dataclass
class Answer:
    status: int
    body: Any
    headers: Any

    @property
    def data(self) -> Any:
        return self.body["data"]

    @property
    def code(self) -> str:
        return str(self.body["data"]["code"])


async def answer_of(response: Response) -> Answer:
    raw = await response.get_data()
    body = json.loads(raw) if raw else None
    return Answer(response.status_code, body, response.headers)


@dataclass
class Harness:
    client: TestClientProtocol
    ctx: FrontContext
    clock: trio.testing.MockClock
    handles: Handles  # what no route reaches: the push scheduler, call counters, reconciler
    # The mode of the keys create_key mints unless told: the contract's tests run in both
    # (tests/api/conftest.py), since a test key works on every route as a live one does.
    key_mode: str = "live"

    async def call(
        self, method: str, path: str, *, key: str | None = None, address: str = "198.51.100.7",
        body: Any = None, raw: bytes | None = None, headers: dict[str, str] | None = None,
    ) -> Answer:
        all_headers = dict(headers or {})
        if key is not None:
            all_headers["Authorization"] = f"Bearer {key}"
        kwargs: dict[str, Any] = {"headers": all_headers, "scope_base": {"client": (address, 40000)}}
        if raw is not None:
            kwargs["data"] = raw
        elif body is not None:
            kwargs["json"] = body
        response = await self.client.open(path, method=method, **kwargs)
        return await answer_of(response)

    async def admin(self, method: str, path: str, body: Any = None, token: str = ADMIN_TOKEN) -> Answer:
        return await self.call(method, ADMIN + path, body=body, headers={"Authorization": f"Bearer {token}"})

    async def create_property(self, **overrides: Any) -> dict[str, Any]:
        answer = await self.admin("POST", "/properties", {**CASA_AZUL, **overrides})
        assert answer.status == 201, answer.body
        return dict(answer.data)

    async def create_key(self, property_id: int, scopes: list[str] | None = None, **extra: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"label": "test", "mode": self.key_mode, **extra}
        if not extra.get("legacy"):
            body["scopes"] = ["ari:read", "ari:write"] if scopes is None else scopes
        answer = await self.admin("POST", f"/properties/{property_id}/keys", body)
        assert answer.status == 201, answer.body
        return dict(answer.data)

    async def keyed_property(self, scopes: list[str] | None = None, **overrides: Any) -> tuple[dict[str, Any], str]:
        prop = await self.create_property(**overrides)
        key = await self.create_key(prop["id"], scopes)
        return prop, str(key["key"])

    async def record_of(self, prop: dict[str, Any]) -> int:
        """The id of the record this harness's keys work on: the property's, or its test
        twin's when the keys are test keys."""
        if self.key_mode == "live":
            return int(prop["id"])
        found = await self.ctx.db.fetchval("SELECT id FROM properties WHERE twin_of = $1", prop["id"])
        assert found is not None, "a test key makes the property's test record"
        return int(found)

    def advance(self, seconds: float) -> None:
        self.clock.jump(seconds)

    async def cm_failures(self, property_id: int) -> int:
        """Failed channel-manager calls in a row for the property, as the record has them."""
        found: int = await self.ctx.db.fetchval("SELECT cm_failures FROM properties WHERE id = $1", property_id)
        return found


@dataclass
class HeldElsewhere:
    """Another connection's open transaction: `execute` runs one more statement in it,
    `commit` or `rollback` ends it."""
    execute: Callable[..., Awaitable[str]]
    commit: Callable[[], Awaitable[None]]
    rollback: Callable[[], Awaitable[None]]


@asynccontextmanager
async def held_elsewhere(dsn: str, *statements: tuple[str, tuple[Any, ...]]) -> AsyncIterator[HeldElsewhere]:
    """Another connection (a request, the janitor) runs `statements` in a transaction and
    holds what they lock until the test ends it; rolled back if the test does not."""
    other = await trio_asyncio.aio_as_trio(asyncpg.connect)(dsn)
    try:
        transaction = other.transaction()
        await trio_asyncio.aio_as_trio(transaction.start)()
        for sql, args in statements:
            await trio_asyncio.aio_as_trio(other.execute)(sql, *args)
        yield HeldElsewhere(trio_asyncio.aio_as_trio(other.execute), trio_asyncio.aio_as_trio(transaction.commit),
                            trio_asyncio.aio_as_trio(transaction.rollback))
    finally:
        await trio_asyncio.aio_as_trio(other.close)()
