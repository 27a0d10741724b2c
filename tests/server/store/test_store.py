"""The rules of a2a_wire.server.store._fold.keys (round trips, no aliasing, owner scoping, ListTasks
order, filters and cursors, recovery on open) on every task store, and the SQLite file's own."""

from __future__ import annotations

import base64
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import strategies
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_support import Backend

from a2a_wire import codec
from a2a_wire._protocol.tasks import apply
from a2a_wire.errors import InvalidParamsError, TaskNotFoundError
from a2a_wire.server.store import (
    MAX_PAGE_SIZE,
    EventLogStore,
    SQLiteTaskStore,
    TaskPage,
    TaskQuery,
)
from a2a_wire.server.store.sqlite._schema import LOG_SCHEMA_VERSION
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
    Timestamp,
)

S = TaskState
BASE = 1_700_000_000
PAUSED = TaskState("TASK_STATE_PAUSED")


def ts(seconds: int, nanos: int = 0) -> Timestamp:
    return Timestamp(seconds=BASE + seconds, nanos=nanos)


def make_task(
    task_id: str,
    *,
    state: TaskState = S.WORKING,
    context: str = "c1",
    at: Timestamp | None = None,
    text: str = "hello",
) -> Task:
    message = Message(
        message_id=f"m-{task_id}",
        role=Role.USER,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context,
    )
    status = TaskStatus(state=state, timestamp=at if at is not None else ts(0))
    return Task(id=task_id, context_id=context, status=status, history=[message])


def moved(state: TaskState, at: Timestamp) -> TaskStatusUpdateEvent:
    """A status event moving a task to ``state`` at ``at``."""
    return TaskStatusUpdateEvent(status=TaskStatus(state=state, timestamp=at))


async def all_pages(store: EventLogStore, query: TaskQuery, owner: str = "") -> list[TaskPage]:
    pages = [await store.list(query, owner=owner)]
    while pages[-1].next_page_token:
        token = pages[-1].next_page_token
        pages.append(await store.list(_with_token(query, token), owner=owner))
        assert len(pages) <= 100
    return pages


def _with_token(query: TaskQuery, token: str) -> TaskQuery:
    return TaskQuery(
        context_id=query.context_id,
        state=query.state,
        status_after=query.status_after,
        page_size=query.page_size,
        page_token=token,
    )


def ids(page: TaskPage) -> list[str]:
    return [t.id for t in page.tasks]


# -- Round trips and copies --------------------------------------------------------------------


async def test_create_get_append_round_trip(store: EventLogStore) -> None:
    task = make_task("t1")
    await store.create(task, owner="alice")
    assert await store.get("t1", owner="alice") == task
    events = [
        TaskArtifactUpdateEvent(artifact=Artifact(artifact_id="a")),
        moved(S.COMPLETED, ts(2)),
    ]
    await store.append("t1", events)
    for event in events:
        apply(task, event, now=ts(1))
    assert await store.get("t1", owner="alice") == task
    assert await store.get("t2", owner="alice") is None


async def test_returned_objects_are_copies(store: EventLogStore) -> None:
    task = make_task("t1")
    await store.create(task)
    task.history.clear()  # the caller keeps using its object
    fetched = await store.get("t1")
    assert fetched is not None and len(fetched.history) == 1
    fetched.history.append(fetched.history[0])
    assert fetched.status is not None
    fetched.status.state = S.FAILED
    again = await store.get("t1")
    assert again is not None and len(again.history) == 1 and again is not fetched
    assert again.status is not None and again.status.state == S.WORKING
    listed = (await store.list(TaskQuery())).tasks[0]
    listed.id = "changed"
    assert (await store.list(TaskQuery())).tasks[0].id == "t1"


async def test_create_rejects_duplicates_and_missing_ids(store: EventLogStore) -> None:
    await store.create(make_task("t1"), owner="alice")
    with pytest.raises(ValueError, match="^task 't1' is already stored$"):
        await store.create(make_task("t1"), owner="bob")
    with pytest.raises(ValueError, match="^a task needs an id to be stored$"):
        await store.create(Task(status=TaskStatus(state=S.SUBMITTED)))
    assert await store.get("t1", owner="bob") is None


async def test_append_to_a_missing_task(store: EventLogStore) -> None:
    with pytest.raises(TaskNotFoundError) as caught:
        await store.append("ghost", [moved(S.COMPLETED, ts(1))])
    assert caught.value.metadata == {"taskId": "ghost"}
    assert await store.get("ghost") is None


