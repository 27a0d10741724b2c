"""Faults of the SQLite store's environment, for real: a full disk and a file locked by another
program (docs/server.md, "Store faults").

* **Disk full.** A small tmpfs mounted for the test (root only; skipped with one line where
  mounting is refused), filled up by another file: the server answers its writes 503 with
  Retry-After, and a group of writes fails write by write; once space is freed the next writes
  work, without a restart, and every task acknowledged before is there, also after a reopen.
  Where no file system can be mounted, ``PRAGMA max_page_count`` makes SQLite itself report
  SQLITE_FULL, which runs everywhere.
* **Locked.** A second process inside ``BEGIN IMMEDIATE`` (a write lock): the store's open
  waits ``busy_timeout`` and fails; released, it opens with every task. While the store runs,
  such a lock makes its writes 503 after ``busy_timeout`` while reads go on. A reader in
  another process (an idle connection, an open read transaction) keeps nothing from starting;
  a store of another process does (its claim on the file).
* The translation point itself: which sqlite errors are faults (real errors from real
  connections), and one warning per outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from patience import poll
from push_support import local_settings
from server_support import ScriptedAgent, envelope, make_card, post, result, send_params

from a2a_wire.server import ServerSettings, create_app
from a2a_wire.server.store import SQLiteTaskStore, StoreUnavailableError
from a2a_wire.server.store.sqlite._connection import hop
from a2a_wire.server.store.sqlite._faults import SQLiteFaults, is_fault
from a2a_wire.types import (
    Message,
    Part,
    Role,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
)

HOOK = "http://127.0.0.1:9/hook"


def make_task(task_id: str, padding: int = 0) -> Task:
    first = Message(message_id=f"m-{task_id}", role=Role.USER, parts=[Part(text="x" * padding)])
    return Task(
        id=task_id, context_id="c1", status=TaskStatus(state=TaskState.WORKING), history=[first]
    )


def config(task_id: str, n: int) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(task_id=task_id, id=f"c{n}", url=f"{HOOK}/{n}")


# -- disk full -------------------------------------------------------------------------------


@contextlib.contextmanager
def small_filesystem(where: Path, size: str = "2m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where``; skips the test when mounting is refused."""
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip("disk-full test needs to mount a small tmpfs (root); mount was refused")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(directory: Path) -> Path:
    """Write a file into ``directory`` until its file system is full; the file."""
    filler = directory / "filler"
    with filler.open("wb") as out:
        try:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    with contextlib.suppress(OSError), filler.open("ab") as out:  # the last odd pages
        while True:
            out.write(b"\0" * 512)
            out.flush()
    return filler


@pytest.fixture
async def full_disk_app(tmp_path: Path) -> AsyncIterator[tuple[web.Application, Path]]:
    with small_filesystem(tmp_path / "small") as disk:
        store = SQLiteTaskStore(disk / "tasks.sqlite3")
        push = local_settings(allow_http=True)
        settings = ServerSettings(store_retry_after_seconds=2, push=push)
        yield (
            create_app(make_card(push=True), ScriptedAgent(), store=store, settings=settings),
            disk,
        )


async def test_disk_full_answers_503_loses_nothing_and_recovers(
    aiohttp_client: Any,
    full_disk_app: tuple[web.Application, Path],
    caplog: pytest.LogCaptureFixture,
) -> None:
    app, disk = full_disk_app
    caplog.set_level(logging.DEBUG)
    client = await aiohttp_client(app)
    done = [(await result(client, "SendMessage", send_params(f"t{i}")))["task"] for i in range(5)]
    assert {t["status"]["state"] for t in done} == {"TASK_STATE_COMPLETED"}
    filler = fill(disk)
    refused = 0
    for n in range(20):  # each commit needs new WAL pages: every one is refused, alone
        body = envelope(
            "CreateTaskPushNotificationConfig",
            {"taskId": done[0]["id"], "id": f"c{n}", "url": HOOK},
        )
        response = await post(client, body)
        if response.status == 503:
            refused += 1
            assert response.headers["Retry-After"] == "2"
            err = (await response.json())["error"]
            assert err["code"] == -32000 and err["data"][0]["reason"] == "STORE_UNAVAILABLE"
    assert refused >= 18
    for task in done:  # reads go on
        assert (await result(client, "GetTask", {"id": task["id"]}))["status"] == task["status"]
    bad = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert bad == [], [r.getMessage() for r in bad]
    warnings = [r.getMessage() for r in caplog.records if r.name == "a2a_wire.server.store"]
    assert warnings[:1] == [
        "SQLite is unavailable (OperationalError); calls answer 503 until it is back"
    ]
    filler.unlink()  # space is back: the next writes work, without a restart
    made = {"taskId": done[0]["id"], "id": "after", "url": HOOK}
    assert (await result(client, "CreateTaskPushNotificationConfig", made))["id"] == "after"
    new = (await result(client, "SendMessage", send_params("after")))["task"]
    assert new["status"]["state"] == "TASK_STATE_COMPLETED"

    async def said_back() -> bool:  # a success once the quiet period (2 busy_timeouts) passed
        await result(client, "ListTasks", {})  # a query (a task at rest is read from memory)
        return any("available again" in r.getMessage() for r in caplog.records)

    await poll(said_back, bool, pause=0.1)
    await client.close()  # the store closes; the file holds every acknowledged task
    reopened = SQLiteTaskStore(disk / "tasks.sqlite3")
    await reopened.open()
    try:
        for task in [*done, new]:
            got = await reopened.get(task["id"])
            assert got is not None and got.status is not None
            assert got.status.state == TaskState.COMPLETED
    finally:
        await reopened.close()


