"""Server spans: one SERVER span per JSON-RPC call, named by the method, with the conventions'
attributes; a stream's span ends with the stream; the run's INTERNAL span is the call's child."""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import SpanKind, StatusCode
from patience import poll
from server_support import (
    ScriptedAgent,
    envelope,
    error,
    open_stream,
    post,
    result,
    send_params,
)
from telemetry_support import Recorded

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01", "tracestate": "vendor=x"}


async def ended(otel: Recorded, name: str, count: int = 1) -> list[Any]:
    async def fetch() -> list[Any]:
        return otel.spans(name)

    return await poll(fetch, lambda spans: len(spans) >= count)


async def test_a_call_is_a_server_span_with_the_conventions_attributes(
    client: Any, otel: Recorded
) -> None:
    params = send_params("echo")
    task = (await result(client, "SendMessage", params, headers=TRACEPARENT))["task"]
    [span] = await ended(otel, "SendMessage")
    assert span.kind is SpanKind.SERVER
    assert span.attributes["a2a.method.name"] == "SendMessage"
    assert span.attributes["a2a.protocol.version"] == "1.0"
    assert span.attributes["a2a.task.id"] == task["id"]
    assert span.attributes["a2a.task.state"] == "TASK_STATE_COMPLETED"
    assert span.attributes["a2a.message.id"] == params["message"]["messageId"]
    assert span.attributes["gen_ai.conversation.id"] == task["contextId"]
    assert span.attributes["gen_ai.agent.name"] == "scripted"
    assert "error.type" not in span.attributes
    assert span.status.status_code is StatusCode.UNSET
    # W3C trace context from the request: the caller's span is the parent.
    assert format(span.context.trace_id, "032x") == TRACE_ID
    assert span.parent is not None and span.parent.is_remote
    assert format(span.parent.span_id, "016x") == PARENT_ID
    assert span.context.trace_state.get("vendor") == "x"


async def test_the_run_is_an_internal_span_child_of_the_call_that_started_it(
    client: Any, otel: Recorded
) -> None:
    task = (await result(client, "SendMessage", send_params("echo"), headers=TRACEPARENT))["task"]
    [call] = await ended(otel, "SendMessage")
    [run] = await ended(otel, "invoke_agent scripted")
    assert run.kind is SpanKind.INTERNAL
    assert run.parent is not None and run.parent.span_id == call.context.span_id
    assert run.context.trace_id == call.context.trace_id
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "scripted"
    assert run.attributes["a2a.task.id"] == task["id"]
    assert run.attributes["gen_ai.conversation.id"] == task["contextId"]


async def test_an_agent_that_raises_marks_its_run_span(client: Any, otel: Recorded) -> None:
    await result(client, "SendMessage", send_params("raise"))
    [run] = await ended(otel, "invoke_agent scripted")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes["error.type"]


async def test_each_call_of_a_batch_is_its_own_span(client: Any, otel: Recorded) -> None:
    body = [
        envelope("ListTasks", {}, rid=1),
        envelope("GetTask", {"id": "no-such-task"}, rid=2),
        envelope("SendMessage", send_params("echo"), rid=3),
    ]
    response = await post(client, body, headers=TRACEPARENT)
    assert response.status == 200
    assert len(await response.json()) == 3
    spans = await ended(otel, "SendMessage")
    spans = otel.spans("ListTasks") + otel.spans("GetTask") + spans
    assert [s.name for s in spans] == ["ListTasks", "GetTask", "SendMessage"]
    assert len({s.context.span_id for s in spans}) == 3
    for span in spans:
        assert span.kind is SpanKind.SERVER
        assert span.parent is not None and format(span.parent.span_id, "016x") == PARENT_ID
    assert spans[1].attributes["error.type"] == "-32001"
    assert "error.type" not in spans[0].attributes


