"""The :class:`~a2a_wire.server.store.PushStore` part of the SQLite task store.

The store keeps the set of task ids that have configs, loaded at ``open``, so that an append
without push work skips the outbox statement. Tables: docs/internals/store.md,
"SQLite: push tables, one hop per call".
"""

from __future__ import annotations

import builtins
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import aiosqlite

from a2a_wire import codec
from a2a_wire.server.store._contract.push import Delivery, LaneKey, PushStore
from a2a_wire.server.store._fold.outage import OutageLog
from a2a_wire.server.store._fold.reads import delivery_of
from a2a_wire.server.store.sqlite._connection import hop, transaction
from a2a_wire.server.store.sqlite._faults import SQLiteFaults
from a2a_wire.server.store.sqlite._group import WriteGroup
from a2a_wire.types import TaskPushNotificationConfig

__all__ = ["PUSH_SCHEMA", "SQLitePushStore", "enqueue", "lanes_after", "put_configs"]

T = TypeVar("T")

PUSH_SCHEMA = (
    "CREATE TABLE push_configs ("
    " task_id TEXT NOT NULL,"
    " id TEXT NOT NULL,"
    " position INTEGER NOT NULL,"
    " body BLOB NOT NULL,"
    " PRIMARY KEY (task_id, id))",
    "CREATE TABLE push_outbox ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " delivery_id TEXT NOT NULL,"
    " task_id TEXT NOT NULL,"
    " config_id TEXT NOT NULL,"
    " body BLOB NOT NULL,"
    " created_at REAL NOT NULL,"
    " attempts INTEGER NOT NULL DEFAULT 0,"
    " next_attempt_at REAL NOT NULL DEFAULT 0,"
    " last_error TEXT NOT NULL DEFAULT '',"
    " failed INTEGER NOT NULL DEFAULT 0)",
    "CREATE INDEX push_outbox_by_lane ON push_outbox (task_id, config_id, failed, seq)",
)
"""Statements creating the push tables."""

_PUT_CONFIG = (
    "INSERT INTO push_configs (task_id, id, position, body) VALUES (?, ?,"
    " (SELECT COALESCE(MAX(position), 0) + 1 FROM push_configs WHERE task_id = ?), ?)"
    " ON CONFLICT (task_id, id) DO UPDATE SET body = excluded.body"
)
_ENQUEUE = (
    "INSERT INTO push_outbox (delivery_id, task_id, config_id, body, created_at)"
    " SELECT lower(hex(randomblob(16))), task_id, id, ?, ?"
    " FROM push_configs WHERE task_id = ? ORDER BY position RETURNING seq"
)
_DELIVERY_COLUMNS = (
    "o.seq, o.delivery_id, o.body, o.created_at, o.attempts, o.next_attempt_at, o.last_error,"
    " o.failed, c.body"
)
_NEXT = (
    f"SELECT {_DELIVERY_COLUMNS} FROM push_outbox o JOIN push_configs c"
    " ON c.task_id = o.task_id AND c.id = o.config_id"
    " WHERE o.task_id = ? AND o.config_id = ? AND o.failed = 0 ORDER BY o.seq LIMIT 1"
)
_FAILED = (
    f"SELECT {_DELIVERY_COLUMNS} FROM push_outbox o JOIN push_configs c"
    " ON c.task_id = o.task_id AND c.id = o.config_id"
    " WHERE o.task_id = ? AND o.failed = 1 ORDER BY o.seq"
)
_LANES = (
    "SELECT task_id, config_id, MAX(seq) FROM push_outbox NOT INDEXED"
    " WHERE seq > ? AND failed = 0 GROUP BY task_id, config_id"
)
"""Lanes with rows above a number. ``NOT INDEXED`` keeps SQLite on the number's range: left to
choose, it walks the whole lane index for the GROUP BY, every row a dead webhook left waiting."""


def enqueue(con: sqlite3.Connection, task_id: str, body: bytes) -> int:
    """Add one outbox row per config of the task; run it inside the task write's transaction.

    Returns:
        The number of rows added.
    """
    return len(con.execute(_ENQUEUE, (body, time.time(), task_id)).fetchall())


def lanes_after(con: sqlite3.Connection, after_seq: int) -> builtins.list[tuple[str, str, int]]:
    """``(task_id, config_id, highest number)`` of each lane with rows above ``after_seq``."""
    return con.execute(_LANES, (after_seq,)).fetchall()


def put_configs(con: sqlite3.Connection, configs: Sequence[TaskPushNotificationConfig]) -> None:
    """Insert or replace configs, keeping a replaced one's position."""
    for config in configs:
        row = (config.task_id, config.id, config.task_id, codec.encode(config))
        con.execute(_PUT_CONFIG, row)


PING = (
    "SELECT (SELECT 1 FROM tasks WHERE id = ''),"
    " (SELECT 1 FROM task_events WHERE task_ref = 0 AND seq = 0)"
)
"""The readiness read: one primary-key lookup per table a request needs, matching nothing."""


