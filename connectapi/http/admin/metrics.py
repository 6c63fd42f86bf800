"""GET /metrics (the operator token): the service's Prometheus metrics, with the record's
gauges read when scraped. What each request adds to them is observe.py's."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from quart import Blueprint, Response

from ...metrics import DIRTY_CELLS, LIVE_ACTORS, REGISTRY, WEBHOOK_BACKLOG
from ...storage import webhooks
from ...storage.pushes import dirty_totals
from ..context import context
from .token import check_admin_token

blueprint = Blueprint("admin_metrics", __name__)


@blueprint.get("/metrics")
async def metrics() -> Response:
    await check_admin_token()
    ctx = context()
    db = ctx.db
    LIVE_ACTORS.labels("writer").set(len(ctx.properties.writers))
    for resource, count in (await dirty_totals(db)).items():
        DIRTY_CELLS.labels(resource).set(count)
    WEBHOOK_BACKLOG.set(await webhooks.backlog(db))
    return Response(generate_latest(REGISTRY), content_type=CONTENT_TYPE_LATEST)
