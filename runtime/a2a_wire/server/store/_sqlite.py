"""A durable :class:`~a2a_wire.server.store._base.TaskStore` on SQLite, driven through aiosqlite.

It keeps every rule of :mod:`a2a_wire.server.store._base` (owner scoping, ListTasks order, filters and signed
cursors of spec 3.1.4, recovery on open); this module only adds how the data sits on disk.

Layout
------
One table, ``tasks``: ``id`` (primary key), ``owner``, ``context_id``, ``state`` (the TaskState
wire value), ``status_s`` and ``status_ns`` (the status timestamp as seconds and nanoseconds,
exact for years 1 to 9999, which nanoseconds alone would overflow) and ``body``, the task's
own ProtoJSON bytes (:func:`a2a_wire.codec.encode`). (Push configs and the push outbox have
their own tables, described in :mod:`a2a_wire.server.store._push_sqlite`.) The indexed columns are copies of fields of
``body``, written together with it. Because ``body`` is our own strict JSON, everything a client
can send (any Unicode, multi-megabyte parts, deep ``Struct`` metadata, unknown enum values)
reads back equal. Two indexes serve ListTasks, both ordered by status time then id: one
on ``owner`` for an owner's tasks (a state or time filter is applied along it) and one on
``(owner, context_id)`` for one context. Recovery scans for SUBMITTED/WORKING rows without an index; it runs once, at
startup. The schema version is ``PRAGMA user_version`` (:data:`SCHEMA_VERSION`); a file written
by a newer version is refused rather than misread.

Durability and speed
--------------------
There is one connection, opened in autocommit mode, so each ``create`` and ``update`` is a single
INSERT or UPDATE statement that commits by itself before the call returns: one round trip to
the aiosqlite thread and one commit per write. SQL text is constant and values are bound
parameters, so sqlite3's statement cache reuses the prepared statements. PRAGMAs run only in
:meth:`SQLiteTaskStore.open`. The journal is WAL; with ``synchronous=NORMAL`` (the default) a
committed write reaches the operating system before the call returns, so it survives the process
being killed at any point, though the last commits may be lost if the machine loses power. Use
``synchronous="FULL"`` to also survive power loss, at the cost of an fsync per commit.

One store per file
------------------
Recovery assumes that no other process is running the tasks in the file, so the connection
takes SQLite's EXCLUSIVE locking mode and holds the file from ``open`` to ``close``. A second
store (in this or another process) fails to open it after :data:`BUSY_TIMEOUT_MS` instead of
failing the first store's live tasks. Inspect a live database through a copy, or after closing.
"""

from __future__ import annotations

import builtins
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiosqlite

from a2a_wire import codec
from a2a_wire.errors import TaskNotFoundError
from a2a_wire.server.store._base import (
    RECOVERED_STATES,
    TaskPage,
    TaskQuery,
    TaskStore,
    fail_after_restart,
    issue_cursor,
    now_timestamp,
    read_cursor,
    state_filter,
    state_key,
    status_key,
    task_state,
    timestamp_key,
)
from a2a_wire.server.store._paging import PageTokens, check_page_size
from a2a_wire.server.store._push import status_event
from a2a_wire.server.store._push_sqlite import PUSH_SCHEMA, SQLitePushStore, enqueue, in_transaction
from a2a_wire.types import Task, TaskPushNotificationConfig

__all__ = ["BUSY_TIMEOUT_MS", "SCHEMA_VERSION", "SYNCHRONOUS_MODES", "SQLiteTaskStore"]

SCHEMA_VERSION = 2
"""Value of ``PRAGMA user_version`` for the layout this module writes."""

SYNCHRONOUS_MODES = frozenset({"NORMAL", "FULL", "EXTRA"})
"""Accepted ``synchronous`` settings; OFF is refused because writes must survive a crash."""

BUSY_TIMEOUT_MS = 2000
"""How long ``open`` waits for another connection to release the file before giving up."""

_SCHEMA = (
    "CREATE TABLE tasks ("
    " id TEXT PRIMARY KEY NOT NULL,"
    " owner TEXT NOT NULL,"
    " context_id TEXT NOT NULL,"
    " state TEXT NOT NULL,"
    " status_s INTEGER NOT NULL,"
    " status_ns INTEGER NOT NULL,"
    " body BLOB NOT NULL)",
    "CREATE INDEX tasks_by_owner ON tasks (owner, status_s DESC, status_ns DESC, id)",
    "CREATE INDEX tasks_by_context ON tasks (owner, context_id, status_s DESC, status_ns DESC, id)",
    *PUSH_SCHEMA,
    f"PRAGMA user_version = {SCHEMA_VERSION}",
)