async def test_a_full_database_fails_each_write_of_a_group_alone_then_recovers(
    tmp_path: Path,
) -> None:
    store = SQLiteTaskStore(tmp_path / "tasks.sqlite3")
    await store.open()
    try:
        await store.create(make_task("kept"))
        (pages,) = await hop(store._conn, lambda con: con.execute("PRAGMA page_count").fetchone())
        await hop(store._conn, lambda con: con.execute(f"PRAGMA max_page_count = {pages}"))
        # queued together: one group commit; each gets its own StoreUnavailableError
        outcomes = await asyncio.gather(
            *(store.create(make_task(f"big{i}", padding=20_000)) for i in range(4)),
            return_exceptions=True,
        )
        assert all(isinstance(o, StoreUnavailableError) for o in outcomes), outcomes
        assert all(isinstance(o.__cause__, sqlite3.OperationalError) for o in outcomes)
        assert await store.get("big0") is None
        await hop(store._conn, lambda con: con.execute("PRAGMA max_page_count = 1073741823"))
        await asyncio.gather(
            *(store.create(make_task(f"big{i}", padding=20_000)) for i in range(4))
        )
        assert await store.get("big3") is not None and await store.get("kept") is not None
    finally:
        await store.close()


# -- locked by another program ---------------------------------------------------------------

HOLDER = textwrap.dedent(
    """
    import sqlite3, sys
    con = sqlite3.connect(sys.argv[1], isolation_level=None)
    how = sys.argv[2]
    if how == "write":
        con.execute("BEGIN IMMEDIATE")
    elif how == "read":  # an open read transaction
        con.execute("BEGIN")
        con.execute("SELECT count(*) FROM tasks").fetchall()
    elif how == "idle":  # a connection that has read the file, then idles
        con.execute("SELECT count(*) FROM tasks").fetchall()
    print("held", flush=True)
    sys.stdin.readline()
    if con.in_transaction:
        con.execute("COMMIT")
    """
)

STORE_HOLDER = textwrap.dedent(
    """
    import asyncio, sys
    from a2a_wire.server.store import SQLiteTaskStore

    async def main():
        store = SQLiteTaskStore(sys.argv[1])
        await store.open()
        print("held", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        await store.close()

    asyncio.run(main())
    """
)


@contextlib.contextmanager
def held_by_another_process(path: Path, how: str = "write", script: str = HOLDER) -> Iterator[None]:
    """Another process with ``path`` open: a write lock, a read transaction or an idle one."""
    holder = subprocess.Popen(
        [sys.executable, "-c", script, str(path), how],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=30)
        assert holder.stdout is not None
        holder.stdout.close()


async def test_a_file_locked_by_another_program_at_start_waits_then_refuses(tmp_path: Path) -> None:
    path = tmp_path / "tasks.sqlite3"
    store = SQLiteTaskStore(path)
    await store.open()
    await store.create(make_task("t1"))
    await store.close()
    with held_by_another_process(path):
        loop = asyncio.get_running_loop()
        start = loop.time()
        locked = SQLiteTaskStore(path, busy_timeout_seconds=0.3)
        with pytest.raises(RuntimeError, match="in use by another store or program"):
            await locked.open()
        assert loop.time() - start >= 0.3  # it waited busy_timeout first
    again = SQLiteTaskStore(path)  # released: opens with every task
    await again.open()
    try:
        assert await again.get("t1") is not None
    finally:
        await again.close()


