"""What the PostgreSQL store sends to the database: one statement per call, nothing in between.

The store's pool lends a connection again without asyncpg's reset query (the store leaves no
session state behind), a settling append hands over the task its fold read, and a reader that
knows a task's last notified number waits without asking the table. Statements are counted with
asyncpg's query logger on the one connection of a pool of one; the keeper does not beat
(``heartbeat_seconds=None``), so nothing else uses it. Every test has a schema of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pg_stores import DEADLINE, Stores, until
from test_event_log import chunk, make_task, status

from a2a_wire.server.store import PostgresTaskStore
from a2a_wire.server.store.postgresql._listen import NOTED_TASKS, GapWaiters
from a2a_wire.types import TaskState

S = TaskState


@asynccontextmanager
async def logged(store: PostgresTaskStore) -> AsyncIterator[list[str]]:
    """The statements sent on the store's one pool connection within the block."""
    sent: list[str] = []

    def log(record: Any) -> None:
        sent.append(record.query)

    async with store._pool.acquire() as conn:
        conn.add_query_logger(log)
    try:
        yield sent
    finally:
        async with store._pool.acquire() as conn:
            conn.remove_query_logger(log)


async def one_connection(stores: Stores, **options: Any) -> PostgresTaskStore:
    """A store whose pool has one connection and whose keeper sends nothing, warmed up.

    Warming up (a task ``warm``, created and appended to) lets asyncpg read the types of the
    statements' array parameters once, as it does on every new connection.
    """
    store = await stores(pool_size=1, heartbeat_seconds=None, **options)
    await store.create(make_task("warm"))
    await store.append("warm", [chunk("a", "x"), status(S.COMPLETED, "done")])
    return store


async def writer_and_reader(stores: Stores) -> tuple[PostgresTaskStore, PostgresTaskStore]:
    """A writer and a reader (never polling) that saw the notification of task ``t1``'s 2."""
    writer = await stores()
    reader = await one_connection(stores, poll_interval=DEADLINE)
    await writer.create(make_task("t1"))
    await writer.append("t1", [chunk("a", "x")])
    await until(lambda: reader._waiters.noted("t1") == 2)
    return writer, reader


async def test_each_call_is_one_statement_and_no_reset_follows(stores: Stores) -> None:
    store = await one_connection(stores)
    sql = store._sql
    async with logged(store) as sent:
        await store.create(make_task("t1"))
        await store.append("t1", [chunk("a", "x")])
        assert await store.get("t1") is not None
        assert await store.read_events("t1", 0) is not None
    assert sent == [sql.create, sql.append, sql.read, sql.events]


async def test_a_transaction_left_open_is_rolled_back_before_the_connection_is_lent_again(
    stores: Stores,
) -> None:
    store = await one_connection(stores)
    await store.create(make_task("t1"))
    async with store._pool.acquire() as conn:
        await conn.execute("BEGIN")
        await conn.execute(f"UPDATE {store._schema}.tasks SET owner = 'someone' WHERE id = 't1'")
    async with store._pool.acquire() as conn:
        assert not conn.is_in_transaction()
    assert await store.get("t1") == make_task("t1")


async def test_a_settling_append_hands_over_the_task_its_fold_read(stores: Stores) -> None:
    store = await one_connection(stores)
    sql = store._sql
    await store.create(make_task("t1"))
    running = await store.append("t1", [chunk("a", "x")])
    assert running.task is None  # no fold: a caller reads
    async with logged(store) as sent:
        done = await store.append("t1", [status(S.COMPLETED, "done")])
    assert sent == [sql.append, sql.read, sql.fold]
    assert done.task is not None and done.task == await store.get("t1")
    done.task.artifacts.clear()  # the caller's copy
    stored = await store.get("t1")
    assert stored is not None and stored.artifacts


async def test_a_reader_that_knows_the_notified_number_waits_without_a_query(
    stores: Stores,
) -> None:
    writer, reader = await writer_and_reader(stores)
    async with logged(reader) as sent:
        assert await reader.wait_events("t1", 1, timeout=DEADLINE)  # 2 was notified
        waiting = asyncio.ensure_future(reader.wait_events("t1", 2, timeout=DEADLINE))
        await until(lambda: "t1" in reader._waiters._futures)
        assert sent == []
        await writer.append("t1", [chunk("a", "y")])
        assert await waiting
    assert sent == []
    assert reader._waiters.noted("t1") == 3


async def test_a_reader_asks_the_table_when_notifications_may_have_been_missed(
    stores: Stores,
) -> None:
    writer, reader = await writer_and_reader(stores)
    reader._waiters.wake_all()  # as after the listening connection came back
    assert reader._waiters.noted("t1") is None
    async with logged(reader) as sent:
        assert await reader.wait_events("t1", 1, timeout=DEADLINE)
    assert sent == [reader._sql.last_seq]


async def test_a_deleted_task_s_number_is_forgotten(stores: Stores) -> None:
    writer = await stores()
    reader = await one_connection(stores, poll_interval=DEADLINE)
    await writer.create(make_task("t1"))
    await until(lambda: reader._waiters.noted("t1") == 1)
    await writer.delete_task("t1")
    await until(lambda: reader._waiters.noted("t1") is None)
    assert await reader.wait_events("t1", 1, timeout=DEADLINE)  # gone: the table says so


def test_noted_numbers_only_grow_and_the_oldest_tasks_are_forgotten() -> None:
    waiters = GapWaiters()
    waiters.notified("t1", 5)
    waiters.notified("t1", 3)  # a late notification of an earlier commit
    assert waiters.noted("t1") == 5
    for i in range(NOTED_TASKS):
        waiters.notified(f"other{i}", 1)
    assert waiters.noted("t1") is None and waiters.noted(f"other{NOTED_TASKS - 1}") == 1


async def test_a_notification_wakes_the_readers_of_its_task_only() -> None:
    waiters = GapWaiters()
    woken: dict[str, asyncio.Future[bool]] = {}
    for task_id in ("t1", "t2"):
        woken[task_id] = asyncio.ensure_future(waiters.wait(task_id, _never, DEADLINE))
    await until(lambda: set(waiters._futures) == {"t1", "t2"})
    waiters.notified("t1", 2)
    assert await woken["t1"]
    assert not woken["t2"].done()
    waiters.wake_all()
    assert await woken["t2"]


async def _never() -> bool:
    return False
