"""Fixtures of the telemetry tests: an SDK tracer and meter provider per test, never global.

Each test gets its own :class:`~opentelemetry.sdk.trace.TracerProvider` (spans exported to
memory as they end) and :class:`~opentelemetry.sdk.metrics.MeterProvider` (read on demand), and
hands them to the server and client through a :class:`~a2a_wire.telemetry.Telemetry`; the
process's global providers stay untouched, so other tests (and parallel workers) see nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from server_support import ScriptedAgent, make_card

from a2a_wire.server import create_app
from a2a_wire.telemetry import Telemetry


@dataclass
class Recorded:
    """What one test's providers recorded."""

    telemetry: Telemetry
    tracer_provider: TracerProvider
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

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


@pytest.fixture
def otel() -> Iterator[Recorded]:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry = Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)
    yield Recorded(telemetry, tracer_provider, exporter, reader)
    tracer_provider.shutdown()
    meter_provider.shutdown()


@pytest.fixture
def app(agent: ScriptedAgent, otel: Recorded) -> web.Application:
    return create_app(make_card(), agent, telemetry=otel.telemetry)


@pytest.fixture
async def client(aiohttp_client: Any, app: web.Application) -> Any:
    return await aiohttp_client(app)
