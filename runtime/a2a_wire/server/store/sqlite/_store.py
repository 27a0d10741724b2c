"""The SQLite task store: :class:`SQLiteTaskStore`, the durable embedded default.

Every operation is one call on the connection's thread; an append is checked against the task's
cached head and reserves its numbers before its first ``await``, so appends apply in call order.
See docs/internals/store.md, "SQLite: writes".
"""

from __future__ import annotations

import builtins
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

import aiosqlite

from a2a_wire import codec
from a2a_wire._protocol.tasks import now_timestamp
from a2a_wire.errors import TaskNotFoundError
from a2a_wire.server.store._contract.log import (
    PURGE_BATCH,
    READ_LIMIT,
    Appended,
    EventLogStore,
    EventRange,
    LogInput,
    Snapshot,
)
from a2a_wire.server.store._contract.tasks import RECOVERED_STATES, TaskPage, TaskQuery
from a2a_wire.server.store._fold.create import new_task
from a2a_wire.server.store._fold.events import (
    Prepared,
    Shadow,
    Waiters,
    prepare,
    remember,
    restart_event,
)
from a2a_wire.server.store._fold.history import DEFAULT_HISTORY_LIMIT
from a2a_wire.server.store._fold.keys import (
    TaskCursor,
    state_key,
    status_key,
)
from a2a_wire.server.store._fold.outage import OutageLog
from a2a_wire.server.store._fold.paging import PageTokens
from a2a_wire.server.store._fold.reads import Found, check_range, list_page
from a2a_wire.server.store.sqlite import _rows as rows
from a2a_wire.server.store.sqlite import _schema as sql
from a2a_wire.server.store.sqlite._claim import FileClaim
from a2a_wire.server.store.sqlite._connection import transaction
from a2a_wire.server.store.sqlite._push import SQLitePushStore
from a2a_wire.server.store.sqlite._retention import SQLiteRetention
from a2a_wire.server.store.sqlite._rows import Folded, Head
from a2a_wire.server.store.sqlite._writes import (
    Batch,
    absorb,
    appended,
    create_rows,
    reserve,
    settle,
    write_events,
)
from a2a_wire.types import Task, TaskPushNotificationConfig, TaskState

__all__ = ["BODY_CACHE_BYTES", "HEAD_CACHE", "SQLiteTaskStore"]

HEAD_CACHE = 4096
"""Most task heads the store remembers; a forgotten one is loaded again by one query."""

BODY_CACHE_BYTES = 8 * 1024
"""Largest snapshot a head keeps (:attr:`~._rows.Head.body`)."""


