"""Streaming over real HTTP (spec 3.1.2, 3.1.6, 3.5.2, 9.4.2): framing and ids, order, several
subscribers, cancel during a stream, errors (plain answers before the first event, events
after), keep-alives and slow readers. Resuming with Last-Event-ID: test_server_resume.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from server_support import (
    EventReader,
    ScriptedAgent,
    envelope,
    kinds,
    make_card,
    open_stream,
    plain_error,
    post,
    result,
    send_params,
    states,
    stream,
)
from store_support import ServerStores

from a2a_wire.errors import InternalError
from a2a_wire.server import (
    RUNTIME_KEY,
    AgentExecutor,
    EventQueue,
    RequestContext,
    ServerSettings,
    TaskUpdater,
    create_app,
)


def results(events: list[dict[str, Any]]) -> list[Any]:
    return [e["result"] for e in events]


async def test_task_stream_order_and_framing(client: Any) -> None:
    response = await post(client, envelope("SendStreamingMessage", send_params("hi"), "s-1"))
    assert response.headers["Content-Type"] == "text/event-stream"
    raw = await response.read()
    blocks = raw.split(b"\n\n")
    assert blocks[-1] == b""
    ids = []
    for block in blocks[:-1]:  # an id line with the event's number, then one data line
        id_line, data_line = block.split(b"\n")
        assert id_line.startswith(b"id: ") and data_line.startswith(b"data: {")
        ids.append(int(id_line.removeprefix(b"id: ")))
    assert ids == [1, 2, 3, 4]  # the task is event 1 of its log, then each update in turn
    events = await stream(client, "SendStreamingMessage", send_params("hi"), "s-2")
    assert {e["id"] for e in events} == {"s-2"}
    assert kinds(events) == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    assert states(events) == ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    task = events[0]["result"]["task"]
    for update in results(events)[1:]:
        body = next(iter(update.values()))
        assert body["taskId"] == task["id"]
        assert body["contextId"] == task["contextId"]
    assert events[2]["result"]["artifactUpdate"]["artifact"]["parts"] == [{"text": "hi"}]


async def test_message_only_stream(client: Any) -> None:
    reader = await open_stream(client, "SendStreamingMessage", send_params("reply"))
    assert kinds(await reader.rest()) == ["message"]
    assert reader.ids == [None]  # a direct reply belongs to no task's log


async def test_agent_made_task_is_the_first_event(client: Any) -> None:
    events = await stream(client, "SendStreamingMessage", send_params("task"))
    assert kinds(events) == ["task", "statusUpdate"]
    assert states(events) == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]


async def test_stream_closes_at_interrupted_state_and_follow_up_streams(client: Any) -> None:
    events = await stream(client, "SendStreamingMessage", send_params("input"))
    assert states(events) == ["TASK_STATE_SUBMITTED", "TASK_STATE_INPUT_REQUIRED"]
    task_id = events[0]["result"]["task"]["id"]
    follow = await stream(client, "SendStreamingMessage", send_params("more", taskId=task_id))
    assert kinds(follow) == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    snapshot = follow[0]["result"]["task"]
    assert snapshot["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert [m["parts"][0]["text"] for m in snapshot["history"]] == ["input", "need more", "more"]
    assert states(follow)[-1] == "TASK_STATE_COMPLETED"


async def test_first_event_is_stored_before_it_is_sent(client: Any, agent: ScriptedAgent) -> None:
    reader = await open_stream(client, "SendStreamingMessage", send_params("wait"))
    first = await reader.next()
    assert first is not None
    task_id = first["result"]["task"]["id"]
    assert (await result(client, "GetTask", {"id": task_id}))["id"] == task_id
    agent.gate.set()
    assert states(await reader.rest())[-1] == "TASK_STATE_COMPLETED"


async def test_two_subscribers_get_the_same_events_in_order(
    client: Any, agent: ScriptedAgent
) -> None:
    a = await open_stream(client, "SendStreamingMessage", send_params("chunks"), "a")
    first = await a.next()
    assert first is not None
    task_id = first["result"]["task"]["id"]
    await agent.started.wait()
    b = await open_stream(client, "SubscribeToTask", {"id": task_id}, "b")
    c = await open_stream(client, "SubscribeToTask", {"id": task_id}, "c")
    snapshot_b, snapshot_c = await b.next(), await c.next()
    assert snapshot_b is not None and snapshot_c is not None
    assert snapshot_b["result"]["task"]["status"]["state"] == "TASK_STATE_WORKING"
    assert snapshot_b["result"] == snapshot_c["result"]
    working = await a.next()
    assert working is not None and states([working]) == ["TASK_STATE_WORKING"]
    agent.gate.set()
    chunk_b = await b.next()
    c.response.close()  # one reader leaves; the task and the other streams carry on
    for _ in range(2):
        while agent.gate.is_set():
            await asyncio.sleep(0.001)
        agent.gate.set()
    rest_a, rest_b = await a.rest(), [chunk_b, *(await b.rest())]
    assert results(rest_a) == results(rest_b)
    assert kinds(rest_a) == ["artifactUpdate"] * 3 + ["statusUpdate"]
    chunks = [r["artifactUpdate"] for r in results(rest_a)[:3]]
    assert [c.get("append", False) for c in chunks] == [False, True, True]
    assert [c.get("lastChunk", False) for c in chunks] == [False, False, True]
    final = await result(client, "GetTask", {"id": task_id})
    assert final["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [p["text"] for p in final["artifacts"][0]["parts"]] == ["c0", "c1", "c2"]


async def test_cancel_during_streaming(client: Any, agent: ScriptedAgent) -> None:
    reader = await open_stream(client, "SendStreamingMessage", send_params("wait"))
    first, working = await reader.next(), await reader.next()
    assert first is not None and working is not None
    task_id = first["result"]["task"]["id"]
    canceled = await result(client, "CancelTask", {"id": task_id})
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    rest = await reader.rest()
    assert states(rest) == ["TASK_STATE_CANCELED"]
    assert agent.cancelled_runs == 1


async def test_subscribe_errors_before_the_first_event_are_plain_answers(client: Any) -> None:
    assert (await plain_error(client, "SubscribeToTask", {"id": "nope"}, 9))["code"] == -32001
    done = (await result(client, "SendMessage", send_params("echo")))["task"]
    terminal = await plain_error(client, "SubscribeToTask", {"id": done["id"]})
    assert terminal["code"] == -32004  # the conformance kit's STREAM-SUB-003
    assert (await plain_error(client, "SubscribeToTask", {}))["code"] == -32602
    old = await plain_error(client, "SubscribeToTask", {"id": "x"}, headers={"A2A-Version": "0.3"})
    assert old["code"] == -32009


async def test_send_streaming_errors_before_the_first_event_are_plain_answers(
    client: Any,
) -> None:
    params = send_params("x", taskId="missing")
    assert (await plain_error(client, "SendStreamingMessage", params))["code"] == -32001


class GatedAgent(AgentExecutor):
    """Sends nothing until its gate opens, then completes the task."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.gate = asyncio.Event()

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        self.started.set()
        await self.gate.wait()
        await TaskUpdater(events, context).complete()


