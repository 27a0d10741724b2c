"""Schema, connection and statements of the SQLite task store, :mod:`a2a_wire.server.store._log_sqlite`.

Layout (``PRAGMA user_version`` = :data:`LOG_SCHEMA_VERSION`)
------------------------------------------------------------
* ``tasks``: the listing row. ``id`` (primary key), ``owner``, ``context_id``, ``state`` (the
  TaskState wire value), ``status_s`` and ``status_ns`` (the status timestamp as seconds and
  nanoseconds, exact for years 1 to 9999, which nanoseconds alone would overflow),
  ``changed_at`` (the store's clock at the last state change, for retention) and ``first_seq``
  (the lowest event number still logged). Small and fixed-size: a status event rewrites it, an
  artifact chunk does not touch it. Indexes: ListTasks by ``owner`` and by ``(owner,
  context_id)``, both ordered by status time then id, and ``(state, changed_at)`` for retention.
* ``task_snapshots``: ``task_id``, ``seq`` (the last event folded in) and ``body`` (the task's
  own ProtoJSON, :func:`a2a_wire.codec.encode`; everything a client can send reads back equal).
  Written by ``create`` and by a fold only.
* ``task_events``: ``(task_id, seq)`` primary key (a WITHOUT ROWID table: the event is stored in
  the key's b-tree, one b-tree insert per event), ``kind`` and ``body``. Rows are inserted,
  and deleted by compaction and purge; never updated.
* ``deleted_tasks``: ids of deleted tasks whose events and outbox rows
  :meth:`~a2a_wire.server.store._log_sqlite.SQLiteTaskStore.purge` still owes.
* ``push_configs`` and ``push_outbox``: as in :mod:`a2a_wire.server.store._push_sqlite`.

A file written by another version is migrated when it is opened (:func:`migrate`, one
transaction): version 1 (before push notifications) gains the push tables, then version 2 (whole
tasks in ``tasks.body``, the store before the event log) becomes version 3: the new tables are
created, each body becomes the task's snapshot as ``seq`` 1, ``changed_at`` is the status time
(the migration's time for a task without one), ``first_seq`` is 2 (the log before that point
was never kept, so a resume starts from the snapshot), ``tasks`` is rebuilt without ``body``,
and ``user_version`` becomes 3. A newer version is refused rather than misread.

Durability and one store per file
---------------------------------
There is one connection, opened in autocommit mode: a one-statement write commits by itself
before the call returns, and every other write is one ``BEGIN IMMEDIATE`` transaction (see
:mod:`a2a_wire.server.store._log_sqlite`). The journal is WAL; with ``synchronous=NORMAL`` (the
default) a committed write reaches the operating system before the call returns, so it survives
the process being killed at any point, though the last commits may be lost if the machine loses
power. ``synchronous="FULL"`` also survives power loss, at the cost of an fsync per commit.

Recovery assumes that no other process is running the tasks in the file, so the connection
takes SQLite's EXCLUSIVE locking mode and holds the file from ``open`` to ``close``. A second
store (in this or another process) fails to open it after :data:`BUSY_TIMEOUT_MS` instead of
failing the first store's live tasks. Inspect a live database through a copy, or after closing.

Statements
----------
SQL text is constant (values are bound parameters) so that sqlite3's statement cache keeps the
prepared statements; the ``?1``-style numbers let one value serve several places.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import aiosqlite

from a2a_wire.server.store._base import TaskQuery, state_filter, timestamp_key
from a2a_wire.server.store._push_sqlite import PUSH_SCHEMA, hop, transaction
from a2a_wire.server.store._sqlite_thread import close_connection, open_connection

__all__ = [
    "BOUNDS",
    "BUSY_TIMEOUT_MS",
    "EVENTS",
    "FOLD",
    "HEAD",
    "INSERT_EVENT",
    "INSERT_NEW_EVENT",
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

LOG_SCHEMA_VERSION = 3
"""Value of ``PRAGMA user_version`` for the event log layout."""

SYNCHRONOUS_MODES = frozenset({"NORMAL", "FULL", "EXTRA"})
"""Accepted ``synchronous`` settings; OFF is refused because writes must survive a crash."""

BUSY_TIMEOUT_MS = 2000
"""How long ``open`` waits for another connection to release the file before giving up."""

WAL_AUTOCHECKPOINT_PAGES = 3_000
"""WAL pages (4 KiB each) after which a commit copies the WAL back into the file.

