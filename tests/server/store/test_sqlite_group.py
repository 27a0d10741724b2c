"""Group commit of the SQLite store (:mod:`a2a_wire.server.store.sqlite._group`).

Writes that queue while the connection's thread is busy go there as one transaction; one that
fails gets its own error and the others commit; a failed commit reaches every write of its
group; nothing waits for ever. The store's thread is held busy by a read that waits on a
``threading.Event`` the test sets, so the writes queue behind it whatever the machine's speed.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from a2a_wire.server.store import SQLiteTaskStore
from a2a_wire.server.store.sqlite._connection import hop
from a2a_wire.server.store.sqlite._group import WriteGroup, run_group
from a2a_wire.types import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

GATE_SECONDS = 60.0  # the most a held thread waits if a test fails before opening its gate


def make_task(task_id: str) -> Task:
    first = Message(message_id=f"m-{task_id}", role=Role.USER, parts=[Part(text="hi")])
    status = TaskStatus(state=TaskState.WORKING)
    return Task(id=task_id, context_id="c1", status=status, history=[first])


def chunk(i: int) -> TaskArtifactUpdateEvent:
    artifact = Artifact(artifact_id="out", parts=[Part(text=f"{i},")])
    return TaskArtifactUpdateEvent(artifact=artifact, append=i > 0)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteTaskStore]:
    opened = SQLiteTaskStore(tmp_path / "tasks.db")
    await opened.open()
    yield opened
    await opened.close()


class Statements:
    """The statements the store's connection runs, by their first word."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, sql: str) -> None:
        self.seen.append(sql.split()[0].upper())

    def count(self, word: str) -> int:
        return self.seen.count(word)


async def traced(store: SQLiteTaskStore) -> Statements:
    statements = Statements()
    await hop(store._conn, lambda con: con.set_trace_callback(statements))
    return statements


async def held(store: SQLiteTaskStore, writes: Callable[[], list[Any]]) -> list[Any]:
    """Start ``writes`` while the store's thread is held busy, then let it go; their outcomes."""
    gate, busy = threading.Event(), threading.Event()

    def hold(con: sqlite3.Connection) -> None:
        busy.set()
        gate.wait(GATE_SECONDS)

    holding = asyncio.ensure_future(store._run(hold))
    try:
        while not busy.is_set():
            await asyncio.sleep(0.01)
        pending = [asyncio.ensure_future(w) for w in writes()]
        await asyncio.sleep(0)  # every write is queued before the thread is free again
    finally:
        gate.set()
    await holding
    return await asyncio.gather(*pending, return_exceptions=True)


async def test_queued_writes_share_one_transaction(store: SQLiteTaskStore) -> None:
    statements = await traced(store)
    ids = [f"t{i}" for i in range(5)]
    outcomes = await held(store, lambda: [store.create(make_task(i)) for i in ids])
    assert not [o for o in outcomes if isinstance(o, BaseException)]
    assert statements.count("BEGIN") == 1  # five creates, each a transaction when alone
    assert statements.count("COMMIT") == 1
    for task_id in ids:
        assert (await store.get(task_id)) is not None


async def test_a_failing_write_fails_alone(store: SQLiteTaskStore) -> None:
    await store.create(make_task("taken"))
    statements = await traced(store)
    outcomes = await held(
        store,
        lambda: [
            store.create(make_task("a")),
            store.create(make_task("taken")),
            store.create(make_task("b")),
        ],
    )
    assert not isinstance(outcomes[0], BaseException)
    assert isinstance(outcomes[1], ValueError) and "already stored" in str(outcomes[1])
    assert not isinstance(outcomes[2], BaseException)
    assert statements.count("ROLLBACK") >= 1  # the group, then each write alone
    for task_id in ("a", "b", "taken"):
        assert (await store.get(task_id)) is not None


async def test_appends_of_one_task_in_one_group_keep_their_order(store: SQLiteTaskStore) -> None:
    await store.create(make_task("t"))
    outcomes = await held(store, lambda: [store.append("t", [chunk(i)]) for i in range(20)])
    assert [o.events[0].seq for o in outcomes] == list(range(2, 22))
    task = await store.get("t")
    assert task is not None
    assert [part.text for part in task.artifacts[0].parts] == [f"{i}," for i in range(20)]
    found = await store.read_events("t", 0)
    assert found is not None and [e.seq for e in found.events] == list(range(1, 22))


