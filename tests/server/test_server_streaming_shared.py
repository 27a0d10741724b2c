"""A stream on one process follows a task whose agent runs on another (PostgreSQL, spec 3.1.6).

Two apps on one schema stand for two processes A and B. The task runs on A; SubscribeToTask on
B gets its events through ``NOTIFY`` alone: B's keep-alive and polling intervals are far beyond
the test's patience, so a stream that waited only for its own process's offers (which never
come from A) would wait for ever. And a new task's stream, before the agent's first event,
waits for its own hub's offer, not on the store (which knows no such task yet and would answer
every wait at once).
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
from a2a_wire.server.store import PostgresTaskStore

NEVER = 3600.0  # seconds: no keep-alive and no poll happens during the test


class GatedAgent(AgentExecutor):
    """Starts the task, waits for the test's gate, then adds one artifact and completes.

    With ``before_task``, it waits at the gate before its first event (no task exists yet).
    """

    def __init__(self, before_task: bool = False) -> None:
        self.gate = asyncio.Event()
        self.before_task = before_task

    async def execute(self, context: RequestContext, events: EventQueue) -> None:
        updater = TaskUpdater(events, context)
        if self.before_task:
            await self.gate.wait()
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
        store = PostgresTaskStore(postgres_dsn, schema=postgres_schema, poll_interval=NEVER)
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


class CountingStore(PostgresTaskStore):
    """Counts the waits of the streams on the store."""

    waits = 0

    async def wait_events(self, task_id: str, after_seq: int, *, timeout: float) -> bool:
        CountingStore.waits += 1
        return await super().wait_events(task_id, after_seq, timeout=timeout)


@pytest.mark.timeout(2 * PATIENCE)
async def test_a_new_tasks_stream_does_not_spin_on_the_store_before_the_task_exists(
    aiohttp_client: Any, postgres_dsn: str, postgres_schema: str
) -> None:
    agent = GatedAgent(before_task=True)
    store = CountingStore(postgres_dsn, schema=postgres_schema, poll_interval=NEVER)
    settings = ServerSettings(keepalive_seconds=NEVER)
    client = await aiohttp_client(create_app(make_card(), agent, store=store, settings=settings))
    CountingStore.waits = 0
    streaming = asyncio.ensure_future(
        open_stream(client, "SendStreamingMessage", send_params("hi"))
    )
    await asyncio.sleep(0.2)  # the stream waits for the agent's first event meanwhile
    assert CountingStore.waits == 0  # its wake is the hub's offer; the store knows no such task
    agent.gate.set()
    async with asyncio.timeout(PATIENCE):
        events = await (await streaming).rest()
    assert events[-1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
