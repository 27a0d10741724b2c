"""The client's spans and metrics: a CLIENT span per JSON-RPC call, trace context sent along.

Every request carries the W3C trace context of the call's span (``traceparent``, and
``tracestate`` and baggage when set); a stream's span lasts until the stream ends
(:class:`~a2a_wire.client._stream.EventStream` ends it). Nothing here runs when the
:class:`~a2a_wire.telemetry.Telemetry` finds no provider (docs/observability.md).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping

import yarl

from a2a_wire._protocol.wire import PROTOCOL_VERSION as _VERSION
from a2a_wire.codec import ProtoMessage
from a2a_wire.telemetry import Telemetry
from a2a_wire.telemetry._names import (
    AGENT_NAME,
    METHOD_NAME,
    PROTOCOL_VERSION,
    PUSH_NOTIFICATION,
    SERVER_ADDRESS,
    SERVER_PORT,
    Attributes,
    message_sizes,
    value_attributes,
)
from a2a_wire.telemetry._tracing import CallRecord, extract, inject, start_span
from a2a_wire.types import AgentCard

try:  # used once a provider is found, which needs the API
    from opentelemetry.trace import SpanKind
except ImportError:  # pragma: no cover - the telemetry extra is not installed
    pass

__all__ = ["ClientTelemetry", "received"]


class ClientTelemetry:
    """Starts the span and measurement of each call of one client.

    Args:
        telemetry: The providers.
        url: The interface URL (``server.address``, ``server.port``).
    """

    __slots__ = ("_host", "_port", "telemetry")

    def __init__(self, telemetry: Telemetry, url: str) -> None:
        self.telemetry = telemetry
        parsed = yarl.URL(url)
        self._host = parsed.host or ""
        self._port = parsed.port

    def call(
        self,
        method: str,
        request: ProtoMessage,
        headers: MutableMapping[str, str],
        card: AgentCard | None,
    ) -> CallRecord | None:
        """Start a call's record and put its trace context into ``headers``; ``None`` when off."""
        tracer = self.telemetry.tracer()
        instruments = self.telemetry.instruments()
        if tracer is None and instruments is None:
            return None
        span = None
        if tracer is not None:
            attrs: Attributes = {
                METHOD_NAME: method,
                PROTOCOL_VERSION: _VERSION,
                SERVER_ADDRESS: self._host,
            }
            if self._port is not None:
                attrs[SERVER_PORT] = self._port
            if card is not None and card.name:
                attrs[AGENT_NAME] = card.name
            value_attributes(request, attrs)  # at the start: samplers see them
            if self.telemetry.record_sizes:
                message_sizes(getattr(request, "message", None), attrs)
            span = start_span(tracer, method, SpanKind.CLIENT, None, attrs)
            inject(headers, span)
        histogram = instruments.client_duration if instruments is not None else None
        return CallRecord(span, histogram, method)


def received(
    telemetry: Telemetry, headers: Mapping[str, str], event: ProtoMessage
) -> CallRecord | None:
    """The SERVER span of a webhook POST, a child of the sender's (its ``traceparent``)."""
    tracer = telemetry.tracer()
    if tracer is None:
        return None
    parent = extract(headers)
    attrs = value_attributes(event, {})
    span = start_span(tracer, PUSH_NOTIFICATION, SpanKind.SERVER, parent, attrs)
    return CallRecord(span, None, PUSH_NOTIFICATION, parent)
