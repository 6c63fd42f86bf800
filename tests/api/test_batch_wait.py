"""GET /batches/{id}?wait=N (issue 45): one request that answers once the batch is done, or
after N seconds (mock clock, real HTTP)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from .harness import API, Answer, Harness, eventually

PUSHING = {"CONNECTAPI_PUSH_PAUSED": "0"}


async def rate_batch(api: Harness, key: str, plan: int) -> str:
    written = await api.call("PUT", f"{API}/rates", key=key, body={"updates": [
        {"ratePlanId": plan, "dateFrom": "2026-12-01", "dateTo": "2026-12-02", "rate": 120, "currency": "EUR"}]})
    assert written.status == 202, written.body
    return str(written.data["batchId"])


async def waited(api: Harness, key: str, prop: dict[str, Any], batch: str, wait: int,
                 nursery: trio.Nursery) -> dict[str, Any]:
    """Starts GET ?wait= in the nursery, and answers once it waits at the service (for the
    property's next push), with the dict its answer will land in."""
    got: dict[str, Any] = {}

    async def ask() -> None:
        answer: Answer = await api.call("GET", f"{API}/batches/{batch}?wait={wait}", key=key)
        got.update(status=answer.status, data=answer.data)

    nursery.start_soon(ask)
    await eventually(lambda: api.ctx.properties.wakeups.awaited("push", prop["id"]) or bool(got), "the read waiting")
    return got


@pytest.mark.parametrize("env", [PUSHING])
async def test_a_waiting_read_answers_once_the_batch_is_pushed(api: Harness) -> None:
    prop, key = await api.keyed_property()
    batch = await rate_batch(api, key, prop["ratePlans"][0]["id"])
    async with trio.open_nursery() as nursery:
        got = await waited(api, key, prop, batch, 20, nursery)
        assert got == {}  # still waiting: the push gathers the property's changes for a second first
        api.advance(1.5)  # the gathering window ends: pushed, and the wait is told at once
    assert got["status"] == 200 and (got["data"]["status"], got["data"]["pendingCells"]) == ("completed", 0)


async def test_a_waiting_read_answers_the_batch_as_it_is_after_the_wait(api: Harness) -> None:
    prop, key = await api.keyed_property()  # pushes held: the batch stays pending
    batch = await rate_batch(api, key, prop["ratePlans"][0]["id"])
    async with trio.open_nursery() as nursery:
        got = await waited(api, key, prop, batch, 5, nursery)
        for _ in range(9):  # the service looks again every half second, still pending
            api.advance(0.5)
            await trio.testing.wait_all_tasks_blocked(0.05)
        assert got == {}
        api.advance(0.6)
    assert got["status"] == 200 and (got["data"]["status"], got["data"]["pendingCells"]) == ("pending", 2)
    # Without wait, at once, as before.
    assert (await api.call("GET", f"{API}/batches/{batch}", key=key)).data["status"] == "pending"


@pytest.mark.parametrize("wait", ["31", "-1", "2.5", "soon", "", "%D9%A3"])  # the last: an Arabic-Indic 3
async def test_a_wait_that_is_not_whole_seconds_up_to_30_is_refused(api: Harness, wait: str) -> None:
    prop, key = await api.keyed_property()
    batch = await rate_batch(api, key, prop["ratePlans"][0]["id"])
    answer = await api.call("GET", f"{API}/batches/{batch}?wait={wait}", key=key)
    assert (answer.status, answer.code) == (400, "VALIDATION") and answer.data["details"][0]["path"] == "wait"
