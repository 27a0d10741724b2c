"""Schema, migration, connection settings and statements of the SQLite task store.

A file written by an older version is migrated when it is opened, in one transaction; a newer
one is refused. SQL text is constant (values are bound) so that sqlite3's statement cache keeps
it prepared. The layout, the migrations, durability and locks: docs/internals/store.md,
"SQLite: layout, migration, durability, locks".
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import aiosqlite

from a2a_wire.server.store._contract.tasks import TaskQuery
from a2a_wire.server.store._fold.keys import state_filter, timestamp_key
from a2a_wire.server.store.sqlite._connection import (
    close_connection,
    hop,
    open_connection,
    transaction,
)
from a2a_wire.server.store.sqlite._push import PUSH_SCHEMA

__all__ = [
    "BOUNDS",
    "BUSY_TIMEOUT_SECONDS",
    "EVENTS",
    "FOLD",
    "HEAD",
    "INSERT_EVENT",
    "INSERT_NEW_EVENT",
    "INSERT_TASK",
    "LAST_SEQ",
    "LIST",
    "LOG_SCHEMA_VERSION",
    "ORDER",
    "READ",
    "SCHEMA",
    "SYNCHRONOUS_MODES",
    "UPDATE_STATUS",
    "after_cursor",
    "close_connection",
    "connect",
    "filters",
    "migrate",
]

LOG_SCHEMA_VERSION = 4
"""Value of ``PRAGMA user_version`` for the event log layout."""

SYNCHRONOUS_MODES = frozenset({"NORMAL", "FULL", "EXTRA"})
"""Accepted ``synchronous`` settings; OFF is refused because writes must survive a crash."""

BUSY_TIMEOUT_SECONDS = 2.0
"""SQLite's ``busy_timeout`` by default: how long a statement waits for another program's write
lock on the file (docs/internals/store.md, "Locks") before SQLITE_BUSY; also how long ``open`` waits for
another store's claim."""

WAL_AUTOCHECKPOINT_PAGES = 3_000
"""WAL pages (4 KiB each) after which a commit copies the WAL back into the file.

A checkpoint syncs both files, and meanwhile the connection's thread, and every request
waiting for it, waits for the disk. SQLite's default, 1,000, checkpoints about ten times a
second under a few hundred SendMessage a second; at 3,000 the WAL holds up to about 12 MiB and a
page written many times in between is copied once, for fewer but longer checkpoints. A crash
loses nothing either way: committed frames are replayed from the WAL on the next open.
"""

_TASKS = (
    "CREATE TABLE tasks ("
    " ref INTEGER PRIMARY KEY AUTOINCREMENT,"
    " id TEXT NOT NULL UNIQUE,"
    " owner TEXT NOT NULL,"
    " context_id TEXT NOT NULL,"
    " state TEXT NOT NULL,"
    " status_s INTEGER NOT NULL,"
    " status_ns INTEGER NOT NULL,"
    " changed_at REAL NOT NULL,"
    " first_seq INTEGER NOT NULL,"
    " snap_seq INTEGER NOT NULL,"
    " body BLOB NOT NULL)"
)

_INDEXES = (
    "CREATE INDEX tasks_by_owner ON tasks (owner, status_s DESC, status_ns DESC, id)",
    "CREATE INDEX tasks_by_context ON tasks (owner, context_id, status_s DESC, status_ns DESC, id)",
    "CREATE INDEX tasks_by_change ON tasks (state, changed_at)",
)

_COLUMNS = (
    "id, owner, context_id, state, status_s, status_ns, changed_at, first_seq, snap_seq, body"
)

_EVENTS = (
    "CREATE TABLE task_events ("
    " task_ref INTEGER NOT NULL,"
    " seq INTEGER NOT NULL,"
    " kind INTEGER NOT NULL,"
    " body BLOB NOT NULL,"
    " PRIMARY KEY (task_ref, seq)) WITHOUT ROWID"
)

_DELETED = "CREATE TABLE deleted_tasks (task_id TEXT PRIMARY KEY NOT NULL, ref INTEGER NOT NULL)"

_LOG_TABLES = (_EVENTS, _DELETED)

SCHEMA = (
    _TASKS,
    *_INDEXES,
    *_LOG_TABLES,
    *PUSH_SCHEMA,
    f"PRAGMA user_version = {LOG_SCHEMA_VERSION}",
)
"""Statements creating the schema in an empty file."""

