"""Hostile webhook receivers (issue 16, item 6), each beside a healthy endpoint of another
property, over real sockets on the mock clock: the clock stands still unless the test moves
it, so the healthy endpoint getting everything meanwhile means no wait on the hostile one."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
import trio.testing

from .conftest import START
from .harness import Harness, eventually
from .test_webhooks import register, until_deliveries
from .webhook_receiver import ENDLESS_CAP, TRICKLED, Receiver, endless, serving, trickle


@pytest.fixture
def env() -> dict[str, str]:
    return {"CONNECTAPI_WEBHOOK_ALLOW_PRIVATE": "1"}


def hostile(kind: str) -> Receiver:
    if kind == "trickles":
        return Receiver(misbehave=trickle)
    if kind == "streams for ever":
        return Receiver(misbehave=endless)
    return Receiver(answers=[(503, 99999999999999999999)])


async def deliveries(api: Harness, endpoint_id: int) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (await api.admin("GET", f"/webhooks/{endpoint_id}/deliveries")).data
    return found


@pytest.mark.parametrize("kind", ["trickles", "streams for ever", "asks for an absurd wait"])
async def test_a_hostile_receiver_holds_up_no_other_endpoint(api: Harness, receiver: Receiver, kind: str) -> None:
    async with serving(hostile(kind)) as bad:
        _, bad_endpoint = await register(api, bad)
        await eventually(lambda: len(bad.received) == 1, "the hostile receiver called")

        _, good = await register(api, receiver)
        for _ in range(3):
            assert (await api.admin("POST", f"/webhooks/{good['id']}/test")).status == 202
        await until_deliveries(api, good["id"], [("delivered", 1)] * 4)
        assert [d["durationMs"] for d in await deliveries(api, good["id"])] == [0] * 4  # not a moment waited

        if kind == "trickles":
            [attempt] = await deliveries(api, bad_endpoint["id"])
            assert attempt["attempt"] == 0  # still under way: a byte came before 9 s
            api.advance(9)
            await eventually(lambda: bad.sent == 2, "the second byte")
            await trio.testing.wait_all_tasks_blocked()
            api.advance(9)  # 18 s into the attempt, never 10 s without a byte
            await until_deliveries(api, bad_endpoint["id"], [("pending", 1)])
            [attempt] = await deliveries(api, bad_endpoint["id"])
            assert attempt["lastError"] == "no answer within 10 s" and attempt["responseStatus"] is None
            assert bad.sent < len(TRICKLED)
        elif kind == "streams for ever":
            await until_deliveries(api, bad_endpoint["id"], [("delivered", 1)])  # the 200 counts; the body not
            assert bad.cut_off and bad.sent < ENDLESS_CAP // 4, bad.sent
        else:
            await until_deliveries(api, bad_endpoint["id"], [("pending", 1)])
            [attempt] = await deliveries(api, bad_endpoint["id"])
            assert attempt["responseStatus"] == 503
            assert datetime.fromisoformat(attempt["nextAttemptAt"]) == START + timedelta(hours=1)
            api.advance(3600)
            await until_deliveries(api, bad_endpoint["id"], [("delivered", 2)])  # answered 204 the second time
