"""How the PostgreSQL store writes: one statement per append, serialised per task by its head row.

An append whose remembered head was stale runs again under ``SELECT ... FOR UPDATE`` of the head,
so an event is refused only by the task's real state. The same statement keeps the task's
lease in step with its state. See docs/internals/store.md, "PostgreSQL: writes".
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from a2a_wire import codec
from a2a_wire.server.store._contract.log import EventKind, LogEvent
from a2a_wire.server.store._contract.tasks import RECOVERED_STATES
from a2a_wire.server.store._fold.events import Prepared, status_instant
from a2a_wire.server.store._fold.keys import state_key
from a2a_wire.server.store._fold.reads import TaskRead
from a2a_wire.server.store.postgresql._connection import load_driver
from a2a_wire.server.store.postgresql._listen import payload
from a2a_wire.server.store.postgresql._push import put_configs
from a2a_wire.server.store.postgresql._rows import read_task
from a2a_wire.server.store.postgresql._statements import Statements
from a2a_wire.types import TaskPushNotificationConfig, TaskState

if TYPE_CHECKING:
    from a2a_wire.server.store.postgresql._connection import GuardedPool, Queryable

__all__ = [
    "LeaseChange",
    "TaskLocks",
    "Target",
    "Written",
    "drop_events",
    "fold_snapshot",
    "insert_task",
    "lease_change",
    "write_batch",
]


@dataclass(frozen=True, slots=True)
class Target:
    """Where one store writes: its schema's statements and notification channels."""

    schema: str
    sql: Statements
    channel: str
    cancel_channel: str

    @classmethod
    def for_schema(cls, schema: str) -> Target:
        """The target of the tables of ``schema`` (a name already checked)."""
        return cls(schema, Statements.for_schema(schema), f"{schema}_events", f"{schema}_cancels")


KEEP, TAKE, DROP = 0, 1, 2
"""What an append does to the task's lease (:attr:`LeaseChange.op`)."""


@dataclass(frozen=True, slots=True)
class LeaseChange:
    """What an append does to the task's lease, and the lease a taking one writes.

    Attributes:
        op: :data:`KEEP`, :data:`TAKE` or :data:`DROP`.
        process_id: The process that takes it.
        now: The lease clock's time, or ``None`` for the database server's clock.
        seconds: How long a taken lease lasts unless renewed.
    """

    op: int
    process_id: str
    now: float | None
    seconds: float

    def args(self) -> tuple[int, str, float | None, float]:
        """The statement's parameters for the lease."""
        return self.op, self.process_id, self.now, self.seconds


def lease_change(before: TaskState, after: TaskState | None) -> int:
    """The lease operation of a batch moving a task from ``before`` to ``after`` (``None``: no status)."""
    if after is None:
        return KEEP
    if after not in RECOVERED_STATES:
        return DROP
    return TAKE if before not in RECOVERED_STATES else KEEP


@dataclass(frozen=True, slots=True)
class Written:
    """What an append statement committed.

    Attributes:
        events: The events with their numbers.
        outbox: Outbox rows added.
        tail_bytes: The task's tail size after them.
        snap_bytes: The task's snapshot size.
    """

    events: builtins.list[LogEvent]
    outbox: int
    tail_bytes: int
    snap_bytes: int


