"""The trace ids of the inspector's exchanges (no browser): each operation of the page is one
trace, the agent records its spans under that id, with the OpenTelemetry SDK active in the
inspector's process (the client's span joins the trace) and without it (the inspector's own
``traceparent`` is sent)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestServer
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from server_support import ScriptedAgent, make_card

from a2a_wire.cli.inspect import _trace
from a2a_wire.cli.inspect._identity import Identity
from a2a_wire.cli.inspect._outgoing import Outgoing
from a2a_wire.cli.inspect._trace import operation, trace_id_of
from a2a_wire.cli.inspect._traffic import TrafficLog
from a2a_wire.client import A2AClient, ClientSettings
from a2a_wire.server import create_app
from a2a_wire.telemetry import Telemetry
from a2a_wire.types import Message, Part, Role, SendMessageRequest


def tracing() -> tuple[Telemetry, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Telemetry(tracer_provider=provider), exporter


@pytest.fixture
async def agent() -> AsyncIterator[tuple[TestServer, InMemorySpanExporter]]:
    telemetry, exporter = tracing()
    server = TestServer(create_app(make_card(), ScriptedAgent(), telemetry=telemetry))
    await server.start_server()
    yield server, exporter
    await server.close()


async def call(server: TestServer, client_telemetry: Telemetry) -> tuple[str, list[dict]]:
    """SendMessage in one operation, through the inspector's provider; the trace id and records."""
    records: list[dict] = []
    log = TrafficLog(lambda kind, record: records.append(record))
    client = A2AClient(
        str(server.make_url("/")),
        settings=ClientSettings(allow=["127.0.0.1"]),
        credentials=Outgoing(Identity(None), log),
        observer=log,
        telemetry=client_telemetry,
    )
    message = Message(role=Role.USER, parts=[Part(text="hello")], message_id="m1")
    async with client:
        with operation() as trace_id:
            await client.send_message(SendMessageRequest(message=message))
    return trace_id, records


async def test_the_client_span_joins_the_operation_trace(
    agent: tuple[TestServer, InMemorySpanExporter],
) -> None:
    server, served = agent
    telemetry, exporter = tracing()
    trace_id, records = await call(server, telemetry)
    (client_span,) = exporter.get_finished_spans()
    assert f"{client_span.context.trace_id:032x}" == trace_id
    (request,) = [r for r in records if r["kind"] == "request"]
    assert request["traceId"] == trace_id  # read back from the header sent: the span's
    sent = dict(request["headers"])["traceparent"]
    assert sent.split("-")[2] == f"{client_span.context.span_id:016x}"
    server_spans = [s for s in served.get_finished_spans() if s.name == "SendMessage"]
    assert [f"{s.context.trace_id:032x}" for s in server_spans] == [trace_id]
    assert server_spans[0].parent is not None
    assert server_spans[0].parent.span_id == client_span.context.span_id


async def test_without_opentelemetry_the_inspectors_traceparent_is_sent(
    agent: tuple[TestServer, InMemorySpanExporter], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, served = agent
    monkeypatch.setattr(_trace, "AVAILABLE", False)  # as without the telemetry extra
    trace_id, records = await call(server, Telemetry(enabled=False))
    (request,) = [r for r in records if r["kind"] == "request"]
    sent = dict(request["headers"])["traceparent"]
    assert trace_id_of(sent) == trace_id == request["traceId"]
    (server_span,) = [s for s in served.get_finished_spans() if s.name == "SendMessage"]
    assert f"{server_span.context.trace_id:032x}" == trace_id
    assert server_span.parent is not None
    assert f"{server_span.parent.span_id:016x}" == sent.split("-")[2]
