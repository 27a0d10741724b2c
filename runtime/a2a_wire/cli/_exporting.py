"""``serve``'s OpenTelemetry SDK from ``[telemetry]``: providers, exporters, scrape endpoint.

The providers become the process's global ones, so the server and the clients of its skills
(``delegate``) record into them and one trace crosses agents. Exports run on the SDK's own
threads; the last one at stop is bounded by ``export_timeout_seconds``. Scrapes are answered by
``prometheus_client``'s HTTP server on a thread of its own, stopped with the application.
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
from a2a_wire.errors import A2AError

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

__all__ = [
    "EXPORT_LOG_SECONDS",
    "Exporting",
    "QuietExports",
    "ScrapeEndpointError",
    "start_exporting",
]

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


class ScrapeEndpointError(A2AError):
    """The Prometheus scrape endpoint could not listen (``[telemetry] prometheus_port``)."""


class Exporting:
    """The SDK providers of one ``serve`` process, stopped with its application.

    Args:
        tracer_provider: Where spans go; ``None`` without OTLP export.
        meter_provider: Where measurements go.
        timeout: ``export_timeout_seconds``.
        scrapes: The Prometheus scrape server, when one listens.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider,
        timeout: float,
        scrapes: WSGIServer | None = None,
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.timeout = timeout
        self.scrapes = scrapes

    def _shutdown(self) -> None:
        if self.scrapes is not None:  # first: a scrape now would read a stopped provider
            self.scrapes.shutdown()
            self.scrapes.server_close()
        if self.tracer_provider is not None:
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


def _scrape_endpoint(section: TelemetrySection) -> tuple[MetricReader, WSGIServer]:
    """A Prometheus reader and the server answering ``/metrics`` with what it reads.

    Raises:
        ScrapeEndpointError: the address cannot be listened on (a port in use, say).
    """
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import CollectorRegistry, start_http_server

    registry = CollectorRegistry()  # the process's own metrics only, never another app's
    host, port = section.prometheus_host, section.prometheus_port
    try:
        server, _thread = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise ScrapeEndpointError(
            f"cannot listen for Prometheus scrapes on {host}:{port} ([telemetry]"
            f" prometheus_port, prometheus_host): {exc.strerror or exc}"
        ) from exc
    return PrometheusMetricReader(registry=registry), server


def start_exporting(section: TelemetrySection, agent_name: str) -> Exporting:
    """Set global providers that export to ``section``'s collector and answer its scrapes.

    Args:
        section: ``[telemetry]``, with OTLP export or a Prometheus port (and their extras).
        agent_name: The card's name, ``service.name`` unless the section or
            ``OTEL_SERVICE_NAME`` names one.

    Returns:
        The providers, to stop at shutdown.

    Raises:
        ScrapeEndpointError: the scrape endpoint cannot listen; nothing was set.
    """
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource

    name = section.service_name or os.environ.get("OTEL_SERVICE_NAME") or agent_name
    resource = Resource.create({SERVICE_NAME: name, SERVICE_VERSION: __version__})
    readers: list[MetricReader] = []
    scrapes = None
    if section.prometheus_port:
        reader, scrapes = _scrape_endpoint(section)
        readers.append(reader)
    tracer_provider = None
    if section.enabled:
        tracer_provider, otlp = _otlp(section, resource)
        readers.append(otlp)
        trace.set_tracer_provider(tracer_provider)
    meter_provider = MeterProvider(resource=resource, metric_readers=readers)
    metrics.set_meter_provider(meter_provider)
    quiet = QuietExports()
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, QuietExports) for f in handler.filters):
            handler.addFilter(quiet)
    return Exporting(tracer_provider, meter_provider, section.export_timeout_seconds, scrapes)


def _otlp(section: TelemetrySection, resource: Resource) -> tuple[TracerProvider, MetricReader]:
    """The tracer provider exporting over OTLP/HTTP, and the metric reader doing the same."""
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

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
    return tracer_provider, reader
