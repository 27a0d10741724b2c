"""Client spans and one trace across agents: the client's CLIENT span is the parent of the
server's SERVER span, whose child is the run; the trace context goes with every request."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from patience import poll
from telemetry_support import Recorded

from a2a_wire.client import A2AClient, ClientSettings
from a2a_wire.errors import TaskNotFoundError

LOCAL = ClientSettings(allow=["127.0.0.1"])


def url(client: Any) -> str:
    return str(client.make_url("/"))


async def finished(otel: Recorded, name: str) -> Any:
    async def fetch() -> list[Any]:
        return otel.spans(name)

    return (await poll(fetch, lambda spans: len(spans) == 1))[0]


async def test_client_server_and_run_are_one_trace(client: Any, otel: Recorded) -> None:
    async with A2AClient(url(client), settings=LOCAL, telemetry=otel.telemetry) as a2a:
        sent = A2AClient.text_request("echo")
        answer = await a2a.send_message(sent)
    assert answer.task is not None
    spans = otel.spans("SendMessage")  # both ended: the client's after the server's
    [outgoing] = [s for s in spans if s.kind is SpanKind.CLIENT]
    [incoming] = [s for s in spans if s.kind is SpanKind.SERVER]
    run = await finished(otel, "invoke_agent scripted")
    assert outgoing.parent is None  # no span was current in the test: a new trace
    assert incoming.context.trace_id == outgoing.context.trace_id == run.context.trace_id
    assert incoming.parent is not None and incoming.parent.is_remote
    assert incoming.parent.span_id == outgoing.context.span_id
    assert run.parent is not None and run.parent.span_id == incoming.context.span_id
    attrs = outgoing.attributes
    assert attrs["a2a.method.name"] == "SendMessage"
    assert attrs["a2a.protocol.version"] == "1.0"
    assert attrs["a2a.message.id"] == sent.message.message_id
    assert attrs["a2a.task.id"] == answer.task.id
    assert attrs["a2a.task.state"] == "TASK_STATE_COMPLETED"
    assert attrs["gen_ai.conversation.id"] == answer.task.context_id
    assert attrs["server.address"] == "127.0.0.1"
    assert attrs["server.port"] == client.port


async def test_a_client_call_continues_the_callers_trace(client: Any, otel: Recorded) -> None:
    tracer = otel.tracer_provider.get_tracer("test")
    async with A2AClient(url(client), settings=LOCAL, telemetry=otel.telemetry) as a2a:
        with tracer.start_as_current_span("caller") as caller:
            await a2a.send_text("echo")
    [outgoing] = [s for s in otel.spans("SendMessage") if s.kind is SpanKind.CLIENT]
    assert outgoing.parent is not None
    assert outgoing.parent.span_id == caller.get_span_context().span_id


async def test_a_stream_is_a_client_span_until_it_ends(client: Any, otel: Recorded) -> None:
    tracer = otel.tracer_provider.get_tracer("test")
    async with A2AClient(url(client), settings=LOCAL, telemetry=otel.telemetry) as a2a:
        with tracer.start_as_current_span("caller") as caller:
            request = A2AClient.text_request("echo")
            async with a2a.send_streaming_message(request) as events:
                seen = [await anext(events)]
                assert not [s for s in otel.spans() if s.kind is SpanKind.CLIENT]  # still open
                seen += [event async for event in events]
    assert seen
    spans = otel.spans("SendStreamingMessage")
    [outgoing] = [s for s in spans if s.kind is SpanKind.CLIENT]
    [incoming] = [s for s in spans if s.kind is SpanKind.SERVER]
    assert outgoing.parent is not None
    assert outgoing.parent.span_id == caller.get_span_context().span_id
    assert incoming.parent is not None and incoming.parent.span_id == outgoing.context.span_id
    assert outgoing.attributes["a2a.stream.event.count"] == len(seen)
    assert outgoing.attributes["a2a.task.state"] == "TASK_STATE_COMPLETED"
    assert outgoing.attributes["a2a.task.id"] == seen[0].task.id
    [point] = [
        p
        for p in otel.points("a2a.client.request.duration")
        if p.attributes["a2a.method.name"] == "SendStreamingMessage"
    ]
    assert point.count == 1


async def test_a_stream_left_early_ends_its_span(client: Any, otel: Recorded) -> None:
    async with A2AClient(url(client), settings=LOCAL, telemetry=otel.telemetry) as a2a:
        async with a2a.send_streaming_message(A2AClient.text_request("echo")) as events:
            async for _ in events:
                break
    [outgoing] = [s for s in otel.spans("SendStreamingMessage") if s.kind is SpanKind.CLIENT]
    assert outgoing.attributes["a2a.stream.event.count"] == 1
    assert "error.type" not in outgoing.attributes


async def test_a_refused_stream_ends_its_span_with_the_error(client: Any, otel: Recorded) -> None:
    async with A2AClient(url(client), settings=LOCAL, telemetry=otel.telemetry) as a2a:
        with pytest.raises(TaskNotFoundError):
            async with a2a.subscribe_to_task("no-such-task") as events:
                [event async for event in events]
    [outgoing] = [s for s in otel.spans("SubscribeToTask") if s.kind is SpanKind.CLIENT]
    assert outgoing.attributes["error.type"] == "-32001"
    assert outgoing.status.status_code is StatusCode.ERROR


async def test_a_failing_client_call_sets_error_type(client: Any, otel: Recorded) -> None:
    async with A2AClient(url(client), settings=LOCAL, telemetry=otel.telemetry) as a2a:
        with pytest.raises(TaskNotFoundError):
            await a2a.get_task("no-such-task")
    [outgoing] = [s for s in otel.spans("GetTask") if s.kind is SpanKind.CLIENT]
    assert outgoing.attributes["error.type"] == "-32001"
    assert outgoing.attributes["a2a.task.id"] == "no-such-task"
    assert outgoing.status.status_code is StatusCode.ERROR
    [point] = [
        p for p in otel.points("a2a.client.request.duration")
        if p.attributes["a2a.method.name"] == "GetTask"
    ]  # fmt: skip
    assert point.attributes == {"a2a.method.name": "GetTask", "error.type": "-32001"}
    assert point.count == 1
