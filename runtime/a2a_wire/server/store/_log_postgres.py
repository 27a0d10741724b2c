"""An :class:`~a2a_wire.server.store._log.EventLogStore` on PostgreSQL, through asyncpg.

Rules and theory of operation: :mod:`a2a_wire.server.store._log`. Layout and migration:
:mod:`._log_postgres_sql`; reads: :mod:`._log_postgres_rows`; push configs and outbox:
:mod:`._log_postgres_push`; waking readers across processes: :mod:`._log_postgres_listen`.
Several stores (in several processes, on several hosts) may share one schema: the events table
is the truth, and every rule below holds between them.

Writes
------
An append is checked (:func:`~._log_fold.prepare`) against the task's *head* (state and last
number) and written by one statement (``Statements.append``) that updates the head row only if
its last number is still the one the check saw, inserts the events numbered after it, inserts
the outbox rows and sends the notification, so it commits as one transaction and costs one round
trip. The row update is the per-task serialisation point: a concurrent append to the same task
waits for the row, then finds the number moved on and writes nothing. Numbers are so assigned at
commit, gapless, in the order appends commit.

Each store remembers the heads it wrote (:data:`HEAD_CACHE` of them). With the remembered head
an append is that one statement. Without one, or when it finds the number moved on (another
process appended), or when the remembered state refuses an event (it may be stale), the append
runs again in a transaction that first locks the head row (``SELECT ... FOR UPDATE``), checks
against what it read, and writes with the same statement, which then cannot miss. So an event is
refused only by the task's real state, and one process cannot starve another's appends. Within
one store appends to one task also take a local lock, so that appends started together are
checked in the order they were called, as the contract wants.

Readers wait on the store's :class:`~._log_postgres_listen.Listener` and poll every
``poll_interval`` seconds besides (the fallback for lost notifications). A fold reads the task
and replaces its snapshot only if the snapshot is still the one it read (a compare-and-set), in
a statement of its own after the append's commit.

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
from typing import TYPE_CHECKING, Any

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
    status_instant,
    task_frame,
)
from a2a_wire.server.store._log_postgres_listen import GapWaiters, Listener, payload
from a2a_wire.server.store._log_postgres_push import PostgresPushStore
from a2a_wire.server.store._log_postgres_rows import Head
from a2a_wire.server.store._log_postgres_sql import (
    DEFAULT_SCHEMA,
    Statements,
    check_schema_name,
    load_driver,
    lock_key,
    migrate_schema,
)
from a2a_wire.server.store._paging import PageTokens, check_page_size
from a2a_wire.types import Task, TaskPushNotificationConfig, TaskState

if TYPE_CHECKING:
    import asyncpg

    from a2a_wire.server.store._log_postgres_sql import Queryable

__all__ = ["HEAD_CACHE", "POLL_INTERVAL", "POOL_SIZE", "PostgresEventLog", "migrate"]

HEAD_CACHE = 4096
"""Most task heads a store remembers; a forgotten one costs the locked path once."""

POLL_INTERVAL = 1.0
"""Default seconds between a waiting reader's checks of the table when no notification came."""

POOL_SIZE = 10
"""Default most connections in a store's pool (its listening connection comes on top)."""