async def test_a_stream_ended_before_its_first_event_is_a_plain_answer(
    aiohttp_client: Any, store_for: ServerStores
) -> None:
    agent = GatedAgent()
    client = await aiohttp_client(create_app(make_card(), agent, store=store_for()))
    call = asyncio.create_task(plain_error(client, "SendStreamingMessage", send_params("x")))
    await agent.started.wait()
    for hub in list(client.server.app[RUNTIME_KEY].hubs.values()):
        hub.finish_all(InternalError("The server is stopping"))
    err = await call
    assert err["code"] == -32603 and err["message"] == "The server is stopping"
    agent.gate.set()


async def test_an_error_after_the_first_event_is_an_event(
    aiohttp_client: Any, store_for: ServerStores
) -> None:
    client = await aiohttp_client(create_app(make_card(), ScriptedAgent(), store=store_for()))
    runtime = client.server.app[RUNTIME_KEY]
    reader = await open_stream(client, "SendStreamingMessage", send_params("wait"))
    first = await reader.next()
    assert first is not None and kinds([first]) == ["task"]
    for hub in list(runtime.hubs.values()):
        hub.finish_all(InternalError("stopping"))
    rest = await reader.rest()
    assert kinds(rest)[-1] == "error" and rest[-1]["error"]["code"] == -32603


