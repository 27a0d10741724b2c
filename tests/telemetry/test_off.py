"""Off: no provider (or ``enabled=False``) means nothing is started, measured or sent; a sampled-out
call is measured and passes its (unsampled) context on, but makes no span."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider
from server_support import ScriptedAgent, make_card, result, send_params

from a2a_wire.client import A2AClient, ClientSettings
from a2a_wire.server import RUNTIME_KEY, create_app
from a2a_wire.server._telemetry import TracedAgent
from a2a_wire.telemetry import Telemetry


@pytest.mark.parametrize(
    "telemetry",
    [
        Telemetry(tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider()),
        Telemetry(tracer_provider=ProxyTracerProvider(), meter_provider=NoOpMeterProvider()),
        Telemetry(enabled=False),
    ],
    ids=["no-op", "proxy", "disabled"],
)
def test_no_provider_gives_no_tracer_and_no_instruments(telemetry: Telemetry) -> None:
    assert telemetry.tracer() is None
    assert telemetry.instruments() is None


async def test_requests_carry_no_trace_context_when_off(
    aiohttp_client: Any, agent: ScriptedAgent
) -> None:
    seen: list[dict[str, str]] = []

    @web.middleware
    async def headers(request: web.Request, handler: Any) -> web.StreamResponse:
        seen.append(dict(request.headers))
        return await handler(request)

    off = Telemetry(enabled=False)
    app = create_app(make_card(), agent, telemetry=off)
    app.middlewares.append(headers)
    client = await aiohttp_client(app)
    settings = ClientSettings(allow=["127.0.0.1"])
    async with A2AClient(str(client.make_url("/")), settings=settings, telemetry=off) as a2a:
        await a2a.send_text("echo")
    assert seen and all("traceparent" not in h for h in seen)
    assert not isinstance(app[RUNTIME_KEY].executor, TracedAgent)  # runs are not wrapped
    await result(client, "SendMessage", send_params("echo"))


WITHOUT_THE_API = """
import asyncio, sys
sys.modules["opentelemetry"] = None  # as if the telemetry extra were not installed
from aiohttp.test_utils import TestClient, TestServer
from server_support import ScriptedAgent, make_card
from a2a_wire.client import A2AClient, ClientSettings
from a2a_wire.server import create_app
from a2a_wire.telemetry import AVAILABLE, DEFAULT

async def main():
    assert not AVAILABLE and DEFAULT.tracer() is None and DEFAULT.instruments() is None
    async with TestClient(TestServer(create_app(make_card(), ScriptedAgent()))) as http:
        settings = ClientSettings(allow=["127.0.0.1"])
        async with A2AClient(str(http.make_url("/")), settings=settings) as client:
            answer = await client.send_text("echo")
    assert answer.task is not None and answer.task.status.state.name == "COMPLETED"
    assert not [m for m in sys.modules if m.startswith("opentelemetry") and sys.modules[m]]
    print("ok")

asyncio.run(main())
"""


def test_everything_works_without_opentelemetry_installed() -> None:
    tests = Path(__file__).parents[1]
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_THE_API],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": f"{tests}{os.pathsep}{tests.parent}"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


async def test_a_sampled_out_call_is_measured_and_still_propagates(
    aiohttp_client: Any, agent: ScriptedAgent
) -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider(sampler=ALWAYS_OFF)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry = Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider)
    seen: list[str] = []

    @web.middleware
    async def headers(request: web.Request, handler: Any) -> web.StreamResponse:
        seen.append(request.headers.get("traceparent", ""))
        return await handler(request)

    app = create_app(make_card(), agent, telemetry=telemetry)
    app.middlewares.append(headers)
    client = await aiohttp_client(app)
    settings = ClientSettings(allow=["127.0.0.1"])
    async with A2AClient(str(client.make_url("/")), settings=settings, telemetry=telemetry) as a2a:
        await a2a.send_text("echo")
    assert exporter.get_finished_spans() == ()
    [traceparent] = seen  # the context goes on, its sampled flag unset
    assert traceparent and int(traceparent.rsplit("-", 1)[1], 16) & 1 == 0
    data = reader.get_metrics_data()
    assert data is not None
    names = {m.name for r in data.resource_metrics for s in r.scope_metrics for m in s.metrics}
    assert {"a2a.server.request.duration", "a2a.client.request.duration"} <= names
    tracer_provider.shutdown()
    meter_provider.shutdown()
