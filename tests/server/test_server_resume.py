"""Resuming a stream (docs/server.md, "Resuming a stream"): every event carries its number as
the SSE id, and SubscribeToTask with ``Last-Event-ID`` gets exactly the events after it, then
the live ones: no gap, no duplicate, after the task finished, from a compacted log, and across a
server restart."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.typedefs import Handler
from server_support import (
    EventReader,
    ScriptedAgent,
    kinds,
    make_card,
    open_stream,
    plain_error,
    result,
    send_params,
    states,
    violations,
)
from store_support import ServerStores

from a2a_wire.server import ERROR_CODES_KEY, STORE_KEY, create_app
from a2a_wire.server.store import SQLiteTaskStore


async def step(agent: ScriptedAgent) -> None:
    """Let the ``chunks`` script send its next chunk (it clears the gate when it takes it)."""
    agent.gate.set()
    while agent.gate.is_set():
        await asyncio.sleep(0.001)


async def resume(client: Any, task_id: str, last: str) -> EventReader:
    return await open_stream(
        client, "SubscribeToTask", {"id": task_id}, headers={"Last-Event-ID": last}
    )


async def started_chunks(client: Any, agent: ScriptedAgent) -> tuple[EventReader, str]:
    """A ``chunks`` task whose stream has read the task (1) and WORKING (2)."""
    reader = await open_stream(client, "SendStreamingMessage", send_params("chunks"))
    first, working = await reader.next(), await reader.next()
    assert first is not None and working is not None
    assert reader.ids == ["1", "2"]
    await agent.started.wait()
    return reader, first["result"]["task"]["id"]


async def test_a_dropped_stream_resumes_with_the_next_event_then_the_live_ones(
    client: Any, agent: ScriptedAgent
) -> None:
    reader, task_id = await started_chunks(client, agent)
    await step(agent)
    chunk = await reader.next()
    assert chunk is not None and reader.ids[-1] == "3"
    reader.response.close()  # the connection drops; the agent goes on
    await step(agent)  # event 4, sent while nobody listens
    again = await resume(client, task_id, "3")
    missed = await again.next()
    assert missed is not None and again.ids == ["4"]
    assert missed["result"]["artifactUpdate"]["artifact"]["parts"] == [{"text": "c1"}]
    await step(agent)  # live: the last chunk (5), then COMPLETED (6)
    rest = await again.rest()
    assert again.ids == ["4", "5", "6"]
    assert kinds(rest) == ["artifactUpdate", "statusUpdate"]
    assert states(rest) == ["TASK_STATE_COMPLETED"]


async def test_a_finished_task_replays_the_events_after_the_number(client: Any) -> None:
    task = (await result(client, "SendMessage", send_params("echo")))["task"]
    whole = await resume(client, task["id"], "0")
    events = await whole.rest()
    assert whole.ids == ["1", "2", "3", "4"]
    assert kinds(events) == ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    tail = await resume(client, task["id"], "2")
    assert kinds(await tail.rest()) == ["artifactUpdate", "statusUpdate"]
    assert tail.ids == ["3", "4"]
    nothing = await resume(client, task["id"], "4")  # it had everything: an empty stream
    assert await nothing.rest() == [] and nothing.ids == []
    refused = await plain_error(client, "SubscribeToTask", {"id": task["id"]})
    assert refused["code"] == -32004  # without the header, a terminal task is refused


async def test_a_compacted_log_starts_again_from_the_task(
    client: Any, app: web.Application
) -> None:
    task = (await result(client, "SendMessage", send_params("echo")))["task"]
    store = app[STORE_KEY]
    while await store.compact(task["id"], 100):
        pass
    reader = await resume(client, task["id"], "2")
    events = await reader.rest()
    assert kinds(events) == ["task"] and reader.ids == ["4"]  # the snapshot, with its number
    assert events[0]["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_resumed_interrupted_task_follows_its_next_turn(
    client: Any, app: web.Application
) -> None:
    task = (await result(client, "SendMessage", send_params("input")))["task"]
    store = app[STORE_KEY]
    while await store.compact(task["id"], 100):
        pass
    reader = await resume(client, task["id"], "1")  # compacted: the task first
    first = await reader.next()
    assert first is not None and kinds([first]) == ["task"] and reader.ids == ["2"]
    await result(client, "SendMessage", send_params("more", taskId=task["id"]))
    rest = await reader.rest()
    assert kinds(rest) == ["statusUpdate", "artifactUpdate", "statusUpdate"]
    assert reader.ids == ["2", "4", "5", "6"]  # 3 is the follow-up message: history, not streamed


async def test_a_number_beyond_the_log_starts_from_the_task(client: Any) -> None:
    task = (await result(client, "SendMessage", send_params("input")))["task"]
    reader = await resume(client, task["id"], "1000")
    first = await reader.next()
    assert first is not None and kinds([first]) == ["task"] and reader.ids == ["2"]
    reader.response.close()


@pytest.mark.parametrize(
    "value", ["abc", "-1", "1.5", "+3", "0x10", "٣", "99999999999999999999", "9223372036854775808"]
)
async def test_a_bad_last_event_id_is_invalid_params(client: Any, value: str) -> None:
    task = (await result(client, "SendMessage", send_params("input")))["task"]
    headers = {"Last-Event-ID": value}
    err = await plain_error(client, "SubscribeToTask", {"id": task["id"]}, headers=headers)
    assert err["code"] == -32602 and violations(err) == ["Last-Event-ID"]


async def test_an_empty_last_event_id_is_absent(client: Any) -> None:
    task = (await result(client, "SendMessage", send_params("input")))["task"]
    reader = await resume(client, task["id"], "")
    first = await reader.next()
    assert first is not None and kinds([first]) == ["task"] and reader.ids == ["2"]
    reader.response.close()


async def test_resume_of_an_unknown_task_is_not_found(client: Any) -> None:
    headers = {"Last-Event-ID": "3"}
    err = await plain_error(client, "SubscribeToTask", {"id": "nope"}, headers=headers)
    assert err["code"] == -32001


async def test_plain_answers_of_streaming_calls_name_their_error_code(
    aiohttp_client: Any, agent: ScriptedAgent, store_for: ServerStores
) -> None:
    seen: list[tuple[int, ...]] = []

    @web.middleware
    async def record(request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await handler(request)
        seen.append(response[ERROR_CODES_KEY])
        return response

    app = create_app(make_card(), agent, store=store_for())
    app.middlewares.insert(0, record)
    client = await aiohttp_client(app)
    await plain_error(client, "SubscribeToTask", {"id": "nope"})
    await plain_error(client, "SubscribeToTask", {"id": "x"}, headers={"Last-Event-ID": "x"})
    assert seen == [(-32001,), (-32602,)]


async def test_a_resume_across_a_restart_gets_the_recovery_event(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    path = tmp_path / "tasks.sqlite3"
    agent = ScriptedAgent()
    first = await aiohttp_client(create_app(make_card(), agent, store=SQLiteTaskStore(path)))
    reader, running = await started_chunks(first, agent)
    asked = (await result(first, "SendMessage", send_params("input")))["task"]
    await first.close()  # the server stops; the running task stays WORKING in the file
    again = await aiohttp_client(
        create_app(make_card(), ScriptedAgent(), store=SQLiteTaskStore(path))
    )
    resumed = await resume(again, running, reader.ids[-1])
    events = await resumed.rest()
    assert resumed.ids == ["3"] and states(events) == ["TASK_STATE_FAILED"]  # recovery's event
    waiting = await resume(again, asked["id"], "2")  # interrupted: follows the next turn
    await result(again, "SendMessage", send_params("more", taskId=asked["id"]))
    assert states(await waiting.rest()) == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert waiting.ids == ["4", "5", "6"]
