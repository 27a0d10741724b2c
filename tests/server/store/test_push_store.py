"""The push part of every task store: configs, outbox, lanes, atomicity, restart, upgrade."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from store_support import Backend

from a2a_wire import codec
from a2a_wire.errors import TaskNotFoundError
from a2a_wire.server.store import Delivery, EventLogStore, SQLiteTaskStore
from a2a_wire.server.store.sqlite._schema import LOG_SCHEMA_VERSION
from a2a_wire.types import (
    Artifact,
    Part,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
)


def task(task_id: str = "t1") -> Task:
    return Task(id=task_id, context_id="c", status=TaskStatus(state=TaskState.WORKING))


def chunk(text: str = "x") -> TaskArtifactUpdateEvent:
    return TaskArtifactUpdateEvent(artifact=Artifact(artifact_id="a", parts=[Part(text=text)]))


def config(
    config_id: str, task_id: str = "t1", url: str = "https://h/x"
) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(id=config_id, task_id=task_id, url=url, token="tok")


async def pushed(store: EventLogStore, task_id: str, text: str = "x") -> tuple[bytes, int]:
    """Append one chunk with push work: its body and the outbox rows it added."""
    done = await store.append(task_id, [chunk(text)], push=True)
    return done.events[0].body, done.outbox


async def test_configs_keep_creation_order_and_replace_in_place(store: EventLogStore) -> None:
    await store.create(task())
    for config_id in ("b", "a", "c"):
        await store.put_push_config(config(config_id))
    await store.put_push_config(config("a", url="https://h/new"))
    listed = await store.list_push_configs("t1")
    assert [(c.id, c.url) for _, c in listed] == [
        ("b", "https://h/x"),
        ("a", "https://h/new"),
        ("c", "https://h/x"),
    ]
    positions = [pos for pos, _ in listed]
    assert positions == sorted(positions)
    assert await store.get_push_config("t1", "a") == config("a", url="https://h/new")
    assert await store.get_push_config("t1", "zz") is None
    assert await store.delete_push_config("t1", "a") is True
    assert await store.delete_push_config("t1", "a") is False
    assert [c.id for _, c in await store.list_push_configs("t1")] == ["b", "c"]


async def test_an_event_goes_to_every_config_of_its_task_only(
    backend: Backend, store: EventLogStore
) -> None:
    """PostgreSQL differs by design: ``pending_lanes`` returns every lane with undelivered rows
    whatever number it is given, since numbers do not follow commit order across tasks there
    (``_log_postgres_push``, its module docstring); the others return only lanes with newer rows."""
    await store.create(task())
    await store.create(task("t2"))
    assert (await pushed(store, "t1"))[1] == 0  # no configs yet
    await store.put_push_config(config("a"))
    await store.put_push_config(config("b"))
    await store.put_push_config(config("x", task_id="t2"))
    body, added = await pushed(store, "t1")
    assert added == 2
    assert (await store.append("t1", [chunk()])).outbox == 0  # without push work
    lanes, seen = await store.pending_lanes(0)
    assert sorted(lanes) == [("t1", "a"), ("t1", "b")]
    again = [("t1", "a"), ("t1", "b")] if backend.kind == "postgresql" else []
    assert await store.pending_lanes(seen) == (again, seen)
    head = await store.next_delivery("t1", "a")
    assert head is not None
    assert head.body == body and head.config == config("a") and head.attempts == 0
    assert head.lane == ("t1", "a") and head.delivery_id


async def test_create_stores_configs_and_the_first_event_together(store: EventLogStore) -> None:
    created = await store.create(task(), push_configs=[config("a")], push=True)
    assert created.outbox == 1
    assert [c.id for _, c in await store.list_push_configs("t1")] == ["a"]
    head = await store.next_delivery("t1", "a")
    assert head is not None and head.body == created.events[0].body
    assert codec.loads(head.body)["task"]["id"] == "t1"


async def test_a_lane_is_served_in_order(store: EventLogStore) -> None:
    await store.create(task(), push_configs=[config("a")])
    sent = [(await pushed(store, "t1", str(i)))[0] for i in range(3)]
    bodies = []
    while (head := await store.next_delivery("t1", "a")) is not None:
        bodies.append(head.body)
        if len(bodies) == 2:
            await store.delivery_failed(head.seq, attempts=4, error="HTTP 404")
        else:
            await store.delivery_done(head.seq)
    assert bodies == sent
    [failed] = await store.failed_deliveries("t1")
    assert (failed.body, failed.attempts, failed.last_error, failed.failed) == (
        sent[1],
        4,
        "HTTP 404",
        True,
    )


async def test_the_backlog_counts_the_rows_waiting_and_dates_the_oldest(
    store: EventLogStore,
) -> None:
    assert await store.outbox_backlog() == (0, None)
    await store.create(task(), push_configs=[config("a"), config("b")])
    await pushed(store, "t1", "first")
    first = await store.next_delivery("t1", "a")
    assert first is not None
    await pushed(store, "t1", "second")
    assert await store.outbox_backlog() == (4, first.created_at)  # two events, two configs
    await store.delivery_done(first.seq)
    retried = await store.next_delivery("t1", "b")
    assert retried is not None
    await store.delivery_retry(retried.seq, attempts=1, next_attempt_at=0.0, error="HTTP 503")
    assert await store.outbox_backlog() == (3, retried.created_at)  # a retry still waits
    await store.delivery_failed(retried.seq, attempts=2, error="HTTP 404")
    count, oldest = await store.outbox_backlog()
    assert count == 2 and oldest is not None and oldest >= first.created_at  # given up: gone


async def test_retries_are_recorded(store: EventLogStore) -> None:
    await store.create(task(), push_configs=[config("a")], push=True)
    head = await store.next_delivery("t1", "a")
    assert head is not None
    await store.delivery_retry(head.seq, attempts=2, next_attempt_at=123.5, error="HTTP 503")
    again = await store.next_delivery("t1", "a")
    assert again is not None
    assert (again.seq, again.attempts, again.next_attempt_at, again.last_error) == (
        head.seq,
        2,
        123.5,
        "HTTP 503",
    )
    assert again.delivery_id == head.delivery_id


async def test_deleting_a_config_drops_its_rows(store: EventLogStore) -> None:
    await store.create(task(), push_configs=[config("a"), config("b")], push=True)
    await pushed(store, "t1")
    head = await store.next_delivery("t1", "a")
    assert head is not None
    await store.delivery_failed(head.seq, attempts=1, error="x")
    await store.delete_push_config("t1", "a")
    assert await store.next_delivery("t1", "a") is None
    assert await store.failed_deliveries("t1") == []
    assert await store.next_delivery("t1", "b") is not None
    assert (await pushed(store, "t1"))[1] == 1


async def test_a_refused_write_adds_no_rows(store: EventLogStore) -> None:
    await store.create(task(), push_configs=[config("a")])
    await store.put_push_config(config("a", task_id="ghost"))
    with pytest.raises(TaskNotFoundError, match="^Task not found$") as caught:
        await store.append("ghost", [chunk()], push=True)
    assert caught.value.metadata == {"taskId": "ghost"}
    assert await store.next_delivery("ghost", "a") is None
    with pytest.raises(ValueError, match="already stored"):
        await store.create(task(), push_configs=[config("b")], push=True)
    assert await store.next_delivery("t1", "a") is None
    assert [c.id for _, c in await store.list_push_configs("t1")] == ["a"]  # "b" rolled back


async def test_concurrent_writes_with_push_do_not_interfere(store: EventLogStore) -> None:
    ids = [f"t{i}" for i in range(20)]
    await asyncio.gather(*(store.create(task(i), push_configs=[config("a", i)]) for i in ids))
    counts = await asyncio.gather(*(pushed(store, i) for i in ids * 3))
    assert [added for _, added in counts] == [1] * 60
    lanes, _ = await store.pending_lanes(0)
    assert sorted(lanes) == sorted((i, "a") for i in ids)


async def test_configs_and_pending_rows_survive_a_restart(backend: Backend) -> None:
    first = await backend.open()
    waiting = task()
    waiting.status = TaskStatus(state=TaskState.INPUT_REQUIRED)  # recovery leaves it alone
    created = await first.create(waiting, push_configs=[config("a")], push=True)
    head = await first.next_delivery("t1", "a")
    assert head is not None
    await first.delivery_retry(head.seq, attempts=3, next_attempt_at=9.0, error="HTTP 500")
    second, failed = await backend.reopen(first)
    assert failed == []
    assert [c for _, c in await second.list_push_configs("t1")] == [config("a")]
    lanes, _ = await second.pending_lanes(0)
    assert lanes == [("t1", "a")]
    again = await second.next_delivery("t1", "a")
    assert again == Delivery(
        seq=head.seq,
        delivery_id=head.delivery_id,
        config=head.config,
        body=created.events[0].body,
        created_at=head.created_at,
        attempts=3,
        next_attempt_at=9.0,
        last_error="HTTP 500",
    )
    assert (await pushed(second, "t1"))[1] == 1  # the set of tasks with configs was reloaded


async def test_sqlite_upgrades_a_version_1_file(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    raw = sqlite3.connect(path)
    raw.execute(
        "CREATE TABLE tasks (id TEXT PRIMARY KEY NOT NULL, owner TEXT NOT NULL,"
        " context_id TEXT NOT NULL, state TEXT NOT NULL, status_s INTEGER NOT NULL,"
        " status_ns INTEGER NOT NULL, body BLOB NOT NULL)"
    )
    raw.execute("PRAGMA user_version = 1")
    raw.commit()
    raw.close()
    store = SQLiteTaskStore(path)
    await store.open()
    try:
        await store.create(task(), push_configs=[config("a")], push=True)
        assert await store.next_delivery("t1", "a") is not None
    finally:
        await store.close()
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone() == (LOG_SCHEMA_VERSION,)
    raw.close()


async def test_recovery_pushes_the_failed_status(backend: Backend) -> None:
    store = await backend.open()
    await store.create(task(), push_configs=[config("a")])
    again, failed = await backend.reopen(store)
    assert failed == ["t1"]
    head = await again.next_delivery("t1", "a")
    assert head is not None
    event = codec.loads(head.body)["statusUpdate"]
    assert event["taskId"] == "t1" and event["status"]["state"] == "TASK_STATE_FAILED"
    assert event["status"]["message"]["parts"][0]["text"] == backend.restart_message


async def test_a_limit_refuses_new_configs_but_not_replacements(store: EventLogStore) -> None:
    await store.create(task())
    assert await store.put_push_config(config("a"), limit=2)
    assert await store.put_push_config(config("b"), limit=2)
    assert not await store.put_push_config(config("c"), limit=2)
    assert await store.put_push_config(config("a", url="https://h/new"), limit=2)
    assert [c.id for _, c in await store.list_push_configs("t1")] == ["a", "b"]
    assert await store.put_push_config(config("c"))  # no limit given: none applies
