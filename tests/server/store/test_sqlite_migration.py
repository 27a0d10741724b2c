"""Files of older store versions are migrated to version 4 when they are opened.

Version 2 is the store before the event log (whole tasks in ``tasks.body``, and the push tables);
version 3 the first event log (snapshots in a table of their own). Each fixture file is built
here from that version's own DDL, frozen as it was written, so the test does not depend on code
that no longer exists. The steps are in a2a_wire.server.store.sqlite._schema's docstring.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from a2a_wire import codec
from a2a_wire.server.store import RESTART_MESSAGE, EventKind, SQLiteTaskStore, TaskQuery
from a2a_wire.types import (
    Artifact,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    Timestamp,
)

S = TaskState
BASE = 1_700_000_000
NOW = 2_000_000_000.0

V2_SCHEMA = (
    "CREATE TABLE tasks (id TEXT PRIMARY KEY NOT NULL, owner TEXT NOT NULL,"
    " context_id TEXT NOT NULL, state TEXT NOT NULL, status_s INTEGER NOT NULL,"
    " status_ns INTEGER NOT NULL, body BLOB NOT NULL)",
    "CREATE INDEX tasks_by_owner ON tasks (owner, status_s DESC, status_ns DESC, id)",
    "CREATE INDEX tasks_by_context ON tasks (owner, context_id, status_s DESC, status_ns DESC, id)",
    "CREATE TABLE push_configs (task_id TEXT NOT NULL, id TEXT NOT NULL,"
    " position INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY (task_id, id))",
    "CREATE TABLE push_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " delivery_id TEXT NOT NULL, task_id TEXT NOT NULL, config_id TEXT NOT NULL,"
    " body BLOB NOT NULL, created_at REAL NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,"
    " next_attempt_at REAL NOT NULL DEFAULT 0, last_error TEXT NOT NULL DEFAULT '',"
    " failed INTEGER NOT NULL DEFAULT 0)",
    "CREATE INDEX push_outbox_by_lane ON push_outbox (task_id, config_id, failed, seq)",
    "PRAGMA user_version = 2",
)


V4_COLUMNS = [
    *("ref", "id", "owner", "context_id", "state", "status_s", "status_ns"),
    *("changed_at", "first_seq", "snap_seq", "body"),
]


def make_task(task_id: str, state: TaskState | None, at: int, *, text: str = "hi") -> Task:
    first = Message(message_id=f"m-{task_id}", role=Role.USER, parts=[Part(text=text)])
    first.task_id, first.context_id = task_id, "ctx"
    task = Task(id=task_id, context_id="ctx", history=[first])
    if state is not None:
        task.status = TaskStatus(state=state, timestamp=Timestamp(seconds=BASE + at, nanos=5))
    return task


TASKS = {
    "done": ("alice", make_task("done", S.COMPLETED, 5)),
    "ask": ("alice", make_task("ask", S.INPUT_REQUIRED, 3)),
    "run": ("bob", make_task("run", S.WORKING, 1)),
    "bare": ("", make_task("bare", None, 0)),
}
TASKS["done"][1].artifacts = [Artifact(artifact_id="a", parts=[Part(text="answer")])]
HOOK = TaskPushNotificationConfig(id="p", task_id="ask", url="https://h/x", token="tok")
PENDING = b'{"statusUpdate":{"taskId":"ask"}}'


def write_v2_file(path: Path) -> None:
    """A database as the version 2 store left it: tasks, a config, a pending and a failed row."""
    raw = sqlite3.connect(path)
    for statement in V2_SCHEMA:
        raw.execute(statement)
    for task_id, (owner, task) in TASKS.items():
        status = task.status or TaskStatus()
        stamp = status.timestamp or Timestamp()
        row = (task_id, owner, "ctx", str(status.state.value), stamp.seconds, stamp.nanos)
        raw.execute("INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?)", (*row, codec.encode(task)))
    raw.execute("INSERT INTO push_configs VALUES ('ask', 'p', 1, ?)", (codec.encode(HOOK),))
    outbox = "INSERT INTO push_outbox (delivery_id, task_id, config_id, body, created_at, failed)"
    raw.execute(outbox + " VALUES ('d1', 'ask', 'p', ?, 5.0, 1)", (b'{"n":0}',))
    raw.execute(outbox + " VALUES ('d2', 'ask', 'p', ?, 6.0, 0)", (PENDING,))
    raw.commit()
    raw.close()


async def test_a_version_2_file_becomes_an_event_log(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    write_v2_file(path)
    store = SQLiteTaskStore(path, clock=lambda: NOW)
    try:
        assert await store.open() == ["run"]  # recovery runs on the migrated tasks
        for task_id in ("done", "ask", "bare"):
            owner, task = TASKS[task_id]
            assert await store.get(task_id, owner=owner) == task
            snapshot = await store.snapshot(task_id, owner=owner)
            assert snapshot is not None and snapshot.seq == 1
            before = await store.read_events(task_id, 0, owner=owner)
            assert before is not None and before.from_snapshot  # no log before the migration
            after = await store.read_events(task_id, 1, owner=owner)
            assert after is not None and not after.from_snapshot and after.events == []
        failed = await store.read_events("run", 1, owner="bob")
        assert failed is not None and [(e.seq, e.kind) for e in failed.events] == [
            (2, EventKind.STATUS)
        ]
        run = await store.get("run", owner="bob")
        assert run is not None and run.status is not None and run.status.state == S.FAILED
        assert run.status.message is not None
        assert run.status.message.parts[0].text == RESTART_MESSAGE
        page = await store.list(TaskQuery(), owner="alice")
        assert [t.id for t in page.tasks] == ["done", "ask"] and page.total_size == 2
        waiting = await store.list(TaskQuery(state=S.INPUT_REQUIRED), owner="alice")
        assert [t.id for t in waiting.tasks] == ["ask"]
        assert [c for _, c in await store.list_push_configs("ask")] == [HOOK]
        assert (await store.pending_lanes(0))[0] == [("ask", "p")]
        head = await store.next_delivery("ask", "p")
        assert head is not None and head.body == PENDING and head.delivery_id == "d2"
        assert [d.delivery_id for d in await store.failed_deliveries("ask")] == ["d1"]
        follow = await store.append(
            "ask", [TaskStatusUpdateEvent(status=TaskStatus(state=S.WORKING))]
        )
        assert [e.seq for e in follow.events] == [2]
        assert await store.expired({S.COMPLETED}, BASE + 5, limit=10) == []
        assert await store.expired({S.COMPLETED}, BASE + 6, limit=10) == ["done"]
    finally:
        await store.close()
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA user_version").fetchone() == (4,)
        columns = [row[1] for row in raw.execute("PRAGMA table_info(tasks)")]
        assert columns == V4_COLUMNS
        changed = dict(raw.execute("SELECT id, changed_at FROM tasks").fetchall())
        assert changed["done"] == BASE + 5 + 5e-9
        assert changed["bare"] == NOW  # no status time: the migration's
        indexes = {row[1] for row in raw.execute("PRAGMA index_list(tasks)")}
        assert {"tasks_by_owner", "tasks_by_context", "tasks_by_change"} <= indexes
    finally:
        raw.close()
    again = SQLiteTaskStore(path)
    try:
        assert await again.open() == ["ask"]  # migrated once; "ask" was left WORKING above
        assert await again.get("done", owner="alice") == TASKS["done"][1]
    finally:
        await again.close()


async def test_a_failed_migration_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    write_v2_file(path)
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE task_events (x)")  # in the way of the migration's own table
    raw.commit()
    raw.close()
    store = SQLiteTaskStore(path)
    try:
        await store.open()
    except sqlite3.OperationalError:
        pass
    else:
        await store.close()
        raise AssertionError("the migration should have failed")
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA user_version").fetchone() == (2,)
        assert raw.execute("SELECT COUNT(*) FROM tasks WHERE body IS NOT NULL").fetchone() == (4,)
    finally:
        raw.close()


V3_SCHEMA = (
    "CREATE TABLE tasks (id TEXT PRIMARY KEY NOT NULL, owner TEXT NOT NULL,"
    " context_id TEXT NOT NULL, state TEXT NOT NULL, status_s INTEGER NOT NULL,"
    " status_ns INTEGER NOT NULL, changed_at REAL NOT NULL, first_seq INTEGER NOT NULL)",
    "CREATE INDEX tasks_by_owner ON tasks (owner, status_s DESC, status_ns DESC, id)",
    "CREATE INDEX tasks_by_context ON tasks (owner, context_id, status_s DESC, status_ns DESC, id)",
    "CREATE INDEX tasks_by_change ON tasks (state, changed_at)",
    "CREATE TABLE task_snapshots (task_id TEXT PRIMARY KEY NOT NULL, seq INTEGER NOT NULL,"
    " body BLOB NOT NULL)",
    "CREATE TABLE task_events (task_id TEXT NOT NULL, seq INTEGER NOT NULL,"
    " kind INTEGER NOT NULL, body BLOB NOT NULL, PRIMARY KEY (task_id, seq)) WITHOUT ROWID",
    "CREATE TABLE deleted_tasks (task_id TEXT PRIMARY KEY NOT NULL)",
    *V2_SCHEMA[3:-1],  # the push tables, unchanged
    "PRAGMA user_version = 3",
)


def frame(event: StreamResponse) -> bytes:
    """An event as the log holds it: its StreamResponse JSON."""
    return codec.encode(event)


def write_v3_file(path: Path) -> dict[str, Task]:
    """A database as the version 3 store left it; its settled task "done", as GetTask reads it.

    "done": folded through its last event, log kept from event 1; "run": WORKING by an event
    after its snapshot (a tail); "gone": deleted, its events not purged yet.
    """
    stamp = Timestamp(seconds=BASE + 1, nanos=5)
    working = TaskStatusUpdateEvent(
        task_id="run", context_id="ctx", status=TaskStatus(state=S.WORKING, timestamp=stamp)
    )
    done, run = make_task("done", S.COMPLETED, 5), make_task("run", S.SUBMITTED, 0)
    raw = sqlite3.connect(path)
    for statement in V3_SCHEMA:
        raw.execute(statement)
    rows = [
        ("done", "alice", S.COMPLETED, BASE + 5, 2, done),
        ("run", "bob", S.WORKING, BASE + 1, 1, run),
    ]
    for task_id, owner, state, at, seq, snapshot in rows:
        listing = (task_id, owner, str(state.value), at, float(at))
        raw.execute("INSERT INTO tasks VALUES (?, ?, 'ctx', ?, ?, 5, ?, 1)", listing)
        snap = (task_id, seq, codec.encode(snapshot))
        raw.execute("INSERT INTO task_snapshots VALUES (?, ?, ?)", snap)
    events = [
        (task_id, 1, EventKind.TASK, frame(StreamResponse(task=make_task(task_id, S.SUBMITTED, 0))))
        for task_id in ("done", "run", "gone")
    ]
    events.append(("done", 2, EventKind.STATUS, frame(StreamResponse(status_update=working))))
    events.append(("run", 2, EventKind.STATUS, frame(StreamResponse(status_update=working))))
    insert = "INSERT INTO task_events VALUES (?, ?, ?, ?)"
    raw.executemany(insert, [(t, n, int(k), b) for t, n, k, b in events])
    raw.execute("INSERT INTO deleted_tasks VALUES ('gone')")
    raw.commit()
    raw.close()
    return {"done": done}


async def test_a_version_3_file_keeps_its_snapshots_and_logs(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    tasks = write_v3_file(path)
    store = SQLiteTaskStore(path, clock=lambda: NOW)
    try:
        assert await store.open() == ["run"]  # recovery runs on the migrated tasks
        assert await store.get("done", owner="alice") == tasks["done"]
        snapshot = await store.snapshot("done", owner="alice")
        assert snapshot is not None and snapshot.seq == 2
        logged = await store.read_events("done", 0, owner="alice")
        assert logged is not None and not logged.from_snapshot
        assert [(e.seq, e.kind) for e in logged.events] == [
            (1, EventKind.TASK),
            (2, EventKind.STATUS),
        ]
        run = await store.get("run", owner="bob")  # the tail was folded in, then recovery
        assert run is not None and run.status is not None and run.status.state == S.FAILED
        resumed = await store.read_events("run", 1, owner="bob")
        assert resumed is not None and [e.seq for e in resumed.events] == [2, 3]
        assert await store.get("gone") is None
        while await store.purge(batch=10):
            pass
    finally:
        await store.close()
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA user_version").fetchone() == (4,)
        assert [row[1] for row in raw.execute("PRAGMA table_info(tasks)")] == V4_COLUMNS
        tables = {
            row[0] for row in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        assert "task_snapshots" not in tables and "tasks_new" not in tables
        assert raw.execute(
            "SELECT COUNT(*) FROM task_events WHERE task_ref NOT IN (SELECT ref FROM tasks)"
        ).fetchone() == (0,)
        indexes = {row[1] for row in raw.execute("PRAGMA index_list(tasks)")}
        assert {"tasks_by_owner", "tasks_by_context", "tasks_by_change"} <= indexes
    finally:
        raw.close()
