"""Spans and metrics of push deliveries: a CLIENT span per attempt, in the task's trace.

An attempt's span is a child of the span of the task's newest run in this process when it is
remembered (so the webhook's own span, from the ``traceparent`` the attempt sends, joins the
task's trace), else the root of a trace of its own. The outbox's :class:`Backlog` is given to
the instruments' gauges once a meter provider is found. Nothing here runs without a provider.
"""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING

import yarl

from a2a_wire.server.push._backlog import Backlog
from a2a_wire.server.store import Delivery
from a2a_wire.telemetry import Telemetry
from a2a_wire.telemetry._names import (
    ERROR_TYPE,
    PUSH_ATTEMPT,
    PUSH_CONFIG_ID,
    PUSH_NOTIFICATION,
    PUSH_OUTCOME,
    SERVER_ADDRESS,
    SERVER_PORT,
    TASK_ID,
    Attributes,
)
from a2a_wire.telemetry._tracing import CallRecord, inject, start_span

try:  # used once a provider is found, which needs the API
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanKind
except ImportError:  # pragma: no cover - the telemetry extra is not installed
    pass

if TYPE_CHECKING:
    from opentelemetry.trace import SpanContext

    from a2a_wire.telemetry._metrics import Instruments

__all__ = ["PushTelemetry"]


class PushTelemetry:
    """Starts and ends the record of each delivery attempt.

    Args:
        telemetry: The providers.
        last_run: The span of a task's newest run in this process, if remembered.
    """

    def __init__(
        self,
        telemetry: Telemetry,
        last_run: Callable[[str], SpanContext | None] = lambda _task_id: None,
    ) -> None:
        self.telemetry = telemetry
        self._last_run = last_run
        self._backlog: Backlog | None = None
        self._gauged: Instruments | None = None

    def watch(self, backlog: Backlog | None) -> None:
        """Report ``backlog`` on the outbox gauges (``None``: stop reporting it)."""
        if self._gauged is not None and self._backlog in self._gauged.backlogs:
            self._gauged.backlogs.remove(self._backlog)
        self._backlog, self._gauged = backlog, None
        self._gauge()

    def _gauge(self) -> None:
        """Hand the backlog to the instruments, once they exist (a provider set late)."""
        if self._backlog is None or self._gauged is not None:
            return
        instruments = self.telemetry.instruments()
        if instruments is not None:
            instruments.backlogs.append(self._backlog)
            self._gauged = instruments

    def attempt(self, delivery: Delivery, headers: MutableMapping[str, str]) -> CallRecord | None:
        """Start an attempt's record and put its trace context into ``headers``."""
        self._gauge()
        tracer = self.telemetry.tracer()
        instruments = self.telemetry.instruments()
        if tracer is None and instruments is None:
            return None
        span = None
        if tracer is not None:
            task_id, config_id = delivery.lane
            attrs: Attributes = {
                TASK_ID: task_id,
                PUSH_CONFIG_ID: config_id,
                PUSH_ATTEMPT: delivery.attempts + 1,
            }
            try:
                url = yarl.URL(delivery.config.url)
            except ValueError:
                url = None
            if url is not None and url.host:  # the host and port only: a path may hold a secret
                attrs[SERVER_ADDRESS] = url.host
                if url.port is not None:
                    attrs[SERVER_PORT] = url.port
            run = self._last_run(task_id)
            parent = trace.set_span_in_context(NonRecordingSpan(run)) if run is not None else None
            span = start_span(tracer, PUSH_NOTIFICATION, SpanKind.CLIENT, parent, attrs)
            inject(headers, span)
        histogram = instruments.push_duration if instruments is not None else None
        return CallRecord(span, histogram, PUSH_NOTIFICATION, measured={})

    def ended(self, record: CallRecord, delivery: Delivery, outcome: str, reason: str) -> None:
        """End an attempt: ``outcome`` is delivered, retry or failed; ``reason`` why not."""
        if reason:
            record.fail_because(reason)
        if record.recording:
            record.add({PUSH_OUTCOME: outcome})
        record.end()
        instruments = self.telemetry.instruments()
        if instruments is None:
            return
        attrs: Attributes = {PUSH_OUTCOME: outcome}
        if reason:
            attrs[ERROR_TYPE] = reason
        instruments.push_attempts.add(1, attrs)
        if outcome == "delivered":
            instruments.push_lag.record(max(0.0, time.time() - delivery.created_at))
