"""``serve``'s OpenTelemetry SDK: providers and OTLP/HTTP exporters from ``[telemetry]``.

The providers become the process's global ones, so the server and the clients of its skills
(``delegate``) record into them and one trace crosses agents. Exports run on the SDK's own
threads; the last one at stop is bounded by ``export_timeout_seconds``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import TYPE_CHECKING

from aiohttp import web

from a2a_wire import __version__
from a2a_wire.cli.config._telemetry import TelemetrySection

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import TracerProvider

__all__ = ["EXPORT_LOG_SECONDS", "Exporting", "QuietExports", "start_exporting"]

log = logging.getLogger("a2a_wire.serve")

_STOP_SLACK_SECONDS = 1.0
_EXPORTER_LOGGER = "opentelemetry.exporter"

EXPORT_LOG_SECONDS = 60.0
"""Least time between two log lines about failed exports (a collector outage is one line a minute)."""


class QuietExports(logging.Filter):
    """Passes the exporters' first failure line, then at most one per ``EXPORT_LOG_SECONDS``.

    A handler filter (logger filters do not reach the exporters' child loggers); other records
    pass. A passed line says how many were held back since the last one (``suppressed``).
    """

    def __init__(self, seconds: float = EXPORT_LOG_SECONDS) -> None:
        super().__init__()
        self.seconds = seconds
        self.last = -seconds
        self.held = 0

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep ``record`` unless a line was passed less than ``seconds`` ago."""
        if record.levelno < logging.WARNING or not record.name.startswith(_EXPORTER_LOGGER):
            return True
        now = time.monotonic()
        if now - self.last < self.seconds:
            self.held += 1
            return False
        if self.held:
            record.fields = {"suppressed": self.held}
        self.last, self.held = now, 0
        return True


class Exporting:
    """The SDK providers of one ``serve`` process, stopped with its application.

    Args:
        tracer_provider: Where spans go.
        meter_provider: Where measurements go.
        timeout: ``export_timeout_seconds``.
    """

    def __init__(
        self, tracer_provider: TracerProvider, meter_provider: MeterProvider, timeout: float
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.timeout = timeout

    def _shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown(timeout_millis=self.timeout * 1000)

    async def stop(self, _app: web.Application | None = None) -> None:
        """Export what is buffered and stop, within about ``timeout`` seconds (an on_cleanup)."""
        try:
            async with asyncio.timeout(2 * self.timeout + _STOP_SLACK_SECONDS):
                await asyncio.to_thread(self._shutdown)
        except TimeoutError:
            log.warning(
                "telemetry export did not finish within %.1f s at stop; the rest is dropped",
                2 * self.timeout + _STOP_SLACK_SECONDS,
            )


def _url(base: str, signal: str) -> str | None:
    return f"{base.rstrip('/')}/v1/{signal}" if base else None


def start_exporting(section: TelemetrySection, agent_name: str) -> Exporting:
    """Set global providers that export to ``section``'s collector.

    Args:
        section: ``[telemetry]``, with ``enabled`` set (and the ``otlp`` extra installed).
        agent_name: The card's name, ``service.name`` unless the section or
            ``OTEL_SERVICE_NAME`` names one.

    Returns:
        The providers, to stop at shutdown.
    """
    from opentelemetry import metrics, trace
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    name = section.service_name or os.environ.get("OTEL_SERVICE_NAME") or agent_name
    resource = Resource.create({SERVICE_NAME: name, SERVICE_VERSION: __version__})
    timeout = section.export_timeout_seconds
    millis = timeout * 1000
    tracer_provider = TracerProvider(
        resource=resource, sampler=ParentBased(TraceIdRatioBased(section.sample_ratio))
    )
    spans = OTLPSpanExporter(endpoint=_url(section.endpoint, "traces"), timeout=timeout)
    tracer_provider.add_span_processor(BatchSpanProcessor(spans, export_timeout_millis=millis))
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=_url(section.endpoint, "metrics"), timeout=timeout),
        export_interval_millis=section.metrics_interval_seconds * 1000,
        export_timeout_millis=millis,
    )
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(meter_provider)
    quiet = QuietExports()
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, QuietExports) for f in handler.filters):
            handler.addFilter(quiet)
    return Exporting(tracer_provider, meter_provider, timeout)
