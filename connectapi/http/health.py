"""GET /healthz (the process is up) and GET /readyz (the record is reachable and migrated)."""

from __future__ import annotations

import logging

import trio
from quart import Blueprint, Response

from ..domain.errors import ApiError
from ..storage.database import StorageUnavailable
from ..storage.migrations import is_migrated
from .envelope import ok
from .gates import context

blueprint = Blueprint("health", __name__)
log = logging.getLogger("connectapi.http")
READY_TIMEOUT = 2.0


@blueprint.get("/healthz")
async def healthz() -> Response:
    return ok({"status": "up"})


@blueprint.get("/readyz")
async def readyz() -> Response:
    ready = False
    with trio.move_on_after(READY_TIMEOUT):
        try:
            ready = await is_migrated(context().db)
        except (StorageUnavailable, OSError) as exc:
            log.warning("readiness check failed: %s", exc)
    if not ready:
        raise ApiError("NOT_READY", "the record is not reachable or not migrated")
    return ok({"status": "ready"})
