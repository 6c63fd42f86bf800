"""GET /healthz (the process is up) and GET /readyz (ready to be sent requests: the record
reachable and migrated, no actor down, not stopping)."""

from __future__ import annotations

import logging

import trio
from quart import Blueprint, Response

from ... import __version__
from ...domain.errors import ApiError
from ...storage.database import StorageError
from ...storage.migrations import is_migrated
from ..context import context
from ..envelope import ok

blueprint = Blueprint("health", __name__)
log = logging.getLogger("connectapi.http")
READY_TIMEOUT = 2.0


@blueprint.get("/healthz")
async def healthz() -> Response:
    return ok({"status": "up", "version": __version__})


@blueprint.get("/readyz")
async def readyz() -> Response:
    ctx = context()
    if ctx.stopping.is_set():
        raise ApiError("NOT_READY", "the service is stopping", {"stopping": True})
    record = "unreachable"
    with trio.move_on_after(READY_TIMEOUT):
        try:
            record = "ready" if await is_migrated(ctx.db) else "not migrated"
        except (StorageError, OSError) as exc:
            log.warning("readiness check failed: %s", exc)
    down = [{"actor": d.name, "reason": d.reason, "crashes": d.crashes, "degraded": d.degraded}
            for d in sorted(ctx.operation.down(), key=lambda d: d.name)]
    if record != "ready" or down:
        reasons = ([] if record == "ready" else [f"the record is {record}"]) + [
            f"{d['actor']} is down" for d in down]
        raise ApiError("NOT_READY", "; ".join(reasons), {"record": record, "down": down})
    return ok({"status": "ready", "record": record, "down": []})
