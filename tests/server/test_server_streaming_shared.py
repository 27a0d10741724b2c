"""A stream on one process follows a task whose agent runs on another (PostgreSQL, spec 3.1.6).

Two apps on one schema stand for two processes A and B. The task runs on A; SubscribeToTask on
B gets its events through ``NOTIFY`` alone: B's keep-alive and polling intervals are far beyond
the test's patience, so a stream that waited only for its own process's offers (which never
come from A) would wait for ever.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from patience import PATIENCE
from server_support import make_card, open_stream, result, send_params

from a2a_wire.server import (
    AgentExecutor,
    EventQueue,
    RequestContext,
    ServerSettings,
    TaskUpdater,
    create_app,
)
from a2a_wire.server.store._log_postgres import PostgresEventLog

NEVER = 3600.0  # seconds: no keep-alive and no poll happens during the test


class GatedAgent(AgentExecutor):
    """Starts the task, waits for the test's gate, then adds one artifact and completes."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        updater = TaskUpdater(events, context)
        await updater.start_work()
        await self.gate.wait()
        await updater.add_artifact("from A")
        await updater.complete()


@pytest.fixture
async def two_processes(
    aiohttp_client: Any, postgres_dsn: str, postgres_schema: str
) -> AsyncIterator[tuple[Any, Any, GatedAgent]]:
    agent = GatedAgent()
    settings = ServerSettings(keepalive_seconds=NEVER)
    clients = []
    for _ in range(2):
        store = PostgresEventLog(postgres_dsn, schema=postgres_schema, poll_interval=NEVER)
        app = create_app(make_card(), agent, store=store, settings=settings)
        clients.append(await aiohttp_client(app))
    yield clients[0], clients[1], agent


@pytest.mark.timeout(2 * PATIENCE)
async def test_a_stream_on_b_is_woken_by_commits_on_a(
    two_processes: tuple[Any, Any, GatedAgent],
) -> None:
    a, b, agent = two_processes
    task = (await result(a, "SendMessage", send_params("hi", {"returnImmediately": True})))["task"]
    reader = await open_stream(b, "SubscribeToTask", {"id": task["id"]})
    first = await reader.next()
    assert first is not None and first["result"]["task"]["id"] == task["id"]
    agent.gate.set()
    async with asyncio.timeout(PATIENCE):
        rest = await reader.rest()
    updates = [e["result"] for e in rest]
    assert [next(iter(u)) for u in updates] == ["artifactUpdate", "statusUpdate"]
    assert updates[0]["artifactUpdate"]["artifact"]["parts"] == [{"text": "from A"}]
    assert updates[1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
