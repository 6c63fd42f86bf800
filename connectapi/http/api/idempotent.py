"""`x-idempotency-key` for the booking routes, and the answer to a key held already for
every write route (an ARI write claims its key in its own statement: ari_writer.py).

A booking request with a key claims it (or gets the stored answer of an earlier one), runs, and
its outcome is recorded with the key in the write's own transaction: every outcome `run`
answers is recorded under its claim by then (the writer's transaction, or the route's
own statement where no write was needed). One release rule: a request that ends without
an outcome releases its claim, so a retry runs again, unless the write may yet commit
(its ask timed out, or the request was cancelled): then the claim stays, and goes stale
after two minutes. A request answered costs no release.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import trio
from quart import Response

from ...actors.messages.property_writer import IdempotencyClaim, StoredOutcome, outcome_from_stored
from ...domain import idempotency as idem
from ...domain.errors import ApiError
from ...engine import AskTimeout
from ...storage import idempotency
from ..context import context
from ..envelope import refused, replay

O = TypeVar("O", bound=StoredOutcome)
Run = Callable[[IdempotencyClaim | None], Awaitable[O]]
Render = Callable[[Any], Response]


async def idempotent_write(property_id: int, route: str, key: str | None, payload: Any, run: Run[O],
                           render: Render) -> Response:
    """`run` the request with its claim (None without a key) and `render` its outcome; a
    repeat of a finished request renders the stored outcome again, marked as a replay.
    `render` answers an outcome, raising the ApiError of a refusal."""
    claim = None
    if key is not None:
        stored = await _claim(property_id, route, key, payload, render)
        if isinstance(stored, Response):
            return stored
        claim = stored
    try:
        done = await run(claim)
    except (AskTimeout, trio.Cancelled):
        raise  # the write may yet commit: the claim stays until it does, or goes stale
    except BaseException:
        if claim is not None:
            with trio.CancelScope(shield=True):
                await idempotency.release(context().db, property_id, claim.route, claim.key)
        raise
    return render(done)


async def _claim(property_id: int, route: str, key: str, payload: Any,
                 render: Render) -> IdempotencyClaim | Response:
    ctx = context()
    stored = await idempotency.claim(ctx.db, property_id, route, key, idem.body_hash(payload), ctx.clock.now(),
                                     idem.RETENTION, idem.STALE_IN_FLIGHT)
    if stored is None:
        return IdempotencyClaim(route, key)
    return answer_kept(stored, property_id, render)


def answer_kept(stored: idempotency.Stored, property_id: int, render: Render) -> Response:
    """The answer to a request whose key an earlier one holds: its outcome again, marked as
    a replay; or the 409s of a request still in flight and of a key used with another body."""
    if not stored.same_body:
        raise ApiError("IDEMPOTENCY_KEY_REUSED", "this idempotency key was used with another body")
    if stored.in_flight or stored.response is None:
        raise ApiError("IDEMPOTENCY_IN_FLIGHT", "a request with this idempotency key is still running")
    outcome = outcome_from_stored(stored.response, property_id)
    if outcome is None:
        assert stored.status is not None, "an answer kept by an older version keeps its status"
        return replay(stored.status, stored.response)
    try:
        response = render(outcome)
    except ApiError as err:
        response = refused(err)
    response.headers["X-Idempotent-Replay"] = "true"
    return response
