"""GET /batches/{batchId}: what became of one write; with `?wait=N`, once it is done or N
seconds have passed, whichever is first (issue 45: one request, not a poll every 15 s)."""

from __future__ import annotations

import uuid

from quart import Blueprint, Response, request

from ...domain.errors import ApiError
from ...domain.refusals import fields_of
from ...storage import ari, channel_refusals
from ...storage.channel_refusals import BatchRefusal
from ..context import context
from ..envelope import ok
from ..shared.looking_again import look_until
from .answers import BatchAnswer, ChannelRefusal
from .gates import caller, rule

blueprint = Blueprint("connect_batches", __name__)


@blueprint.get("/batches/<batch_id>")
@rule(scope="ari:read", product="channelManager")
async def read_batch(batch_id: str) -> Response:
    not_found = ApiError("BATCH_NOT_FOUND", "no such batch on this property")
    wait = _wait()
    try:
        wanted = uuid.UUID(batch_id)
    except ValueError:
        raise not_found from None
    found = await _done_or_waited(caller().property.id, wanted, wait)
    if found is None:
        raise not_found
    pending = found.pending_cells
    db = context().db
    # What the channel manager refused of the batch's cells (they are still pending): one
    # entry per room type or rate plan, field and message, beside the write's own refusals.
    refused = [_channel_refusal(found.resource, r, field, messages)
               for r in await channel_refusals.of_batch(db, found.resource, found.id)
               for field, messages in fields_of(r.refusal).items()] if found.refused_cells else []
    answer: BatchAnswer = {
        "batchId": str(found.id),
        "resource": found.resource,
        "createdAt": found.created_at,
        "requestedCells": found.requested_cells,
        "acceptedCells": found.accepted_cells,
        "noopCells": found.noop_cells,
        "rejected": [*found.rejected, *refused],
        "status": "pending" if pending else "completed",
        "pendingCells": pending,
        # The channel manager's last error for the property; cleared by a successful push.
        # While its cells wait refused, it says so even after a later call went through.
        "lastError": found.cm_last_error or (refused[0]["error"] if refused else None),
        # The task ids of the channel manager's calls that carried the batch's cells.
        "channelTasks": [{"taskId": t.task_id, "kind": t.kind, "sentAt": t.sent_at} for t in found.channel_tasks],
    }
    return ok(answer)


MAX_WAIT = 30
# A push by another process is seen by looking again this often (this process's pushers
# say so at once: Wakeups.next_time).
LOOK_AGAIN = 0.5


def _wait() -> int:
    """`wait`: whole seconds from 0 to MAX_WAIT (0, or none: answer at once)."""
    text = request.args.get("wait")
    if text is None:
        return 0
    if not (text.isascii() and text.isdigit() and len(text) <= 2 and int(text) <= MAX_WAIT):
        raise ApiError("VALIDATION", "query does not match the schema",
                       [{"path": "wait", "message": f"must be whole seconds from 0 to {MAX_WAIT}"}])
    return int(text)


async def _done_or_waited(property_id: int, batch: uuid.UUID, wait: int) -> ari.BatchView | None:
    """The batch once none of its cells is pending, or as it is after `wait` seconds (or
    when the service stops: a waiting request is answered, not cut off)."""
    return await look_until("push", property_id, wait, LOOK_AGAIN,
                            lambda: ari.get_batch(context().db, property_id, batch),
                            lambda found: found is None or not found.pending_cells)


def _channel_refusal(resource: str, r: BatchRefusal, field: str, messages: list[str]) -> ChannelRefusal:
    """One entry per room type (availability) or rate plan, field and message, its members in
    the answer's order."""
    error = f"refused by the channel manager: {field}: {', '.join(messages)}"
    if resource == "availability":
        return {"cells": r.cells, "error": error, "by": "channelManager", "roomTypeId": r.entity_id,
                "field": field, "messages": messages, "from": r.first.isoformat(), "to": r.last.isoformat()}
    return {"cells": r.cells, "error": error, "by": "channelManager", "ratePlanId": r.entity_id,
            "field": field, "messages": messages, "from": r.first.isoformat(), "to": r.last.isoformat()}