_INSERT = (
    "INSERT INTO tasks (id, owner, context_id, state, status_s, status_ns, body)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_UPDATE = (
    "UPDATE tasks SET context_id = ?, state = ?, status_s = ?, status_ns = ?, body = ?"
    " WHERE id = ? RETURNING id"
)
_GET = "SELECT body FROM tasks WHERE id = ? AND owner = ?"
_ORDER = " ORDER BY status_s DESC, status_ns DESC, id LIMIT ?"
# Rows after the cursor (same time and a greater id, or an earlier time). The first term is
# implied by the second; it is there so that SQLite seeks the index to the cursor instead of
# scanning every row before it (spec 3.1.4: no deep-pagination cost).
_AFTER_CURSOR = (
    " AND (status_s, status_ns) <= (?, ?)"
    " AND ((status_s, status_ns) < (?, ?) OR ((status_s, status_ns) = (?, ?) AND id > ?))"
)


class SQLiteTaskStore(SQLitePushStore, TaskStore):
    """A :class:`~a2a_wire.server.store._base.TaskStore` in an SQLite file.

    Args:
        path: The database file; created with its schema on the first ``open``.
        synchronous: SQLite's ``synchronous`` setting, one of :data:`SYNCHRONOUS_MODES`.
        page_token_key: HMAC key for page tokens; random when ``None`` (see
            :class:`~a2a_wire.server.store._paging.PageTokens`).

    Raises:
        ValueError: ``synchronous`` is not one of :data:`SYNCHRONOUS_MODES`.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "NORMAL",
        page_token_key: bytes | None = None,
    ) -> None:
        mode = synchronous.upper()
        if mode not in SYNCHRONOUS_MODES:
            raise ValueError(f"synchronous must be one of {sorted(SYNCHRONOUS_MODES)}")
        self._path = path
        self._synchronous = mode
        self.page_tokens = PageTokens(page_token_key)
        self._db: aiosqlite.Connection | None = None
        self._init_push()

    @property
    def _conn(self) -> aiosqlite.Connection:
        if self._db is None:
            raise RuntimeError("the task store is not open; call open() first")
        return self._db

    async def open(self) -> builtins.list[str]:
        """Connect, create or check the schema, and fail the tasks a restart interrupted.

        Returns:
            Ids of the tasks moved from SUBMITTED or WORKING to FAILED.

        Raises:
            RuntimeError: the store is already open, another store holds the file, or the file
                has a newer schema version.
        """
        if self._db is not None:
            raise RuntimeError("the task store is already open")
        db = await aiosqlite.connect(self._path, isolation_level=None)
        try:
            await db.execute_fetchall(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            await db.execute_fetchall("PRAGMA locking_mode = EXCLUSIVE")
            await db.execute_fetchall("PRAGMA journal_mode = WAL")
            await db.execute_fetchall(f"PRAGMA synchronous = {self._synchronous}")
            await _migrate(db)
            failed = await _recover(db)
            await self._load_push(db)
        except sqlite3.OperationalError as exc:
            await db.close()
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY:
                raise
            raise RuntimeError(f"task database {self._path} is in use by another store") from exc
        except BaseException:
            await db.close()
            raise
        self._db = db
        return failed

    async def close(self) -> None:
        """Close the connection; the file keeps the data. Closing twice is harmless."""
        db, self._db = self._db, None
        if db is not None:
            await db.close()

    async def create(
        self,
        task: Task,
        *,
        owner: str = "",
        push_configs: Sequence[TaskPushNotificationConfig] = (),
        push: bytes | None = None,
    ) -> int:
        """Insert a new task (with push configs and outbox rows); committed when this returns.

        Returns:
            The number of outbox rows added.

        Raises:
            ValueError: the task has no id, or a task with that id exists.
        """
        db = self._conn
        if not task.id:
            raise ValueError("a task needs an id to be stored")
        row = (task.id, owner, *_columns(task))

        async def work() -> int:
            await db.execute_fetchall(_INSERT, row)
            await self._put_configs(push_configs)
            return await self._enqueue(task.id, push) if push is not None else 0

        try:
            if not push_configs and self._unlocked_plain(task.id, push):
                await db.execute_fetchall(_INSERT, row)
                return 0
            async with self._write_lock:
                if push_configs or self._has_push(task.id, push):
                    return await in_transaction(db, work)
                await db.execute_fetchall(_INSERT, row)
                return 0
        except sqlite3.IntegrityError:
            raise ValueError(f"task {task.id!r} is already stored") from None

    async def update(self, task: Task, *, push: bytes | None = None) -> int:
        """Replace a stored task, keeping its owner, with its outbox rows; committed on return.

        Returns:
            The number of outbox rows added.

        Raises:
            TaskNotFoundError: no task with that id is stored.
        """
        db = self._conn
        columns = (*_columns(task), task.id)

        async def work() -> int | None:
            if not await db.execute_fetchall(_UPDATE, columns):
                return None  # nothing changed: the commit is empty
            return await self._enqueue(task.id, push) if push is not None else 0

        if self._unlocked_plain(task.id, push):
            added = 0 if await db.execute_fetchall(_UPDATE, columns) else None
        else:
            async with self._write_lock:
                if self._has_push(task.id, push):
                    added = await in_transaction(db, work)
                else:
                    added = 0 if await db.execute_fetchall(_UPDATE, columns) else None
        if added is None:
            raise TaskNotFoundError(metadata={"taskId": task.id})
        return added

    def _unlocked_plain(self, task_id: str, push: bytes | None) -> bool:
        """Whether a one-statement write without outbox rows may go without the write lock.

        Only while nobody holds the lock: then no transaction is open, and aiosqlite runs calls
        in the order they are queued. The caller queues its statement before it first yields,
        so the statement commits on its own before any later BEGIN. Concurrent plain writes
        then pipeline through the connection's thread instead of taking turns on the lock
        (docs/performance.md).
        """
        return not self._write_lock.locked() and not self._has_push(task_id, push)

    async def get(self, task_id: str, *, owner: str = "") -> Task | None:
        """A fresh copy of ``owner``'s task ``task_id``, or ``None``."""
        rows = list(await self._conn.execute_fetchall(_GET, (task_id, owner)))
        return codec.decode(Task, rows[0][0]) if rows else None

    async def list(self, query: TaskQuery, *, owner: str = "") -> TaskPage:
        """One page of ``owner``'s tasks matching ``query``, newest status first.

        Raises:
            InvalidParamsError: the page token is not valid for this query.
        """
        db = self._conn
        check_page_size(query.page_size)
        after = read_cursor(self.page_tokens, query, owner)
        where, params = _filters(query, owner)
        count = list(await db.execute_fetchall(f"SELECT COUNT(*) FROM tasks{where}", params))
        if after is not None:
            where += _AFTER_CURSOR
            seconds, nanos, last_id = after
            params += [seconds, nanos, seconds, nanos, seconds, nanos, last_id]
        sql = f"SELECT status_s, status_ns, id, body FROM tasks{where}{_ORDER}"
        rows = list(await db.execute_fetchall(sql, [*params, query.page_size + 1]))
        more = len(rows) > query.page_size
        page = rows[: query.page_size]
        last = page[-1] if more else None
        token = (
            issue_cursor(self.page_tokens, query, owner, (last[0], last[1], last[2]))
            if last
            else ""
        )
        tasks = [codec.decode(Task, row[3]) for row in page]
        return TaskPage(tasks=tasks, next_page_token=token, total_size=count[0][0])


