"""GET /sync: whether what was written has reached the channels."""

from __future__ import annotations

from quart import Blueprint, Response

from ...domain.sync_state import pending_next_attempt, push_state
from ...storage import pushes
from ..context import context
from ..envelope import ok
from .answers import SyncAnswer
from .gates import caller, rule

blueprint = Blueprint("connect_sync", __name__)


@blueprint.get("/sync")
@rule(scope="ari:read", product="channelManager")
async def read_sync() -> Response:
    ctx, prop = context(), caller().property
    # All of it from the record, written by whichever process pushes the property: every
    # process answers alike.
    view = await pushes.sync_view(ctx.db, prop.id)
    dirty, refused = view.dirty, view.refused
    now = ctx.clock.now()
    state = push_state(view.failures, view.next_attempt_at, view.last_outcome, dirty["availability"], now,
                       sum(refused.values()))
    next_attempt = pending_next_attempt(view.next_attempt_at, now)
    newest = view.newest_pending
    answer: SyncAnswer = {
        # refusedCells: of the dirty cells, those the channel manager refused (offered again
        # with backoff); the state is REFUSED while any wait.
        "inventory": {"state": state, "dirtyCells": dirty["availability"], "refusedCells": refused["availability"]},
        "rates": {"dirtyCells": dirty["rates"], "refusedCells": refused["rates"]},
        "restrictions": {"dirtyCells": dirty["restrictions"], "refusedCells": refused["restrictions"]},
        "refusedCells": sum(refused.values()),
        "projector": {
            "lastPushAt": view.last_push_at,
            "lastOutcome": view.last_outcome,
            "lastError": view.last_error,
            "nextAttemptAt": next_attempt,
        },
        "newestPendingBatch": None if newest is None else {"batchId": str(newest[0]), "pendingCells": newest[1]},
    }
    return ok(answer)
