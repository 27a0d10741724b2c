"""Streams always end: an open stream whose store reads fail rides out a short outage and ends
with an error event naming the task after ``stream_outage_seconds``; never an HTTP 500 or a
dropped connection, and no traceback in the log.

Through the real aiohttp app on 127.0.0.1 with a store whose reads fail on demand
(tests/fault_store.py). The agent is held on its gate while the store fails; the stream reads
the store after each keep-alive, so short keep-alive intervals make it read often.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from aiohttp import web
from fault_store import FaultyStore
from server_support import ScriptedAgent, kinds, make_card, open_stream, send_params, states

from a2a_wire.server import ServerSettings, create_app

READS = frozenset({"read_events", "snapshot"})


@pytest.fixture
def store() -> FaultyStore:
    return FaultyStore()


def app_with(agent: ScriptedAgent, store: FaultyStore, outage: float) -> web.Application:
    settings = ServerSettings(
        keepalive_seconds=0.1, stream_outage_seconds=outage, store_retry_after_seconds=2
    )
    return create_app(make_card(), agent, store=store, settings=settings)


async def test_an_open_stream_ends_with_an_error_event_naming_the_task(
    aiohttp_client: Any, agent: ScriptedAgent, store: FaultyStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client = await aiohttp_client(app_with(agent, store, outage=0.8))
    reader = await open_stream(client, "SendStreamingMessage", send_params("wait"))
    first, working = await reader.next(), await reader.next()
    assert first is not None and working is not None
    assert states([first, working]) == ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]
    task_id = first["result"]["task"]["id"]
    store.failing = READS
    seen = reader.decoder.comments_seen
    rest = await reader.rest()  # ends: the connection is not dropped, the body completes
    assert kinds(rest) == ["error"]
    err = rest[0]["error"]
    assert err["code"] == -32000
    (info,) = err["data"]
    assert info["reason"] == "STORE_UNAVAILABLE"
    assert info["metadata"] == {"retryAfterSeconds": "2", "taskId": task_id}
    assert task_id in err["message"]
    assert reader.decoder.comments_seen - seen >= 3  # keep-alives went on during the outage
    assert store.refused["read_events"] + store.refused["snapshot"] >= 2  # retried
    bad = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert bad == [], [r.getMessage() for r in bad]
    store.failing = frozenset()
    agent.gate.set()


async def test_a_short_outage_is_ridden_out(
    aiohttp_client: Any, agent: ScriptedAgent, store: FaultyStore
) -> None:
    client = await aiohttp_client(app_with(agent, store, outage=30.0))
    reader = await open_stream(client, "SendStreamingMessage", send_params("wait"))
    assert await reader.next() is not None and await reader.next() is not None
    store.failing = READS
    await reader.comments(reader.decoder.comments_seen + 3)  # keep-alives while reads fail
    assert store.refused["read_events"] >= 1
    store.failing = frozenset()
    agent.gate.set()
    rest = await reader.rest()
    assert kinds(rest) == ["artifactUpdate", "statusUpdate"]
    assert states(rest) == ["TASK_STATE_COMPLETED"]


async def test_a_subscriber_to_a_task_the_store_stops_serving_ends_too(
    aiohttp_client: Any, agent: ScriptedAgent, store: FaultyStore
) -> None:
    client = await aiohttp_client(app_with(agent, store, outage=0.5))
    first = await open_stream(client, "SendStreamingMessage", send_params("wait"))
    task = await first.next()
    assert task is not None
    task_id = task["result"]["task"]["id"]
    second = await open_stream(client, "SubscribeToTask", {"id": task_id})
    assert kinds([e for e in [await second.next()] if e]) == ["task"]
    store.failing = READS
    for reader in (first, second):
        rest = await reader.rest()
        assert kinds(rest)[-1] == "error"
        assert rest[-1]["error"]["data"][0]["metadata"]["taskId"] == task_id
    store.failing = frozenset()
    agent.gate.set()
