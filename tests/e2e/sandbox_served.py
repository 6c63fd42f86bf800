"""The sandbox channel manager served over real HTTP on loopback, with one property, room
type and rate plan made through our client: the `sandbox` fixture of tests/e2e/conftest.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import trio

from connectapi.channel.client import ChannelManagerClient, open_channel_manager
from connectapi.channel.sandbox.serve import serve_sandbox
from connectapi.channel.sandbox.state import SandboxState
from connectapi.engine import FakeClock

KEY = "sandbox-test-key-0123456789"
# The sandbox's clock: its today decides which nights are past (Channex refuses them).
TODAY = datetime(2026, 11, 22, 10, tzinfo=UTC)


@dataclass
class Sandbox:
    state: SandboxState
    client: ChannelManagerClient  # ours, as the service uses it
    url: str
    control: httpx.AsyncClient  # plain HTTP with the key: the sandbox's own routes, raw answers
    property_id: str
    room_type_id: str
    rate_plan_id: str

    async def arm(self, mode: str, count: int = 1) -> None:
        armed = await self.control.post("/_sandbox/faults", json={"mode": mode, "count": count})
        assert armed.status_code == 200, armed.text

    def availability(self, count: int = 1) -> list[dict[str, Any]]:
        return [{"property_id": self.property_id, "room_type_id": self.room_type_id, "date_from": "2026-12-01",
                 "date_to": "2026-12-01", "availability": count}]


@asynccontextmanager
async def served_sandbox() -> AsyncIterator[Sandbox]:
    state = SandboxState()
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(serve_sandbox, state, KEY, FakeClock(TODAY), "127.0.0.1", 0, stop)
        async with open_channel_manager(url, KEY, timeout=10) as client, \
                httpx.AsyncClient(base_url=url, headers={"user-api-key": KEY}) as control:
            pid = await client.create_property("Casa Azul", "EUR")
            room = await client.create_room_type(pid, "Double", 8)
            plan = await client.create_rate_plan(pid, room, "Flexible")
            yield Sandbox(state, client, url, control, pid, room, plan)
        stop.set()
