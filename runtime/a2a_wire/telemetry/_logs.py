"""Trace ids on log records, so that a log line can be found from its trace and back.

The filter reads the span current where the record is logged; without ``opentelemetry-api`` or
outside a span it leaves the record as it is.
"""

from __future__ import annotations

import logging

try:
    from opentelemetry import trace as _trace
except ImportError:  # the telemetry extra is not installed
    _trace = None  # type: ignore[assignment]

__all__ = ["TraceContextFilter"]


class TraceContextFilter(logging.Filter):
    """Sets ``record.trace_id`` and ``record.span_id`` (32 and 16 hex digits) inside a span.

    Add it to a handler (``handler.addFilter(TraceContextFilter())``); ``a2a-wire serve`` does.
    Records are never dropped.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Add the current span's ids to ``record``, if a valid span is current."""
        if _trace is not None:
            ids = _trace.get_current_span().get_span_context()
            if ids.is_valid:
                record.trace_id = f"{ids.trace_id:032x}"
                record.span_id = f"{ids.span_id:016x}"
        return True
