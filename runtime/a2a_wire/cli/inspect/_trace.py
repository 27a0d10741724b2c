"""The trace context of the inspector's exchanges: one W3C trace per operation of the page.

Each call or stream the page asks for gets a fresh trace id (:func:`operation`); every request
the inspector's client sends for it carries a ``traceparent`` of that trace
(:func:`traceparent`), sampled, so an agent that traces records it under an id the page shows. When an OpenTelemetry SDK is active in the inspector's process,
the client's own span joins the same trace: the operation's context is made current for it. The
trace id shown for a request is always read back from the header that was sent
(:func:`trace_id_of`). docs/inspector.md, "Trace ids".
"""

from __future__ import annotations

import contextlib
import re
import secrets
from collections.abc import Callable, Iterator
from contextvars import ContextVar

from a2a_wire.telemetry import AVAILABLE

__all__ = ["TRACEPARENT", "operation", "trace_id_of", "traceparent"]

TRACEPARENT = "traceparent"
_CURRENT: ContextVar[str] = ContextVar("a2a_wire_inspector_trace", default="")
_HEADER = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}\Z")
_ZERO_TRACE = "0" * 32


def _random_hex(size: int) -> str:
    while True:  # an all-zero id is invalid (W3C Trace Context, section 3.2.2)
        value = secrets.token_hex(size)
        if value.strip("0"):
            return value


def traceparent() -> str | None:
    """A ``traceparent`` of the current operation with a fresh parent id, or ``None``."""
    trace_id = _CURRENT.get()
    return f"00-{trace_id}-{_random_hex(8)}-01" if trace_id else None


def trace_id_of(header: str | None) -> str | None:
    """The trace id a ``traceparent`` header value carries (version 00), or ``None``."""
    found = _HEADER.match((header or "").strip().lower())
    if found is None or found.group(1) == _ZERO_TRACE or not found.group(2).strip("0"):
        return None
    return found.group(1)


def _attach(trace_id: str) -> Callable[[], None] | None:
    """Make ``trace_id`` the parent of the client's spans; how to undo it (with OpenTelemetry)."""
    if not AVAILABLE:
        return None
    from opentelemetry import context, trace

    parent = trace.SpanContext(
        int(trace_id, 16),
        int(_random_hex(8), 16),
        is_remote=True,
        trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
    )
    token = context.attach(trace.set_span_in_context(trace.NonRecordingSpan(parent)))
    return lambda: context.detach(token)


@contextlib.contextmanager
def operation() -> Iterator[str]:
    """Run one operation of the page in a trace of its own; yields its trace id.

    Tasks started inside (a stream followed in the background) stay in the trace.
    """
    trace_id = _random_hex(16)
    token = _CURRENT.set(trace_id)
    detach = _attach(trace_id)
    try:
        yield trace_id
    finally:
        if detach is not None:
            detach()
        _CURRENT.reset(token)