async def test_store_must_be_open(backend: Backend) -> None:
    store = backend.new()
    with pytest.raises(RuntimeError, match=r"^the task store is not open; call open\(\) first$"):
        await store.get("t1")
    with pytest.raises(RuntimeError, match=r"^the task store is not open; call open\(\) first$"):
        await store.create(make_task("t1"))


async def test_open_twice_is_refused(store: EventLogStore) -> None:
    await store.create(make_task("t1"))
    with pytest.raises(RuntimeError, match="^the task store is already open$"):
        await store.open()
    task = await store.get("t1")  # still usable, and its running task was not recovered
    assert task is not None and task.status is not None and task.status.state == S.WORKING


# -- Owner scoping -----------------------------------------------------------------------------


async def test_owner_scoping(store: EventLogStore) -> None:
    await store.create(make_task("a1", at=ts(1)), owner="alice")
    await store.create(make_task("a2", at=ts(2)), owner="alice")
    await store.create(make_task("b1", at=ts(3)), owner="bob")
    assert await store.get("a1", owner="bob") is None
    assert await store.get("a1") is None  # the anonymous owner "" is an owner too
    assert ids(await store.list(TaskQuery(), owner="bob")) == ["b1"]
    alice = await store.list(TaskQuery(), owner="alice")
    assert ids(alice) == ["a2", "a1"] and alice.total_size == 2
    assert (await store.list(TaskQuery(), owner="carol")).total_size == 0
    await store.append("a1", [moved(S.COMPLETED, ts(9))])  # the owner stays
    assert await store.get("a1", owner="alice") is not None
    assert await store.get("a1", owner="bob") is None


# -- Filters and order -------------------------------------------------------------------------


@pytest.fixture
async def filled(store: EventLogStore) -> EventLogStore:
    rows = [
        ("t1", S.WORKING, "c1", ts(1)),
        ("t2", S.COMPLETED, "c1", ts(2)),
        ("t3", S.WORKING, "c2", ts(3)),
        ("t4", S.INPUT_REQUIRED, "c2", ts(3, 5)),
        ("t5", PAUSED, "c1", ts(4)),
    ]
    for task_id, state, context, at in rows:
        await store.create(make_task(task_id, state=state, context=context, at=at), owner="o")
    return store


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (TaskQuery(), ["t5", "t4", "t3", "t2", "t1"]),
        (TaskQuery(context_id="c1"), ["t5", "t2", "t1"]),
        (TaskQuery(context_id="nope"), []),
        (TaskQuery(state=S.WORKING), ["t3", "t1"]),
        (TaskQuery(state=S.UNSPECIFIED), ["t5", "t4", "t3", "t2", "t1"]),
        (TaskQuery(state=PAUSED), ["t5"]),
        (TaskQuery(state=S.WORKING, context_id="c2"), ["t3"]),
        (TaskQuery(status_after=ts(3)), ["t5", "t4", "t3"]),  # inclusive
        (TaskQuery(status_after=ts(3, 1)), ["t5", "t4"]),
        (TaskQuery(status_after=ts(3, 5), context_id="c2"), ["t4"]),
        (TaskQuery(status_after=ts(99)), []),
    ],
)
async def test_filters(filled: EventLogStore, query: TaskQuery, expected: list[str]) -> None:
    page = await filled.list(query, owner="o")
    assert ids(page) == expected
    assert page.total_size == len(expected) and page.next_page_token == ""


async def test_order_is_status_time_desc_then_id(store: EventLogStore) -> None:
    for task_id, at in [("b", ts(5)), ("c", ts(5)), ("a", ts(5)), ("z", ts(1)), ("y", ts(7))]:
        await store.create(make_task(task_id, at=at))
    await store.create(Task(id="no-status"))  # sorts as the epoch
    assert ids(await store.list(TaskQuery())) == ["y", "a", "b", "c", "z", "no-status"]
    await store.append("z", [moved(S.WORKING, ts(8))])  # a status change moves the task up
    assert ids(await store.list(TaskQuery()))[0] == "z"


async def test_extreme_timestamps_sort_and_filter_exactly(store: EventLogStore) -> None:
    moments = {
        "first": Timestamp(seconds=-62135596800, nanos=0),  # 0001-01-01
        "last": Timestamp(seconds=253402300799, nanos=999_999_999),  # 9999-12-31
        "last-1ns": Timestamp(seconds=253402300799, nanos=999_999_998),
        "epoch": Timestamp(seconds=0, nanos=1),
    }
    for task_id, at in moments.items():
        await store.create(make_task(task_id, at=at))
    assert ids(await store.list(TaskQuery())) == ["last", "last-1ns", "epoch", "first"]
    after = TaskQuery(status_after=moments["last"])
    assert ids(await store.list(after)) == ["last"]
    pages = await all_pages(store, TaskQuery(page_size=1))
    assert [ids(p) for p in pages] == [["last"], ["last-1ns"], ["epoch"], ["first"]]