A checkpoint syncs both files, and meanwhile the connection's thread, and every request
waiting for it, waits for the disk. SQLite's default, 1,000, checkpoints about ten times a
second under a few hundred SendMessage a second; at 3,000 the WAL holds up to about 12 MiB, a
page written many times in between is copied once, and throughput rose by 8 to 18 % while p99
rose by about a quarter (each checkpoint is longer; docs/performance.md). A crash loses nothing
either way: committed frames are replayed from the WAL on the next open.
"""

_TASKS = (
    "CREATE TABLE tasks ("
    " id TEXT PRIMARY KEY NOT NULL,"
    " owner TEXT NOT NULL,"
    " context_id TEXT NOT NULL,"
    " state TEXT NOT NULL,"
    " status_s INTEGER NOT NULL,"
    " status_ns INTEGER NOT NULL,"
    " changed_at REAL NOT NULL,"
    " first_seq INTEGER NOT NULL)"
)

_INDEXES = (
    "CREATE INDEX tasks_by_owner ON tasks (owner, status_s DESC, status_ns DESC, id)",
    "CREATE INDEX tasks_by_context ON tasks (owner, context_id, status_s DESC, status_ns DESC, id)",
    "CREATE INDEX tasks_by_change ON tasks (state, changed_at)",
)

_LOG_TABLES = (
    "CREATE TABLE task_snapshots ("
    " task_id TEXT PRIMARY KEY NOT NULL,"
    " seq INTEGER NOT NULL,"
    " body BLOB NOT NULL)",
    "CREATE TABLE task_events ("
    " task_id TEXT NOT NULL,"
    " seq INTEGER NOT NULL,"
    " kind INTEGER NOT NULL,"
    " body BLOB NOT NULL,"
    " PRIMARY KEY (task_id, seq)) WITHOUT ROWID",
    "CREATE TABLE deleted_tasks (task_id TEXT PRIMARY KEY NOT NULL)",
)

SCHEMA = (
    _TASKS,
    *_INDEXES,
    *_LOG_TABLES,
    *PUSH_SCHEMA,
    f"PRAGMA user_version = {LOG_SCHEMA_VERSION}",
)
"""Statements creating the schema in an empty file."""

_FROM_V2 = (
    *_LOG_TABLES,
    "INSERT INTO task_snapshots (task_id, seq, body) SELECT id, 1, body FROM tasks",
    _TASKS.replace("CREATE TABLE tasks", "CREATE TABLE tasks_v3", 1),
    "INSERT INTO tasks_v3 SELECT id, owner, context_id, state, status_s, status_ns,"
    " CASE WHEN status_s = 0 AND status_ns = 0 THEN ? ELSE status_s + status_ns / 1e9 END, 2"
    " FROM tasks",
    "DROP TABLE tasks",
    "ALTER TABLE tasks_v3 RENAME TO tasks",
    *_INDEXES,
    f"PRAGMA user_version = {LOG_SCHEMA_VERSION}",
)
"""Statements turning a version 2 file into version 3 (module docstring); ``?`` is the time now."""

_LAST = (
    "COALESCE((SELECT MAX(seq) FROM task_events WHERE task_id = ?1),"
    " (SELECT seq FROM task_snapshots WHERE task_id = ?1))"
)

INSERT_EVENT = (
    "INSERT INTO task_events (task_id, seq, kind, body) SELECT ?1, ?2, ?3, ?4"
    f" WHERE ?2 - 1 = {_LAST} AND EXISTS (SELECT 1 FROM tasks WHERE id = ?1)"
)
"""Log event ``?2`` of task ``?1`` if it is the next number and the task exists (else no row)."""

INSERT_NEW_EVENT = "INSERT INTO task_events (task_id, seq, kind, body) VALUES (?, ?, ?, ?)"
"""Log an event of a task created in the same transaction (its numbers are known to be free)."""

LAST_SEQ = f"SELECT {_LAST}"
"""The task's last event number; NULL when there is no such task."""