class SQLitePushStore(PushStore):
    """Push configs and outbox in the SQLite task store's file and connection.

    :class:`~a2a_wire.server.store.sqlite._store.SQLiteTaskStore` provides ``_conn`` and calls
    :meth:`_init_push` from its constructor and :meth:`_load_push` from ``open``.
    """

    _push_tasks: set[str]
    _group: WriteGroup
    _faults: SQLiteFaults

    @property
    def _conn(self) -> aiosqlite.Connection:
        raise NotImplementedError  # pragma: no cover - provided by the task store

    def _init_push(self, outages: OutageLog | None = None) -> None:
        self._push_tasks = set()
        self._group = WriteGroup(lambda work: hop(self._conn, work))
        self._faults = SQLiteFaults(outages)

    async def _load_push(self, db: aiosqlite.Connection) -> None:
        rows = await db.execute_fetchall("SELECT DISTINCT task_id FROM push_configs")
        self._push_tasks.clear()  # in place: the retention part holds this set too
        self._push_tasks.update(row[0] for row in rows)

    async def ping(self) -> None:
        """One indexed read of the tables requests need, on the store's connection thread.

        A key no row has, by primary key, in ``tasks`` and ``task_events``: a file that cannot
        be read (locked, gone, broken) fails it as requests would (see ``EventLogStore.ping``).
        """
        await self._run(lambda con: con.execute(PING).fetchone())

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """A read (or a single statement), as a hop of its own; faults translated."""
        return await self._faults.guard(hop(self._conn, work))

    async def _commit(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """A write, grouped with the writes queued beside it (:mod:`._group`).

        Faults are translated as for a read (:mod:`._faults`).
        """
        return await self._faults.guard(self._group.run(work))

    async def put_push_config(
        self, config: TaskPushNotificationConfig, *, limit: int | None = None
    ) -> bool:
        """Store a config, replacing one with the same task and id, within ``limit`` (one hop)."""

        def put(con: sqlite3.Connection) -> bool:
            sql = "SELECT count(*) FROM push_configs WHERE task_id = ? AND id <> ?"
            if limit is not None:
                (others,) = con.execute(sql, (config.task_id, config.id)).fetchone()
                if others >= limit:
                    return False
            put_configs(con, [config])
            return True

        stored = await self._commit(put)
        if stored:
            self._push_tasks.add(config.task_id)
        return stored

    async def get_push_config(
        self, task_id: str, config_id: str
    ) -> TaskPushNotificationConfig | None:
        """The config, or ``None``."""
        sql = "SELECT body FROM push_configs WHERE task_id = ? AND id = ?"
        rows = await self._run(lambda con: con.execute(sql, (task_id, config_id)).fetchall())
        return codec.decode(TaskPushNotificationConfig, rows[0][0]) if rows else None

    async def list_push_configs(
        self, task_id: str
    ) -> builtins.list[tuple[int, TaskPushNotificationConfig]]:
        """The task's configs with their positions, in creation order."""
        sql = "SELECT position, body FROM push_configs WHERE task_id = ? ORDER BY position"
        rows = await self._run(lambda con: con.execute(sql, (task_id,)).fetchall())
        return [(pos, codec.decode(TaskPushNotificationConfig, body)) for pos, body in rows]

    async def delete_push_config(self, task_id: str, config_id: str) -> bool:
        """Remove a config and all its outbox rows, in one transaction."""

        def work(con: sqlite3.Connection) -> tuple[bool, bool]:
            def steps() -> tuple[bool, bool]:
                key = (task_id, config_id)
                sql = "DELETE FROM push_configs WHERE task_id = ? AND id = ? RETURNING id"
                gone = bool(con.execute(sql, key).fetchall())
                con.execute("DELETE FROM push_outbox WHERE task_id = ? AND config_id = ?", key)
                sql = "SELECT 1 FROM push_configs WHERE task_id = ? LIMIT 1"
                return gone, bool(con.execute(sql, (task_id,)).fetchall())

            return transaction(con, steps)

        gone, more = await self._commit(work)
        if not more:
            self._push_tasks.discard(task_id)
        return gone

    async def pending_lanes(self, after_seq: int) -> tuple[builtins.list[LaneKey], int]:
        """Lanes with rows above ``after_seq``."""
        rows = await self._run(lambda con: lanes_after(con, after_seq))
        lanes = [(task_id, config_id) for task_id, config_id, _ in rows]
        return lanes, max([after_seq, *(row[2] for row in rows)])

    async def next_delivery(self, task_id: str, config_id: str) -> Delivery | None:
        """The lane's first undelivered row."""
        rows = await self._run(lambda con: con.execute(_NEXT, (task_id, config_id)).fetchall())
        return delivery_of(rows[0]) if rows else None

    async def delivery_done(self, seq: int) -> None:
        """Remove a delivered row."""
        await self._run(lambda con: con.execute("DELETE FROM push_outbox WHERE seq = ?", (seq,)))

    async def delivery_retry(
        self, seq: int, *, attempts: int, next_attempt_at: float, error: str
    ) -> None:
        """Record a failed attempt."""
        sql = (
            "UPDATE push_outbox SET attempts = ?, next_attempt_at = ?, last_error = ? WHERE seq = ?"
        )
        await self._run(lambda con: con.execute(sql, (attempts, next_attempt_at, error, seq)))

    async def delivery_failed(self, seq: int, *, attempts: int, error: str) -> None:
        """Mark a row given up."""
        sql = "UPDATE push_outbox SET failed = 1, attempts = ?, last_error = ? WHERE seq = ?"
        await self._run(lambda con: con.execute(sql, (attempts, error, seq)))

    async def failed_deliveries(self, task_id: str) -> builtins.list[Delivery]:
        """The task's given-up rows."""
        rows = await self._run(lambda con: con.execute(_FAILED, (task_id,)).fetchall())
        return [delivery_of(row) for row in rows]

    async def outbox_backlog(self) -> tuple[int, float | None]:
        """Rows not delivered nor given up, and the oldest one's creation time."""
        sql = "SELECT count(*), min(created_at) FROM push_outbox WHERE failed = 0"
        count, oldest = await self._run(lambda con: con.execute(sql).fetchone())
        return int(count), oldest
