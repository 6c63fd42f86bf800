"""http/serving/sends.py: the one bounded-send policy, which the ASGI layer's sends and the
connection guard's socket writes both go through."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from connectapi.http.serving.sends import STOPPING_SEND_LIMIT, SendBounds


async def test_a_send_outlives_the_requests_cancellation_but_not_its_bound(
        autojump_clock: trio.testing.MockClock) -> None:
    sends = SendBounds()
    started = trio.current_time()
    with trio.CancelScope() as request:
        request.cancel()
        with sends.bounded(5.0) as sending:
            await trio.sleep(60)  # a client that does not read
    assert sending.cancelled_caught
    assert trio.current_time() - started == pytest.approx(5.0)


async def test_once_stopped_every_send_has_a_second_left(autojump_clock: trio.testing.MockClock) -> None:
    sends = SendBounds()
    ended: list[float] = []

    async def send() -> None:
        with sends.bounded(30.0):
            await trio.sleep(60)
        ended.append(trio.current_time())

    async with trio.open_nursery() as nursery:
        nursery.start_soon(send)
        await trio.sleep(10)
        stopped_at = trio.current_time()
        sends.stop()
    assert ended == [pytest.approx(stopped_at + STOPPING_SEND_LIMIT)]  # the send under way
    with sends.bounded(30.0) as later:  # and one begun after
        await trio.sleep(60)
    assert later.cancelled_caught
    assert trio.current_time() == pytest.approx(stopped_at + 2 * STOPPING_SEND_LIMIT)
