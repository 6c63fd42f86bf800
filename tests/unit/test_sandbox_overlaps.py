"""The sandbox channel manager counts pushes for one property that overlap."""

from __future__ import annotations

from typing import Any

import trio

from connectapi.channel.sandbox.server import Served, sandbox_app, serving
from connectapi.channel.sandbox.state import Limits, SandboxState
from connectapi.engine import SystemClock

KEY = "sandbox-overlap-key"


async def test_pushes_for_one_property_that_overlap_are_counted() -> None:
    state = SandboxState(Limits(1000, 1000, 1000), call_seconds=0.2)
    client = sandbox_app().test_client()
    pids = [state.create_property(f"Casa {n}", "EUR") for n in range(3)]
    rooms = {pid: state.create_room_type(pid, "Double", 2) for pid in pids}
    plans = {pid: state.create_rate_plan(pid, rooms[pid], "Flexible") for pid in pids}

    async def push(pid: str, kind: str = "availability") -> None:
        # A night far ahead of the sandbox's (real) clock: never past.
        value: dict[str, Any] = (
            {"property_id": pid, "room_type_id": rooms[pid], "date": "2099-12-01", "availability": 1}
            if kind == "availability" else
            {"property_id": pid, "rate_plan_id": plans[pid], "date": "2099-12-01", "stop_sell": False})
        answer = await client.post(f"/api/v1/{kind}", json={"values": [value]}, headers={"user-api-key": KEY})
        assert answer.status_code == 200, await answer.get_data(as_text=True)
        assert (await answer.get_json())["meta"]["warnings"] == []

    with serving(Served(state, KEY, SystemClock())):  # the app answers for this sandbox
        async with trio.open_nursery() as nursery:  # three properties at once: no overlap
            for pid in pids:
                nursery.start_soon(push, pid)
        assert state.stats.overlapping_calls == 0
        async with trio.open_nursery() as nursery:  # one property twice at once: one overlap
            nursery.start_soon(push, pids[0])
            await trio.sleep(0.05)
            nursery.start_soon(push, pids[0], "restrictions")
        assert state.stats.overlapping_calls == 1
        await push(pids[0])  # one after the other: none
        assert state.stats.overlapping_calls == 1 and state.stats.view()["overlappingCalls"] == 1
