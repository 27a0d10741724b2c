"""Streaming over real HTTP (spec 3.1.2, 3.1.6, 3.5.2, 9.4.2): framing, order, several
subscribers, cancel during a stream, errors as events, keep-alives and slow readers."""

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
    post,
    result,
    send_params,
    states,
    stream,
)

from a2a_wire.server import (
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
    assert all(b.startswith(b"data: {") and b.count(b"\n") == 0 for b in blocks[:-1])
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
    events = await stream(client, "SendStreamingMessage", send_params("reply"))
    assert kinds(events) == ["message"]


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


async def test_subscribe_errors_are_sent_as_events(client: Any) -> None:
    unknown = await stream(client, "SubscribeToTask", {"id": "nope"}, 9)
    assert len(unknown) == 1
    assert unknown[0]["id"] == 9
    assert unknown[0]["error"]["code"] == -32001
    done = (await result(client, "SendMessage", send_params("echo")))["task"]
    terminal = await stream(client, "SubscribeToTask", {"id": done["id"]})
    assert [e["error"]["code"] for e in terminal] == [-32004]
    invalid = await stream(client, "SubscribeToTask", {})
    assert [e["error"]["code"] for e in invalid] == [-32602]
    old = await stream(client, "SubscribeToTask", {"id": "x"}, headers={"A2A-Version": "0.3"})
    assert [e["error"]["code"] for e in old] == [-32009]


async def test_send_streaming_errors_are_sent_as_events(client: Any) -> None:
    events = await stream(client, "SendStreamingMessage", send_params("x", taskId="missing"))
    assert [e["error"]["code"] for e in events] == [-32001]


@pytest.mark.parametrize("method", ["SendStreamingMessage", "SubscribeToTask"])
async def test_streaming_not_declared(aiohttp_client: Any, method: str) -> None:
    client = await aiohttp_client(create_app(make_card(streaming=False), ScriptedAgent()))
    params = send_params("echo") if method == "SendStreamingMessage" else {"id": "x"}
    events = await stream(client, method, params)
    assert [e["error"]["code"] for e in events] == [-32004]
    assert (await result(client, "ListTasks", {}))["totalSize"] == 0


async def test_keepalive_comments(aiohttp_client: Any) -> None:
    agent = ScriptedAgent()
    settings = ServerSettings(keepalive_seconds=0.02)
    client = await aiohttp_client(create_app(make_card(), agent, settings=settings))
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


async def test_reader_that_falls_behind_gets_an_error_and_the_task_carries_on(
    aiohttp_client: Any,
) -> None:
    settings = ServerSettings(stream_queue_size=5)
    client = await aiohttp_client(create_app(make_card(), BurstAgent(), settings=settings))
    reader = await open_stream(client, "SendStreamingMessage", send_params("go"))
    events = await reader.rest()
    assert kinds(events)[-1] == "error"
    assert events[-1]["error"]["code"] == -32603
    assert "fell more than 5 events behind" in events[-1]["error"]["message"]
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
