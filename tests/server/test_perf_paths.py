"""The fast paths added for the server benchmark (docs/performance.md) keep their guarantees.

* Every operation of the SQLite store is one call on its connection's thread (one hop, however
  many statements: aiosqlite's ``_execute``, the one private entry point the store uses, is
  pinned here), and many concurrent writes all land.
* :func:`a2a_wire._protocol.ids.new_uuid` makes the same kind of id as ``str(uuid.uuid4())``.
* :meth:`Subscriber.ready` hands out the items at hand in order, without waiting; a stream writes
  the events that are already at hand together and still ends after the last one.
* A blocking SendMessage answers with the task the store folded when the run settled
  (``Appended.task``), without reading the store again, and that answer is what GetTask reads;
  the memory and SQLite stores hand over the fold's JSON too (``Appended.task_json``), which
  the answer splices instead of encoding the task again.
* The SQLite store folds a small task from the snapshot and tail its head keeps (no read), to
  what the file's own fold gives.
* A new task's stream (SendStreamingMessage) sends what the hub offers it and reads nothing
  from the store's log.
* The SQLite connection keeps temporary data in memory and checkpoints its WAL less often than
  SQLite's default.
* The in-memory store keeps a finished task as two objects the garbage collector walks (its
  record and the list of its events' bodies), however many events it logged.
"""

from __future__ import annotations

import asyncio
import gc
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from server_support import ScriptedAgent, kinds, make_card, result, send_params, stream

from a2a_wire import codec
from a2a_wire._protocol.ids import new_uuid
from a2a_wire.server import create_app
from a2a_wire.server._subscriber import END, Frame, Subscriber
from a2a_wire.server.store import EventLogStore, InMemoryTaskStore, SQLiteTaskStore
from a2a_wire.server.store.sqlite import _rows
from a2a_wire.server.store.sqlite._connection import hop
from a2a_wire.server.store.sqlite._store import BODY_CACHE_BYTES
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


def _task(task_id: str, state: TaskState = TaskState.WORKING, text: str = "hi") -> Task:
    message = Message(message_id=f"m-{task_id}", role=Role.USER, parts=[Part(text=text)])
    return Task(id=task_id, context_id="c", status=TaskStatus(state=state), history=[message])


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteTaskStore]:
    s = SQLiteTaskStore(tmp_path / "tasks.db")
    await s.open()
    yield s
    await s.close()


def _hook(task_id: str) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(id="p", task_id=task_id, url="https://h/x")


def _chunk(text: str) -> TaskArtifactUpdateEvent:
    artifact = Artifact(artifact_id="a", parts=[Part(text=text)])
    return TaskArtifactUpdateEvent(artifact=artifact, append=True)