async def migrate(dsn: str, *, schema: str = DEFAULT_SCHEMA) -> tuple[int, int]:
    """Create or upgrade the store's schema, as ``open`` does (``a2a-wire db migrate``).

    Args:
        dsn: Where PostgreSQL is (a ``postgresql://`` URL or a libpq key/value string).
        schema: The PostgreSQL schema of the store's tables.

    Returns:
        The schema's version before and after.

    Raises:
        RuntimeError: the schema has a newer version than this code, or asyncpg is missing.
        ValueError: ``schema`` is not a plain lower-case identifier.
    """
    from a2a_wire.server.store._log_postgres_sql import SCHEMA_VERSION

    check_schema_name(schema)
    conn = await load_driver().connect(dsn)
    try:
        return await migrate_schema(conn, schema), SCHEMA_VERSION
    finally:
        await conn.close()


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
        self._sql = Statements.for_schema(schema)
        self._channel = f"{schema}_events"
        self._outbox_key = lock_key(schema, "outbox")
        self._pool_size = pool_size
        self._poll = poll_interval
        self._recover_on_open = recover
        self.page_tokens = PageTokens(page_token_key)
        self._history_limit = history_limit
        self._clock = clock
        self._db: asyncpg.Pool | None = None
        self._listener: Listener | None = None
        self._heads: OrderedDict[str, Head] = OrderedDict()
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}
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
                self._channel,
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
        pool = self._pool
        if not task.id:
            raise ValueError("a task needs an id to be stored")
        stored = copy.copy(task)  # trimming replaces the history list; the caller's stays
        trim(stored, self._history_limit)
        body = codec.encode(stored)
        first = LogEvent(1, EventKind.TASK, task_frame(body))
        state = task_state(stored)
        row = (task.id, owner, stored.context_id, state_key(state), *status_key(stored))
        args = (*row, self._clock(), body, first.body, self._channel, payload(task.id, 1))
        now = time.time()
        try:
            if not push_configs:  # one statement, with the outbox rows of configs put before
                created = await pool.fetchval(self._sql.create, *args, push, self._outbox_key, now)
                outbox = int(created)
            else:
                async with pool.acquire() as conn, conn.transaction():
                    await conn.execute(self._sql.create, *args, False, self._outbox_key, now)
                    await self._put_configs(conn, push_configs)
                    keys = (task.id, first.body, now, self._outbox_key)
                    outbox = len(await conn.fetch(self._sql.enqueue, *keys)) if push else 0
        except load_driver().UniqueViolationError:
            raise ValueError(f"task {task.id!r} is already stored") from None
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
        lock, users = self._locks.get(task_id) or (asyncio.Lock(), 0)
        self._locks[task_id] = (lock, users + 1)
        try:
            async with lock:
                head, written = await self._append(task_id, events, push)
        finally:
            lock, users = self._locks[task_id]
            if users > 1:
                self._locks[task_id] = (lock, users - 1)
            else:
                del self._locks[task_id]
        self._waiters.wake(task_id)
        tail_bytes, snap_bytes, appended = written
        if should_fold(tail_bytes, snap_bytes, appended.state):
            await self._fold(task_id, head.owner)
        return appended

    async def _append(
        self, task_id: str, events: Sequence[LogInput], push: bool
    ) -> tuple[Head, tuple[int, int, Appended]]:
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
        self,
        conn: Queryable,
        task_id: str,
        head: Head,
        prepared: Prepared,
        push: bool,
    ) -> tuple[int, int, Appended] | None:
        """Run the append statement; ``None`` if the head moved on. Updates ``head`` if not."""
        kinds = [int(kind) for kind, _ in prepared.frames]
        bodies = [body for _, body in prepared.frames]
        pushed = [b for k, b in prepared.frames if k is not EventKind.MESSAGE] if push else []
        status = prepared.status
        state = None if status is None else state_key(status.state)
        seconds, nanos = (0, 0) if status is None else status_instant(status)
        last = head.seq + len(bodies)
        row: Any = await conn.fetchrow(
            self._sql.append,
            *(task_id, head.seq, kinds, bodies, state, seconds, nanos, self._clock()),
            *(sum(map(len, bodies)), pushed, time.time(), self._outbox_key),
            *(self._channel, payload(task_id, last)),
        )
        if row is None:
            self._heads.pop(task_id, None)
            return None
        logged = [LogEvent(head.seq + 1 + i, k, b) for i, (k, b) in enumerate(prepared.frames)]
        head.seq = last
        head.state = status.state if status is not None else head.state
        self._remember(task_id, head)
        return row[0], row[1], Appended(logged, row[2], head.state)

    def _remember(self, task_id: str, head: Head) -> None:
        self._heads[task_id] = head
        self._heads.move_to_end(task_id)
        while len(self._heads) > HEAD_CACHE:
            self._heads.popitem(last=False)

    async def _fold(self, task_id: str, owner: str) -> None:
        """Write the folded snapshot back, unless another fold got there first."""
        read = await rows.read_task(self._pool, self._sql, task_id, owner, self._history_limit)
        if read is None or read.seq == read.base_seq:
            return
        body = codec.encode(read.task)
        await self._pool.execute(
            self._sql.fold, task_id, read.seq, body, read.base_seq, read.tail_bytes
        )

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
        bounds = await self._pool.fetchrow(self._sql.bounds, task_id)
        if bounds is None:
            return 0
        owner, snap_seq, last = bounds
        if snap_seq < min(through_seq, last):
            await self._fold(task_id, owner)
            snap_seq = await self._pool.fetchval(self._sql.bounds_seq, task_id)
            if snap_seq is None:
                return 0
        note = payload(task_id, 0)
        dropped = await self._pool.fetchval(
            self._sql.compact, task_id, min(through_seq, snap_seq), batch, self._channel, note
        )
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
        gone = await self._pool.fetchval(self._sql.delete, task_id, self._channel, note)
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