class TaskLocks:
    """One FIFO lock per task in use, so a store's appends to a task run in call order."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, task_id: str) -> AsyncIterator[None]:
        """Hold the task's lock; taken without yielding to the loop when nobody holds it."""
        lock, users = self._locks.get(task_id) or (asyncio.Lock(), 0)
        self._locks[task_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[task_id]
            if users > 1:
                self._locks[task_id] = (lock, users - 1)
            else:
                del self._locks[task_id]


async def write_batch(
    conn: Queryable,
    target: Target,
    task_id: str,
    after: int,
    prepared: Prepared,
    *,
    push: bool,
    changed_at: float,
    lease: LeaseChange,
) -> Written | None:
    """Log a checked batch as the events after number ``after``, with its outbox rows.

    ``lease.op`` is applied as given (see :func:`lease_change`).

    Returns:
        What was committed, or ``None`` when the task's last number is no longer ``after`` (or
        the task is gone): nothing was written.
    """
    kinds = [int(kind) for kind, _ in prepared.frames]
    bodies = [body for _, body in prepared.frames]
    pushed = [b for k, b in prepared.frames if k is not EventKind.MESSAGE] if push else []
    status = prepared.status
    state = None if status is None else state_key(status.state)
    seconds, nanos = (0, 0) if status is None else status_instant(status)
    note = payload(task_id, after + len(bodies))
    row = await conn.fetchrow(
        target.sql.append,
        *(task_id, after, kinds, bodies, state, seconds, nanos, changed_at),
        *(sum(map(len, bodies)), pushed, time.time(), target.channel, note, *lease.args()),
    )
    if row is None:
        return None
    logged = [LogEvent(after + 1 + i, kind, body) for i, (kind, body) in enumerate(prepared.frames)]
    return Written(logged, row[2], row[0], row[1])


async def insert_task(
    pool: GuardedPool,
    target: Target,
    row: tuple[object, ...],
    first: bytes,
    push_configs: Sequence[TaskPushNotificationConfig],
    push: bool,
    lease: LeaseChange,
) -> int:
    """Insert a task's row, snapshot, event 1, configs, outbox rows and lease; one transaction.

    Args:
        pool: The store's pool.
        target: Where.
        row: The ``create`` statement's first nine arguments (listing columns, clock, snapshot,
            event 1).
        first: Event 1.
        push_configs: Configs stored with it.
        push: Add event 1's outbox rows.
        lease: The lease to write with it when ``lease.op`` is :data:`TAKE`.

    Returns:
        The number of outbox rows added.

    Raises:
        ValueError: the id is taken (also by a deleted task not purged yet).
    """
    task_id = str(row[0])
    now = time.time()
    args = (*row, target.channel, payload(task_id, 1))
    holder = lease.process_id if lease.op == TAKE else None
    leased = (holder, lease.now, lease.seconds)
    try:
        if not push_configs:  # one statement, with the outbox rows of configs put before
            return int(await pool.fetchval(target.sql.create, *args, push, now, *leased))
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(target.sql.create, *args, False, now, *leased)
            await put_configs(conn, target.schema, push_configs)
            if not push:
                return 0
            return len(await conn.fetch(target.sql.enqueue, task_id, first, now))
    except load_driver().UniqueViolationError:
        raise ValueError(f"task {task_id!r} is already stored") from None


async def fold_snapshot(
    pool: GuardedPool, sql: Statements, task_id: str, owner: str, history_limit: int | None
) -> TaskRead | None:
    """Write the task's folded snapshot back, unless another fold got there first.

    Returns:
        The task as read and folded (the caller's to keep: ``Appended.task`` when no append
        came after the caller's), or ``None`` when it is gone.
    """
    read = await read_task(pool, sql, task_id, owner, history_limit)
    if read is None or read.seq == read.base_seq:
        return read
    body = codec.encode(read.task)
    await pool.execute(sql.fold, task_id, read.seq, body, read.base_seq, read.tail_bytes)
    return read


async def drop_events(
    pool: GuardedPool,
    target: Target,
    task_id: str,
    through_seq: int,
    batch: int,
    history_limit: int | None,
) -> int:
    """Drop up to ``batch`` of the task's oldest events, none above ``through_seq``.

    The snapshot absorbs them first if it has not (a fold).

    Returns:
        The number of events dropped.
    """
    bounds = await pool.fetchrow(target.sql.bounds, task_id)
    if bounds is None:
        return 0
    owner, snap_seq, last = bounds
    if snap_seq < min(through_seq, last):
        await fold_snapshot(pool, target.sql, task_id, owner, history_limit)
        snap_seq = await pool.fetchval(target.sql.bounds_seq, task_id)
        if snap_seq is None:
            return 0
    through = min(through_seq, snap_seq)
    note = payload(task_id, 0)
    return int(
        await pool.fetchval(target.sql.compact, task_id, through, batch, target.channel, note)
    )