@pytest.mark.parametrize("how", ["idle", "read"])
async def test_a_reader_in_another_process_does_not_keep_the_store_from_starting(
    tmp_path: Path, how: str
) -> None:
    path = tmp_path / "tasks.sqlite3"
    store = SQLiteTaskStore(path)
    await store.open()
    await store.create(make_task("t1"))  # WORKING: recovery will fail it
    await store.close()
    with held_by_another_process(path, how):
        again = SQLiteTaskStore(path, busy_timeout_seconds=0.3)
        await again.open()  # a refusal raises after busy_timeout
        try:
            task = await again.get("t1")
            assert task is not None and task.status is not None
            assert task.status.state == TaskState.FAILED  # recovery wrote, beside the reader
            await again.create(make_task("t2"))
        finally:
            await again.close()


async def test_a_store_of_another_process_keeps_a_second_one_from_starting(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.sqlite3"
    with held_by_another_process(path, script=STORE_HOLDER):
        second = SQLiteTaskStore(path, busy_timeout_seconds=0.3)
        with pytest.raises(RuntimeError, match="in use by another a2a-wire process") as refused:
            await second.open()
        assert isinstance(refused.value.__cause__, BlockingIOError)
    again = SQLiteTaskStore(path)  # the other one closed: it opens
    await again.open()
    await again.close()


LOCKER = textwrap.dedent(
    """
    import sqlite3, sys
    con = sqlite3.connect(sys.argv[1], timeout=5, isolation_level=None)
    con.execute("SELECT count(*) FROM tasks").fetchall()  # reading a running store's file
    con.execute("BEGIN IMMEDIATE")
    print("locked it", flush=True)
    sys.stdin.readline()
    con.execute("COMMIT")
    """
)


async def test_another_program_s_write_lock_on_a_running_server_is_503_until_released(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    path = tmp_path / "tasks.sqlite3"
    store = SQLiteTaskStore(path, busy_timeout_seconds=0.3)
    app = create_app(make_card(), ScriptedAgent(), store=store)
    client = await aiohttp_client(app)
    first = (await result(client, "SendMessage", send_params("one")))["task"]
    locker = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert locker.stdout is not None
        line = await asyncio.to_thread(locker.stdout.readline)
        assert line == "locked it\n"
        refused = await post(client, envelope("SendMessage", send_params("two")))
        assert refused.status == 503 and "Retry-After" in refused.headers
        read = await result(client, "GetTask", {"id": first["id"]})  # readers go on (WAL)
        assert read["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        assert locker.stdin is not None
        locker.stdin.write("\n")
        locker.stdin.close()
        await asyncio.to_thread(locker.wait, 30)
        assert locker.stdout is not None
        locker.stdout.close()
    second = (await result(client, "SendMessage", send_params("three")))["task"]
    assert second["status"]["state"] == "TASK_STATE_COMPLETED"


# -- the translation point -------------------------------------------------------------------


def real_errors(tmp_path: Path) -> dict[str, sqlite3.Error]:
    """One real sqlite error of each kind, from real connections."""
    found: dict[str, sqlite3.Error] = {}
    path = tmp_path / "x.db"
    a = sqlite3.connect(path, isolation_level=None)
    b = sqlite3.connect(path, timeout=0, isolation_level=None)
    a.execute("CREATE TABLE t (k INTEGER PRIMARY KEY)")
    a.execute("BEGIN EXCLUSIVE")
    for name, con, sql in [
        ("busy", b, "INSERT INTO t VALUES (1)"),
        ("syntax", a, "SELEC 1"),
    ]:
        try:
            con.execute(sql)
        except sqlite3.Error as exc:
            found[name] = exc
    a.execute("INSERT INTO t VALUES (1)")
    try:
        a.execute("INSERT INTO t VALUES (1)")
    except sqlite3.Error as exc:
        found["constraint"] = exc
    a.execute("COMMIT")
    try:
        sqlite3.connect(tmp_path / "no" / "such" / "dir.db")
    except sqlite3.Error as exc:
        found["cantopen"] = exc
    a.close()
    b.close()
    return found


def test_faults_are_told_from_bugs(tmp_path: Path) -> None:
    found = real_errors(tmp_path)
    assert {name for name, exc in found.items() if is_fault(exc)} == {"busy", "cantopen"}
    assert not is_fault(ValueError("not sqlite"))


async def test_one_warning_per_outage_and_the_cause_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="a2a_wire.server.store")
    found = real_errors(tmp_path)
    faults = SQLiteFaults()

    async def failing(exc: sqlite3.Error) -> None:
        raise exc

    async def ok() -> str:
        return "fine"

    for _ in range(3):
        with pytest.raises(StoreUnavailableError) as caught:
            await faults.guard(failing(found["busy"]))
        assert caught.value.__cause__ is found["busy"]
    with pytest.raises(sqlite3.IntegrityError):  # a bug (or the store's own rule): unchanged
        await faults.guard(failing(found["constraint"]))
    assert await faults.guard(ok()) == "fine"
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2 and "unavailable" in messages[0] and "available again" in messages[1]
