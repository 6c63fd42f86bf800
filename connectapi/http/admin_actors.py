"""Admin routes about the service's own actors: which are down (their crash budget spent),
and starting one again once its cause is dealt with."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from quart import Blueprint, Response

from ..domain.errors import ApiError
from ..domain.paths import ADMIN_PREFIX
from ..engine import Down
from .envelope import ok
from .gates import context

blueprint = Blueprint("admin_actors", __name__, url_prefix=ADMIN_PREFIX)


def down_view(down: Down) -> dict[str, Any]:
    ctx = context()
    since = ctx.clock.now() - timedelta(seconds=max(0.0, ctx.clock.monotonic() - down.since))
    return {"actor": down.name, "kind": down.kind, "reason": down.reason, "crashes": down.crashes,
            "since": since, "degraded": down.degraded}


@blueprint.get("/actors")
async def list_actors() -> Response:
    ctx = context()
    return ok({"down": [down_view(d) for d in sorted(ctx.down(), key=lambda d: d.name)],
               "live": {"writer": len(ctx.writers)}})


@blueprint.post("/actors/<name>/revive")
async def revive(name: str) -> Response:
    """A fresh start with a fresh crash budget, on the mailbox its users hold."""
    for supervisor in context().supervisors:
        if await supervisor.revive(name):
            return ok({"actor": name, "revived": True})
    raise ApiError("ACTOR_NOT_DOWN", f"no actor {name[:80]!r} is down")