def _columns(task: Task) -> tuple[str, str, int, int, bytes]:
    """The stored columns after id and owner: context, state, status time, JSON body."""
    seconds, nanos = status_key(task)
    return task.context_id, state_key(task_state(task)), seconds, nanos, codec.encode(task)


def _filters(query: TaskQuery, owner: str) -> tuple[str, builtins.list[Any]]:
    """The WHERE clause and its parameters for the query's owner and filters."""
    where = " WHERE owner = ?"
    params: builtins.list[Any] = [owner]
    if query.context_id:
        where += " AND context_id = ?"
        params.append(query.context_id)
    state = state_filter(query)
    if state is not None:
        where += " AND state = ?"
        params.append(state)
    if query.status_after is not None:
        where += " AND (status_s, status_ns) >= (?, ?)"
        params += timestamp_key(query.status_after)
    return where, params


async def _migrate(db: aiosqlite.Connection) -> None:
    """Create the schema in an empty file, or check the version of an existing one."""

    async def work() -> None:
        version = list(await db.execute_fetchall("PRAGMA user_version"))[0][0]
        if version == 0:
            for statement in _SCHEMA:
                await db.execute_fetchall(statement)
        elif version == 1:  # before push notifications: add their tables
            for statement in (*PUSH_SCHEMA, f"PRAGMA user_version = {SCHEMA_VERSION}"):
                await db.execute_fetchall(statement)
        elif version != SCHEMA_VERSION:
            raise RuntimeError(
                f"task database schema version {version} is not {SCHEMA_VERSION}; "
                "it was written by another version of a2a-wire"
            )

    await in_transaction(db, work)


async def _recover(db: aiosqlite.Connection) -> builtins.list[str]:
    """Fail every SUBMITTED or WORKING task in one transaction; return their ids.

    The FAILED status is put in the push outbox for the task's webhooks, in the same transaction.
    """
    states = sorted(state_key(s) for s in RECOVERED_STATES)
    select = f"SELECT body FROM tasks WHERE state IN ({', '.join('?' * len(states))})"

    async def work() -> builtins.list[str]:
        now = now_timestamp()
        updates = []
        for (body,) in await db.execute_fetchall(select, states):
            task = codec.decode(Task, body)
            fail_after_restart(task, now)
            updates.append((*_columns(task), task.id))
            await enqueue(db, task.id, status_event(task))
        await db.executemany(_UPDATE.removesuffix(" RETURNING id"), updates)
        return [update[-1] for update in updates]

    return await in_transaction(db, work)
