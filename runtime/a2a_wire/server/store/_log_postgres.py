"""An :class:`~a2a_wire.server.store._log.EventLogStore` on PostgreSQL, through asyncpg.

Rules and theory of operation: :mod:`a2a_wire.server.store._log`. Layout and migration:
:mod:`._log_postgres_sql`; reads: :mod:`._log_postgres_rows`; push configs and outbox:
:mod:`._log_postgres_push`; waking readers across processes: :mod:`._log_postgres_listen`.
Several stores (in several processes, on several hosts) may share one schema: the events table
is the truth, and every rule below holds between them.

Writes
------
An append is one statement that checks, in the head row, that the task's last number is still
the one its events were checked against; see :mod:`._log_postgres_write` for why that serialises
appends per task across processes and when a store first locks the head row instead.

Readers wait on the store's :class:`~._log_postgres_listen.Listener` and poll every
``poll_interval`` seconds besides (the fallback for lost notifications).

Recovery on open fails the SUBMITTED and WORKING tasks (as the protocol says), which is right
for one process and wrong for several: a second process starting would fail the first one's
running tasks. Stores that share a schema with a running process are made with
``recover=False`` until leases take over (the scale-out step).
"""

from __future__ import annotations

import asyncio
import builtins
import copy
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from a2a_wire import codec
from a2a_wire._protocol.tasks import InvalidTransitionError
from a2a_wire.errors import TaskNotFoundError
from a2a_wire.server._history import trim
from a2a_wire.server.store import _log_postgres_rows as rows
from a2a_wire.server.store._base import (
    RECOVERED_STATES,
    TaskPage,
    TaskQuery,
    issue_cursor,
    now_timestamp,
    read_cursor,
    state_key,
    status_key,
    task_state,
)
from a2a_wire.server.store._log import (
    PURGE_BATCH,
    READ_LIMIT,
    Appended,
    EventKind,
    EventLogStore,
    EventRange,
    LogEvent,
    LogInput,
    Snapshot,
)
from a2a_wire.server.store._log_fold import (
    Prepared,
    prepare,
    restart_event,
    should_fold,
    task_frame,
)
from a2a_wire.server.store._log_postgres_listen import GapWaiters, Listener, payload
from a2a_wire.server.store._log_postgres_push import PostgresPushStore
from a2a_wire.server.store._log_postgres_rows import Head
from a2a_wire.server.store._log_postgres_sql import (
    DEFAULT_SCHEMA,
    check_schema_name,
    load_driver,
    migrate_schema,
)
from a2a_wire.server.store._log_postgres_write import (
    Target,
    TaskLocks,
    Written,
    drop_events,
    fold_snapshot,
    insert_task,
    write_batch,
)
from a2a_wire.server.store._paging import PageTokens, check_page_size
from a2a_wire.types import Task, TaskPushNotificationConfig, TaskState

if TYPE_CHECKING:
    import asyncpg

    from a2a_wire.server.store._log_postgres_sql import Queryable

__all__ = ["HEAD_CACHE", "POLL_INTERVAL", "POOL_SIZE", "PostgresEventLog"]

HEAD_CACHE = 4096
"""Most task heads a store remembers; a forgotten one costs the locked path once."""

POLL_INTERVAL = 1.0
"""Default seconds between a waiting reader's checks of the table when no notification came."""

POOL_SIZE = 10
"""Default most connections in a store's pool (its listening connection comes on top)."""