_REBUILT = (
    "DROP TABLE tasks",
    "ALTER TABLE tasks_new RENAME TO tasks",
    *_INDEXES,
    f"PRAGMA user_version = {LOG_SCHEMA_VERSION}",
)


def _new(statement: str, table: str) -> str:
    return statement.replace(f"CREATE TABLE {table}", f"CREATE TABLE {table}_new", 1)


_FROM_V2 = (
    *_LOG_TABLES,
    _new(_TASKS, "tasks"),
    f"INSERT INTO tasks_new ({_COLUMNS}) SELECT id, owner, context_id, state, status_s,"
    " status_ns,"
    " CASE WHEN status_s = 0 AND status_ns = 0 THEN ? ELSE status_s + status_ns / 1e9 END,"
    " 2, 1, body FROM tasks",
    *_REBUILT,
)
"""Statements turning a version 2 file into version 4 (module docstring); ``?`` is the time now."""

_FROM_V3 = (
    _new(_TASKS, "tasks"),
    f"INSERT INTO tasks_new ({_COLUMNS}) SELECT t.id, t.owner, t.context_id, t.state,"
    " t.status_s, t.status_ns, t.changed_at, t.first_seq, s.seq, s.body"
    " FROM tasks t JOIN task_snapshots s ON s.task_id = t.id ORDER BY t.rowid",
    _new(_EVENTS, "task_events"),
    "INSERT INTO task_events_new SELECT n.ref, e.seq, e.kind, e.body"
    " FROM task_events e JOIN tasks_new n ON n.id = e.task_id",
    "DROP TABLE task_events",
    "ALTER TABLE task_events_new RENAME TO task_events",
    _new(_DELETED, "deleted_tasks"),
    "INSERT INTO deleted_tasks_new SELECT task_id, 0 FROM deleted_tasks",
    "DROP TABLE deleted_tasks",
    "ALTER TABLE deleted_tasks_new RENAME TO deleted_tasks",
    "DROP TABLE task_snapshots",
    *_REBUILT,
)
"""Statements turning a version 3 file into version 4 (module docstring)."""

_LAST = "COALESCE((SELECT MAX(e.seq) FROM task_events e WHERE e.task_ref = t.ref), t.snap_seq)"
"""The last event number of the task row ``t``."""

INSERT_EVENT = (
    "INSERT INTO task_events (task_ref, seq, kind, body) SELECT t.ref, ?2, ?3, ?4"
    f" FROM tasks t WHERE t.id = ?1 AND ?2 - 1 = {_LAST}"
)
"""Log event ``?2`` of task ``?1`` if it is the next number and the task exists (else no row)."""

INSERT_NEW_EVENT = "INSERT INTO task_events (task_ref, seq, kind, body) VALUES (?, ?, ?, ?)"
"""Log an event of a task (by ``ref``) created in the same transaction (its numbers are free)."""

LAST_SEQ = f"SELECT (SELECT {_LAST} FROM tasks t WHERE t.id = ?1)"
"""The task's last event number; NULL when there is no such task."""

INSERT_TASK = (
    f"INSERT INTO tasks ({_COLUMNS}) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, 1, ?8"
    " WHERE NOT EXISTS (SELECT 1 FROM deleted_tasks WHERE task_id = ?1)"
)
"""A new task's row: the listing values ``?1``-``?7`` (id first), snapshot ``?8`` as number 1."""

UPDATE_STATUS = (
    "UPDATE tasks SET state = ?, status_s = ?, status_ns = ?, changed_at = ? WHERE id = ?"
)

HEAD = (
    f"SELECT t.owner, t.context_id, t.state, t.snap_seq, length(t.body), {_LAST},"
    " (SELECT COALESCE(SUM(length(e.body)), 0) FROM task_events e"
    " WHERE e.task_ref = t.ref AND e.seq > t.snap_seq)"
    " FROM tasks t WHERE t.id = ?1"
)
"""What the store remembers of a task: owner, context, state, snapshot, last number, tail."""

READ = (
    "SELECT snap_seq, 0, body FROM tasks WHERE id = ?1 AND owner = ?2"
    " UNION ALL SELECT e.seq, e.kind, e.body FROM tasks t JOIN task_events e"
    " ON e.task_ref = t.ref WHERE t.id = ?1 AND e.seq > t.snap_seq ORDER BY 1"
)
"""One statement: the snapshot row (kind 0) of ``?2``'s task ``?1``, then its tail."""