async def test_close_waits_for_queued_writes(tmp_path: Path) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.db")
    await store.open()
    gate, busy = threading.Event(), threading.Event()

    def hold(con: sqlite3.Connection) -> None:
        busy.set()
        gate.wait(GATE_SECONDS)

    holding = asyncio.ensure_future(store._run(hold))
    while not busy.is_set():
        await asyncio.sleep(0.01)
    writes = [asyncio.ensure_future(store.create(make_task(f"t{i}"))) for i in range(3)]
    await asyncio.sleep(0)
    closing = asyncio.ensure_future(store.close())
    gate.set()
    await holding
    await closing
    assert all(w.done() and w.exception() is None for w in writes)
    again = SQLiteTaskStore(tmp_path / "tasks.db")
    await again.open()
    try:
        assert [await again.get(f"t{i}") is not None for i in range(3)] == [True] * 3
    finally:
        await again.close()


# --- the group on a plain connection (no thread): commit failure, cancellation ---------------


def deferred_check() -> sqlite3.Connection:
    """A connection whose COMMIT fails while a row points at a missing parent."""
    con = sqlite3.connect(":memory:", isolation_level=None)
    con.execute("PRAGMA foreign_keys = ON")
    con.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
    con.execute(
        "CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER"
        " REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)"
    )
    return con


def insert(parent: int) -> Callable[[sqlite3.Connection], int]:
    def work(con: sqlite3.Connection) -> int:
        return con.execute("INSERT INTO child (parent) VALUES (?)", (parent,)).lastrowid or 0

    return work


def test_a_failed_commit_fails_every_write_of_the_group() -> None:
    con = deferred_check()
    con.execute("INSERT INTO parent VALUES (1)")
    with pytest.raises(sqlite3.IntegrityError):
        run_group(con, [insert(1), insert(2), insert(1)])  # 2 has no parent: COMMIT refuses
    assert not con.in_transaction
    assert con.execute("SELECT count(*) FROM child").fetchone() == (0,)
    assert [ok for ok, _ in run_group(con, [insert(1), insert(1)])] == [True, True]


async def test_the_group_hands_a_commit_error_to_each_caller() -> None:
    con = deferred_check()

    async def direct(work: Callable[[sqlite3.Connection], Any]) -> Any:
        await asyncio.sleep(0)
        return work(con)

    group = WriteGroup(direct)
    outcomes = await asyncio.gather(
        group.run(insert(7)), group.run(insert(8)), return_exceptions=True
    )
    assert all(isinstance(o, sqlite3.IntegrityError) for o in outcomes)


async def test_a_cancelled_flush_leaves_nobody_waiting() -> None:
    async def never(work: Callable[[sqlite3.Connection], Any]) -> Any:
        await asyncio.Event().wait()

    group = WriteGroup(never)
    writes = [asyncio.ensure_future(group.run(insert(1))) for _ in range(3)]
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    flusher = group._flusher
    assert flusher is not None
    flusher.cancel()
    done, _ = await asyncio.wait(writes, timeout=GATE_SECONDS)
    assert len(done) == 3 and all(w.cancelled() for w in writes)
    await group.drain()


async def test_a_write_run_again_after_a_failure_in_its_group_folds_once(
    store: SQLiteTaskStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A failure rolls its group back and runs the other writes again one by one: a settling
    append whose fold works on the store's shadow of the task must not apply its events twice."""
    await store.create(make_task("taken"))
    await store.create(make_task("t"), events=[chunk(0)])
    done = TaskStatusUpdateEvent(status=TaskStatus(state=TaskState.COMPLETED))
    more = Message(message_id="m-more", role=Role.USER, parts=[Part(text="more")])
    outcomes = await held(
        store,
        lambda: [store.append("t", [chunk(1), more, done]), store.create(make_task("taken"))],
    )
    assert isinstance(outcomes[1], ValueError)  # after the append had run in the group
    appended = outcomes[0]
    assert not isinstance(appended, BaseException)
    stored = await store.get("t")
    assert stored is not None and [p.text for p in stored.artifacts[0].parts] == ["0,", "1,"]
    assert [m.message_id for m in stored.history] == ["m-t", "m-more"]
    assert appended.task == stored  # the fold of the settling append, handed over
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