class PostgresEventLog(PostgresPushStore, EventLogStore):
    """Event logs of tasks in a PostgreSQL schema, shared by any number of stores.

    Args:
        dsn: Where PostgreSQL is (a ``postgresql://`` URL or a libpq key/value string).
        schema: The PostgreSQL schema of the tables; created on the first ``open``.
        pool_size: Most connections of the pool.
        poll_interval: Seconds between a waiting reader's checks when no notification came.
        recover: Fail SUBMITTED/WORKING tasks on ``open`` (the protocol's recovery); ``False``
            for a store joining a schema that a running process uses.
        page_token_key: HMAC key for page tokens (give every process the same one); random
            when ``None``.
        history_limit: Most messages a task keeps (``ServerSettings.max_history_per_task``).
        clock: Seconds since the epoch, for the state-change times retention reads.

    Raises:
        ValueError: ``schema`` is not a plain lower-case identifier, or a number is out of range.
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        pool_size: int = POOL_SIZE,
        poll_interval: float = POLL_INTERVAL,
        recover: bool = True,
        page_token_key: bytes | None = None,
        history_limit: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if pool_size < 1 or not poll_interval > 0:
            raise ValueError("pool_size must be at least 1 and poll_interval above 0")
        self._dsn = dsn
        self._schema = check_schema_name(schema)
        self._target = target = Target.for_schema(schema)
        self._sql = target.sql
        self._pool_size = pool_size
        self._poll = poll_interval
        self._recover_on_open = recover
        self.page_tokens = PageTokens(page_token_key)
        self._history_limit = history_limit
        self._clock = clock
        self._db: asyncpg.Pool | None = None
        self._listener: Listener | None = None
        self._heads: OrderedDict[str, Head] = OrderedDict()
        self._locks = TaskLocks()
        self._waiters = GapWaiters()

    @property
    def _pool(self) -> asyncpg.Pool:
        if self._db is None:
            raise RuntimeError("the task store is not open; call open() first")
        return self._db

    async def open(self) -> builtins.list[str]:
        """Connect, create or upgrade the schema, listen, and recover (if ``recover``).

        Returns:
            Ids of the tasks that got a FAILED status event.

        Raises:
            RuntimeError: the store is already open, or the schema has a newer version.
        """
        if self._db is not None:
            raise RuntimeError("the task store is already open")
        self._db = pool = await load_driver().create_pool(
            self._dsn, min_size=1, max_size=self._pool_size
        )
        try:
            async with pool.acquire() as conn:
                await migrate_schema(conn, self._schema)
            self._listener = Listener(
                self._dsn,
                self._target.channel,
                on_event=self._waiters.wake,
                on_gap=self._waiters.wake_all,
                retry=self._poll,
            )
            await self._listener.start()
            return await self._recover() if self._recover_on_open else []
        except BaseException:
            await self.close()
            raise

    async def _recover(self) -> builtins.list[str]:
        states = sorted(state_key(s) for s in RECOVERED_STATES)
        found = await self._pool.fetch(self._sql.expired, states, math.inf, None, False)
        failed = []
        for (task_id,) in found:
            event = restart_event(task_id, "", now_timestamp())
            try:
                await self.append(task_id, [event], push=True)
            except (InvalidTransitionError, TaskNotFoundError):
                continue  # another store failed it (or it went) meanwhile
            failed.append(task_id)
        return failed

    async def close(self) -> None:
        """Stop listening and close the pool; the data stays. Closing twice is harmless."""
        listener, self._listener = self._listener, None
        pool, self._db = self._db, None
        self._heads.clear()
        if listener is not None:
            await listener.close()
        if pool is not None:
            await pool.close()

    async def create(
        self,
        task: Task,
        *,
        owner: str = "",
        push_configs: Sequence[TaskPushNotificationConfig] = (),
        push: bool = False,
    ) -> Appended:
        """Store a new task as event 1 of its log (see the protocol).

        Raises:
            ValueError: the task has no id, or its id is taken (also by a deleted task that is
                not purged yet).
        """
        if not task.id:
            raise ValueError("a task needs an id to be stored")
        stored = copy.copy(task)  # trimming replaces the history list; the caller's stays
        trim(stored, self._history_limit)
        body = codec.encode(stored)
        first = LogEvent(1, EventKind.TASK, task_frame(body))
        state = task_state(stored)
        listing = (task.id, owner, stored.context_id, state_key(state), *status_key(stored))
        row = (*listing, self._clock(), body, first.body)
        outbox = await insert_task(self._pool, self._target, row, first.body, push_configs, push)
        self._remember(task.id, Head(owner, stored.context_id, state, 1))
        self._waiters.wake(task.id)
        return Appended([first], outbox, state)

    async def append(
        self, task_id: str, events: Sequence[LogInput], *, push: bool = False
    ) -> Appended:
        """Check and commit one turn's events (see the protocol and "Writes").

        Raises:
            TaskNotFoundError: no such task.
            InvalidTransitionError: an event is illegal; nothing was stored.
            ValueError: ``events`` is empty.
        """
        if not events:
            raise ValueError("an append needs at least one event")
        async with self._locks.hold(task_id):
            head, written = await self._append(task_id, events, push)
        self._waiters.wake(task_id)
        if should_fold(written.tail_bytes, written.snap_bytes, head.state):
            limit = self._history_limit
            await fold_snapshot(self._pool, self._sql, task_id, head.owner, limit)
        return Appended(written.events, written.outbox, head.state)

    async def _append(
        self, task_id: str, events: Sequence[LogInput], push: bool
    ) -> tuple[Head, Written]:
        head = self._heads.get(task_id)
        if head is not None:
            try:
                prepared: Prepared | None = prepare(
                    task_id, head.context_id, head.state, events, now_timestamp()
                )
            except InvalidTransitionError:
                prepared = None  # the remembered state may be stale: ask the table
            if prepared is not None:
                written = await self._write(self._pool, task_id, head, prepared, push)
                if written is not None:
                    return head, written
        async with self._pool.acquire() as conn, conn.transaction():
            head = await rows.load_head(conn, self._sql.lock_head, task_id)
            if head is None:
                self._heads.pop(task_id, None)
                raise TaskNotFoundError(metadata={"taskId": task_id})
            prepared = prepare(task_id, head.context_id, head.state, events, now_timestamp())
            written = await self._write(conn, task_id, head, prepared, push)
        assert written is not None  # the head row was locked: the number cannot have moved
        return head, written

    async def _write(
        self, conn: Queryable, task_id: str, head: Head, prepared: Prepared, push: bool
    ) -> Written | None:
        """Write a checked batch after ``head``; then remember the new head (forget it if not)."""
        changed_at = self._clock()
        written = await write_batch(
            conn, self._target, task_id, head.seq, prepared, push=push, changed_at=changed_at
        )
        if written is None:
            self._heads.pop(task_id, None)
            return None
        head.seq = written.events[-1].seq
        head.state = prepared.status.state if prepared.status is not None else head.state
        self._remember(task_id, head)
        return written

    def _remember(self, task_id: str, head: Head) -> None:
        self._heads[task_id] = head
        self._heads.move_to_end(task_id)
        while len(self._heads) > HEAD_CACHE:
            self._heads.popitem(last=False)

    async def get(self, task_id: str, *, owner: str = "") -> Task | None:
        """A fresh copy of ``owner``'s task, or ``None``."""
        read = await rows.read_task(self._pool, self._sql, task_id, owner, self._history_limit)
        return None if read is None else read.task

    async def snapshot(self, task_id: str, *, owner: str = "") -> Snapshot | None:
        """``owner``'s task with the number of its last event, or ``None``."""
        read = await rows.read_task(self._pool, self._sql, task_id, owner, self._history_limit)
        return None if read is None else Snapshot(read.task, read.seq)

    async def list(self, query: TaskQuery, *, owner: str = "") -> TaskPage:
        """One page of ``owner``'s tasks matching ``query``, newest status first.

        Raises:
            InvalidParamsError: the page token is not valid for this query.
        """
        check_page_size(query.page_size)
        after = read_cursor(self.page_tokens, query, owner)
        tasks, last, count = await rows.list_page(
            self._pool, self._sql, query, owner, after, self._history_limit
        )
        token = issue_cursor(self.page_tokens, query, owner, last) if last is not None else ""
        return TaskPage(tasks=tasks, next_page_token=token, total_size=count)

    async def read_events(
        self, task_id: str, after_seq: int, *, owner: str = "", limit: int = READ_LIMIT
    ) -> EventRange | None:
        """Events numbered above ``after_seq`` (see the protocol).

        Raises:
            ValueError: ``after_seq`` is negative or ``limit`` below 1.
        """
        if after_seq < 0 or limit < 1:
            raise ValueError("after_seq must be at least 0 and limit at least 1")
        return await rows.read_range(self._pool, self._sql, task_id, owner, after_seq, limit)

    async def wait_events(self, task_id: str, after_seq: int, *, timeout: float) -> bool:
        """Wait for an event above ``after_seq``: woken by a notification, or polling.

        Returns:
            ``True`` when woken or the table has such an event, ``False`` after ``timeout``.
        """

        async def ready() -> bool:
            head = self._heads.get(task_id)
            if head is not None and head.seq > after_seq:
                return True
            last = await self._pool.fetchval(self._sql.last_seq, task_id)
            return last is None or last > after_seq

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            left = max(0.0, deadline - loop.time())
            if await self._waiters.wait(task_id, ready, min(left, self._poll)):
                return True
            if loop.time() >= deadline:
                return False

    async def compact(self, task_id: str, through_seq: int, *, batch: int = PURGE_BATCH) -> int:
        """Drop up to ``batch`` events numbered ``through_seq`` or lower (see the protocol)."""
        limit = self._history_limit
        dropped = await drop_events(self._pool, self._target, task_id, through_seq, batch, limit)
        if dropped:
            self._waiters.wake(task_id)
        return int(dropped)

    async def expired(
        self, states: Collection[TaskState], before: float, *, limit: int, logged: bool = False
    ) -> builtins.list[str]:
        """Tasks in ``states`` unchanged since ``before``, oldest first (see the protocol)."""
        keys = sorted(state_key(state) for state in states)
        found = await self._pool.fetch(self._sql.expired, keys, before, limit, logged)
        return [task_id for (task_id,) in found]

    async def delete_task(self, task_id: str) -> bool:
        """Make a task unknown with its push configs, in one statement (see the protocol)."""
        note = payload(task_id, 0)
        gone = await self._pool.fetchval(self._sql.delete, task_id, self._target.channel, note)
        self._heads.pop(task_id, None)
        self._waiters.wake(task_id)
        return bool(gone)

    async def purge(self, *, batch: int = PURGE_BATCH) -> int:
        """Delete up to ``batch`` event and outbox rows of a deleted task (see the protocol).

        Returns:
            Rows deleted, counting the task's own row when it is done.
        """
        async with self._pool.acquire() as conn, conn.transaction():
            return await rows.purge_rows(conn, self._schema, batch)
