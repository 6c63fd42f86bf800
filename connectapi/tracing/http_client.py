"""The channel manager's calls as client spans: a transport of ours around the client's own.

Not the contrib httpx instrumentation: it records an error's text, and an httpx error may
quote a header's value (the channel manager's key travels in `user-api-key`); and it reads
header capture from the environment. This span has the method, the host, the port, the
path (never the query), the status, and an error named by its type; the call carries the
span's `traceparent` and nothing else of the trace.
"""

from __future__ import annotations

from types import TracebackType

import httpx
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from . import spans

_PROPAGATOR = TraceContextTextMapPropagator()
DEFAULT_PORTS = {"http": 80, "https": 443}


class TracedTransport(httpx.AsyncBaseTransport):
    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        method = request.method if request.method in spans.KNOWN_METHODS else "HTTP"
        with spans.span(method, kind=spans.CLIENT, attributes={
                "http.request.method": method, "server.address": url.host,
                "server.port": url.port or DEFAULT_PORTS.get(url.scheme, 0), "url.path": url.path}) as called:
            _PROPAGATOR.inject(request.headers)
            response = await self._inner.handle_async_request(request)
            called.set_attribute("http.response.status_code", response.status_code)
            if response.status_code >= 400:
                spans.failed(called, str(response.status_code))
            return response

    async def __aenter__(self) -> TracedTransport:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, kind: type[BaseException] | None = None, exc: BaseException | None = None,
                        tb: TracebackType | None = None) -> None:
        await self._inner.__aexit__(kind, exc, tb)

    async def aclose(self) -> None:
        await self._inner.aclose()


def trace_calls(http: httpx.AsyncClient) -> None:
    """Each call of `http` a client span, when tracing is on (nothing changes when off).
    The transports httpx chose (its own, and a proxy's from HTTP(S)_PROXY) are wrapped, not
    replaced: passing a transport of ours would have it ignore the environment's proxy.
    httpx's private fields, held by its pinned version (pyproject: <0.29) and a test."""
    if not spans.enabled():
        return
    http._transport = TracedTransport(http._transport)
    http._mounts = {pattern: None if found is None else TracedTransport(found)
                    for pattern, found in http._mounts.items()}
