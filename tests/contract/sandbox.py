"""The sandbox served over real HTTP (hypercorn) on the test's clock, with a fresh USD
property of two room types and a rate plan on each, as Channex's certification sets up."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
import trio

from connectapi.channel.sandbox.serve import serve_sandbox
from connectapi.channel.sandbox.state import Limits, SandboxState
from connectapi.engine import FakeClock

from .channex_cases import ANY, START, UUID

KEY = "contract-test-key-0123456789"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass
class Served:
    state: SandboxState
    clock: FakeClock
    http: httpx.AsyncClient
    names: dict[str, str]  # property_id, room_type_id, ... for the cases' "{name}"

    async def create(self, kind: str, **attributes: Any) -> str:
        plural = {"property": "properties"}.get(kind, f"{kind}s")
        answer = await self.http.post(f"/api/v1/{plural}", json={kind: attributes})
        assert answer.status_code == 201, answer.text
        ident = answer.json()["data"]["id"]
        assert isinstance(ident, str)
        return ident


@asynccontextmanager
async def served_sandbox(limits: Limits | None = None, timezone: str = "UTC", key: str = KEY,
                         start: str = START) -> AsyncIterator[Served]:
    state = SandboxState(limits)
    clock = FakeClock(datetime.fromisoformat(start))
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(serve_sandbox, state, key, clock, "127.0.0.1", 0, stop)
        # A connection each: a connection kept over a jump of the mock clock past a minute is
        # left hanging by hypercorn (its idle close runs on the jumped clock).
        async with httpx.AsyncClient(base_url=url, headers={"user-api-key": key}, timeout=10,
                                     limits=httpx.Limits(max_keepalive_connections=0)) as http:
            served = Served(state, clock, http, {})
            pid = await served.create("property", title="Test Property - connectapi", currency="USD",
                                      timezone=timezone)
            twin = await served.create("room_type", property_id=pid, title="Twin Room", count_of_rooms=5)
            double = await served.create("room_type", property_id=pid, title="Double Room", count_of_rooms=5)
            bar = await served.create("rate_plan", property_id=pid, room_type_id=twin, title="Best Available Rate")
            other = await served.create("rate_plan", property_id=pid, room_type_id=double,
                                        title="Best Available Rate")
            served.names.update(property_id=pid, room_type_id=twin, other_room_type_id=double, rate_plan_id=bar,
                                other_rate_plan_id=other)
            yield served
        stop.set()


def fill(template: Any, names: dict[str, str]) -> Any:
    """The template with every "{name}" (in keys and strings) replaced by its value."""
    if isinstance(template, dict):
        return {fill(k, names): fill(v, names) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, names) for v in template]
    if isinstance(template, str):
        for name, value in names.items():
            template = template.replace("{" + name + "}", value)
    return template


def mismatches(expected: Any, actual: Any, where: str = "body") -> list[str]:
    """Where `actual` differs from `expected` ("<uuid>": any id, "<any>": anything)."""
    if expected == ANY:
        return []
    if expected == UUID:
        return [] if isinstance(actual, str) and _UUID.fullmatch(actual) else [f"{where}: {actual!r} is not a uuid"]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: {actual!r} is not an object"]
        found = [f"{where}: keys {sorted(set(expected) ^ set(actual))} differ"] if set(expected) != set(actual) else []
        for key in set(expected) & set(actual):
            found += mismatches(expected[key], actual[key], f"{where}.{key}")
        return found
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: {actual!r} is not a list of {len(expected)}"]
        return [m for i, (e, a) in enumerate(zip(expected, actual, strict=True))
                for m in mismatches(e, a, f"{where}[{i}]")]
    if type(expected) is not type(actual) or expected != actual:
        return [f"{where}: {actual!r} is not {expected!r}"]
    return []


def dig(body: Any, path: str) -> str:
    for part in path.split("."):
        body = body[part]
    assert isinstance(body, str)
    return body


async def send(served: Served, request: dict[str, Any], key: str | None = KEY) -> httpx.Response:
    """One request of a case, its "{name}"s filled in."""
    headers = {} if key is None else {"user-api-key": key}
    http = served.http
    body = fill(request.get("body"), served.names)
    sent = http.build_request(request["method"], fill(request["path"], served.names),
                              params=fill(request.get("query"), served.names),
                              json=body if body is not None else None, headers=headers)
    if key is None:
        del sent.headers["user-api-key"]
    return await http.send(sent)
