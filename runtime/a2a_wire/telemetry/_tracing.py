"""Spans of JSON-RPC calls and agent runs, and W3C trace context in and out (both roles).

A :class:`CallRecord` is one call's span and duration: attributes are read from A2A values only
while the span records (no dict is built for a span that is dropped), and the duration goes to
the role's histogram by method and ``error.type``. Context is carried by the globally configured
propagator (W3C ``traceparent``/``tracestate`` and baggage by default).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING

from a2a_wire.codec import ProtoMessage
from a2a_wire.telemetry._names import (
    ERROR_TYPE,
    METHOD_NAME,
    Attributes,
    error_type,
    value_attributes,
)

try:  # only called once a provider is found, which needs the API (a2a_wire.telemetry._switch)
    from opentelemetry import context as _context
    from opentelemetry import propagate, trace
    from opentelemetry.trace import Status, StatusCode
except ImportError:  # pragma: no cover - the telemetry extra is not installed
    pass

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.metrics import Histogram
    from opentelemetry.trace import Link, Span, SpanKind, Tracer

__all__ = ["CallRecord", "activated", "extract", "inject", "start_span"]


def extract(headers: Mapping[str, str]) -> Context:
    """The trace context (and baggage) a request's headers carry."""
    return propagate.extract(headers)


def inject(headers: MutableMapping[str, str], span: Span | None) -> None:
    """Write ``span``'s trace context (else the current one) into request headers."""
    ctx = trace.set_span_in_context(span) if span is not None else None
    propagate.inject(headers, context=ctx)


class CallRecord:
    """One JSON-RPC call (or agent run): its span, if traced, and its duration, if measured.

    Args:
        span: The started span, or ``None`` when tracing is off.
        histogram: Where the duration goes, or ``None`` when metrics are off.
        method: The ``a2a.method.name`` of the measurement.
        parent: The context the span was started in (kept for :func:`activated`).
        measured: The duration's attributes in place of ``{a2a.method.name: method}``.
    """

    __slots__ = (
        "_histogram",
        "_measured",
        "_start",
        "error",
        "method",
        "parent",
        "recording",
        "span",
    )

    def __init__(
        self,
        span: Span | None,
        histogram: Histogram | None,
        method: str,
        parent: Context | None = None,
        measured: Attributes | None = None,
    ) -> None:
        self.span = span
        self._measured = measured
        self.recording = span is not None and span.is_recording()
        self._histogram = histogram
        self.method = method
        self.parent = parent
        self.error: str | None = None
        self._start = time.perf_counter()

    def add(self, attrs: Attributes) -> None:
        """Set attributes on the span (call only while :attr:`recording`)."""
        if self.span is not None:
            self.span.set_attributes(attrs)

    def add_value(self, value: ProtoMessage | None) -> None:
        """Set the ids and state an A2A request or result carries (:func:`value_attributes`)."""
        if self.recording and value is not None:
            self.add(value_attributes(value, {}))

    def fail(self, exc: BaseException) -> None:
        """Mark the call failed: ``error.type`` (the JSON-RPC code) and an ERROR status."""
        self.fail_because(error_type(exc), type(exc).__name__)

    def fail_because(self, reason: str, description: str = "") -> None:
        """Mark the call failed with ``error.type`` ``reason`` (an HTTP status, say)."""
        self.error = reason
        if self.recording:
            assert self.span is not None
            self.span.set_attribute(ERROR_TYPE, reason)
            self.span.set_status(Status(StatusCode.ERROR, description or reason))

    def end(self) -> None:
        """End the span and record the duration (seconds); once."""
        if self._histogram is not None:
            measured = self._measured
            attrs: Attributes = (
                dict(measured) if measured is not None else {METHOD_NAME: self.method}
            )
            if self.error is not None:
                attrs[ERROR_TYPE] = self.error
            self._histogram.record(time.perf_counter() - self._start, attrs)
            self._histogram = None
        if self.span is not None:
            self.span.end()
            self.span = None
            self.recording = False


def start_span(
    tracer: Tracer | None,
    name: str,
    kind: SpanKind,
    parent: Context | None,
    attributes: Attributes,
    links: Sequence[Link] | None = None,
) -> Span | None:
    """Start a span (``None`` without a tracer) with ``attributes``, not yet current."""
    if tracer is None:
        return None
    return tracer.start_span(name, context=parent, kind=kind, attributes=attributes, links=links)


@contextlib.contextmanager
def activated(record: CallRecord) -> Iterator[None]:
    """Make ``record``'s span current (within its parent's context, baggage kept) for a block.

    Work started inside (an agent run's asyncio task, a client call of an executor) inherits it.
    """
    if record.span is None:
        yield
        return
    token = _context.attach(trace.set_span_in_context(record.span, record.parent))
    try:
        yield
    finally:
        _context.detach(token)
