"""Streaming calls: SSE framing, typed errors, stream order, incomplete ends, re-subscription."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from aiohttp import web
from client_fake import (
    FakeAgent,
    artifact_update,
    message_json,
    sse,
    status_update,
    task_json,
)

from a2a_wire import errors
from a2a_wire.client import (
    A2AClient,
    ClientSettings,
    EventStream,
    IncompleteStreamError,
    ReadTimeoutError,
    ResponseTooLargeError,
    TransportError,
    UnexpectedContentTypeError,
)
from a2a_wire.types import StreamResponse, SubscribeToTaskRequest, TaskState

Body = dict[str, Any]


def kinds(events: list[StreamResponse]) -> list[str | None]:
    return [e.which_payload() for e in events]


async def collect(stream: Any) -> list[StreamResponse]:
    async with stream:
        return [event async for event in stream]


def rpc(result: Any, rid: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


HAPPY = [
    {"task": task_json(state="TASK_STATE_SUBMITTED")},
    status_update("TASK_STATE_WORKING"),
    artifact_update("part one"),
    status_update("TASK_STATE_COMPLETED"),
]


async def test_streaming_message_happy_path(client: A2AClient, agent: FakeAgent) -> None:
    agent.stream("SendStreamingMessage", HAPPY)
    stream = client.send_streaming_message(A2AClient.text_request("go"))
    events = await collect(stream)
    assert kinds(events) == ["task", "status_update", "artifact_update", "status_update"]
    assert stream.finished and stream.task_id == "t1" and stream.state is TaskState.COMPLETED
    sent = agent.requests[-1]
    assert sent.method == "SendStreamingMessage"
    assert sent.headers["Accept"] == "text/event-stream"
    assert sent.headers["A2A-Version"] == "1.0"
    assert sent.headers["Content-Type"] == "application/json"
    assert sent.headers["Authorization"] == "Bearer tok-1"
    assert sent.params["tenant"] == "acme"


async def test_plain_async_for_without_context_manager(client: A2AClient, agent: FakeAgent) -> None:
    agent.stream("SendStreamingMessage", HAPPY)
    events = [e async for e in client.send_streaming_message(A2AClient.text_request("go"))]
    assert len(events) == 4


async def test_subscribe_to_task(client: A2AClient, agent: FakeAgent) -> None:
    agent.stream(
        "SubscribeToTask",
        [{"task": task_json(state="TASK_STATE_WORKING")}, status_update("TASK_STATE_FAILED")],
    )
    events = await collect(client.subscribe_to_task(SubscribeToTaskRequest(id="t1")))
    assert kinds(events) == ["task", "status_update"]
    assert agent.requests[-1].params == {"tenant": "acme", "id": "t1"}


async def test_message_only_stream_ends_legitimately(client: A2AClient, agent: FakeAgent) -> None:
    agent.stream("SendStreamingMessage", [{"message": message_json()}])
    events = await collect(client.send_streaming_message(A2AClient.text_request("go")))
    assert kinds(events) == ["message"]


def framed(rid: int, results: list[Any], style: str) -> list[bytes]:
    texts = [json.dumps(rpc(r, rid)) for r in results]
    if style == "crlf":
        return [f"data: {t}\r\n\r\n".encode() for t in texts]
    if style == "cr":
        return [f"data:{t}\r\r".encode() for t in texts]
    if style == "multiline":
        # One JSON value split over several data lines (joined with LF, still valid JSON).
        return [
            (
                "".join(
                    f"data: {line}\n" for line in json.dumps(rpc(r, rid), indent=1).splitlines()
                )
                + "\n"
            ).encode()
            for r in results
        ]
    if style == "comments":
        return [b": keep-alive\n\n"] + [f": c\ndata: {t}\n: again\n\n".encode() for t in texts]
    if style == "bytewise":
        whole = b"".join(f"data: {t}\n\n".encode() for t in texts)
        return [whole[i : i + 1] for i in range(len(whole))]
    if style == "bom-and-fields":
        return [b"\xef\xbb\xbf"] + [
            f"event: message\nid: 7\nretry: 10\ndata: {t}\n\n".encode() for t in texts
        ]
    raise AssertionError(style)


@pytest.mark.parametrize(
    "style", ["crlf", "cr", "multiline", "comments", "bytewise", "bom-and-fields"]
)
async def test_sse_framing_variants(client: A2AClient, agent: FakeAgent, style: str) -> None:
    agent.stream("SendStreamingMessage", [], raw=framed(1, HAPPY, style))
    events = await collect(client.send_streaming_message(A2AClient.text_request("go")))
    assert kinds(events) == ["task", "status_update", "artifact_update", "status_update"]


async def test_unknown_stream_members_are_skipped_and_logged(
    client: A2AClient, agent: FakeAgent, caplog: pytest.LogCaptureFixture
) -> None:
    results = [
        {"task": task_json(state="TASK_STATE_WORKING")},
        {"progressUpdate": {"taskId": "t1", "percent": 50}},
        status_update("TASK_STATE_COMPLETED"),
    ]
    agent.stream("SendStreamingMessage", results)
    caplog.set_level(logging.INFO, logger="a2a_wire.client")
    events = await collect(client.send_streaming_message(A2AClient.text_request("go")))
    assert kinds(events) == ["task", "status_update"]
    assert any("does not know" in r.getMessage() for r in caplog.records)


async def test_unknown_part_kinds_in_stream_are_dropped(
    client: A2AClient, agent: FakeAgent
) -> None:
    update = artifact_update("x")
    update["artifactUpdate"]["artifact"]["parts"].append({"hologram": {}})
    agent.stream(
        "SendStreamingMessage",
        [
            {"task": task_json(state="TASK_STATE_WORKING")},
            update,
            status_update("TASK_STATE_COMPLETED"),
        ],
    )
    events = await collect(client.send_streaming_message(A2AClient.text_request("go")))
    assert events[1].artifact_update is not None and events[1].artifact_update.artifact is not None
    assert [p.text for p in events[1].artifact_update.artifact.parts] == ["x"]


async def test_error_event_mid_stream_raises_its_typed_error(
    client: A2AClient, agent: FakeAgent
) -> None:
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "task vanished"}}
    raw = [sse(rpc({"task": task_json(state="TASK_STATE_WORKING")})), sse(error)]
    agent.stream("SendStreamingMessage", [], raw=raw)
    seen: list[StreamResponse] = []
    with pytest.raises(errors.TaskNotFoundError, match="task vanished"):
        async with client.send_streaming_message(A2AClient.text_request("go")) as stream:
            async for event in stream:
                seen.append(event)
    assert kinds(seen) == ["task"]


async def test_error_before_the_stream_is_a_plain_json_rpc_error(
    client: A2AClient, agent: FakeAgent
) -> None:
    agent.error("SubscribeToTask", -32004, "task is terminal")
    with pytest.raises(errors.UnsupportedOperationError, match="^task is terminal$"):
        await collect(client.subscribe_to_task(SubscribeToTaskRequest(id="t1")))


async def test_json_result_instead_of_stream(client: A2AClient, agent: FakeAgent) -> None:
    agent.reply("SendStreamingMessage", {"task": task_json()})
    with pytest.raises(UnexpectedContentTypeError, match="text/event-stream"):
        await collect(client.send_streaming_message(A2AClient.text_request("go")))


async def test_html_instead_of_stream(client: A2AClient, agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        return web.Response(text="<html></html>", content_type="text/html")

    agent.on("SendStreamingMessage", handler)
    with pytest.raises(UnexpectedContentTypeError, match="text/html"):
        await collect(client.send_streaming_message(A2AClient.text_request("go")))


@pytest.mark.parametrize(
    "results",
    [
        [],
        [{"task": task_json(state="TASK_STATE_SUBMITTED")}],
        [{"task": task_json(state="TASK_STATE_WORKING")}, artifact_update("x")],
        [{"task": task_json(state="TASK_STATE_WORKING")}, status_update("TASK_STATE_WARPING")],
        [{"task": task_json(state="TASK_STATE_WORKING")}, {"futureThing": {}}],
    ],
    ids=["empty", "submitted", "working", "unknown-state", "unknown-member"],
)
async def test_early_end_is_an_incomplete_stream(
    client: A2AClient, agent: FakeAgent, results: list[Any]
) -> None:
    agent.stream("SendStreamingMessage", results)
    received: list[StreamResponse] = []
    with pytest.raises(IncompleteStreamError) as caught:
        async for event in client.send_streaming_message(A2AClient.text_request("go")):
            received.append(event)
    if results:
        assert caught.value.task_id == "t1" and caught.value.last_state is not None
        assert not caught.value.cut_mid_event
    else:
        assert str(caught.value) == "stream ended early: no task or message"


async def test_end_inside_an_event_is_reported(client: A2AClient, agent: FakeAgent) -> None:
    raw = [sse(rpc({"task": task_json(state="TASK_STATE_WORKING")})), b'data: {"jsonrpc"']
    agent.stream("SendStreamingMessage", [], raw=raw)
    with pytest.raises(IncompleteStreamError) as caught:
        await collect(client.send_streaming_message(A2AClient.text_request("go")))
    assert caught.value.cut_mid_event


@pytest.mark.parametrize(
    "state", ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED", "TASK_STATE_REJECTED"]
)
async def test_interrupted_or_terminal_end_is_fine(
    client: A2AClient, agent: FakeAgent, state: str
) -> None:
    agent.stream(
        "SendStreamingMessage",
        [{"task": task_json(state="TASK_STATE_WORKING")}, status_update(state)],
    )
    events = await collect(client.send_streaming_message(A2AClient.text_request("go")))
    assert len(events) == 2


async def test_final_task_snapshot_is_accepted(client: A2AClient, agent: FakeAgent) -> None:
    results = [
        {"task": task_json(state="TASK_STATE_WORKING")},
        status_update("TASK_STATE_COMPLETED"),
        {"task": task_json(state="TASK_STATE_COMPLETED")},
    ]
    agent.stream("SendStreamingMessage", results)
    assert len(await collect(client.send_streaming_message(A2AClient.text_request("go")))) == 3


@pytest.mark.parametrize(
    ("method", "results", "match"),
    [
        ("SendStreamingMessage", [status_update("TASK_STATE_WORKING")], "not a Task or Message"),
        (
            "SendStreamingMessage",
            [{"task": task_json(state="TASK_STATE_WORKING")}, {"message": message_json()}],
            "Message event",
        ),
        (
            "SendStreamingMessage",
            [{"message": message_json()}, {"message": message_json()}],
            "after the stream's Message",
        ),
        (
            "SendStreamingMessage",
            [
                {"task": task_json(state="TASK_STATE_WORKING")},
                status_update("TASK_STATE_WORKING", "t2"),
            ],
            "for task 't2'",
        ),
        ("SubscribeToTask", [{"message": message_json()}], "Message event"),
        (
            "SendStreamingMessage",
            [
                {"task": task_json(state="TASK_STATE_WORKING")},
                {"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_COMPLETED"}}},
            ],
            "contextId",
        ),
    ],
    ids=[
        "update-first",
        "message-after-task",
        "two-messages",
        "other-task",
        "subscribe-message",
        "update-without-context",
    ],
)
async def test_out_of_order_streams_are_invalid(
    client: A2AClient, agent: FakeAgent, method: str, results: list[Any], match: str
) -> None:
    agent.stream(method, results)
    stream: EventStream = (
        client.subscribe_to_task(SubscribeToTaskRequest(id="t1"))
        if method == "SubscribeToTask"
        else client.send_streaming_message(A2AClient.text_request("go"))
    )
    with pytest.raises(errors.InvalidAgentResponseError, match=match):
        await collect(stream)


FOLLOW_UP_TURN = [status_update("TASK_STATE_WORKING"), status_update("TASK_STATE_INPUT_REQUIRED")]


def _lenient_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "not the Task (spec 3.1.2)" in r.getMessage()]


async def test_a_follow_up_stream_may_start_with_an_update_of_its_task(
    client: A2AClient, agent: FakeAgent, caplog: pytest.LogCaptureFixture
) -> None:
    # The a2a-sdk 1.3.0 server answers a follow-up turn so (docs/prose-and-proto.md, row 51).
    caplog.set_level(logging.WARNING, logger="a2a_wire.client")
    agent.stream("SendStreamingMessage", FOLLOW_UP_TURN)
    stream = client.send_streaming_message(A2AClient.text_request("Ada", task_id="t1"))
    events = await collect(stream)
    assert kinds(events) == ["status_update", "status_update"]
    assert (stream.task_id, stream.state, stream.finished) == ("t1", TaskState.INPUT_REQUIRED, True)
    assert stream.tracker.task is None  # no Task came: GetTask fetches it whole
    warnings = _lenient_warnings(caplog)
    assert len(warnings) == 1 and "'t1'" in warnings[0] and "statusUpdate" in warnings[0]


async def test_a_subscription_may_start_with_an_update_of_its_task(
    client: A2AClient, agent: FakeAgent, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="a2a_wire.client")
    agent.stream("SubscribeToTask", [artifact_update("x"), status_update("TASK_STATE_COMPLETED")])
    stream = client.subscribe_to_task("t1")
    assert kinds(await collect(stream)) == ["artifact_update", "status_update"]
    assert stream.state is TaskState.COMPLETED
    assert len(_lenient_warnings(caplog)) == 1


@pytest.mark.parametrize(
    ("method", "named", "first"),
    [
        ("SendStreamingMessage", "", status_update("TASK_STATE_WORKING")),  # a new task
        ("SendStreamingMessage", "t1", status_update("TASK_STATE_WORKING", "t2")),
        ("SendStreamingMessage", "t1", artifact_update("x", "t2")),
        ("SubscribeToTask", "t1", status_update("TASK_STATE_WORKING", "t2")),
    ],
    ids=["new-message", "follow-up-other-task", "follow-up-other-artifact", "subscribe-other"],
)
async def test_any_other_first_update_stays_invalid(
    client: A2AClient, agent: FakeAgent, method: str, named: str, first: dict[str, Any]
) -> None:
    agent.stream(method, [first, status_update("TASK_STATE_COMPLETED", "t2")])
    stream: EventStream = (
        client.subscribe_to_task(named)
        if method == "SubscribeToTask"
        else client.send_streaming_message(A2AClient.text_request("go", task_id=named or None))
    )
    with pytest.raises(errors.InvalidAgentResponseError, match="stream starts with") as caught:
        await collect(stream)
    assert caught.value.code == -32006


async def test_event_that_is_not_json(client: A2AClient, agent: FakeAgent) -> None:
    agent.stream("SendStreamingMessage", [], raw=[b"data: {nope\n\n"])
    with pytest.raises(errors.InvalidAgentResponseError, match="not JSON"):
        await collect(client.send_streaming_message(A2AClient.text_request("go")))


async def test_oversized_event(agent: FakeAgent) -> None:
    agent.stream("SendStreamingMessage", [{"task": task_json(history=[message_json("x" * 5000)])}])
    settings = ClientSettings(allow=["127.0.0.1"], max_event_bytes=2048)
    async with A2AClient(agent.url, settings=settings) as client:
        with pytest.raises(ResponseTooLargeError, match="max_event_bytes"):
            await collect(client.send_streaming_message(A2AClient.text_request("go")))


async def test_idle_stream_hits_stream_idle_timeout(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: Body) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(sse(rpc({"task": task_json(state="TASK_STATE_WORKING")}, body["id"])))
        await agent.stall()
        return resp

    agent.on("SendStreamingMessage", handler)
    settings = ClientSettings(allow=["127.0.0.1"], stream_idle_timeout=0.1)
    async with A2AClient(agent.url, settings=settings) as client:
        with pytest.raises(ReadTimeoutError) as caught:
            await collect(client.send_streaming_message(A2AClient.text_request("go")))
    assert caught.value.setting == "stream_idle_timeout"


async def test_breaking_out_early_closes_the_stream(client: A2AClient, agent: FakeAgent) -> None:
    agent.stream("SendStreamingMessage", HAPPY)
    async with client.send_streaming_message(A2AClient.text_request("go")) as stream:
        async for _event in stream:
            break
    with pytest.raises(StopAsyncIteration):
        await stream.__anext__()


async def test_cut_connection_is_a_transport_error(client: A2AClient, agent: FakeAgent) -> None:
    agent.stream(
        "SendStreamingMessage", [{"task": task_json(state="TASK_STATE_WORKING")}], cut=True
    )
    with pytest.raises(TransportError, match="is incomplete$"):
        await collect(client.send_streaming_message(A2AClient.text_request("go")))


# -- re-subscription ---------------------------------------------------------------------------


@pytest.mark.parametrize("cut", [False, True], ids=["clean-close", "connection-cut"])
async def test_resumable_continues_after_a_drop(
    client: A2AClient, agent: FakeAgent, cut: bool
) -> None:
    agent.stream(
        "SendStreamingMessage",
        [{"task": task_json(state="TASK_STATE_SUBMITTED")}, status_update("TASK_STATE_WORKING")],
        cut=cut,
    )
    agent.stream(
        "SubscribeToTask",
        [{"task": task_json(state="TASK_STATE_WORKING")}, status_update("TASK_STATE_COMPLETED")],
    )
    stream = client.resumable(
        client.send_streaming_message(A2AClient.text_request("go")), retry_delay=0
    )
    events = await collect(stream)
    assert kinds(events) == ["task", "status_update", "task", "status_update"]
    assert stream.resubscribes == 1 and stream.state is TaskState.COMPLETED
    assert [r.method for r in agent.requests] == ["SendStreamingMessage", "SubscribeToTask"]
    assert agent.requests[-1].params == {"tenant": "acme", "id": "t1"}


async def test_resumable_gives_up_after_max_resubscribes(
    client: A2AClient, agent: FakeAgent
) -> None:
    drop = [{"task": task_json(state="TASK_STATE_WORKING")}]
    agent.stream("SendStreamingMessage", drop)
    agent.stream("SubscribeToTask", drop)
    stream = client.resumable(
        client.send_streaming_message(A2AClient.text_request("go")),
        max_resubscribes=2,
        retry_delay=0,
    )
    with pytest.raises(IncompleteStreamError) as caught:
        await collect(stream)
    assert str(caught.value).endswith("'t1' last seen in state working")
    assert caught.value.__notes__ == [
        "gave up re-subscribing to task 't1' (no event id) after 2 re-subscription(s) in a row"
        " and 0 s of pauses (max_resubscribes 2, budget 30 s)"
    ]
    assert [r.method for r in agent.requests].count("SubscribeToTask") == 2


async def test_resumable_ends_with_get_task_when_task_settled_meanwhile(
    client: A2AClient, agent: FakeAgent
) -> None:
    agent.stream("SendStreamingMessage", [{"task": task_json(state="TASK_STATE_WORKING")}])
    agent.error("SubscribeToTask", -32004, "task is terminal")
    agent.reply("GetTask", task_json(state="TASK_STATE_COMPLETED"))
    stream = client.resumable(
        client.send_streaming_message(A2AClient.text_request("go")), retry_delay=0
    )
    events = await collect(stream)
    assert kinds(events) == ["task", "task"]
    assert events[-1].task is not None and events[-1].task.status is not None
    assert events[-1].task.status.state is TaskState.COMPLETED


async def test_resumable_does_not_retry_without_a_task(client: A2AClient, agent: FakeAgent) -> None:
    agent.stream("SendStreamingMessage", [])
    stream = client.resumable(
        client.send_streaming_message(A2AClient.text_request("go")), retry_delay=0
    )
    with pytest.raises(IncompleteStreamError, match="^stream ended early: no task or message$"):
        await collect(stream)
    assert [r.method for r in agent.requests] == ["SendStreamingMessage"]


async def test_resumable_passes_protocol_errors_through(
    client: A2AClient, agent: FakeAgent
) -> None:
    agent.error("SendStreamingMessage", -32004, "streaming not supported")
    stream = client.resumable(
        client.send_streaming_message(A2AClient.text_request("go")), retry_delay=0
    )
    with pytest.raises(errors.UnsupportedOperationError, match="^streaming not supported$"):
        await collect(stream)
