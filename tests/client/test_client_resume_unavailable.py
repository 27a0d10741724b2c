"""A resumable stream after the server's -32000 (runtime/a2a_wire/client/_stream.py): it
re-subscribes from its last event id after the error's ``retry_after``, also when the
re-subscription is answered 503, within ``max_resubscribes``; other error events are final.

Against a real a2a-wire server (``create_app`` over :class:`fault_store.FaultyStore`, served on
127.0.0.1 as ``serve`` serves it): while the store fails its reads for longer than
``stream_outage_seconds``, an open stream ends with the -32000 error event naming the task. The
finality of other errors is shown against the scripted fake agent (``client_fake``), which can
send any error event.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web
from client_fake import LOCAL, FakeAgent
from fault_store import FaultyStore
from server_support import ScriptedAgent, make_card, serve_like_the_cli

from a2a_wire import errors
from a2a_wire.client import A2AClient, Resubscription
from a2a_wire.server import ServerSettings, create_app
from a2a_wire.types import StreamResponse, SubscribeToTaskRequest, TaskState

READS = frozenset({"read_events", "snapshot"})
"""The store calls a stream (and a subscription's start) makes."""


@dataclass
class Served:
    agent: ScriptedAgent
    store: FaultyStore
    url: str


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    """An a2a-wire server whose store fails on demand; an outage ends its streams at once."""
    agent, store = ScriptedAgent(), FaultyStore()
    settings = ServerSettings(
        keepalive_seconds=0.1, stream_outage_seconds=0.2, store_retry_after_seconds=1
    )
    app = create_app(make_card(), agent, store=store, settings=settings)
    async with serve_like_the_cli(app) as (host, port):
        yield Served(agent, store, f"http://{host}:{port}/")
    agent.gate.set()


def _kinds(events: list[StreamResponse]) -> list[str]:
    out = []
    for event in events:
        if event.task is not None:
            out.append("task")
        elif event.status_update is not None:
            assert event.status_update.status is not None
            out.append(event.status_update.status.state.name)
        else:
            out.append("artifact")
    return out


async def test_a_stream_ended_by_an_outage_resumes_from_its_last_event(served: Served) -> None:
    notices: list[Resubscription] = []

    def on_resume(notice: Resubscription) -> None:
        notices.append(notice)
        if len(notices) == 2:  # the first re-subscription was answered 503: the store is back
            served.store.failing = frozenset()
            served.agent.gate.set()

    events: list[StreamResponse] = []
    async with await A2AClient.connect(served.url, settings=LOCAL) as client:
        stream = client.send_streaming_message(A2AClient.text_request("wait"))
        resumable = client.resumable(stream, on_resume=on_resume)
        async with resumable:
            async for event in resumable:
                events.append(event)
                if len(events) == 2:  # WORKING; the agent waits: the store fails from now
                    served.store.failing = READS
    assert _kinds(events) == ["task", "WORKING", "artifact", "COMPLETED"]  # no gap, no repeat
    assert resumable.resubscribes == 2
    task_id = resumable.task_id
    ended, refused = notices
    assert isinstance(ended.cause, errors.UnavailableError) and task_id in ended.cause.message
    assert isinstance(refused.cause, errors.UnavailableError)  # the 503 of the re-subscription
    assert (ended.refused, refused.refused) == (False, True)
    assert "could not be opened: the server is unavailable" in str(refused)
    assert (ended.attempt, refused.attempt, ended.limit) == (1, 2, 12)  # resume_attempts
    assert ended.pause == refused.pause == 1.0  # the server's retry-after
    assert ended.last_event_id == refused.last_event_id == "2"
    line = str(ended)
    assert "-32000 STORE_UNAVAILABLE" in line and "re-subscribing in 1 s (1/12)" in line, line
    assert "after event id '2'" in line and task_id in line


async def test_an_outage_longer_than_the_budget_ends_with_the_servers_error(
    served: Served,
) -> None:
    notices: list[Resubscription] = []
    events: list[StreamResponse] = []
    async with await A2AClient.connect(served.url, settings=LOCAL) as client:
        stream = client.send_streaming_message(A2AClient.text_request("wait"))
        resumable = client.resumable(stream, max_resubscribes=1, on_resume=notices.append)
        with pytest.raises(errors.UnavailableError) as caught:
            async for event in resumable:
                events.append(event)
                if len(events) == 2:
                    served.store.failing = READS
    assert caught.value.code == -32000 and caught.value.retry_after == 1
    assert len(notices) == 1 and resumable.resubscribes == 1
    served.store.failing = frozenset()


# -- other errors are final (the scripted fake agent) ------------------------------------------


def _frame(rid: Any, body: dict[str, Any], event_id: int) -> bytes:
    return f"id: {event_id}\ndata: {json.dumps({'jsonrpc': '2.0', 'id': rid, **body})}\n\n".encode()


TASK = {"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}}


def _ending_with(error: dict[str, Any]) -> Any:
    """A SendStreamingMessage handler: the task, then ``error`` as an event."""

    async def handler(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(_frame(body["id"], {"result": TASK}, 1))
        await response.write(_frame(body["id"], {"error": error}, 2))
        await response.write_eof()
        return response

    return handler


@pytest.mark.parametrize(
    "error",
    [
        {"code": -32603, "message": "Internal error"},
        {"code": -32001, "message": "Task not found"},
    ],
    ids=["internal", "not-found"],
)
async def test_another_error_event_is_final(agent: FakeAgent, error: dict[str, Any]) -> None:
    agent.on("SendStreamingMessage", _ending_with(error))
    subscribed: list[Any] = []
    agent.on("SubscribeToTask", lambda request, body: subscribed.append(body))
    notices: list[Resubscription] = []
    async with A2AClient(agent.url, settings=LOCAL) as client:
        stream = client.send_streaming_message(A2AClient.text_request("go"))
        resumable = client.resumable(stream, on_resume=notices.append)
        with pytest.raises(errors.ProtocolError) as caught:
            async for _ in resumable:
                pass
    assert caught.value.code == error["code"]
    assert notices == [] and subscribed == [] and resumable.resubscribes == 0


async def test_a_503_before_any_task_is_final(agent: FakeAgent) -> None:
    async def handler(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        error = {"code": -32000, "message": "The task store is unavailable"}
        text = json.dumps({"jsonrpc": "2.0", "id": body["id"], "error": error})
        headers = {"Retry-After": "1"}
        return web.Response(text=text, status=503, content_type="application/json", headers=headers)

    agent.on("SendStreamingMessage", handler)
    notices: list[Resubscription] = []
    async with A2AClient(agent.url, settings=LOCAL) as client:
        stream = client.send_streaming_message(A2AClient.text_request("go"))
        resumable = client.resumable(stream, on_resume=notices.append)
        with pytest.raises(errors.UnavailableError):  # no task: the message may not be taken
            async for _ in resumable:
                pass
    assert notices == [] and resumable.resubscribes == 0


async def test_a_subscription_resumes_the_task_its_error_names(agent: FakeAgent) -> None:
    unavailable = {
        "code": -32000,
        "message": "The task store is unavailable",
        "data": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "STORE_UNAVAILABLE",
                "domain": "a2a-wire",
                "metadata": {"retryAfterSeconds": "1", "taskId": "t1"},
            }
        ],
    }
    calls: list[str | None] = []

    async def subscribe(request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        calls.append(request.headers.get("Last-Event-ID"))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        if len(calls) == 1:  # the first stream: the task, then the outage's error event
            await response.write(_frame(body["id"], {"result": TASK}, 1))
            await response.write(_frame(body["id"], {"error": unavailable}, 2))
        else:
            done = {"statusUpdate": {"taskId": "t1", "contextId": "c1"}}
            done["statusUpdate"]["status"] = {"state": "TASK_STATE_COMPLETED"}
            await response.write(_frame(body["id"], {"result": done}, 2))
        await response.write_eof()
        return response

    agent.on("SubscribeToTask", subscribe)
    async with A2AClient(agent.url, settings=LOCAL) as client:
        resumable = client.resumable(client.subscribe_to_task(SubscribeToTaskRequest(id="t1")))
        states = [
            e.task.status.state if e.task and e.task.status else e.status_update.status.state
            async for e in resumable
            if (e.task and e.task.status) or (e.status_update and e.status_update.status)
        ]
    assert states == [TaskState.WORKING, TaskState.COMPLETED]
    assert calls == [None, "1"]