class SQLiteTaskStore(SQLitePushStore, EventLogStore):
    """Tasks as event logs in an SQLite file, the durable store.

    Args:
        path: The database file; created with its schema on the first ``open``, or migrated
            from an older version (:mod:`a2a_wire.server.store.sqlite._schema`).
        synchronous: SQLite's ``synchronous`` setting, one of
            :data:`~a2a_wire.server.store.sqlite._schema.SYNCHRONOUS_MODES`.
        page_token_key: HMAC key for page tokens; random when ``None``.
        history_limit: Most messages a task keeps (``ServerSettings.max_history_per_task``);
            ``None`` keeps all.
        busy_timeout_seconds: SQLite's ``busy_timeout``: how long a statement waits for a lock
            another program holds on the file (see :mod:`._schema`) before it gives up. Twice
            this is the outage log's quiet period (:mod:`a2a_wire.server.store._fold.outage`).
        clock: Seconds since the epoch, for the state-change times retention reads.

    Raises:
        ValueError: ``synchronous`` is not an accepted mode, or the timeout is negative.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: str = "NORMAL",
        page_token_key: bytes | None = None,
        history_limit: int | None = DEFAULT_HISTORY_LIMIT,
        busy_timeout_seconds: float = sql.BUSY_TIMEOUT_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        mode = synchronous.upper()
        if mode not in sql.SYNCHRONOUS_MODES:
            raise ValueError(f"synchronous must be one of {sorted(sql.SYNCHRONOUS_MODES)}")
        if not busy_timeout_seconds >= 0:
            raise ValueError("busy_timeout_seconds must not be negative")
        self._busy_ms = round(busy_timeout_seconds * 1000)
        self._path = path
        self._synchronous = mode
        self.page_tokens = PageTokens(page_token_key)
        self._history_limit = history_limit
        self._clock = clock
        self._db: aiosqlite.Connection | None = None
        self._claim: FileClaim | None = None
        self._heads: OrderedDict[str, Head] = OrderedDict()
        self._waiters = Waiters()
        # A call that is going to fail for a lock does so within busy_timeout of its start.
        self._init_push(OutageLog("SQLite", quiet_seconds=2 * busy_timeout_seconds))
        self._retention = SQLiteRetention(
            self._run, self._commit, self._heads, self._push_tasks, self._waiters
        )

    @property
    def _conn(self) -> aiosqlite.Connection:
        if self._db is None:
            raise RuntimeError("the task store is not open; call open() first")
        return self._db

    async def open(self) -> builtins.list[str]:
        """Connect, create or check the schema, and fail the tasks a restart interrupted.

        Returns:
            Ids of the tasks that got a FAILED status event.

        Raises:
            RuntimeError: the store is already open, another store holds the file, another
                program holds a write lock on it past ``busy_timeout_seconds``, or the file has a
                schema version this code does not know.
        """
        if self._db is not None:
            raise RuntimeError("the task store is already open")
        self._claim = claim = await FileClaim.take(self._path, self._busy_ms / 1000)
        try:
            self._db = db = await sql.connect(
                self._path, self._synchronous, self._clock(), busy_timeout_ms=self._busy_ms
            )
        except BaseException:
            claim.release()
            raise
        try:
            await self._load_push(db)
            return await self._recover()
        except BaseException:
            await self.close()
            raise

    async def _recover(self) -> builtins.list[str]:
        states = sorted(state_key(s) for s in RECOVERED_STATES)
        failed = await self._run(lambda con: rows.tasks_in_states(con, states))
        now = now_timestamp()
        for task_id in failed:
            head = await self._head(task_id)
            assert head is not None  # nothing else runs before open returns
            event = restart_event(task_id, head.context_id, now)
            batch = prepare(task_id, head.context_id, head.state, [event], now, head.shadow)
            await self._write(task_id, head, batch, True)
        return failed

    async def close(self) -> None:
        """Close the connection and wait for its thread; the file keeps the data. Idempotent."""
        if self._db is not None:
            await self._group.drain()
        db, self._db = self._db, None
        self._heads.clear()
        try:
            if db is not None:
                await sql.close_connection(db)
        finally:
            if self._claim is not None:
                self._claim.release()

    async def create(
        self,
        task: Task,
        *,
        owner: str = "",
        push_configs: Sequence[TaskPushNotificationConfig] = (),
        push: bool = False,
        events: Sequence[LogInput] = (),
    ) -> Appended:
        """Store a new task as event 1 of its log, then ``events``, in one hop (see the protocol).

        Raises:
            ValueError: the task has no id, or its id is taken (also by a deleted task that is
                not purged yet).
            InvalidTransitionError: an event of ``events`` is illegal; nothing was stored.
        """
        new = new_task(task, self._history_limit)
        stored, state, body, first = new.stored, new.state, new.body, new.first
        head = Head(owner, stored.context_id, state, 1, 1, 1, len(body), 0, _cached(body), [])
        head.shadow = None if head.body is None else Shadow.of(stored, len(body))
        batch = None
        if events:  # checked before anything is stored
            turn = prepare(task.id, stored.context_id, state, events, shadow=head.shadow)
            pushing = push and (bool(push_configs) or task.id in self._push_tasks)
            batch = self._reserve(head, task.id, turn, pushing)
        row = (task.id, owner, stored.context_id, state_key(state), *status_key(stored))
        changed = self._clock()

        def work(con: sqlite3.Connection) -> tuple[int, Folded | None]:
            return create_rows(con, (*row, changed), body, first.body, push_configs, push, batch)

        try:
            outbox, folded = await self._commit(work)
        except sqlite3.IntegrityError:
            raise ValueError(f"task {task.id!r} is already stored") from None
        self._push_tasks.update(config.task_id for config in push_configs)
        whole = None if batch is None else settle(head, batch, folded, BODY_CACHE_BYTES)
        remember(self._heads, task.id, head, HEAD_CACHE)
        self._waiters.wake(task.id)
        logged = [first] if batch is None else [first, *batch.logged]
        return appended(logged, outbox, head.state, whole)

    async def append(
        self, task_id: str, events: Sequence[LogInput], *, push: bool = False
    ) -> Appended:
        """Check and commit one turn's events (see the protocol).

        Raises:
            TaskNotFoundError: no such task.
            InvalidTransitionError: an event is illegal; nothing was stored.
            ValueError: ``events`` is empty.
        """
        if not events:
            raise ValueError("an append needs at least one event")
        head = await self._head(task_id)
        if head is None:
            raise TaskNotFoundError(metadata={"taskId": task_id})
        prepared = prepare(task_id, head.context_id, head.state, events, shadow=head.shadow)
        return await self._write(task_id, head, prepared, push)

    def _reserve(self, head: Head, task_id: str, prepared: Prepared, pushing: bool) -> Batch:
        return reserve(
            head,
            task_id,
            prepared,
            pushing=pushing,
            changed=self._clock(),
            history_limit=self._history_limit,
            cache_bytes=BODY_CACHE_BYTES,
        )

    async def _write(self, task_id: str, head: Head, prepared: Prepared, push: bool) -> Appended:
        """Number, write and commit a checked batch, fold if it pays; then wake readers."""
        batch = self._reserve(head, task_id, prepared, push and task_id in self._push_tasks)
        try:  # number and state are reserved before the first await
            outbox, folded = await self._commit(lambda con: write_events(con, task_id, batch))
        except BaseException as exc:
            self._heads.pop(task_id, None)  # reload the truth from the file next time
            if not isinstance(exc, sqlite3.IntegrityError):
                raise
            if await self._head(task_id) is None:
                raise TaskNotFoundError(metadata={"taskId": task_id}) from None
            raise RuntimeError(f"task {task_id!r}: concurrent appends to one log") from None
        whole = settle(head, batch, folded, BODY_CACHE_BYTES)
        self._waiters.wake(task_id)
        return appended(batch.logged, outbox, head.state, whole)

    async def _head(self, task_id: str) -> Head | None:
        head = self._heads.get(task_id)
        if head is None:
            loaded = await self._run(lambda con: rows.load_head(con, task_id))
            if loaded is None:
                return None
            head = self._heads.get(task_id)  # another caller may have loaded it meanwhile
            if head is None:
                head = loaded
                remember(self._heads, task_id, head, HEAD_CACHE)
        self._heads.move_to_end(task_id)
        return head

    async def _fold(self, task_id: str, head: Head) -> None:
        """Write the folded snapshot back, unless another fold got there first."""
        owner, limit = head.owner, self._history_limit
        folded = await self._commit(lambda con: rows.fold_task(con, task_id, owner, limit))
        if folded is not None:
            absorb(head, folded, BODY_CACHE_BYTES)

    async def get(self, task_id: str, *, owner: str = "") -> Task | None:
        """A fresh copy of ``owner``'s task, or ``None``."""
        found = await self.snapshot(task_id, owner=owner)
        return None if found is None else found.task

    async def snapshot(self, task_id: str, *, owner: str = "") -> Snapshot | None:
        """``owner``'s task with the number of its last event, or ``None``."""
        head = self._heads.get(task_id)
        if head is not None and head.body is not None and not head.tail and head.owner == owner:
            return Snapshot(codec.decode(Task, head.body), head.snap_seq)
        limit = self._history_limit
        read = await self._run(lambda con: rows.read_task(con, task_id, owner, limit))
        return None if read is None else Snapshot(read.task, read.seq)

    async def list(self, query: TaskQuery, *, owner: str = "") -> TaskPage:
        """One page of ``owner``'s tasks matching ``query``, newest status first.

        Raises:
            InvalidParamsError: the page token is not valid for this query.
        """
        limit = self._history_limit

        async def find(after: TaskCursor | None) -> Found:
            return await self._run(lambda con: rows.list_page(con, query, owner, after, limit))

        return await list_page(self.page_tokens, query, owner, find)

    async def read_events(
        self, task_id: str, after_seq: int, *, owner: str = "", limit: int = READ_LIMIT
    ) -> EventRange | None:
        """Events numbered above ``after_seq`` (see the protocol).

        Raises:
            ValueError: ``after_seq`` is negative or ``limit`` below 1.
        """
        check_range(after_seq, limit)
        return await self._run(lambda con: rows.read_range(con, task_id, owner, after_seq, limit))

    async def wait_events(self, task_id: str, after_seq: int, *, timeout: float) -> bool:
        """Wait for an event above ``after_seq`` (see the protocol)."""

        async def ready() -> bool:
            head = self._heads.get(task_id)
            if head is not None:
                return head.committed > after_seq
            found = await self._run(lambda con: con.execute(sql.LAST_SEQ, (task_id,)).fetchall())
            return found[0][0] is None or found[0][0] > after_seq

        return await self._waiters.wait(task_id, ready, timeout)

    async def compact(self, task_id: str, through_seq: int, *, batch: int = PURGE_BATCH) -> int:
        """Drop up to ``batch`` events numbered ``through_seq`` or lower (see the protocol)."""
        head = await self._head(task_id)
        if head is None:
            return 0
        if head.snap_seq < min(through_seq, head.committed):
            await self._fold(task_id, head)
        through = min(through_seq, head.snap_seq)

        def work(con: sqlite3.Connection) -> int:
            return transaction(con, lambda: rows.drop_events(con, task_id, through, batch))

        dropped = await self._commit(work)
        if dropped:
            self._waiters.wake(task_id)
        return dropped

    async def expired(
        self, states: Collection[TaskState], before: float, *, limit: int, logged: bool = False
    ) -> builtins.list[str]:
        """Tasks in ``states`` unchanged since ``before``, oldest first (see the protocol)."""
        return await self._retention.expired(states, before, limit=limit, logged=logged)

    async def delete_task(self, task_id: str) -> bool:
        """Make a task unknown with its push configs, in one transaction (see the protocol)."""
        return await self._retention.delete_task(task_id)

    async def purge(self, *, batch: int = PURGE_BATCH) -> int:
        """Delete up to ``batch`` event and outbox rows of a deleted task (see the protocol)."""
        return await self._retention.purge(batch=batch)


def _cached(body: bytes) -> bytes | None:
    return body if len(body) <= BODY_CACHE_BYTES else None
