"""``a2a-wire serve`` with ``[telemetry]``: its spans reach a real OTLP/HTTP endpoint, continue
the caller's trace, are named on the request log lines, and a collector that refuses or stalls
never holds up the calls or the stop.

The collector is an aiohttp application on 127.0.0.1 that decodes what the exporters post
(OTLP protobuf, as a collector would); serve runs as a subprocess, as an operator runs it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from e2e_support import ServerProcess, environment, free_port, write_config
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from telemetry_support import Recorded

from a2a_wire.client import A2AClient, ClientSettings

CONFIG = """\
[server]
port = {port}
storage = "memory"
log_format = "json"
shutdown_grace_seconds = 2

[telemetry]
endpoint = "{endpoint}"
service_name = "echo-under-test"
export_timeout_seconds = 1
metrics_interval_seconds = 0.5
"""


class Collector:
    """What the exporters sent: the spans of each trace export, the metric names."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, Any]] = []  # (service.name, span)
        self.metrics: set[str] = set()

    async def traces(self, request: web.Request) -> web.Response:
        export = ExportTraceServiceRequest.FromString(await request.read())
        for resource in export.resource_spans:
            attrs = {a.key: a.value.string_value for a in resource.resource.attributes}
            for scope in resource.scope_spans:
                self.spans.extend((attrs.get("service.name", ""), s) for s in scope.spans)
        return web.Response(body=b"", content_type="application/x-protobuf")

    async def metrics_export(self, request: web.Request) -> web.Response:
        export = ExportMetricsServiceRequest.FromString(await request.read())
        for resource in export.resource_metrics:
            for scope in resource.scope_metrics:
                self.metrics.update(m.name for m in scope.metrics)
        return web.Response(body=b"", content_type="application/x-protobuf")

    def named(self, name: str) -> list[Any]:
        return [span for _, span in self.spans if span.name == name]


@pytest.fixture
async def collector() -> AsyncIterator[tuple[Collector, str]]:
    seen = Collector()
    app = web.Application()
    app.router.add_post("/v1/traces", seen.traces)
    app.router.add_post("/v1/metrics", seen.metrics_export)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    try:
        yield seen, f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def _start(tmp_path: Path, endpoint: str) -> ServerProcess:
    port = free_port()
    config = write_config(tmp_path / "serve.toml", CONFIG, port=port, endpoint=endpoint)
    return ServerProcess(["--config", str(config)], tmp_path / "serve.log", port, environment())


async def _stop(server: ServerProcess) -> tuple[int, float]:
    """SIGTERM, off the event loop (the collector must keep answering): the code and seconds."""
    start = time.monotonic()
    code = await asyncio.to_thread(server.stop, timeout=60.0)
    return code, time.monotonic() - start


async def test_serve_exports_its_spans_in_the_callers_trace(
    collector: tuple[Collector, str], otel: Recorded, tmp_path: Path
) -> None:
    seen, endpoint = collector
    server = _start(tmp_path, endpoint)
    try:
        await asyncio.to_thread(server.start)
        settings = ClientSettings(allow_private=True)
        async with A2AClient(server.url, settings=settings, telemetry=otel.telemetry) as client:
            await client.send_message(A2AClient.text_request("hello"))
        code, _ = await _stop(server)
    finally:
        server.close()
    assert code == 0, server.log()

    (client_span,) = otel.spans("SendMessage")
    (served,) = seen.named("SendMessage")  # flushed at stop at the latest
    assert served.trace_id.hex() == f"{client_span.context.trace_id:032x}"
    assert served.parent_span_id.hex() == f"{client_span.context.span_id:016x}"
    assert {service for service, _ in seen.spans} == {"echo-under-test"}
    run = [span for _, span in seen.spans if span.name.startswith("invoke_agent ")]
    assert run and run[0].parent_span_id == served.span_id
    assert "a2a.server.request.duration" in seen.metrics  # the last export, at stop

    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    (request,) = [line for line in lines if line.get("method") == "SendMessage"]
    assert request["trace_id"] == served.trace_id.hex()
    assert request["span_id"] == served.span_id.hex()


async def _stalling(port: int) -> asyncio.Server:
    """Accepts connections and never answers: a collector that hangs."""

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.read()  # until the exporter gives up and closes
        finally:
            writer.close()

    return await asyncio.start_server(hold, "127.0.0.1", port)


@pytest.mark.parametrize("fault", ["refused", "stalled"])
async def test_a_collector_that_fails_holds_up_neither_calls_nor_the_stop(
    fault: str, tmp_path: Path
) -> None:
    port = free_port()
    stall = await _stalling(port) if fault == "stalled" else None
    server = _start(tmp_path, f"http://127.0.0.1:{port}")
    try:
        await asyncio.to_thread(server.start)
        settings = ClientSettings(allow_private=True)
        async with A2AClient(server.url, settings=settings) as client:
            for i in range(3):
                answer = await client.send_message(A2AClient.text_request(f"m{i}"))
                assert answer.task is not None or answer.message is not None
        code, seconds = await _stop(server)
    finally:
        server.close()
        if stall is not None:
            stall.close()
            await stall.wait_closed()
    assert code == 0, server.log()
    # export_timeout_seconds = 1 bounds the last export: the stop takes the grace period (2 s)
    # and about two timeouts, never the exporters' default of 10 s per try.
    assert seconds < 30, server.log()
    assert "Traceback" not in server.log()
