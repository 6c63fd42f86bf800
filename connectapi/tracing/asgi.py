"""The server span of each HTTP request: OpenTelemetry's ASGI middleware, shown only the route.

The middleware is the contrib one (it imports no asyncio, and starts and ends its span in
the task hypercorn runs the request in); what it is shown is not the request as sent: the
path is the route's template (a console setup link carries its token in the path), the
query and the client's address are left out, and of the headers it sees only those
SHOWN_HEADERS names, so none is captured whatever OTEL_INSTRUMENTATION_HTTP_CAPTURE_* says
(a key travels in a header). The app itself gets the request untouched. The property and
key a request was answered for are added by the front once the gates know them
(http/observe.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map
from werkzeug.routing.exceptions import RequestRedirect

from . import spans

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]

_AS_SENT = "connectapi.scope_as_sent"
# What the middleware is shown of a request's headers: the trace it continues (its
# `traceparent`; a caller's `tracestate` and baggage are not carried on to the channel
# manager), the host and the client's software. A key, a token or a cookie never.
SHOWN_HEADERS = frozenset({b"host", b"user-agent", b"traceparent"})
UNMATCHED = "unmatched"


def route_of(routes: Map, method: str, path: str) -> str:
    """The template of the rule that answers `path` (UNMATCHED when none does)."""
    adapter = routes.bind("localhost")
    try:
        rule, _ = adapter.match(path, method, return_rule=True)
    except RequestRedirect:
        return UNMATCHED
    except HTTPException:  # 404, 405
        return UNMATCHED
    return str(rule.rule)


class TracedApp:
    """`app` under a server span per HTTP request (other scopes pass as they are)."""

    def __init__(self, app: ASGIApp, routes: Map) -> None:
        # Imported here: with tracing off the middleware is never loaded.
        from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

        self._app = app
        self._routes = routes
        self._middleware = OpenTelemetryMiddleware(
            self._as_sent, default_span_details=_span_details, tracer_provider=spans.provider(),
            exclude_spans=["receive", "send"],
        )
        # An empty list is read as "from the environment": none, set after.
        self._middleware.http_capture_headers_server_request = None
        self._middleware.http_capture_headers_server_response = None

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        route = route_of(self._routes, scope.get("method", "GET"), scope.get("path", "/"))
        shown = dict(scope)
        # Nor the caller's address: a console user's is a person's.
        shown.update(path=route, raw_path=route.encode(), query_string=b"", route=route, client=None,
                     headers=[(name, value) for name, value in scope.get("headers", ()) if name in SHOWN_HEADERS])
        shown[_AS_SENT] = scope
        await self._middleware(shown, receive, send)

    async def _as_sent(self, shown: Scope, receive: Any, send: Any) -> None:
        await self._app(shown[_AS_SENT], receive, send)


def _span_details(scope: Scope) -> tuple[str, dict[str, Any]]:
    method = scope.get("method") if scope.get("method") in spans.KNOWN_METHODS else "HTTP"
    return f"{method} {scope['route']}", {"http.route": scope["route"]}


def traced_app(app: Any) -> Any:
    """A Quart app, under server spans when tracing is on (itself when off: nothing added)."""
    return TracedApp(app, app.url_map) if spans.enabled() else app