async def test_a_failing_call_sets_error_type_to_the_json_rpc_code(
    client: Any, otel: Recorded
) -> None:
    await error(client, "GetTask", {"id": "no-such-task"})
    await error(client, "NoSuchMethod", {})
    [get] = otel.spans("GetTask")
    assert get.attributes["error.type"] == "-32001"
    assert get.attributes["a2a.task.id"] == "no-such-task"
    assert get.status.status_code is StatusCode.ERROR
    [other] = otel.spans("_OTHER")  # a name A2A does not define is not recorded
    assert other.attributes["a2a.method.name"] == "_OTHER"
    assert other.attributes["error.type"] == "-32601"
    assert other.status.status_code is StatusCode.ERROR


async def test_a_streamed_calls_span_ends_with_the_stream(
    client: Any, otel: Recorded, agent: ScriptedAgent
) -> None:
    reader = await open_stream(client, "SendStreamingMessage", send_params("wait"))
    first = await reader.next()
    assert first is not None
    await agent.started.wait()
    assert otel.spans("SendStreamingMessage") == []  # the stream is open: its span too
    assert otel.total("a2a.server.active_streams") == 1
    agent.gate.set()
    events = [first, *await reader.rest()]
    [span] = await ended(otel, "SendStreamingMessage")
    assert span.kind is SpanKind.SERVER
    assert span.attributes["a2a.stream.event.count"] == len(events)
    assert span.attributes["a2a.task.state"] == "TASK_STATE_COMPLETED"
    task_id = events[-1]["result"]["statusUpdate"]["taskId"]
    assert span.attributes["a2a.task.id"] == task_id
    assert otel.total("a2a.server.active_streams") == 0
    [run] = await ended(otel, "invoke_agent scripted")
    assert run.parent is not None and run.parent.span_id == span.context.span_id


async def test_a_stream_refused_before_its_first_event_records_the_error(
    client: Any, otel: Recorded
) -> None:
    response = await post(client, envelope("SubscribeToTask", {"id": "no-such-task"}))
    assert (await response.json())["error"]["code"] == -32001
    [span] = otel.spans("SubscribeToTask")
    assert span.attributes["error.type"] == "-32001"
    assert "a2a.stream.event.count" not in span.attributes
    assert otel.total("a2a.server.active_streams") == 0


async def test_a_stream_whose_reader_leaves_still_ends_its_span(
    client: Any, otel: Recorded, agent: ScriptedAgent
) -> None:
    reader = await open_stream(client, "SendStreamingMessage", send_params("wait"))
    assert await reader.next() is not None
    await agent.started.wait()
    reader.response.close()  # the reader leaves; the server finds out at its next write
    agent.gate.set()
    [span] = await ended(otel, "SendStreamingMessage")
    assert span.attributes["a2a.stream.event.count"] >= 1
    assert otel.total("a2a.server.active_streams") == 0


async def test_the_tasks_a_message_refers_to_are_recorded(client: Any, otel: Recorded) -> None:
    params = send_params("echo")
    params["message"]["referenceTaskIds"] = ["t-1", "t-2"]
    await result(client, "SendMessage", params)
    [span] = await ended(otel, "SendMessage")
    assert span.attributes["a2a.message.reference_task_ids"] == ("t-1", "t-2")


async def test_a_follow_up_turns_run_links_to_the_tasks_previous_run(
    client: Any, otel: Recorded
) -> None:
    first = (await result(client, "SendMessage", send_params("input")))["task"]
    follow = send_params("more", taskId=first["id"], contextId=first["contextId"])
    await result(client, "SendMessage", follow)
    runs = await ended(otel, "invoke_agent scripted", 2)
    assert not runs[0].links  # a new task: nothing before it
    [link] = runs[1].links
    assert link.context.span_id == runs[0].context.span_id
    assert link.context.trace_id == runs[0].context.trace_id
    [call] = [s for s in otel.spans("SendMessage") if s.context.span_id == runs[1].parent.span_id]
    assert call.attributes["a2a.task.id"] == first["id"]  # parented to the follow-up's request
