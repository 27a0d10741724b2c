"""Shared pieces of the telemetry tests: what one test's OpenTelemetry providers recorded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from a2a_wire.telemetry import Telemetry


@dataclass
class Recorded:
    """What one test's providers recorded."""

    telemetry: Telemetry
    tracer_provider: TracerProvider
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    meter_provider: MeterProvider | None = None

    @classmethod
    def new(cls) -> Recorded:
        """Providers of one's own: spans exported to memory as they end, metrics read on demand."""
        exporter = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
        reader = InMemoryMetricReader()
        meter_provider = MeterProvider(metric_readers=[reader])
        telemetry = Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)
        return cls(telemetry, tracer_provider, exporter, reader, meter_provider)

    def shutdown(self) -> None:
        """Stop the providers."""
        self.tracer_provider.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        """The spans ended so far (those named ``name``), in the order they ended."""
        return [s for s in self.exporter.get_finished_spans() if name is None or s.name == name]

    def points(self, metric: str) -> list[Any]:
        """The data points of ``metric`` as read now (empty when it has none)."""
        data = self.reader.get_metrics_data()
        found: list[Any] = []
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        found.extend(m.data.data_points)
        return found

    def total(self, metric: str, **attributes: Any) -> float:
        """The sum of a counter's points whose attributes include ``attributes``."""
        return sum(
            p.value
            for p in self.points(metric)
            if all(p.attributes.get(k) == v for k, v in attributes.items())
        )
