"""Retention (a2a_wire.server._retention, docs/server.md "Retention"), with a fake clock: each
setting crossed, what goes with a deleted task, the in-memory cap, and the sweeper in the app."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from server_support import ScriptedAgent, error, make_card, result, send_params
from store_support import BACKENDS, Backend

from a2a_wire.server import ServerSettings, create_app
from a2a_wire.server._retention import RETENTION_BATCH, RETENTION_KEY, Retention
from a2a_wire.server.store import EventLogStore, InMemoryTaskStore
from a2a_wire.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

S = TaskState
DAY = 86400.0
SETTINGS = ServerSettings(
    terminal_retention_seconds=10 * DAY,
    interrupted_retention_seconds=3 * DAY,
    event_log_retention_seconds=DAY,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=BACKENDS)
async def backend(
    request: pytest.FixtureRequest, tmp_path: Path, clock: Clock
) -> AsyncIterator[Backend]:
    if request.param == "postgresql":
        request.getfixturevalue("postgres_dsn")
    helper = Backend(str(request.param), tmp_path, clock=clock)
    yield helper
    await helper.close_all()


@pytest.fixture
async def store(backend: Backend) -> EventLogStore:
    return await backend.open()


def make_task(task_id: str, state: TaskState = S.WORKING) -> Task:
    first = Message(message_id=f"m-{task_id}", role=Role.USER, parts=[Part(text="hi")])
    return Task(id=task_id, context_id="c", status=TaskStatus(state=state), history=[first])


def status(state: TaskState) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(status=TaskStatus(state=state))


def chunk(text: str) -> TaskArtifactUpdateEvent:
    artifact = Artifact(artifact_id="a", parts=[Part(text=text)])
    return TaskArtifactUpdateEvent(artifact=artifact, append=True)


def hook(task_id: str) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(id="p", task_id=task_id, url="https://h/x")


def sweeper(store: EventLogStore, clock: Clock, busy: set[str] | None = None) -> Retention:
    running = busy or set()
    return Retention(store, SETTINGS, running.__contains__, clock=clock)


async def finished(store: EventLogStore, task_id: str, state: TaskState = S.COMPLETED) -> None:
    """A task with a webhook, a few pushed events, and ``state`` last."""
    await store.create(make_task(task_id), push_configs=[hook(task_id)], push=True)
    for i in range(3):
        await store.append(task_id, [chunk(str(i))], push=True)
    await store.append(task_id, [status(state)], push=True)


async def test_a_terminal_task_is_deleted_once_its_time_is_up(
    store: EventLogStore, clock: Clock
) -> None:
    await finished(store, "done")
    await store.create(make_task("busy"))  # working: never deleted by age
    retention = sweeper(store, clock)
    clock.now += 10 * DAY - 1
    assert (await retention.sweep()).deleted == 0
    assert await store.get("done") is not None
    clock.now += 2
    swept = await retention.sweep()
    assert swept.deleted == 1
    assert await store.get("done") is None and await store.snapshot("done") is None
    assert await store.read_events("done", 0) is None
    assert await store.list_push_configs("done") == []
    assert await store.next_delivery("done", "p") is None
    assert await store.get("busy") is not None


async def test_an_interrupted_task_waits_for_its_follow_up_then_goes(
    store: EventLogStore, clock: Clock
) -> None:
    await store.create(make_task("ask", S.INPUT_REQUIRED))
    await store.create(make_task("auth", S.AUTH_REQUIRED))
    retention = sweeper(store, clock)
    clock.now += 2 * DAY
    await store.append("ask", [Message(message_id="u", role=Role.USER, parts=[Part(text="?")])])
    await store.append("ask", [status(S.WORKING)])  # the follow-up: its clock starts again
    await store.append("ask", [status(S.INPUT_REQUIRED)])
    clock.now += 1 * DAY + 1
    assert (await retention.sweep()).deleted == 1  # "auth", waiting 3 days and a second
    assert await store.get("auth") is None and await store.get("ask") is not None
    clock.now += 2 * DAY
    assert (await retention.sweep()).deleted == 1
    assert await store.get("ask") is None


async def test_a_finished_log_is_compacted_after_its_time_and_the_task_stays(
    store: EventLogStore, clock: Clock
) -> None:
    await finished(store, "done")
    retention = sweeper(store, clock)
    clock.now += DAY - 1
    assert (await retention.sweep()).compacted == 0
    kept = await store.read_events("done", 0)
    assert kept is not None and [e.seq for e in kept.events] == [1, 2, 3, 4, 5]
    before = await store.snapshot("done")
    clock.now += 2
    assert (await retention.sweep()).compacted == 1
    gone = await store.read_events("done", 2)
    assert gone is not None and gone.from_snapshot  # a resume starts from the task
    assert await store.snapshot("done") == before
    assert (await retention.sweep()).compacted == 0  # once


async def test_a_task_an_agent_still_runs_on_is_left_alone(
    store: EventLogStore, clock: Clock
) -> None:
    await finished(store, "done")
    clock.now += 11 * DAY
    assert (await sweeper(store, clock, busy={"done"}).sweep()).deleted == 0
    assert (await sweeper(store, clock).sweep()).deleted == 1


async def test_a_sweep_works_through_many_tasks_in_batches(
    store: EventLogStore, clock: Clock
) -> None:
    count = 2 * RETENTION_BATCH + 7
    for i in range(count):
        await store.create(make_task(f"t{i}", S.COMPLETED))
    clock.now += 11 * DAY
    assert (await sweeper(store, clock).sweep()).deleted == count
    assert (await store.expired({S.COMPLETED}, clock.now, limit=10)) == []


async def test_sqlite_keeps_no_row_of_a_deleted_task(tmp_path: Path, clock: Clock) -> None:
    backend = Backend("sqlite", tmp_path, clock=clock)  # memory frees everything at once
    try:
        store = await backend.open()
        await finished(store, "done")
        await finished(store, "kept", S.WORKING)
        clock.now += 11 * DAY
        swept = await sweeper(store, clock).sweep()
        assert swept.deleted == 1 and swept.purged > 0
    finally:
        await backend.close_all()
    raw = sqlite3.connect(backend.path)
    try:
        events = "SELECT DISTINCT t.id FROM task_events e JOIN tasks t ON t.ref = e.task_ref"
        assert raw.execute(events).fetchall() == [("kept",)]
        orphans = "SELECT COUNT(*) FROM task_events WHERE task_ref NOT IN (SELECT ref FROM tasks)"
        assert raw.execute(orphans).fetchone() == (0,)  # the deleted task's events are gone
        for table in ("tasks", "push_configs", "push_outbox"):
            column = "id" if table == "tasks" else "task_id"
            rows = raw.execute(f"SELECT DISTINCT {column} FROM {table}").fetchall()
            assert rows == [("kept",)], table
        assert raw.execute("SELECT COUNT(*) FROM deleted_tasks").fetchone() == (0,)
    finally:
        raw.close()


async def test_the_memory_store_holds_at_most_its_cap(clock: Clock) -> None:
    store = InMemoryTaskStore(max_tasks=3, clock=clock)
    await store.open()
    await store.create(make_task("ask", S.INPUT_REQUIRED))
    clock.now += 1
    await store.create(make_task("old", S.COMPLETED))
    clock.now += 1
    await store.create(make_task("new", S.COMPLETED))
    clock.now += 1
    await store.create(make_task("t4"))  # the oldest terminal task makes room
    assert await store.get("old") is None
    assert [await store.get(i) is not None for i in ("ask", "new", "t4")] == [True] * 3
    await store.create(make_task("t5"))  # then the other terminal one
    await store.create(make_task("t6"))  # then the interrupted one
    assert await store.get("new") is None and await store.get("ask") is None
    await store.create(make_task("t7"))  # only active tasks left: none is forgotten
    assert [await store.get(f"t{i}") is not None for i in range(4, 8)] == [True] * 4
    with pytest.raises(ValueError, match="max_tasks"):
        InMemoryTaskStore(max_tasks=0)


async def test_the_cap_forgets_configs_and_rows_too(clock: Clock) -> None:
    store = InMemoryTaskStore(max_tasks=1, clock=clock)
    await store.open()
    await finished(store, "done")
    await store.create(make_task("next"))
    assert await store.get("done") is None
    assert await store.list_push_configs("done") == []
    assert await store.pending_lanes(0) == ([], 5)


async def test_the_app_sweeps_in_the_background(aiohttp_client: Any) -> None:
    settings = ServerSettings(terminal_retention_seconds=0.05, retention_interval_seconds=0.01)
    app = create_app(make_card(), ScriptedAgent(), settings=settings)
    client = await aiohttp_client(app)
    assert app[RETENTION_KEY].running
    task = (await result(client, "SendMessage", send_params("echo")))["task"]
    deadline = time.monotonic() + 30
    while (await result(client, "ListTasks", {}))["totalSize"] and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    gone = await error(client, "GetTask", {"id": task["id"]})
    unknown = await error(client, "GetTask", {"id": "never-was"})
    assert gone["code"] == unknown["code"] == -32001  # as if it never existed
    assert gone["message"].replace(task["id"], "X") == unknown["message"].replace("never-was", "X")
    await client.close()
    assert not app[RETENTION_KEY].running  # stopped with the app, before the store closed


def test_retention_settings_must_be_positive() -> None:
    for name in (
        "terminal_retention_seconds",
        "interrupted_retention_seconds",
        "event_log_retention_seconds",
        "memory_max_tasks",
        "retention_interval_seconds",
    ):
        with pytest.raises(ValueError, match=f"^{name} must be positive"):
            ServerSettings(**{name: 0})
