"""Log lines written inside a span name it: `trace_id` and `span_id`, as an operator's
tracing tools show them, so a line found in the logs leads to its trace and back."""

from __future__ import annotations

import logging

from opentelemetry import trace

from . import spans


class TraceFields(logging.Filter):
    """Adds the current span's ids to each record (nothing when tracing is off or no span
    is current); the JSON formatter writes them as fields."""

    def filter(self, record: logging.LogRecord) -> bool:
        if spans.enabled():
            found = trace.get_current_span().get_span_context()
            if found.is_valid:
                record.trace_id = f"{found.trace_id:032x}"
                record.span_id = f"{found.span_id:016x}"
        return True
