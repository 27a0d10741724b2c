"""The fast paths added for the server benchmark (docs/performance.md) keep their guarantees.

* The SQLite store's one-statement writes skip the write lock only while it is free: a plain
  write never runs inside another write's transaction, and many concurrent writes all land.
* :func:`a2a_wire._protocol.ids.new_uuid` makes the same kind of id as ``str(uuid.uuid4())``.
* :meth:`Subscriber.ready` hands out queued items in order, without waiting; a stream writes the
  events that are already queued together and still ends after the last one.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from a2a_wire import codec
from a2a_wire._protocol.ids import new_uuid
from a2a_wire.server._subscriber import END, Subscriber
from a2a_wire.server.store import SQLiteTaskStore
from a2a_wire.types import Message, Part, Role, Task, TaskState, TaskStatus


def _task(task_id: str, state: TaskState = TaskState.WORKING, text: str = "hi") -> Task:
    message = Message(message_id=f"m-{task_id}", role=Role.USER, parts=[Part(text=text)])
    return Task(id=task_id, context_id="c", status=TaskStatus(state=state), history=[message])


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteTaskStore]:
    s = SQLiteTaskStore(tmp_path / "tasks.db")
    await s.open()
    yield s
    await s.close()


async def test_a_plain_write_waits_while_a_transaction_holds_the_lock(
    store: SQLiteTaskStore,
) -> None:
    await store.create(_task("t1"))
    async with store._write_lock:  # what a push transaction holds from BEGIN to COMMIT
        update = asyncio.create_task(store.update(_task("t1", TaskState.COMPLETED)))
        create = asyncio.create_task(store.create(_task("t2")))
        await asyncio.sleep(0.05)
        assert not update.done() and not create.done()
        got = await store.get("t1")
        assert got is not None and got.status is not None
        assert got.status.state == TaskState.WORKING
    await asyncio.gather(update, create)
    got = await store.get("t1")
    assert got is not None and got.status is not None
    assert got.status.state == TaskState.COMPLETED
    assert await store.get("t2") is not None


async def test_concurrent_plain_writes_all_land(store: SQLiteTaskStore) -> None:
    ids = [f"t{i}" for i in range(40)]
    await asyncio.gather(*(store.create(_task(i)) for i in ids))
    await asyncio.gather(*(store.update(_task(i, TaskState.COMPLETED, text=i)) for i in ids))
    for i in ids:
        got = await store.get(i)
        assert got is not None and got.status is not None
        assert got.status.state == TaskState.COMPLETED
        assert got.history[0].parts[0].text == i


async def test_a_duplicate_create_still_fails_on_the_lock_free_path(
    store: SQLiteTaskStore,
) -> None:
    assert not store._write_lock.locked()
    await store.create(_task("t1"))
    with pytest.raises(ValueError, match="already stored"):
        await store.create(_task("t1"))


async def test_ready_returns_queued_items_in_order_without_waiting() -> None:
    sub = Subscriber(limit=10)
    assert sub.ready() is None
    sub.push(b"1")
    sub.push(b"2")
    sub.finish()
    assert [sub.ready(), sub.ready(), sub.ready(), sub.ready()] == [b"1", b"2", END, None]


async def test_ready_after_next_continues_the_same_queue() -> None:
    sub = Subscriber(limit=10)
    sub.push(codec.dumps({"n": 1}))
    sub.push(codec.dumps({"n": 2}))
    assert await sub.next(1.0) == b'{"n":1}'
    assert sub.ready() == b'{"n":2}'
    assert sub.ready() is None


def test_new_uuid_is_a_canonical_random_version_4_uuid() -> None:
    seen = set()
    for _ in range(20_000):
        text = new_uuid()
        parsed = uuid.UUID(text)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert str(parsed) == text  # lower case, 8-4-4-4-12
        seen.add(text)
    assert len(seen) == 20_000
    # Every variant digit occurs: the two random bits of that nibble are kept.
    assert {text[19] for text in seen} == set("89ab")
