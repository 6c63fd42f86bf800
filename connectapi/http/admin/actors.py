"""Admin routes about the service's own actors: which are down (their crash budget spent),
and starting one again once its cause is dealt with."""

from __future__ import annotations

import os
from datetime import timedelta

import psutil
from quart import Blueprint, Response

from ...domain.errors import ApiError
from ...domain.paths import ADMIN_PREFIX
from ...engine import Down
from ..context import context
from ..envelope import ok
from .answers import ActorDownView, ActorsAnswer, ServingProcesses

blueprint = Blueprint("admin_actors", __name__, url_prefix=ADMIN_PREFIX)


def down_view(down: Down) -> ActorDownView:
    ctx = context()
    since = ctx.clock.now() - timedelta(seconds=max(0.0, ctx.clock.monotonic() - down.since))
    return {"actor": down.name, "kind": down.kind, "reason": down.reason, "crashes": down.crashes,
            "since": since, "degraded": down.degraded}


@blueprint.get("/actors")
async def list_actors() -> Response:
    ctx = context()
    answer: ActorsAnswer = {"down": [down_view(d) for d in sorted(ctx.operation.down(), key=lambda d: d.name)],
                            "live": {"writer": len(ctx.properties.writers)}, "workers": serving_processes()}
    return ok(answer)


# How a worker of `serve --workers N` is started (connectapi/workers.py): by its parent,
# with the parent's end of their socket pair.
WORKER_FLAG = "--parent-fd"


def serving_processes() -> ServingProcesses:
    """The processes serving beside this one: the workers of its `serve --workers N`
    parent (a reload briefly counts the new worker and the old), or this process alone.
    A worker of the one-file executable is two processes, the file's loader and its Python
    child, both started with the worker's flags: the one that serves has no such child."""
    me = psutil.Process()
    pids = [me.pid]
    try:
        if _is_worker(me):
            top = me
            while (up := top.parent()) is not None and _is_worker(up):
                top = up
            supervisor = top.parent()
            if supervisor is not None:
                pids = sorted(p.pid for p in supervisor.children(recursive=True)
                              if _is_worker(p) and not any(_is_worker(c) for c in p.children()))
    except psutil.Error:
        pass  # a process gone meanwhile: this one answers for itself
    return {"count": len(pids), "pids": pids, "answeredBy": os.getpid()}


def _is_worker(process: psutil.Process) -> bool:
    try:
        return WORKER_FLAG in process.cmdline() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@blueprint.post("/actors/<name>/revive")
async def revive(name: str) -> Response:
    """A fresh start with a fresh crash budget, on the mailbox its users hold."""
    for supervisor in context().operation.supervisors:
        if await supervisor.revive(name):
            return ok({"actor": name, "revived": True})
    raise ApiError("ACTOR_NOT_DOWN", f"no actor {name[:80]!r} is down")
