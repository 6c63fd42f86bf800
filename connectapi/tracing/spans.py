"""The house's spans: one tracer for the process, or none, and the few ways code opens a span.

Off (no OTLP endpoint set) there is no tracer: `span` yields a span that records nothing,
`carried` and `traceparent` answer None, and nothing is exported. A span is started and
ended in one task (hypercorn #74, opentelemetry-python #2606: context variables do not
follow work handed to another task); work handed over (an ask to an actor, a batch pushed
later, a webhook event sent later) carries the span's context and opens a span of its own
under it, or linked to it.

No attribute carries an API key, a secret, a URL's query or a guest's data: ids, counts,
statuses and route templates only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import ContextManager

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.propagation import set_span_in_context
from opentelemetry.util.types import AttributeValue

_tracer: trace.Tracer | None = None
_provider: trace.TracerProvider | None = None

NOT_RECORDING: Span = NonRecordingSpan(trace.INVALID_SPAN_CONTEXT)
# The HTTP methods a name or a label may copy; any other is named as one word, so that a
# client's own method never makes a new name.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
SERVER, CLIENT, INTERNAL = SpanKind.SERVER, SpanKind.CLIENT, SpanKind.INTERNAL


def enable(provider: trace.TracerProvider) -> None:
    global _tracer, _provider
    _provider = provider
    _tracer = provider.get_tracer("connectapi")


def disable() -> None:
    global _tracer, _provider
    _tracer = _provider = None


def enabled() -> bool:
    return _tracer is not None


def provider() -> trace.TracerProvider | None:
    """The process's provider, for the contrib instrumentations (None: off)."""
    return _provider


class _Off:
    """The block's span when tracing is off: one shared object, nothing allocated."""

    def __enter__(self) -> Span:
        return NOT_RECORDING

    def __exit__(self, *_: object) -> None:
        return None


_OFF = _Off()


def span(name: str, *, kind: SpanKind = INTERNAL, attributes: Mapping[str, AttributeValue] | None = None,
         parent: SpanContext | None = None, links: Iterable[SpanContext] = ()) -> ContextManager[Span]:
    """A span current for the block: a child of the current span, or of `parent` (work
    handed over from another task), linked to `links` (the several that one piece of work
    serves). An exception leaving the block is recorded on it. Off: costs a call."""
    if _tracer is None:
        return _OFF
    return _current(_tracer, name, kind, attributes, parent, links)


@contextmanager
def _current(tracer: trace.Tracer, name: str, kind: SpanKind, attributes: Mapping[str, AttributeValue] | None,
             parent: SpanContext | None, links: Iterable[SpanContext]) -> Iterator[Span]:
    with _opened(tracer, name, kind, attributes, parent, links) as opened, \
            trace.use_span(opened, record_exception=False, set_status_on_exception=False):
        yield opened


def beside(name: str, *, parent: SpanContext | None,
           attributes: Mapping[str, AttributeValue] | None = None) -> ContextManager[Span]:
    """A span for the block, under `parent`, that is not made current: one of several pieces
    of work a block does at once for different askers (a batch of writes, each under its own
    request's span), while the block's own spans stay under the block's. Off: costs a call."""
    if _tracer is None:
        return _OFF
    return _opened(_tracer, name, INTERNAL, attributes, parent, ())


@contextmanager
def _opened(tracer: trace.Tracer, name: str, kind: SpanKind, attributes: Mapping[str, AttributeValue] | None,
            parent: SpanContext | None, links: Iterable[SpanContext]) -> Iterator[Span]:
    """A span for the block, ended with it; an exception leaving the block is recorded on it."""
    context = set_span_in_context(NonRecordingSpan(parent)) if parent is not None else None
    # Not the SDK's record_exception: an exception's text may hold what a span must not (a
    # record's DETAIL quotes a row, a guest's name in it; an HTTP error a header's value).
    opened = tracer.start_span(name, context=context, kind=kind, attributes=attributes,
                               links=[Link(c) for c in links if c.is_valid], record_exception=False,
                               set_status_on_exception=False)
    try:
        yield opened
    except Exception as exc:
        failed(opened, type(exc).__name__)
        raise
    finally:
        opened.end()


def failed(opened: Span, what: str) -> None:
    """The span ended in an error, named by its kind alone (an exception's type, a status)."""
    opened.set_status(Status(StatusCode.ERROR, what))
    opened.set_attribute("error.type", what)


def outside_any() -> None:
    """From here on this task is in no span (a long-lived task spawned from inside one: its
    work is not the spawner's); its own copy of the context only, as trio gives each task."""
    if _tracer is not None:
        otel_context.attach(otel_context.Context())


def carried() -> SpanContext | None:
    """The current span's context, to hand with work to another task; None when off or
    outside any span."""
    if _tracer is None:
        return None
    found = trace.get_current_span().get_span_context()
    return found if found.is_valid else None


def traceparent() -> str | None:
    """The current span as a W3C traceparent, to keep in the record beside the work it
    caused (a batch, a webhook event); None when off or outside any span."""
    found = carried()
    if found is None:
        return None
    return _traceparent(found)


def traceparent_of(opened: Span) -> str | None:
    """A span's W3C traceparent (one opened `beside`); None when it records nothing."""
    found = opened.get_span_context()
    return _traceparent(found) if found.is_valid else None


def _traceparent(found: SpanContext) -> str:
    return f"00-{found.trace_id:032x}-{found.span_id:016x}-{int(found.trace_flags):02x}"


def trace_id() -> str | None:
    """The current span's trace id (32 hex digits), to keep where an operator looks (a
    delivery's attempt); None when off or outside any span."""
    found = carried()
    return None if found is None else f"{found.trace_id:032x}"


def from_traceparent(text: str | None) -> SpanContext | None:
    """The span a kept traceparent names (None: none kept, or not one)."""
    if not text:
        return None
    parts = text.split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or len(parts[2]) != 16:
        return None
    try:
        found = SpanContext(int(parts[1], 16), int(parts[2], 16), is_remote=True,
                            trace_flags=TraceFlags(int(parts[3], 16) & 0xFF))
    except ValueError:
        return None
    return found if found.is_valid else None


def trace_id_of(text: str | None) -> str | None:
    """The trace id a kept traceparent names, as an operator's tools show it (32 hex digits)."""
    found = from_traceparent(text)
    return None if found is None else f"{found.trace_id:032x}"


def note(attributes: Mapping[str, AttributeValue]) -> None:
    """What the current span learnt (counts, ids), when tracing is on."""
    if _tracer is not None:
        trace.get_current_span().set_attributes(attributes)


def event(name: str, attributes: Mapping[str, AttributeValue] | None = None) -> None:
    """A moment in the current span (a wait, a deferral), when tracing is on."""
    if _tracer is not None:
        trace.get_current_span().add_event(name, attributes)