FOLD = "UPDATE tasks SET snap_seq = ?, body = ? WHERE id = ? AND snap_seq = ?"
"""Replace the snapshot if it is still the one the fold read (else no row changes)."""

EVENTS = (
    "SELECT e.seq, e.kind, e.body FROM tasks t JOIN task_events e ON e.task_ref = t.ref"
    " WHERE t.id = ? AND t.owner = ? AND e.seq > ? ORDER BY e.seq LIMIT ?"
)

BOUNDS = f"SELECT t.first_seq, {_LAST} FROM tasks t WHERE t.id = ?1 AND t.owner = ?2"
"""The lowest logged and the last event number of ``?2``'s task ``?1``."""

LIST = f"SELECT status_s, status_ns, id, snap_seq, body, {_LAST} FROM tasks t"
"""A ListTasks page: listing key, snapshot and last event number; add filters and order."""

ORDER = " ORDER BY status_s DESC, status_ns DESC, id LIMIT ?"

# Rows after the cursor; the first term (implied by the second) lets SQLite seek the index to
# the cursor instead of scanning the rows before it (spec 3.1.4: no deep-pagination cost).
_AFTER_CURSOR = (
    " AND (status_s, status_ns) <= (?, ?)"
    " AND ((status_s, status_ns) < (?, ?) OR ((status_s, status_ns) = (?, ?) AND id > ?))"
)


def filters(query: TaskQuery, owner: str) -> tuple[str, list[Any]]:
    """The WHERE clause and its parameters for the query's owner and filters."""
    where = " WHERE owner = ?"
    params: list[Any] = [owner]
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


def after_cursor(position: tuple[int, int, str]) -> tuple[str, list[Any]]:
    """The extra WHERE terms and parameters for the rows after a page token's position."""
    seconds, nanos, last_id = position
    return _AFTER_CURSOR, [seconds, nanos, seconds, nanos, seconds, nanos, last_id]


async def migrate(db: aiosqlite.Connection, now: float) -> None:
    """Create the schema in an empty file, or bring an older one to version 4, in one transaction.

    Args:
        db: The connection, before anything else uses it.
        now: The store's clock, the ``changed_at`` of migrated tasks without a status time.

    Raises:
        RuntimeError: the file has a schema version this code does not know.
    """

    def work(con: sqlite3.Connection) -> None:
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            for statement in SCHEMA:
                con.execute(statement)
            return
        if version not in (1, 2, 3, LOG_SCHEMA_VERSION):
            raise RuntimeError(
                f"task database schema version {version} is not {LOG_SCHEMA_VERSION}; "
                "it was written by another version of a2a-wire"
            )
        if version == 1:  # before push notifications: add their tables
            for statement in PUSH_SCHEMA:
                con.execute(statement)
        steps = {1: _FROM_V2, 2: _FROM_V2, 3: _FROM_V3}.get(version, ())
        for statement in steps:
            con.execute(statement, (now,) if "?" in statement else ())

    await hop(db, lambda con: transaction(con, lambda: work(con)))


async def connect(
    path: str | Path, synchronous: str, now: float, *, busy_timeout_ms: int = 2000
) -> aiosqlite.Connection:
    """Open the file (WAL; module docstring) and create or migrate its schema.

    On any failure the connection is closed and its worker thread has returned
    (:mod:`a2a_wire.server.store.sqlite._connection`); close the one returned with
    :func:`~a2a_wire.server.store.sqlite._connection.close_connection`.

    Args:
        path: The database file.
        synchronous: One of :data:`SYNCHRONOUS_MODES`.
        now: The store's clock, for :func:`migrate`.
        busy_timeout_ms: SQLite's ``busy_timeout`` for the connection.

    Raises:
        RuntimeError: another program holds a write lock on the file past ``busy_timeout_ms``
            (``from`` the SQLITE_BUSY error), or it has a schema version this code does not know.
    """
    db = await open_connection(path)
    try:
        await db.execute_fetchall(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        await db.execute_fetchall("PRAGMA journal_mode = WAL")
        await db.execute_fetchall(f"PRAGMA synchronous = {synchronous}")
        await db.execute_fetchall("PRAGMA temp_store = MEMORY")
        await db.execute_fetchall(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
        await migrate(db, now)
    except sqlite3.OperationalError as exc:
        await close_connection(db)
        if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY:
            raise
        raise RuntimeError(
            f"task database {path} is in use by another store or program (a write lock)"
        ) from exc
    except BaseException:
        await close_connection(db)
        raise
    return db