# -- Pagination ----------------------------------------------------------------------------------


async def test_pagination_over_120_tasks(store: EventLogStore) -> None:
    expected = []
    for i in range(120):
        at = ts(i // 3)  # groups of three share a timestamp: the id breaks the tie
        await store.create(make_task(f"t{i:03d}", at=at, context="c" if i % 2 else "d"))
        expected.append((-(i // 3), f"t{i:03d}"))
    pages = await all_pages(store, TaskQuery(page_size=50))
    assert [len(p.tasks) for p in pages] == [50, 50, 20]
    assert [p.total_size for p in pages] == [120, 120, 120]
    assert [bool(p.next_page_token) for p in pages] == [True, True, False]
    assert [t for p in pages for t in ids(p)] == [task_id for _, task_id in sorted(expected)]
    odd = await all_pages(store, TaskQuery(context_id="c", page_size=MAX_PAGE_SIZE))
    assert [len(p.tasks) for p in odd] == [60] and odd[0].next_page_token == ""


@pytest.mark.parametrize("size", [1, 2, 3, 7])
async def test_small_pages_cover_everything_once(store: EventLogStore, size: int) -> None:
    for i in range(10):
        await store.create(make_task(f"t{i}", at=ts(i % 4)))
    pages = await all_pages(store, TaskQuery(page_size=size))
    seen = [t for p in pages for t in ids(p)]
    assert sorted(seen) == [f"t{i}" for i in range(10)]
    assert len(pages) == -(-10 // size)


async def test_exact_multiple_ends_with_an_empty_token(store: EventLogStore) -> None:
    for i in range(4):
        await store.create(make_task(f"t{i}", at=ts(i)))
    pages = await all_pages(store, TaskQuery(page_size=2))
    assert [ids(p) for p in pages] == [["t3", "t2"], ["t1", "t0"]]
    assert pages[-1].next_page_token == ""


async def test_page_size_outside_the_range_is_a_bug(store: EventLogStore) -> None:
    for size in (0, -1, MAX_PAGE_SIZE + 1):
        with pytest.raises(ValueError, match=rf"^page_size must be within 1\.\.100, not {size}$"):
            await store.list(TaskQuery(page_size=size))


def tamper(token: str) -> str:
    raw = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    raw[0] ^= 1
    return base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")


async def test_bad_page_tokens(backend: Backend, store: EventLogStore) -> None:
    for i in range(3):
        await store.create(make_task(f"t{i}", at=ts(i)), owner="o")
    token = (await store.list(TaskQuery(page_size=1), owner="o")).next_page_token
    other = await backend.open(file="other.sqlite3")  # another instance has another key
    cases: list[tuple[EventLogStore, str, TaskQuery]] = [
        (store, "o", TaskQuery(page_token=tamper(token))),
        (store, "o", TaskQuery(page_token=token[:-2])),
        (store, "o", TaskQuery(page_token="!!not base64!!")),
        (store, "o", TaskQuery(page_token=token + "!")),  # junk is not skipped
        (store, "o", TaskQuery(page_token=token[:4] + " " + token[4:])),
        (store, "o", TaskQuery(page_token="AAAA")),
        (store, "o", TaskQuery(page_token="é")),
        (store, "o", TaskQuery(page_token="A" * 10_000)),
        (store, "mallory", TaskQuery(page_token=token)),  # another owner
        (store, "o", TaskQuery(page_token=token, context_id="c1")),  # other filters
        (store, "o", TaskQuery(page_token=token, state=S.WORKING)),
        (store, "o", TaskQuery(page_token=token, status_after=ts(0))),
        (other, "o", TaskQuery(page_token=token)),
    ]
    for target, owner, query in cases:
        with pytest.raises(InvalidParamsError) as caught:
            await target.list(query, owner=owner)
        assert [field for field, _ in caught.value.violations] == ["pageToken"]
    assert ids(await store.list(TaskQuery(page_size=1, page_token=token), owner="o")) == ["t1"]


async def test_shared_key_keeps_tokens_valid_after_reopen(backend: Backend) -> None:
    key = b"k" * 32
    store = await backend.open(page_token_key=key)
    for i in range(3):
        await store.create(make_task(f"t{i}", state=S.COMPLETED, at=ts(i)))
    token = (await store.list(TaskQuery(page_size=2))).next_page_token
    await store.close()
    if backend.kind == "sqlite":
        store = await backend.open(page_token_key=key)
    else:
        assert await store.open() == []
    assert ids(await store.list(TaskQuery(page_size=2, page_token=token))) == ["t0"]


# -- Recovery ----------------------------------------------------------------------------------


async def test_recovery_fails_running_tasks_only(backend: Backend, store: EventLogStore) -> None:
    """On PostgreSQL (by design) the failing is the takeover of the leases ``close`` expired, and
    its message says the process was lost (``Backend.restart_message``)."""
    states = [S.SUBMITTED, S.WORKING, S.INPUT_REQUIRED, S.AUTH_REQUIRED, S.COMPLETED, PAUSED]
    originals = {}
    for i, state in enumerate(states):
        original = make_task(f"t{i}", state=state, at=ts(i))
        originals[original.id] = original
        await store.create(original, owner=f"owner{i % 2}")
    store, failed = await backend.reopen(store)
    assert sorted(failed) == ["t0", "t1"]
    for task_id in ("t0", "t1"):
        task = await store.get(task_id, owner=f"owner{int(task_id[1]) % 2}")
        assert task is not None and task.status is not None
        assert task.status.state == S.FAILED
        note = task.status.message
        assert note is not None and note.role == Role.AGENT
        assert [p.text for p in note.parts] == [backend.restart_message]
        assert (note.task_id, note.context_id) == (task_id, "c1")
        assert task.history[-1] == note and len(task.history) == 2
        assert task.status.timestamp is not None and task.status.timestamp > ts(10)
        assert task.status.timestamp.nanos % 1_000_000 == 0  # millisecond precision
    for task_id in ("t2", "t3", "t4", "t5"):
        owner = f"owner{int(task_id[1]) % 2}"
        assert await store.get(task_id, owner=owner) == originals[task_id]
    failed_state = await store.list(TaskQuery(state=S.FAILED), owner="owner1")
    assert ids(failed_state) == ["t1"]
    _, failed_again = await backend.reopen(store)
    assert failed_again == []


# -- Data that must survive ----------------------------------------------------------------------

ODD_TEXT = "naïve café 中文 עברית 😀 \u200d\u2028\u2029 \ufeff \x00 nul \U0010ffff e\u0301 \t\r\n"


def deep_struct(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": [1, 2.5, None, True, "x"]}
    for i in range(depth - 1):
        value = {f"level{i}": value, "n": i}
    return value


async def test_unusual_data_round_trips(store: EventLogStore) -> None:
    task = make_task("ταξ-😀", context=ODD_TEXT, text=ODD_TEXT)
    task.metadata = deep_struct(90)
    big = "añ€😀" * (5 * 1024 * 1024 // 10)  # about 5 MB of UTF-8
    task.artifacts = [
        Artifact(
            artifact_id="big",
            parts=[Part(text=big), Part(raw=bytes(range(256))), Part(data=None)],
            metadata={"deep": deep_struct(50), "": ODD_TEXT},
        )
    ]
    await store.create(task, owner=ODD_TEXT)
    assert len(codec.encode(task)) > 5_000_000
    assert await store.get(task.id, owner=ODD_TEXT) == task
    assert ids(await store.list(TaskQuery(context_id=ODD_TEXT), owner=ODD_TEXT)) == [task.id]
    assert await store.get(task.id, owner=ODD_TEXT[:-1]) is None


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(task=strategies.messages("Task", depth=3), owner=st.text(max_size=5))
async def test_any_task_round_trips(store: EventLogStore, task: Task, owner: str) -> None:
    task.id = f"{task.id}-{os.urandom(8).hex()}"  # examples share the store
    await store.create(task, owner=owner)
    assert await store.get(task.id, owner=owner) == task


# -- SQLite specifics ----------------------------------------------------------------------------


async def test_sqlite_file_survives_reopen_and_has_a_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    store = SQLiteTaskStore(str(path))
    await store.open()
    await store.create(make_task("t1", state=S.COMPLETED), owner="o")
    await store.close()
    await store.close()  # closing twice is harmless
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone() == (LOG_SCHEMA_VERSION,)
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        columns = [row[1] for row in raw.execute("PRAGMA table_info(tasks)")]
    raw.close()
    assert columns == [
        *("ref", "id", "owner", "context_id", "state", "status_s", "status_ns"),
        *("changed_at", "first_seq", "snap_seq", "body"),
    ]
    again = SQLiteTaskStore(path, synchronous="full")
    assert await again.open() == []
    try:
        assert await again.get("t1", owner="o") == make_task("t1", state=S.COMPLETED)
        with pytest.raises(RuntimeError, match="^the task store is already open$"):
            await again.open()
    finally:
        await again.close()


async def test_sqlite_never_gives_a_new_task_the_number_of_a_deleted_one(tmp_path: Path) -> None:
    # Events are keyed by the task's number (ref). The deleted task had the highest number and
    # its events wait for the purge: a reused number would hand them to the next task.
    store = SQLiteTaskStore(tmp_path / "db.sqlite3")
    await store.open()
    try:
        await store.create(make_task("old"))
        await store.append("old", [moved(S.COMPLETED, ts(1))])
        assert await store.delete_task("old")
        await store.create(make_task("new"))
        events = await store.read_events("new", 0)
        assert events is not None and [e.seq for e in events.events] == [1]
        assert await store.get("new") == make_task("new")
    finally:
        await store.close()
    with sqlite3.connect(tmp_path / "db.sqlite3") as raw:
        refs = dict(raw.execute("SELECT task_id, ref FROM deleted_tasks").fetchall())
        new_ref = raw.execute("SELECT ref FROM tasks WHERE id = 'new'").fetchone()[0]
        owners = raw.execute("SELECT task_ref, COUNT(*) FROM task_events GROUP BY 1").fetchall()
    raw.close()
    assert new_ref > refs["old"]
    assert sorted(owners) == [(refs["old"], 2), (new_ref, 1)]


async def test_sqlite_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {LOG_SCHEMA_VERSION + 1}")
    raw.close()
    store = SQLiteTaskStore(path)
    with pytest.raises(RuntimeError, match="schema version"):
        await store.open()
    with pytest.raises(RuntimeError, match=r"^the task store is not open; call open\(\) first$"):
        await store.get("t1")  # the failed open left it closed


async def test_sqlite_file_is_held_by_one_store(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    first = SQLiteTaskStore(path)
    await first.open()
    try:
        await first.create(make_task("t1"))
        second = SQLiteTaskStore(path, busy_timeout_seconds=0.05)
        with pytest.raises(RuntimeError, match="in use"):
            await second.open()  # it must not recover (fail) the first store's live task
        task = await first.get("t1")
        assert task is not None and task.status is not None
        assert task.status.state == S.WORKING
    finally:
        await first.close()
    with sqlite3.connect(path) as raw:  # released on close
        assert raw.execute("SELECT COUNT(*) FROM tasks").fetchone() == (1,)
    raw.close()


def test_sqlite_refuses_unsafe_synchronous_modes(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match=r"^synchronous must be one of \['EXTRA', 'FULL', 'NORMAL'\]$"
    ):
        SQLiteTaskStore(tmp_path / "x", synchronous="OFF")


CRASH_SCRIPT = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from a2a_wire.server.store import SQLiteTaskStore
    from a2a_wire.types import Task, TaskState, TaskStatus, TaskStatusUpdateEvent, Timestamp

    async def main(path, total, kill_at):
        store = SQLiteTaskStore(path)
        await store.open()
        for i in range(total):
            status = TaskStatus(state=TaskState.WORKING, timestamp=Timestamp(seconds=i))
            task = Task(id=f"task-{i}", context_id="c", status=status)
            await store.create(task)
            print("created", task.id, flush=True)
            if i % 2:
                done = TaskStatus(state=TaskState.COMPLETED, timestamp=Timestamp(seconds=i))
                await store.append(task.id, [TaskStatusUpdateEvent(status=done)])
                print("completed", task.id, flush=True)
            if i == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
    """
)


@pytest.mark.timeout(30)
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
async def test_sqlite_writes_survive_a_killed_process(tmp_path: Path) -> None:
    path = tmp_path / "crash.sqlite3"
    proc = subprocess.run(
        [sys.executable, "-c", CRASH_SCRIPT, str(path), "400", "250"],
        capture_output=True,
        text=True,
        timeout=25,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    lines = [line.split() for line in proc.stdout.splitlines()]
    created = [task_id for verb, task_id in lines if verb == "created"]
    completed = {task_id for verb, task_id in lines if verb == "completed"}
    assert len(created) == 251 and len(completed) == 125
    store = SQLiteTaskStore(path)
    failed = await store.open()
    try:
        assert sorted(failed) == sorted(set(created) - completed)
        page = await store.list(TaskQuery(page_size=MAX_PAGE_SIZE))
        assert page.total_size == len(created)
        for task_id in created:
            task = await store.get(task_id)
            assert task is not None and task.status is not None
            expected = S.COMPLETED if task_id in completed else S.FAILED
            assert task.status.state == expected
    finally:
        await store.close()