async def test_an_operation_is_one_hop_to_the_connection_thread(
    store: SQLiteTaskStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.create(_task("t1"), push_configs=[_hook("t1")])
    hops: list[object] = []
    real = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(fn)
        return await real(self, fn, *args, **kwargs)

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
    await store.append("t1", [_chunk("x")])  # one INSERT
    await store.append("t1", [_chunk("y")], push=True)  # a transaction with its outbox row
    done = TaskStatusUpdateEvent(status=TaskStatus(state=TaskState.COMPLETED))
    await store.append("t1", [done], push=True)  # a transaction, then the fold
    assert len(hops) == 3
    got = await store.get("t1")  # a task at rest, just folded: read from the head, no hop
    assert got is not None and len(got.artifacts[0].parts) == 2
    assert len(hops) == 3
    assert await store.get("t1", owner="someone else") is None  # that one asks the file
    assert len(hops) == 4


async def test_concurrent_plain_writes_all_land(store: SQLiteTaskStore) -> None:
    ids = [f"t{i}" for i in range(40)]
    await asyncio.gather(*(store.create(_task(i)) for i in ids))
    await asyncio.gather(*(store.append(i, [_chunk(i)]) for i in ids * 2))
    for i in ids:
        got = await store.get(i)
        assert got is not None and got.artifacts[0].parts == [Part(text=i)] * 2


async def test_a_duplicate_create_fails_and_writes_nothing(store: SQLiteTaskStore) -> None:
    await store.create(_task("t1"))
    with pytest.raises(ValueError, match="already stored"):
        await store.create(_task("t1"))


async def test_ready_returns_the_items_at_hand_in_order_without_waiting(
    store: SQLiteTaskStore,
) -> None:
    await store.create(_task("t1"))
    for text in ("1", "2"):
        await store.append("t1", [_chunk(text)])
    await store.append("t1", [TaskStatusUpdateEvent(status=TaskStatus(state=TaskState.COMPLETED))])
    sub = Subscriber(store, "t1", "", 10, after=1)
    assert sub.ready() is None  # nothing read yet
    first = await sub.next(1.0)
    rest = [sub.ready(), sub.ready(), sub.ready(), sub.ready()]
    assert [item.seq for item in (first, *rest[:2]) if isinstance(item, Frame)] == [2, 3, 4]
    assert rest[2:] == [END, None]


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


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("text", ["work", "input", "reject", "task", "early"])
async def test_send_message_answers_from_the_fold_of_the_settling_append(
    kind: str, text: str, tmp_path: Path, aiohttp_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store: EventLogStore = (
        InMemoryTaskStore() if kind == "memory" else SQLiteTaskStore(tmp_path / "t.db")
    )
    client = await aiohttp_client(create_app(make_card(), ScriptedAgent(), store=store))
    reads: list[str] = []
    real_get = type(store).get

    async def counted(self: EventLogStore, task_id: str, *, owner: str = "") -> Task | None:
        reads.append(task_id)
        return await real_get(self, task_id, owner=owner)

    monkeypatch.setattr(type(store), "get", counted)
    answer = (await result(client, "SendMessage", send_params(text)))["task"]
    assert reads == []  # the answer came from the settling append's fold
    fetched = await result(client, "GetTask", {"id": answer["id"]})
    assert fetched == answer
    history = await result(client, "SendMessage", send_params(text, {"historyLength": 0}))
    assert "history" not in history["task"]  # the view of the fold still cuts the history


async def test_a_fold_the_head_can_do_reads_nothing_and_matches_the_file(
    store: SQLiteTaskStore,
) -> None:
    await store.create(_task("t1"))
    await store.append("t1", [_chunk("x")])
    statements: list[str] = []
    await hop(store._conn, lambda con: con.set_trace_callback(statements.append))
    done = await store.append(
        "t1", [TaskStatusUpdateEvent(status=TaskStatus(state=TaskState.COMPLETED))]
    )
    await hop(store._conn, lambda con: con.set_trace_callback(None))
    assert [s for s in statements if s.lstrip().upper().startswith("SELECT")] == []
    assert any(s.startswith("UPDATE tasks SET snap_seq") for s in statements)  # it did fold
    read = await hop(store._conn, lambda con: _rows.read_task(con, "t1", "", None))
    assert read is not None and read.seq == read.base_seq == done.events[-1].seq == 3
    assert done.task is not None and done.task == read.task  # what the file folds to


async def test_a_head_forgets_a_tail_too_large_to_keep(store: SQLiteTaskStore) -> None:
    await store.create(_task("t1"))
    await store.append("t1", [_chunk("x" * BODY_CACHE_BYTES)])
    done = await store.append(
        "t1", [TaskStatusUpdateEvent(status=TaskStatus(state=TaskState.COMPLETED))]
    )
    assert done.task is not None  # folded by reading the file instead
    assert done.task == await store.get("t1")
    assert len(done.task.artifacts[0].parts[0].text or "") == BODY_CACHE_BYTES


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_the_settling_fold_comes_with_the_json_the_store_wrote(
    kind: str, tmp_path: Path
) -> None:
    store: EventLogStore = (
        InMemoryTaskStore() if kind == "memory" else SQLiteTaskStore(tmp_path / "t.db")
    )
    await store.open()
    try:
        working = await store.create(_task("t1", TaskState.SUBMITTED), events=[_chunk("x")])
        assert working.task is None and working.task_json is None  # nothing folded yet
        settled = TaskStatusUpdateEvent(status=TaskStatus(state=TaskState.COMPLETED))
        done = await store.append("t1", [settled])
        assert done.task is not None and done.task_json is not None
        assert done.task_json == codec.encode(done.task)
        assert codec.decode(Task, done.task_json) == await store.get("t1")
        at_once = await store.create(_task("t2", TaskState.SUBMITTED), events=[settled])
        assert at_once.task is not None and at_once.task_json == codec.encode(at_once.task)
    finally:
        await store.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_new_tasks_stream_reads_nothing_from_the_log(
    kind: str, tmp_path: Path, aiohttp_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store: EventLogStore = (
        InMemoryTaskStore() if kind == "memory" else SQLiteTaskStore(tmp_path / "t.db")
    )
    client = await aiohttp_client(create_app(make_card(), ScriptedAgent(), store=store))
    reads: list[tuple[str, int]] = []
    real_read = type(store).read_events

    async def counted(self: EventLogStore, task_id: str, after_seq: int, **kw: Any) -> Any:
        reads.append((task_id, after_seq))
        return await real_read(self, task_id, after_seq, **kw)

    monkeypatch.setattr(type(store), "read_events", counted)
    for text in ("work", "input", "task"):
        events = await stream(client, "SendStreamingMessage", send_params(text))
        assert kinds(events)[0] == "task" and "error" not in kinds(events)
    assert reads == []  # every event came with the hub's offer


async def test_the_sqlite_connection_keeps_temporary_data_in_memory_and_checkpoints_less(
    store: SQLiteTaskStore,
) -> None:
    """Statement journals went to a temporary file (about 100 KB written per SendMessage), and
    SQLite's default checkpoint interval stalled the connection ten times a second."""
    from a2a_wire.server.store.sqlite._schema import WAL_AUTOCHECKPOINT_PAGES

    def pragmas(con: Any) -> tuple[int, int]:
        temp = con.execute("PRAGMA temp_store").fetchone()[0]
        pages = con.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        return temp, pages

    assert await hop(store._conn, pragmas) == (2, WAL_AUTOCHECKPOINT_PAGES)  # 2: MEMORY
    assert WAL_AUTOCHECKPOINT_PAGES > 1000


async def test_the_memory_store_keeps_a_finished_task_as_two_tracked_objects() -> None:
    store = InMemoryTaskStore()
    await store.open()
    chunks: list[TaskArtifactUpdateEvent] = [_chunk(f"part {i}") for i in range(5)]
    await store.create(_task("t1", TaskState.SUBMITTED), events=chunks)
    await store.append("t1", [TaskStatusUpdateEvent(status=TaskStatus(state=TaskState.COMPLETED))])
    gc.collect()  # untracks the tuples that hold only atoms (the status key)
    entry = store._entries["t1"]
    assert entry.head == 7 and len(entry.bodies) == 7
    shared = (type(entry), entry.state)  # the class and the enum member are not the task's
    own = [ref for ref in gc.get_referents(entry) if gc.is_tracked(ref) and ref not in shared]
    assert own == [entry.bodies]  # the bodies are bytes, which the collector never walks
    assert [e.seq for e in (await store.read_events("t1", 0)).events] == list(range(1, 8))
