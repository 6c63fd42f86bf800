"""`x-idempotency-key` for the write routes: claim the key, or answer what it answered before."""

from __future__ import annotations

from typing import Any

import trio
from quart import Response

from ..actors.ari_writer import IdempotencyClaim
from ..domain import idempotency as idem
from ..domain.errors import ApiError
from ..storage import idempotency
from .envelope import replay
from .gates import context


async def claim_or_replay(property_id: int, route: str, key: str | None,
                          payload: Any) -> IdempotencyClaim | Response | None:
    """None without a key; the stored answer for a repeat of a finished request (409 for a
    different body or one still running); else the claim, finished with the answer in the
    write's own transaction."""
    if key is None:
        return None
    ctx = context()
    stored = await idempotency.claim(ctx.db, property_id, route, key, idem.body_hash(payload), ctx.clock.now(),
                                     idem.RETENTION, idem.STALE_IN_FLIGHT)
    if stored is None:
        return IdempotencyClaim(route, key)
    if not stored.same_body:
        raise ApiError("IDEMPOTENCY_KEY_REUSED", "this idempotency key was used with another body")
    if stored.in_flight or stored.status is None or stored.response is None:
        raise ApiError("IDEMPOTENCY_IN_FLIGHT", "a request with this idempotency key is still running")
    return replay(stored.status, stored.response)


async def release(property_id: int, claim: IdempotencyClaim | None) -> None:
    """Free a claim whose request wrote nothing, so a retry runs it again."""
    if claim is not None:
        with trio.CancelScope(shield=True):
            await idempotency.release(context().db, property_id, claim.route, claim.key)
