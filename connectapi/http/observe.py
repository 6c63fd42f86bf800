"""What each answered request leaves behind, whoever asked: one structured log line and its
metrics (the /metrics route that serves them is the operator's: admin/metrics.py).

The line names the route's template, not the path with its query, and never a key or a
secret: those travel in headers, which are not logged.
"""

from __future__ import annotations

import logging
import time

from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from quart import Response
from quart.wrappers import Request

if TYPE_CHECKING:
    from quart.ctx import _AppCtxGlobals

from ..metrics import LATENCY, RATE_LIMITED, REQUESTS
from ..tracing import spans

log = logging.getLogger("connectapi.access")

# Labels and log fields come from fixed sets: a client's own method or path copied into a
# label made a new time series per request (a 3,000-character method grew /metrics without
# bound, on routes that charge no budget).
KNOWN_METHODS = spans.KNOWN_METHODS
LOGGED_TEXT_LIMIT = 200


def method_label(method: str) -> str:
    return method if method in KNOWN_METHODS else "other"


def clipped(text: str, limit: int = LOGGED_TEXT_LIMIT) -> str:
    """What a log line may copy of a client's text: bounded, and printable."""
    cut = text[:limit].encode("unicode_escape").decode("ascii")
    return cut + "..." if len(text) > limit else cut


def started(store: _AppCtxGlobals) -> None:
    """`store`: the request's `g` (the object, not its proxy)."""
    store.started = time.perf_counter()


def answered(store: _AppCtxGlobals, req: Request, response: Response) -> None:
    elapsed = time.perf_counter() - store.get("started", time.perf_counter())
    rule = req.url_rule
    route = rule.rule if rule is not None else "unmatched"  # a bounded set of labels
    status = response.status_code
    method = method_label(req.method)
    REQUESTS.labels(method, route, str(status)).inc()
    LATENCY.labels(method, route).observe(elapsed)
    scope = store.get("error_scope")
    if status == 429 and scope:
        RATE_LIMITED.labels(scope).inc()
    caller = store.get("caller")
    request_id = store.get("request_id")
    error_code = store.get("error_code")
    line = {"requestId": request_id, "method": method, "route": route, "status": status,
            "durationMs": round(elapsed * 1000, 2), "propertyId": caller.property.id if caller else None}
    if error_code:
        line["code"] = error_code
    if scope:
        line["scope"] = scope
    if spans.enabled():
        _name_the_span(caller, request_id, error_code)
    log.info("request", extra=line)


def _name_the_span(caller: Any, request_id: str | None, error_code: str | None) -> None:
    """The request's server span learns whose request it was (ids only, never the key)."""
    current = trace.get_current_span()
    current.set_attribute("connectapi.request_id", request_id or "")
    if caller is not None:
        current.set_attribute("connectapi.property_id", caller.property.id)
        current.set_attribute("connectapi.key_id", caller.key.id)
        current.set_attribute("connectapi.key_mode", caller.key.mode)
    if error_code:
        current.set_attribute("connectapi.error_code", error_code)