UPDATE_STATUS = (
    "UPDATE tasks SET state = ?, status_s = ?, status_ns = ?, changed_at = ? WHERE id = ?"
)

HEAD = (
    "SELECT t.owner, t.context_id, t.state, s.seq, length(s.body),"
    " COALESCE((SELECT MAX(seq) FROM task_events WHERE task_id = ?1), s.seq),"
    " (SELECT COALESCE(SUM(length(body)), 0) FROM task_events WHERE task_id = ?1 AND seq > s.seq)"
    " FROM tasks t JOIN task_snapshots s ON s.task_id = t.id WHERE t.id = ?1"
)
"""What the store remembers of a task: owner, context, state, snapshot, last number, tail."""

READ = (
    "SELECT s.seq, 0, s.body FROM tasks t JOIN task_snapshots s ON s.task_id = t.id"
    " WHERE t.id = ?1 AND t.owner = ?2"
    " UNION ALL SELECT seq, kind, body FROM task_events WHERE task_id = ?1"
    " AND seq > (SELECT seq FROM task_snapshots WHERE task_id = ?1) ORDER BY 1"
)
"""One statement: the snapshot row (kind 0) of ``?2``'s task ``?1``, then its tail."""

FOLD = "UPDATE task_snapshots SET seq = ?, body = ? WHERE task_id = ? AND seq = ?"
"""Replace the snapshot if it is still the one the fold read (else no row changes)."""

EVENTS = (
    "SELECT e.seq, e.kind, e.body FROM tasks t JOIN task_events e ON e.task_id = t.id"
    " WHERE t.id = ? AND t.owner = ? AND e.seq > ? ORDER BY e.seq LIMIT ?"
)

BOUNDS = f"SELECT t.first_seq, {_LAST} FROM tasks t WHERE t.id = ?1 AND t.owner = ?2"
"""The lowest logged and the last event number of ``?2``'s task ``?1``."""

LIST = (
    "SELECT status_s, status_ns, id, s.seq, s.body,"
    " COALESCE((SELECT MAX(e.seq) FROM task_events e WHERE e.task_id = t.id), s.seq)"
    " FROM tasks t JOIN task_snapshots s ON s.task_id = t.id"
)
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
    """Create the schema in an empty file, or bring an older one to version 3, in one transaction.

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
        if version not in (1, 2, LOG_SCHEMA_VERSION):
            raise RuntimeError(
                f"task database schema version {version} is not {LOG_SCHEMA_VERSION}; "
                "it was written by another version of a2a-wire"
            )
        if version == 1:  # before push notifications: add their tables
            for statement in PUSH_SCHEMA:
                con.execute(statement)
        if version < LOG_SCHEMA_VERSION:
            for statement in _FROM_V2:
                con.execute(statement, (now,) if "?" in statement else ())

    await hop(db, lambda con: transaction(con, lambda: work(con)))


async def connect(path: str | Path, synchronous: str, now: float) -> aiosqlite.Connection:
    """Open the file (EXCLUSIVE, WAL; module docstring) and create or migrate its schema.

    On any failure the connection is closed and its worker thread has returned
    (:mod:`a2a_wire.server.store._sqlite_thread`); close the one returned with
    :func:`~a2a_wire.server.store._sqlite_thread.close_connection`.

    Args:
        path: The database file.
        synchronous: One of :data:`SYNCHRONOUS_MODES`.
        now: The store's clock, for :func:`migrate`.

    Raises:
        RuntimeError: another store holds the file, or it has a schema version this code does
            not know.
    """
    db = await open_connection(path)
    try:
        await db.execute_fetchall(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        await db.execute_fetchall("PRAGMA locking_mode = EXCLUSIVE")
        await db.execute_fetchall("PRAGMA journal_mode = WAL")
        await db.execute_fetchall(f"PRAGMA synchronous = {synchronous}")
        await db.execute_fetchall("PRAGMA temp_store = MEMORY")
        await db.execute_fetchall(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
        await migrate(db, now)
    except sqlite3.OperationalError as exc:
        await close_connection(db)
        if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY:
            raise
        raise RuntimeError(f"task database {path} is in use by another store") from exc
    except BaseException:
        await close_connection(db)
        raise
    return db