@pytest.mark.parametrize("method", ["SendStreamingMessage", "SubscribeToTask"])
async def test_streaming_not_declared(aiohttp_client: Any, method: str) -> None:
    client = await aiohttp_client(create_app(make_card(streaming=False), ScriptedAgent()))
    params = send_params("echo") if method == "SendStreamingMessage" else {"id": "x"}
    assert (await plain_error(client, method, params))["code"] == -32004
    assert (await result(client, "ListTasks", {}))["totalSize"] == 0


async def test_keepalive_comments(aiohttp_client: Any, store_for: ServerStores) -> None:
    agent = ScriptedAgent()
    settings = ServerSettings(keepalive_seconds=0.02)
    app = create_app(make_card(), agent, settings=settings, store=store_for(settings))
    client = await aiohttp_client(app)
    reader = await open_stream(client, "SendStreamingMessage", send_params("wait"))
    assert kinds([e for e in [await reader.next(), await reader.next()] if e]) == [
        "task",
        "statusUpdate",
    ]
    await asyncio.wait_for(reader.comments(2), 60)  # while the agent waits at its gate
    agent.gate.set()
    rest = await reader.rest()
    assert reader.decoder.comments_seen >= 2
    assert kinds(rest) == ["artifactUpdate", "statusUpdate"]


class BurstAgent(AgentExecutor):
    """Emits many events without ever yielding, faster than any reader."""

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        updater = TaskUpdater(events, context)
        await updater.start_work()
        for i in range(20):
            await updater.add_artifact(f"part {i}", artifact_id=f"a{i}")
        await updater.complete()


async def test_reader_that_falls_behind_reads_the_rest_from_the_store(
    aiohttp_client: Any, store_for: ServerStores
) -> None:
    settings = ServerSettings(stream_queue_size=5)
    app = create_app(make_card(), BurstAgent(), settings=settings, store=store_for(settings))
    client = await aiohttp_client(app)
    reader = await open_stream(client, "SendStreamingMessage", send_params("go"))
    events = await reader.rest()
    assert kinds(events) == ["task", "statusUpdate", *["artifactUpdate"] * 20, "statusUpdate"]
    assert reader.ids == [str(i) for i in range(1, 24)]
    listed = await result(client, "ListTasks", {"includeArtifacts": True})
    task = listed["tasks"][0]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert len(task["artifacts"]) == 20


async def test_stream_reader_type(client: Any) -> None:
    reader = await open_stream(client, "SendStreamingMessage", send_params("reply"))
    assert isinstance(reader, EventReader)
    assert kinds(await reader.rest()) == ["message"]
    assert await reader.next() is None


async def test_subscription_to_interrupted_task_follows_the_next_turn(client: Any) -> None:
    task = (await result(client, "SendMessage", send_params("input")))["task"]
    reader = await open_stream(client, "SubscribeToTask", {"id": task["id"]})
    first = await reader.next()
    assert first is not None
    assert first["result"]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    follow = await result(client, "SendMessage", send_params("more", taskId=task["id"]))
    assert follow["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    rest = await reader.rest()
    assert kinds(rest) == ["statusUpdate", "artifactUpdate", "statusUpdate"]
    assert states(rest) == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
