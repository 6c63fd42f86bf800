"""GET /sync: whether what was written has reached the channels."""

from __future__ import annotations

from quart import Blueprint, Response

from ...storage import pushes
from ..envelope import ok
from ..gates import caller, context, rule

blueprint = Blueprint("connect_sync", __name__)
FAILING_AFTER = 3  # failed calls in a row before a backing-off pipe is reported FAILING


@blueprint.get("/sync")
@rule(scope="ari:read", product="channelManager")
async def read_sync() -> Response:
    ctx, prop = context(), caller().property
    # All of it from the record, written by whichever process pushes the property: every
    # process answers alike.
    view = await pushes.sync_view(ctx.db, prop.id)
    dirty = view["dirty"]
    next_attempt = view["next_attempt_at"]
    if next_attempt is not None and next_attempt <= ctx.clock.now():
        next_attempt = None
    if view["failures"] >= FAILING_AFTER:
        state = "FAILING"
    elif next_attempt is not None and view["last_outcome"] == "failed":
        state = "BACKING_OFF"
    elif dirty["availability"]:
        state = "PENDING"
    else:
        state = "IN_SYNC"
    newest = view["newest_pending"]
    return ok({
        "inventory": {"state": state, "dirtyCells": dirty["availability"]},
        "rates": {"dirtyCells": dirty["rates"]},
        "restrictions": {"dirtyCells": dirty["restrictions"]},
        "projector": {
            "lastPushAt": view["last_push_at"],
            "lastOutcome": view["last_outcome"],
            "lastError": view["last_error"],
            "nextAttemptAt": next_attempt,
        },
        "newestPendingBatch": None if newest is None else {"batchId": str(newest[0]), "pendingCells": newest[1]},
    })
